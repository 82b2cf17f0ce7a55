"""Kueue: the tenant queues equal what the typed tenants and pools say, on both shipped prod stacks; the
quota checks refuse in one line; every default has its test."""

from __future__ import annotations

import dataclasses
from typing import Any

import pulumi
import pytest
import yaml
from pydantic import ValidationError

from gpu_platform.components import GpuGkeCluster, Kueue, KueueArgs
from gpu_platform.components.pools.shapes import NodePoolShape, tolerations
from gpu_platform.components.queues.args import ReclaimWithinCohort, TenantQueueArgs, WithinClusterQueue
from gpu_platform.components.queues.kueue import manager_config
from gpu_platform.components.queues.plan import QueueTenant, TenantKind, flavor_name, plan_queues
from gpu_platform.infra.preview.engine import Plan
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from gpu_platform.infra.stack.read import load_stack
from tests.conftest import PROJECT_DIR, Engine, settled_tree, shipped_plan, upstream_or_skip
from tests.factories import prod_eks_raw, recipe_stack

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
def test_flavors_are_the_pools_placement(stack: str) -> None:
    config, plan = _config(stack), shipped_plan(stack)
    flavors = {f["metadata"]["name"]: f["spec"] for f in _bodies(plan, "ResourceFlavor")}
    expected = {}
    for pool in config.pool_shapes():
        spec: dict[str, Any] = {}
        if pool.placement.node_selector:
            spec["nodeLabels"] = pool.placement.node_selector
        if pool.placement.tolerations:
            spec["tolerations"] = tolerations(pool.placement.tolerations)
        expected[flavor_name(pool)] = spec
    assert flavors == expected
    # CPU pools first: a pod asking for no GPU is admitted onto a CPU pool, never pinned to a GPU pool.
    order = [f["name"] for f in _bodies(plan, "ClusterQueue")[0]["spec"]["resourceGroups"][0]["flavors"]]
    gpus = {flavor_name(p): p.gpus_per_node for p in config.pool_shapes()}
    assert [gpus[name] > 0 for name in order] == sorted(gpus[name] > 0 for name in order)


