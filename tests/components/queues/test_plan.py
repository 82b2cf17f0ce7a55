"""The queue plan (components/queues/plan.py): a flavor per pool, a ClusterQueue per tenant holding its quota and
the cohort the rest, and each problem the stack refuses with one line naming the key."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

from gpu_platform.components import KueueArgs
from gpu_platform.components.pools.shapes import tolerations
from gpu_platform.components.queues.args import TenantQueueArgs
from gpu_platform.components.queues.plan import TenantKind, flavor_name, plan_queues
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from tests.components.queues.test_kueue import STACKS, _bodies, _capacity, _config, _refusal, _tenant_quotas
from tests.conftest import shipped_plan
from tests.factories import prod_eks_raw, recipe_stack


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
