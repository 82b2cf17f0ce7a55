"""Kueue: the tenant queues equal what the typed tenants and pools say, on both shipped prod stacks; the
quota checks refuse in one line; every default has its test."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
import yaml
from pydantic import ValidationError

from gpu_platform.components import GpuGkeCluster, Kueue, KueueArgs
from gpu_platform.components.pools.shapes import NodePoolShape
from gpu_platform.components.queues.kueue import manager_config
from gpu_platform.components.queues.plan import QueueTenant, TenantKind, plan_queues
from gpu_platform.infra.preview.engine import Plan
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from gpu_platform.infra.stack.read import load_stack
from tests.conftest import PROJECT_DIR, Engine, settled_tree, shipped_plan, upstream_or_skip
from tests.factories import prod_eks_raw

STACKS = ("prod-gke", "prod-eks")


def _config(stack: str) -> StackConfig:
    return load_stack(PROJECT_DIR, stack)


def _bodies(plan: Plan, kind: str) -> list[dict[str, Any]]:
    return [r.inputs for r in plan.resources if r.type == f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}"]


def _tenant_quotas(config: StackConfig) -> dict[str, int]:
    """tenant -> the GPUs of its ResourceQuota, read from the stack's own sections."""
    quotas = {t.name: t.gpu_quota for t in (config.dask.tenants if config.dask else [])}
    quotas |= {t.name: t.gpus for t in (config.kubeflow.install.tenants if config.kubeflow else [])}
    return quotas


def _capacity(pool: NodePoolShape, shared: dict[str, int]) -> int:
    """Worked out by hand from the stack's sharing (not the shape's property, which the plan reads)."""
    return pool.max_nodes * pool.gpus_per_node * shared.get(pool.name, 1)


# --- the shipped stacks run their tenants through Kueue ------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_each_tenant_namespace_gets_a_default_local_queue_and_only_those_are_queued(stack: str) -> None:
    config, plan = _config(stack), shipped_plan(stack)
    tenants = sorted(_tenant_quotas(config))
    local = sorted((q["metadata"]["namespace"], q["metadata"]["name"], q["spec"]["clusterQueue"]) for q in _bodies(plan, "LocalQueue"))
    assert local == [(t, "default", t) for t in tenants]
    (release,) = [r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"]
    manager = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert manager["managedJobsNamespaceSelector"] == {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": tenants}],
    }
    assert {"pod", "deployment"} <= set(manager["integrations"]["frameworks"])
    assert "manageJobsWithoutQueueName" not in manager  # the LocalQueue default admits them, nothing else is taken


def test_without_tenants_kueue_manages_no_namespace_with_a_selector_the_server_takes() -> None:
    """Queues on a stack with no tenant (the feature matrix's queues with GPU sharing): ``In`` with no values is
    refused by the API server in every webhook the chart copies the selector into; DoesNotExist on the name label
    every namespace carries selects none."""
    manager = manager_config(plan_queues(KueueArgs(), [], []))
    assert manager["managedJobsNamespaceSelector"] == {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "DoesNotExist"}]}


def test_the_manager_config_is_the_charts_with_only_the_queueing_settings_changed() -> None:
    import tarfile

    with tarfile.open(upstream_or_skip() / "charts" / "kueue-0.19.2.tgz") as archive:
        member = archive.extractfile("kueue/values.yaml")
        assert member is not None
        values = yaml.safe_load(member.read())
    upstream = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    ours = manager_config(plan_queues(KueueArgs(), [], []))
    changed = {k for k in ours.keys() | upstream.keys() if ours.get(k) != upstream.get(k)}
    assert changed == {"integrations", "managedJobsNamespaceSelector", "fairSharing", "metrics"}
    # The metrics address is the chart's (its metrics Service targets it); only the quota gauges are added.
    assert ours["metrics"] == {**upstream["metrics"], "enableClusterQueueResources": True}