@pytest.mark.parametrize("stack", STACKS)
def test_a_cluster_queue_per_tenant_holds_its_quota_and_the_cohort_the_rest(stack: str) -> None:
    config, plan = _config(stack), shipped_plan(stack)
    quotas = _tenant_quotas(config)
    assert {t.kind for t in config.queue_tenants()} == {TenantKind.DASK, TenantKind.KUBEFLOW}
    queues = {q["metadata"]["name"]: q["spec"] for q in _bodies(plan, "ClusterQueue")}
    assert set(queues) == set(quotas)
    pools = {flavor_name(p): p for p in config.pool_shapes()}
    held = dict.fromkeys(pools, 0)
    for tenant, spec in queues.items():
        assert spec["cohortName"] == "gpu-platform"
        assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": tenant}}
        assert spec["fairSharing"] == {"weight": "1"}
        assert spec["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
        (group,) = spec["resourceGroups"]
        assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
        assert {f["name"] for f in group["flavors"]} == set(pools)  # every flavor, so the tenant may borrow
        nominal = {}
        for flavor in group["flavors"]:
            quantities = {r["name"]: r for r in flavor["resources"]}
            nominal[flavor["name"]] = quantities["nvidia.com/gpu"]["nominalQuota"]
            assert "borrowingLimit" not in quantities["nvidia.com/gpu"]
            assert "lendingLimit" not in quantities["nvidia.com/gpu"]
        assert sum(nominal.values()) == quotas[tenant]  # the ResourceQuota and the queue say the same
        # all of it of one GPU type: the type of the pool the tenant's pods run on
        assert len({pools[f].accelerator for f, n in nominal.items() if n}) == 1
        for name, count in nominal.items():
            held[name] += count
    (cohort,) = _bodies(plan, "Cohort")
    for flavor in cohort["spec"].get("resourceGroups", [{"flavors": []}])[0]["flavors"]:
        held[flavor["name"]] += {r["name"]: r["nominalQuota"] for r in flavor["resources"]}["nvidia.com/gpu"]
    # tenants and the cohort together hold every pool's GPUs at its maximum size, no more
    assert held == {name: _capacity(pool, config.shared_gpus()) for name, pool in pools.items()}


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


# --- bad input: one line each, naming the key ------------------------------------------------------


def _refusal(queues: dict[str, Any], **changes: Any) -> list[str]:
    raw = {**prod_eks_raw(), "queues": queues, **changes}
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate(raw)
    return format_validation_error(info.value, StackConfig, "gpu-platform")


def test_fails_when_a_tenant_quota_names_a_gpu_type_no_pool_has() -> None:
    assert _refusal({"tenants": [{"name": "analytics", "gpus": {"nvidia-h100-80gb": 4}}]}) == [
        "gpu-platform:queues.tenants[0].gpus.nvidia-h100-80gb: tenant analytics has a quota of GPU type "
        "nvidia-h100-80gb, which no pool has; use one of nvidia-tesla-t4, nvidia-tesla-v100 (got 4)",
    ]


def test_fails_when_the_cohort_exceeds_the_pools_without_oversubscription() -> None:
    raw = prod_eks_raw()
    raw["kubeflow"]["install"]["tenants"] = [{"name": "team-vision", "owner": "v@example.com", "gpus": 80}]
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate({**raw, "queues": {}})
    assert format_validation_error(info.value, StackConfig, "gpu-platform") == [
        "gpu-platform:queues.oversubscription: the tenants' nominal nvidia-tesla-v100 GPUs (104) exceed what the pools "
        "hold at their maximum size (90: small 30, large 60); lower the tenants' quotas, raise the pools' max_nodes, "
        "or set oversubscription: true (got false)",
    ]
    config = StackConfig.model_validate({**raw, "queues": {"oversubscription": True}})
    assert config.queues is not None
    plan = plan_queues(config.queues, config.queue_tenants(), config.pool_shapes())
    assert plan.problems == []
    assert sum(plan.nominal_gpus["team-vision"].values()) == 80  # allowed: all of it, the excess on its pool


def test_fails_when_a_fair_sharing_weight_is_zero() -> None:
    assert _refusal({"tenants": [{"name": "research", "weight": 0}]}) == [
        "gpu-platform:queues.tenants[0].weight: Input should be greater than 0 (got 0)",
    ]


def test_fails_when_an_override_names_no_tenant() -> None:
    assert _refusal({"tenants": [{"name": "nobody"}]}) == [
        "gpu-platform:queues.tenants[0].name: tenant nobody is neither a Dask nor a Kubeflow tenant of this stack; "
        'use one of analytics, research, team-nlp, team-vision (got "nobody")',
    ]


def test_fails_when_the_nominal_gpus_exceed_the_tenants_resource_quota() -> None:
    assert _refusal({"tenants": [{"name": "research", "gpus": {"nvidia-tesla-v100": 9}}]}) == [
        "gpu-platform:queues.tenants[0].gpus: tenant research's nominal GPUs (9) exceed its ResourceQuota of 8 GPUs, "
        "which refuses the pods beyond it before Kueue sees them; lower gpus or raise the tenant's quota (got 9)",
    ]


def test_fails_when_a_tenant_is_listed_twice() -> None:
    lines = _refusal({"tenants": [{"name": "research"}, {"name": "research"}]})
    assert lines == ['gpu-platform:queues.tenants: tenants lists a tenant twice (research, research) (got [{"name": "research"}, {"name": "research"}])']


def test_fails_when_a_gpu_count_is_negative() -> None:
    (line,) = _refusal({"tenants": [{"name": "research", "gpus": {"nvidia-tesla-v100": -1}}]})
    assert line.startswith("gpu-platform:queues.tenants[0].gpus: gpus nvidia-tesla-v100: -1 is negative")


# --- defaults and overrides ------------------------------------------------------------------------


def test_kueue_defaults() -> None:
    args = KueueArgs()
    assert (args.namespace, args.chart_version, args.cohort, args.oversubscription) == ("kueue-system", "0.19.2", "gpu-platform", False)
    assert args.reclaim_within_cohort is ReclaimWithinCohort.ANY
    assert args.within_cluster_queue is WithinClusterQueue.LOWER_PRIORITY
    assert args.tenants == []
    assert StackConfig.model_validate({**prod_eks_raw()}).queues is not None  # the shipped stack has queues
    raw = prod_eks_raw()
    raw.pop("queues")
    assert StackConfig.model_validate(raw).queues is None  # none unless the stack asks


def test_tenant_queue_defaults_come_from_the_tenants_quota() -> None:
    override = TenantQueueArgs(name="t")
    assert (override.gpus, override.cpus, override.memory_gib, override.borrowing_limit, override.lending_limit, override.weight) == (
        None,
        None,
        None,
        None,
        None,
        1.0,
    )
    config = _config("prod-gke")
    plan = plan_queues(KueueArgs(), config.queue_tenants(), config.pool_shapes())
    analytics = plan.cluster_queues[0]["spec"]["resourceGroups"][0]["flavors"]
    cpu = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in analytics}
    # analytics: cpu_quota "64", memory_quota 512Gi, capped by what each pool holds at its maximum size
    assert cpu["cpu-system"] == {"cpu": "64", "memory": f"{min(512 * 1024, 32768 * 9)}Mi", "nvidia.com/gpu": 0}
    assert cpu["nvidia-tesla-t4-scheduler"]["cpu"] == "12"  # 2 vCPUs x 6 nodes, below the quota
    research = plan.cluster_queues[1]["spec"]["resourceGroups"][0]["flavors"]
    a100 = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in research}["nvidia-tesla-a100-a100"]
    assert a100 == {"cpu": str(12 * 24), "memory": f"{87040 * 24}Mi", "nvidia.com/gpu": 8}  # no CPU quota: the pool's


