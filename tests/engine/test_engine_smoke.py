"""The real Pulumi engine on the local control plane: what only the engine and the Kubernetes provider
decide (create order, diffs, replacements, Helm releases, awaiting readiness, deletes), with the CLI
and pulumi-resource-kubernetes 4.25.0 built by tests/engine/build.sh and a file backend."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi import automation as auto

from gpu_platform.components.pools.awaits import SKIP_AWAIT
from tests.engine.conftest import RealEngine

GROUP = "engine.gpu-platform.io"
CHART = ("dcgm-exporter", "4.8.2")
"""A small chart of the lock (a DaemonSet, its Service and RBAC), from the pinned local archive."""
NO_NODE = {"gpu-platform.io/engine-test": "no-such-node"}
"""A node selector no node matches: pods that can never be scheduled."""


def _smoke_program(engine: RealEngine, stage: str, size: int) -> Callable[[], None]:
    """A namespace, a CRD and a custom resource of it, a ConfigMap and a Helm release from a pinned
    archive; ``stage`` and ``size`` are what a change of the program changes."""
    archive = str(engine.chart_archive(*CHART))

    def program() -> None:
        provider = engine.provider()
        on_cluster = pulumi.ResourceOptions(provider=provider)
        ns = k8s.core.v1.Namespace("smoke", metadata=k8s.meta.v1.ObjectMetaArgs(name="engine-smoke"), opts=on_cluster)
        namespace = ns.metadata.name
        crd = k8s.apiextensions.v1.CustomResourceDefinition(
            "widgets",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"widgets.{GROUP}"),
            spec=k8s.apiextensions.v1.CustomResourceDefinitionSpecArgs(
                group=GROUP,
                scope="Namespaced",
                names=k8s.apiextensions.v1.CustomResourceDefinitionNamesArgs(kind="Widget", plural="widgets", singular="widget"),
                versions=[
                    k8s.apiextensions.v1.CustomResourceDefinitionVersionArgs(
                        name="v1",
                        served=True,
                        storage=True,
                        schema=k8s.apiextensions.v1.CustomResourceValidationArgs(
                            open_apiv3_schema=k8s.apiextensions.v1.JSONSchemaPropsArgs(
                                type="object",
                                properties={
                                    "spec": k8s.apiextensions.v1.JSONSchemaPropsArgs(
                                        type="object",
                                        properties={
                                            "size": k8s.apiextensions.v1.JSONSchemaPropsArgs(type="integer", minimum=1),
                                        },
                                    ),
                                },
                            ),
                        ),
                    )
                ],
            ),
            opts=on_cluster,
        )
        k8s.apiextensions.CustomResource(
            "widget",
            api_version=f"{GROUP}/v1",
            kind="Widget",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="widget", namespace=namespace),
            spec={"size": size},
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[crd]),
        )
        k8s.core.v1.ConfigMap(
            "settings",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="settings", namespace=namespace),
            data={"stage": stage},
            opts=on_cluster,
        )
        k8s.helm.v3.Release(
            "dcgm",
            k8s.helm.v3.ReleaseArgs(
                chart=archive,
                name="dcgm-exporter",
                namespace=namespace,
                values={"serviceMonitor": {"enabled": False}, "podAnnotations": {"gpu-platform.io/stage": stage}},
            ),
            opts=on_cluster,
        )

    return program


def test_resources_go_up_change_and_are_destroyed_by_the_engine(real_engine: RealEngine) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = real_engine.api_client()
    core, apps, custom = client.CoreV1Api(api), client.AppsV1Api(api), client.CustomObjectsApi(api)

    def widget_size() -> int:
        return int(custom.get_namespaced_custom_object(GROUP, "v1", "engine-smoke", "widgets", "widget")["spec"]["size"])

    def dcgm_stage() -> str:
        template = apps.read_namespaced_daemon_set("dcgm-exporter", "engine-smoke").spec.template
        return str((template.metadata.annotations or {}).get("gpu-platform.io/stage"))

    first, second = _smoke_program(real_engine, "first", 1), _smoke_program(real_engine, "second", 2)
    with real_engine.stack("smoke", first) as stack:
        up = stack.up()
        assert up.summary == {"create": 7}, up.stdout  # the stack, the provider and five resources
        assert core.read_namespaced_config_map("settings", "engine-smoke").data == {"stage": "first"}
        assert widget_size() == 1 and dcgm_stage() == "first"
        # Ready on every node it is scheduled to: the engine's kwok node, and any node an earlier test on this
        # session's control plane left (the control-plane tests share one, tests/conftest.py).
        daemons = apps.read_namespaced_daemon_set("dcgm-exporter", "engine-smoke").status
        assert daemons.number_ready == daemons.desired_number_scheduled >= 1, daemons

        stack.preview_no_changes()

        # The engine's diff of the change: the custom resource and the release are updated in place; a
        # ConfigMap's data is immutable to the provider (enableConfigMapMutable is off), so it is replaced.
        assert stack.preview(second).changed() == {"widget": "update", "dcgm": "update", "settings": "replace"}
        stack.up(second)
        assert core.read_namespaced_config_map("settings", "engine-smoke").data == {"stage": "second"}
        assert widget_size() == 2 and dcgm_stage() == "second"

        stack.preview_no_changes()

        down = stack.destroy()
        assert down.summary == {"delete": 7}, down.stdout
        with pytest.raises(ApiException) as gone:
            core.read_namespace("engine-smoke")  # the provider waits until the namespace is gone
        assert gone.value.status == 404
        names = [c.metadata.name for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items]
        assert f"widgets.{GROUP}" not in names


def _deployment_program(engine: RealEngine, name: str, annotations: dict[str, str]) -> Callable[[], None]:
    """A Deployment whose pod can never be scheduled (its node selector matches no node)."""

    def program() -> None:
        on_cluster = pulumi.ResourceOptions(provider=engine.provider())
        ns = k8s.core.v1.Namespace(f"{name}-ns", metadata=k8s.meta.v1.ObjectMetaArgs(name=name), opts=on_cluster)
        labels = {"app": name}
        k8s.apps.v1.Deployment(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=ns.metadata.name, annotations=annotations),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=1,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                    spec=k8s.core.v1.PodSpecArgs(
                        node_selector=NO_NODE,
                        containers=[k8s.core.v1.ContainerArgs(name="main", image="registry.k8s.io/pause:3.10")],
                    ),
                ),
            ),
            opts=on_cluster,
        )

    return program


def _pending_pods(engine: RealEngine, namespace: str) -> list[Any]:
    from kubernetes import client

    return [p for p in client.CoreV1Api(engine.api_client()).list_namespaced_pod(namespace).items if p.status.phase == "Pending"]


def test_a_deployment_with_skip_await_comes_up_without_waiting_for_its_pods(real_engine: RealEngine) -> None:
    # The annotation the components put on workloads that wait on the autoscaler (components/pools/awaits.py).
    program = _deployment_program(real_engine, "skip-await", dict(SKIP_AWAIT))
    with real_engine.stack("skip-await", program) as stack:
        up = stack.up()
        assert up.summary == {"create": 4}, up.stdout
        assert up.seconds < 60, f"up took {up.seconds:.0f} s: it waited for a pod that cannot be scheduled"
        deadline = time.monotonic() + 30
        while not _pending_pods(real_engine, "skip-await") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _pending_pods(real_engine, "skip-await"), "the Deployment made no pod"  # and it stays Pending
        stack.preview_no_changes()


def test_a_deployment_without_skip_await_times_out_with_the_engines_message(real_engine: RealEngine) -> None:
    timeout = 5  # the await gives up after it whatever its length; a pod that can never be scheduled never beats it
    program = _deployment_program(real_engine, "await", {"pulumi.com/timeoutSeconds": str(timeout)})
    with real_engine.stack("await", program) as stack:
        start = time.monotonic()
        with pytest.raises(auto.CommandError) as failed:
            stack.up()
        seconds = time.monotonic() - start
        message = str(failed.value)
        print(message)
        assert "'await' timed out waiting to be Ready" in message, message
        assert "Minimum number of live Pods was not attained" in message, message
        assert seconds >= timeout, f"up failed after {seconds:.0f} s, before the {timeout} s timeout: {message}"


def _claim_program(engine: RealEngine, storage_class: str) -> Callable[[], None]:
    """A protected claim (as Kubeflow's are under keep_volumes_on_delete) of ``storage_class``."""

    def program() -> None:
        on_cluster = pulumi.ResourceOptions(provider=engine.provider())
        ns = k8s.core.v1.Namespace("claims-ns", metadata=k8s.meta.v1.ObjectMetaArgs(name="engine-claims"), opts=on_cluster)
        k8s.core.v1.PersistentVolumeClaim(
            "data",
            # No volume binds it here (no provisioner): the provider's wait for Bound is skipped.
            metadata=k8s.meta.v1.ObjectMetaArgs(name="data", namespace=ns.metadata.name, annotations=dict(SKIP_AWAIT)),
            spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                access_modes=["ReadWriteOnce"],
                storage_class_name=storage_class,
                resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": "1Gi"}),
            ),
            opts=pulumi.ResourceOptions(provider=on_cluster.provider, protect=True, depends_on=[ns]),
        )

    return program


