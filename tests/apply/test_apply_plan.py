"""What `preview --apply` sends and in which order, and its usage errors: no API server needed.

The server's own judgement is in test_apply.py (the real control plane)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from gpu_platform.infra.apply.apply import ApplyObject, _secret_shaped, engine_order, stack_objects
from gpu_platform.infra.cli import main
from gpu_platform.infra.preview.engine import SECRET_SIG, Plan, RecordedResource
from tests.conftest import PROJECT_DIR, shipped_plan


def _resource(
    name: str, depends_on: list[str] | None = None, parent: str | None = None, custom: bool = True, type_: str = "kubernetes:core/v1:ConfigMap"
) -> RecordedResource:
    return RecordedResource(
        urn=f"urn:pulumi:test::p::{type_}::{name}", type=type_, name=name, parent=parent, custom=custom, inputs={}, depends_on=depends_on or []
    )


def _obj(kind: str, name: str, owner: RecordedResource, hook: str | None = None, **metadata: Any) -> ApplyObject:
    return ApplyObject({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, **metadata}}, owner.name, owner.urn, hook=hook)


def test_engine_order_crds_then_owners_by_dependency_then_helm_kind_order() -> None:
    component = _resource("monitoring", custom=False, type_="gpu-platform:index:Monitoring")
    chart = _resource("chart", parent=component.urn, type_="kubernetes:helm.sh/v3:Release")
    late = _resource("late", depends_on=[component.urn])  # waits for the component, so for its child chart
    plan = Plan("test", [late, component, chart], {})
    objects = [
        _obj("ConfigMap", "late-cm", late),
        _obj("Deployment", "app", chart),
        _obj("Job", "post", chart, hook="post-install"),
        _obj("Service", "app", chart),
        _obj("Job", "pre", chart, hook="pre-install"),
        _obj("CustomResourceDefinition", "things.example.io", chart),
        _obj("Namespace", "team", late),
        _obj("ServiceAccount", "app", chart),
        _obj("Widget", "w", chart),
    ]
    assert [o.label for o in engine_order(plan, objects)] == [
        "CustomResourceDefinition things.example.io",
        "Job pre",
        "ServiceAccount app",
        "Service app",
        "Deployment app",
        "Widget w",
        "Job post",
        "Namespace team",  # its resource's own objects in Helm's kind order: the Namespace first
        "ConfigMap late-cm",
    ]


def test_engine_order_creates_a_namespace_no_later_than_what_waits_for_it_and_no_sooner() -> None:
    """A resource that waits for the Namespace's resource comes after it; one that does not (a missing
    dependency) comes before it, as the engine may start it first."""
    namespace = _resource("ns", type_="kubernetes:core/v1:Namespace")
    waits = _resource("waits", depends_on=[namespace.urn])
    forgot = _resource("forgot")
    plan = Plan("test", [namespace, waits, forgot], {})
    objects = [_obj("Namespace", "team", namespace), _obj("ConfigMap", "waits", waits, namespace="team"), _obj("ConfigMap", "forgot", forgot, namespace="team")]
    assert [o.label for o in engine_order(plan, objects)] == ["ConfigMap team/forgot", "Namespace team", "ConfigMap team/waits"]


def test_engine_order_keeps_registration_order_between_independent_resources() -> None:
    first, second = _resource("first"), _resource("second")
    plan = Plan("test", [first, second], {})
    ordered = engine_order(plan, [_obj("ConfigMap", "b", second), _obj("ConfigMap", "a", first)])
    assert [o.name for o in ordered] == ["a", "b"]


def test_a_secret_data_placeholder_is_sent_as_base64_and_plain_values_are_left_as_they_are() -> None:
    raw = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {
            "masked": {**SECRET_SIG, "value": "offline-placeholder-pw"},
            "encoded": {**SECRET_SIG, "value": base64.b64encode(b"x").decode()},
            "plain": "not base64!",
        },
        "stringData": {"token": {**SECRET_SIG, "value": "t0ken"}},
    }
    body = _secret_shaped(raw)
    assert base64.b64decode(body["data"]["masked"]) == b"offline-placeholder-pw"
    assert body["data"]["encoded"] == base64.b64encode(b"x").decode()
    assert body["data"]["plain"] == "not base64!"  # the server judges what the stack wrote itself
    assert body["stringData"] == {"token": "t0ken"}


def test_stack_objects_are_the_plan_objects_with_one_field_manager_per_resource() -> None:
    from gpu_platform.infra.preview.manifests import kubernetes_objects

    plan = shipped_plan("dev-gke")
    plan_objects = kubernetes_objects(plan)
    objects = stack_objects(plan, plan_objects, None)
    assert len(objects) == len(plan_objects)
    # Every object in a namespace the stack creates comes after that Namespace: each component waits for it.
    created = {o.name: i for i, o in enumerate(objects) if o.kind == "Namespace"}
    early = [o.label for i, o in enumerate(objects) if o.namespace in created and i < created[o.namespace]]
    assert early == [], early
    managers = {o.owner: o.field_manager for o in objects}
    assert len(set(managers.values())) == len(managers)
    assert all(m.startswith("pulumi-kubernetes-") for m in managers.values())
    assert all(o.source.startswith("resource ") for o in objects)


def test_pool_nodes_carry_the_pools_labels_taints_and_kubelet_allocatable() -> None:
    from gpu_platform.components.pools.reserves import allocatable
    from gpu_platform.infra.apply.nodes import pool_nodes
    from gpu_platform.infra.stack.read import load_stack

    shapes = load_stack(PROJECT_DIR, "dev-gke").pool_shapes()
    nodes = pool_nodes(shapes)
    for shape in shapes:
        mine = [n for n in nodes if n["metadata"]["labels"]["gpu-platform.io/kwok-pool"] == shape.name]
        assert len(mine) == max(1, shape.min_nodes)
        node = mine[0]
        assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
        assert dict(shape.labels).items() <= node["metadata"]["labels"].items()
        assert dict(shape.placement.node_selector).items() <= node["metadata"]["labels"].items()
        assert node["spec"]["taints"] == [{"key": t.key, "value": t.value, "effect": t.effect.value} for t in shape.taints]
        kubelet = allocatable(shape)
        assert node["status"]["allocatable"]["cpu"] == f"{kubelet.capacity_cpu - kubelet.reserved_cpu}m"
        assert node["status"]["allocatable"]["memory"] == f"{kubelet.capacity_memory_mib - kubelet.reserved_memory_mib}Mi"
        assert node["status"]["allocatable"].get("nvidia.com/gpu") == (str(shape.schedulable_gpus_per_node) if shape.gpus_per_node else None)
        assert [n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in mine] == [shape.zone_names()[i % shape.zone_count] for i in range(len(mine))]
        assert node["metadata"]["labels"]["topology.kubernetes.io/region"] == "us-central1"
        if shape.gpus_per_node:
            assert node["metadata"]["labels"]["cloud.google.com/gke-accelerator"] == shape.accelerator
    assert pool_nodes(shapes[:1], {shapes[0].name: 3})[2]["metadata"]["name"].endswith("-kwok-2")


# --- usage errors: one line, exit 2, before the program runs ------------------------------------


def _preview(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["preview", "dev-gke", "--quiet", "--project-dir", str(PROJECT_DIR), *extra])
    captured = capsys.readouterr()
    return code, (captured.out + captured.err).strip()


def test_apply_local_without_go_or_binaries_says_what_it_needs(monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.apply import local

    monkeypatch.setenv("GPU_PLATFORM_KUBE_CACHE", str(tmp_path))  # nothing built here
    monkeypatch.delenv("GPU_PLATFORM_KUBE_BIN", raising=False)
    monkeypatch.setattr(local, "go_binary", lambda: None)
    code, out = _preview(capsys, "--apply", "local")
    assert code == 2
    assert out == f"gpu-platform: {local.NEEDS_GO}"


def test_apply_names_a_kubeconfig_that_is_not_a_file(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _preview(capsys, "--apply", str(tmp_path / "nope"))
    assert code == 2
    assert out == f"gpu-platform: --apply {tmp_path / 'nope'}: no such kubeconfig file; use --apply local or the path of a kubeconfig"


def test_apply_refuses_no_render_and_kwok_nodes_without_a_kubeconfig(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _preview(capsys, "--apply", "local", "--no-render")
    assert (code, out) == (2, "gpu-platform: --apply: applies what the releases and directories render too; drop --no-render")
    code, out = _preview(capsys, "--apply-kwok-nodes")
    assert (code, out) == (2, "gpu-platform: --apply-kwok-nodes: only with --apply KUBECONFIG")


def test_prune_is_only_for_a_kubeconfig_target(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _preview(capsys, "--prune")
    assert (code, out) == (2, "gpu-platform: --prune: only with --apply KUBECONFIG")
    code, out = _preview(capsys, "--apply", "local", "--prune")
    assert (code, out) == (2, "gpu-platform: --prune: only with --apply KUBECONFIG (--apply local starts an empty cluster every time)")


def test_a_custom_resource_carrying_a_pod_spec_is_expected_to_have_no_pods_here() -> None:
    from gpu_platform.infra.apply.scheduling import operator_pods

    cluster = {
        "apiVersion": "kubernetes.dask.org/v1",
        "kind": "DaskCluster",
        "metadata": {"name": "rapids", "namespace": "research"},
        "spec": {"scheduler": {"spec": {"containers": [{"name": "scheduler", "image": "rapids"}]}}},
    }
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "t4"}, "spec": {"nodeLabels": {"a": "b"}}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": []}}}}
    objects = [ApplyObject(body, "resource r") for body in (cluster, flavor, deployment)]
    assert operator_pods(objects) == ["operator: DaskCluster research/rapids (resource r): its pods are made by its operator, which runs no container here"]


def test_engine_order_a_child_waits_for_what_its_parent_component_depends_on() -> None:
    """A component that depends on the Namespace's resource registers after it, and its children after it:
    they are not sent before the namespace."""
    namespace = _resource("ns", type_="kubernetes:core/v1:Namespace")
    component = _resource("viewer", depends_on=[namespace.urn], custom=False, type_="gpu-platform:index:Viewer")
    binding = _resource("binding", parent=component.urn, type_="kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
    plan = Plan("test", [namespace, component, binding], {})
    objects = [_obj("Namespace", "team", namespace), _obj("RoleBinding", "viewers", binding, namespace="team")]
    assert [o.label for o in engine_order(plan, objects)] == ["Namespace team", "RoleBinding team/viewers"]