@pulumi.runtime.test
def test_the_component_declares_the_plan_on_the_cluster(engine: Engine) -> pulumi.Output[Any]:
    config = _config("prod-gke")
    assert config.gke is not None and config.queues is not None
    cluster = GpuGkeCluster("gke", config.gke)
    queues = Kueue("q", config.queues, tenants=config.queue_tenants(), cluster=cluster)

    def check(_: Any) -> None:
        release = engine.resource("q-release").inputs
        # An OCI chart by its full reference, no repositoryOpts (components/core/kube.py chart_source).
        assert (release["chart"], release["version"], release["namespace"]) == ("oci://registry.k8s.io/kueue/charts/kueue", "0.19.2", "kueue-system")
        assert "repositoryOpts" not in release
        plan = plan_queues(config.queues, config.queue_tenants(), config.pool_shapes())
        for body in [*plan.flavors, plan.cohort, *plan.cluster_queues]:
            role = {"ResourceFlavor": "flavor", "Cohort": "cohort", "ClusterQueue": "queue"}[body["kind"]]
            recorded = engine.resource(f"q-{role}-{body['metadata']['name']}")
            assert recorded.inputs["spec"] == body["spec"]
            assert "q-release" in {d.rsplit("::", 1)[-1] for d in recorded.depends_on}  # after the CRDs
        for body in plan.local_queues:
            recorded = engine.resource(f"q-local-queue-{body['metadata']['namespace']}")
            assert recorded.inputs["metadata"]["namespace"] == body["metadata"]["namespace"]
        assert queues.cluster_queues == ["analytics", "research", "team-vision", "team-nlp"]
        assert "enablePrometheus" not in release["values"]  # no Prometheus given: no ServiceMonitor (no CRD for it)

    return settled_tree(queues).apply(check)


@pulumi.runtime.test
def test_with_a_prometheus_the_charts_service_monitor_is_on_and_waits_for_its_crd(engine: Engine) -> pulumi.Output[Any]:
    config = _config("prod-gke")
    assert config.gke is not None and config.queues is not None
    cluster = GpuGkeCluster("gke", config.gke)
    crd = pulumi.CustomResource("kubernetes:helm.sh/v3:Release", "monitoring")  # what installs the ServiceMonitor CRD
    queues = Kueue("q", config.queues, tenants=config.queue_tenants(), cluster=cluster, service_monitor_crd=crd)

    def check(_: Any) -> None:
        release = engine.resource("q-release")
        assert release.inputs["values"]["enablePrometheus"] is True
        assert engine.resource("monitoring").urn in release.depends_on
        manager = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
        assert manager["metrics"]["enableClusterQueueResources"] is True  # the quota gauges `report` reads

    return settled_tree(queues).apply(check)


@pulumi.runtime.test
def test_the_component_refuses_a_quota_the_pools_cannot_hold(engine: Engine) -> pulumi.Output[Any]:
    config = _config("prod-gke")
    assert config.gke is not None
    cluster = GpuGkeCluster("gke", config.gke)
    tenants = [QueueTenant("big", TenantKind.DASK, 1000, None, None, "a100")]
    with pytest.raises(pulumi.InputPropertyError) as info:
        Kueue("q", KueueArgs(), tenants=tenants, cluster=cluster)
    assert info.value.property_path == "args.oversubscription"
    return settled_tree(cluster).apply(lambda _: None if "q-release" not in engine.names() else pytest.fail("registered"))


# --- helpers the args and plan tests share ---------------------------------------------------------


def _refusal(queues: dict[str, Any], **changes: Any) -> list[str]:
    raw = {**prod_eks_raw(), "queues": queues, **changes}
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate(raw)
    return format_validation_error(info.value, StackConfig, "gpu-platform")


# --- the platform edition's profiles --------------------------------------------------------------


def test_the_platform_editions_profiles_are_left_out_of_queueing_and_the_preview_says_so() -> None:
    """On the platform edition the profile controller makes each profile's namespace after Pulumi has applied,
    so no LocalQueue can be declared there (the real API server refuses it): those tenants are not queued, the
    Dask tenants still are, and the preview says which profiles are left out."""
    raw = prod_eks_raw()
    raw["kubeflow"]["install"].update(edition="platform", dex_user_email="ml-admin@corp.example")
    raw["kubeflow"]["install"].pop("release", None)
    config = StackConfig.model_validate({**raw, "queues": {}})
    profiles = [t.name for t in config.kubeflow.install.tenants]
    queued = [t.name for t in config.queue_tenants()]
    assert profiles and not set(profiles) & set(queued)
    assert set(queued) == {t.name for t in config.dask.tenants}
    assert config.unqueued_profiles() == profiles
    (line,) = [n for n in config.notices() if n.startswith("gpu-platform:queues:")]
    assert all(p in line for p in profiles) and "not queued" in line
    pipelines = StackConfig.model_validate({**prod_eks_raw(), "queues": {}})
    assert pipelines.unqueued_profiles() == [] and {t.name for t in pipelines.kubeflow.install.tenants} <= {t.name for t in pipelines.queue_tenants()}