def test_a_change_of_an_immutable_field_of_a_protected_claim_is_refused_with_the_engines_message(real_engine: RealEngine) -> None:
    """A claim's storage class is immutable: the provider can only replace the claim, which the engine refuses for a
    protected resource (a new claim would be an empty volume). Only the engine's diff knows the change is a replacement."""
    from kubernetes import client

    with real_engine.stack("claims", _claim_program(real_engine, "standard")) as stack:
        assert stack.up().summary == {"create": 4}
        premium = _claim_program(real_engine, "premium")
        # Refused at the preview already, and by up: the engine's own message, naming the claim and the way out.
        for operation in (stack.preview, stack.up):
            with pytest.raises(auto.CommandError) as refused:
                operation(premium)
            message = str(refused.value)
            assert 'unable to replace resource "urn:pulumi:claims::gpu-platform-engine-tests::kubernetes:core/v1:PersistentVolumeClaim::data"' in message, (
                message[-2000:]
            )
            assert "as it is currently marked for protection" in message, message[-2000:]
        # Nothing was replaced: the claim is the old one, of its old class.
        claim = client.CoreV1Api(real_engine.api_client()).read_namespaced_persistent_volume_claim("data", "engine-claims")
        assert claim.spec.storage_class_name == "standard"
        # As `pulumi state unprotect` does, so the stack can be destroyed on leaving.
        state = stack.stack.export_stack()
        for resource in state.deployment["resources"]:
            resource.pop("protect", None)
        stack.stack.import_stack(state)