def test_overrides_set_limits_weight_preemption_and_quotas() -> None:
    config = _config("prod-eks")
    args = KueueArgs(
        cohort="ml",
        reclaim_within_cohort="LowerPriority",
        within_cluster_queue="Never",
        tenants=[
            TenantQueueArgs(
                name="research", gpus={"nvidia-tesla-v100": 4, "nvidia-tesla-t4": 1}, cpus=8, memory_gib=32, borrowing_limit=2, lending_limit=1, weight=2.5
            )
        ],
    )
    plan = plan_queues(args, config.queue_tenants(), config.pool_shapes())
    spec = next(q["spec"] for q in plan.cluster_queues if q["metadata"]["name"] == "research")
    assert spec["cohortName"] == "ml" and plan.cohort["metadata"]["name"] == "ml"
    assert spec["fairSharing"] == {"weight": "2.5"}
    assert spec["preemption"] == {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "Never"}
    flavors = {f["name"]: {r["name"]: r for r in f["resources"]} for f in spec["resourceGroups"][0]["flavors"]}
    assert flavors["nvidia-tesla-v100-small"]["nvidia.com/gpu"] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": 4,
        "borrowingLimit": 2,
        "lendingLimit": 1,
    }
    assert flavors["nvidia-tesla-t4-scheduler"]["nvidia.com/gpu"]["nominalQuota"] == 1
    assert flavors["nvidia-tesla-v100-large"]["nvidia.com/gpu"]["lendingLimit"] == 0  # nothing there to lend
    assert flavors["cpu-system"]["cpu"]["nominalQuota"] == "8"
    assert flavors["cpu-system"]["memory"]["nominalQuota"] == f"{32 * 1024}Mi"


def test_a_shared_pool_holds_gpus_times_clients() -> None:
    """The recipe's scheduler class is time-sliced four ways: its 4 T4 nodes are 16 nvidia.com/gpu to Kueue."""
    config = recipe_stack()
    assert config.shared_gpus() == {"scheduler": 4}
    assert _config("prod-gke").shared_gpus() == {}
    assert config.queues is not None
    plan = plan_queues(config.queues, config.queue_tenants(), config.pool_shapes())
    cohort = {f["name"]: f["resources"][2]["nominalQuota"] for f in plan.cohort["spec"]["resourceGroups"][0]["flavors"]}
    assert cohort["nvidia-tesla-t4-scheduler"] == 16
    # The count is the shape's: the same pools without their sharing hold their physical GPUs.
    physical = [dataclasses.replace(p, gpu_sharing=None) for p in config.pool_shapes()]
    unshared = plan_queues(config.queues, config.queue_tenants(), physical)
    assert {f["name"]: f["resources"][2]["nominalQuota"] for f in unshared.cohort["spec"]["resourceGroups"][0]["flavors"]}["nvidia-tesla-t4-scheduler"] == 4


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