def _hook_chart(folder: Any) -> str:
    """A chart whose pre-install hook is a Job that fails (its deadline of 1 s passes: the job controller fails it)."""
    import yaml

    chart = folder / "failing-hook"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(yaml.safe_dump({"apiVersion": "v2", "name": "failing-hook", "version": "0.1.0"}))
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "annotations": {"helm.sh/hook": "pre-install", "helm.sh/hook-delete-policy": "before-hook-creation"}},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "migrate", "image": "registry.k8s.io/pause:3.10"}]}},
        },
    }
    (chart / "templates" / "job.yaml").write_text(yaml.safe_dump(job))
    (chart / "templates" / "config.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-hook"}, "data": {"a": "b"}})
    )
    return str(chart)


def test_a_release_whose_hook_fails_fails_up_with_the_engines_message(real_engine: RealEngine, tmp_path: Any) -> None:
    """Helm runs a release's hooks and waits for them: only the provider's Helm knows a failed pre-install hook stops the
    release (the offline render lists the hook as one more object)."""
    from kubernetes import client

    chart = _hook_chart(tmp_path)

    def program() -> None:
        on_cluster = pulumi.ResourceOptions(provider=real_engine.provider())
        ns = k8s.core.v1.Namespace("hook-ns", metadata=k8s.meta.v1.ObjectMetaArgs(name="engine-hook"), opts=on_cluster)
        k8s.helm.v3.Release("hooked", k8s.helm.v3.ReleaseArgs(chart=chart, name="hooked", namespace=ns.metadata.name, timeout=60), opts=on_cluster)

    with real_engine.stack("hook", program) as stack:
        with pytest.raises(auto.CommandError) as failed:
            stack.up()
        message = str(failed.value)
        print(message)
        assert "pre-install" in message and ("failed" in message or "DeadlineExceeded" in message), message[-2000:]
        names = [c.metadata.name for c in client.CoreV1Api(real_engine.api_client()).list_namespaced_config_map("engine-hook").items]
        assert "after-hook" not in names  # the release stopped at its hook
