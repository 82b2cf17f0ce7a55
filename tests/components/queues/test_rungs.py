"""Kueue over a capacity ladder (issue 38 item 2, Kueue's part): a pool whose stated ladder no capacity names gets one
ResourceFlavor per rung, in the ladder's order, each selecting its rung's node pool; a tenant's quota on the pool is
split over the rungs in that order (never repeated); the Cohort holds each rung's remainder; the queues state the
flavorFungibility that makes a workload fall through the rungs in order. A pool of spot_then_on_demand (named, as
the shipped stacks do, or stated as [spot, on_demand]) keeps one flavor over its rungs. Read from the stack's one plan
(StackConfig.queues_plan, which the program and every command read)."""

from __future__ import annotations

from typing import Any

from gpu_platform.components.queues.plan import FLAVOR_FUNGIBILITY, flavor_slots, rung_flavors
from gpu_platform.infra.stack.model import StackConfig
from tests.components.queues.test_dws import _findings
from tests.factories import a100_pool, dws_pool, eks_stack, gke, gpu_class, t4_pool

LADDER = [
    {"kind": "reservation", "reservation": "a100-training"},
    {"kind": "flex_start", "max_run_duration": "24h"},
    {"kind": "spot"},
    {"kind": "on_demand"},
]
RUNGS = ["a100-reserved", "a100-flex", "a100-spot", "a100-on-demand"]
"""The ladder pool's node pools, one per rung, in the ladder's order (the GKE plan's names)."""
FLAVORS = [f"nvidia-tesla-a100-{n}" for n in RUNGS]


def ladder_pool(**overrides: Any) -> dict[str, Any]:
    """An A100 pool of 1-GPU nodes with the four-rung ladder: the first rung up to 8 nodes, each fallback up to 4."""
    pool = a100_pool(capacity_ladder=LADDER, fallback_max_nodes=4, **overrides)
    del pool["capacity"]
    return pool


def ladder_stack(*pools: dict[str, Any], tenants: list[dict[str, Any]] | None = None, **extra: Any) -> StackConfig:
    """A GKE stack whose first GPU pool (the Dask tenants' home) is the ladder pool, with two tenants and the queues."""
    raw: dict[str, Any] = {
        "cloud": "gcp",
        "gke": gke(gpu_pools=list(pools) or [ladder_pool(), t4_pool()]),
        "dask": {"tenants": tenants or [{"name": "team-a", "gpu_quota": 10}, {"name": "team-b", "gpu_quota": 4}]},
        "queues": {},
    }
    raw.update(extra)
    return StackConfig.model_validate(raw)


def _queue(config: StackConfig, tenant: str) -> dict[str, Any]:
    plan = config.queues_plan
    assert plan is not None and not plan.problems, plan and plan.problems
    (queue,) = [q for q in plan.cluster_queues if q["metadata"]["name"] == tenant]
    spec: dict[str, Any] = queue["spec"]
    return spec


def _gpus(entries: list[dict[str, Any]]) -> dict[str, int]:
    return {e["name"]: next(r["nominalQuota"] for r in e["resources"] if r["name"] == "nvidia.com/gpu") for e in entries}


def test_a_stated_ladder_gets_one_flavor_per_rung_in_its_order_each_selecting_its_node_pool() -> None:
    config = ladder_stack()
    plan = config.queues_plan
    assert plan is not None
    flavors = {f["metadata"]["name"]: f["spec"] for f in plan.flavors}
    assert [n for n in flavors if n.startswith("nvidia-tesla-a100")] == FLAVORS
    for name, node_pool in zip(FLAVORS, RUNGS, strict=True):
        assert flavors[name]["nodeLabels"] == {"cloud.google.com/compute-class": "a100", "cloud.google.com/gke-nodepool": node_pool}
        # The class's taint is tolerated, as the pool's pods tolerate it.
        assert {"key": "cloud.google.com/compute-class", "operator": "Equal", "value": "a100", "effect": "NoSchedule"} in flavors[name]["tolerations"]
    # Every queue lists the rungs' flavors in the ladder's order, the other pools' flavors beside them.
    for queue in plan.cluster_queues:
        names = [f["name"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]]
        assert [n for n in names if n in FLAVORS] == FLAVORS
        assert "nvidia-tesla-t4-t4" in names


def test_a_tenants_quota_is_split_over_the_rungs_in_the_ladders_order() -> None:
    # The rungs hold 8, 4, 4 and 4 GPUs (1 GPU a node). team-a's 10 fill the reservation's 8, then 2 of flex-start;
    # team-b's 4 take flex-start's other 2, then 2 of spot. Neither quota is repeated on another rung.
    config = ladder_stack()
    a, b = (_gpus(_queue(config, t)["resourceGroups"][0]["flavors"]) for t in ("team-a", "team-b"))
    assert [a[f] for f in FLAVORS] == [8, 2, 0, 0]
    assert [b[f] for f in FLAVORS] == [0, 2, 2, 0]
    assert sum(a.values()) == 10 and sum(b.values()) == 4
    # Each rung's CPU and memory quota is what its own node pool holds at its maximum (a2-highgpu-1g: 12 vCPUs).
    entries = {e["name"]: e for e in _queue(config, "team-a")["resourceGroups"][0]["flavors"]}
    cpu = {f: next(r["nominalQuota"] for r in entries[f]["resources"] if r["name"] == "cpu") for f in FLAVORS}
    assert cpu == {FLAVORS[0]: "96", FLAVORS[1]: "48", FLAVORS[2]: "48", FLAVORS[3]: "48"}
    # The Cohort holds what no tenant has as nominal quota, rung by rung: 0 reserved, 0 flex, 2 spot, 4 on-demand.
    plan = config.queues_plan
    assert plan is not None
    cohort = _gpus(plan.cohort["spec"]["resourceGroups"][0]["flavors"])
    assert [cohort.get(f, 0) for f in FLAVORS] == [0, 0, 2, 4]
    assert plan.nominal_gpus["team-a"] == {FLAVORS[0]: 8, FLAVORS[1]: 2}


def test_queues_with_rung_flavors_state_the_fungibility_that_falls_through_the_rungs() -> None:
    assert FLAVOR_FUNGIBILITY == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    config = ladder_stack()
    for tenant in ("team-a", "team-b"):
        assert _queue(config, tenant)["flavorFungibility"] == FLAVOR_FUNGIBILITY


def test_a_pool_of_spot_then_on_demand_keeps_one_flavor_and_no_fungibility() -> None:
    # The shipped stacks' pools: one flavor selecting the compute class, so GKE falls back by capacity.
    config = ladder_stack(a100_pool(), t4_pool())
    plan = config.queues_plan
    assert plan is not None
    (a100,) = [s for s in config.pool_shapes() if s.name == "a100"]
    assert a100.rung_nodes == () and not rung_flavors(a100)
    assert [s.name for s in flavor_slots(a100)] == ["nvidia-tesla-a100-a100"]
    assert [f["spec"]["nodeLabels"] for f in plan.flavors if f["metadata"]["name"] == "nvidia-tesla-a100-a100"] == [{"cloud.google.com/compute-class": "a100"}]
    assert "flavorFungibility" not in _queue(config, "team-a")
    # The same two rungs stated as a ladder plan exactly as the capacity that names them: one flavor, the same queues.
    stated = a100_pool(capacity_ladder=[{"kind": "spot"}, {"kind": "on_demand"}])
    del stated["capacity"]
    as_ladder = ladder_stack(stated, t4_pool())
    assert as_ladder.queues_plan == plan
    # On-demand before spot is no capacity's ladder: a flavor per rung, in that order.
    inverted = a100_pool(capacity_ladder=[{"kind": "on_demand"}, {"kind": "spot"}])
    del inverted["capacity"]
    (shape,) = [s for s in ladder_stack(inverted, t4_pool()).pool_shapes() if s.name == "a100"]
    assert [s.name for s in flavor_slots(shape)] == ["nvidia-tesla-a100-a100-on-demand", "nvidia-tesla-a100-a100-spot"]


def test_a_one_rung_ladder_keeps_one_flavor() -> None:
    config = ladder_stack(t4_pool(capacity_ladder=[{"kind": "reservation", "reservation": "t4-team"}]))
    plan = config.queues_plan
    assert plan is not None
    assert [f["metadata"]["name"] for f in plan.flavors if "t4" in f["metadata"]["name"]] == ["nvidia-tesla-t4-t4"]
    assert "flavorFungibility" not in _queue(config, "team-a")


def test_beside_a_queued_pool_the_check_stays_on_the_queued_flavor_only() -> None:
    config = ladder_stack(ladder_pool(), dws_pool())
    spec = _queue(config, "team-a")
    assert spec["admissionChecksStrategy"] == {"admissionChecks": [{"name": "queued-provisioning", "onFlavors": ["nvidia-tesla-a100-a100-dws"]}]}
    names = [f["name"] for f in spec["resourceGroups"][0]["flavors"]]
    assert names[-5:] == [*FLAVORS, "nvidia-tesla-a100-a100-dws"]
    # Same GPU type: team-a's quota fills its home pool's rungs before the queued pool.
    assert [_gpus(spec["resourceGroups"][0]["flavors"])[f] for f in [*FLAVORS, "nvidia-tesla-a100-a100-dws"]] == [8, 2, 0, 0, 0]


def test_the_rung_flavors_and_queues_match_kueues_crds() -> None:
    plan = ladder_stack().queues_plan
    assert plan is not None
    assert _findings([*plan.flavors, plan.cohort, *plan.cluster_queues, *plan.local_queues]) == []


def _eks_stack(ladder: list[dict[str, Any]]) -> StackConfig:
    cls = gpu_class(capacity_ladder=ladder)
    return StackConfig.model_validate({**eks_stack(classes=[cls]), "dask": {"tenants": [{"name": "team-a", "gpu_quota": 3}]}, "queues": {}})


def test_an_eks_class_ladder_gets_a_flavor_per_rung_by_its_capacity_label() -> None:
    # small: p3.2xlarge (1 V100), at most 4 nodes on each rung; team-a's 3 GPUs all on the reservation.
    config = _eks_stack([{"kind": "reservation", "reservation": "cr-0123456789abcdef0"}, {"kind": "spot"}, {"kind": "on_demand"}])
    plan = config.queues_plan
    assert plan is not None and not plan.problems
    labels = {f["metadata"]["name"]: f["spec"]["nodeLabels"] for f in plan.flavors if "small" in f["metadata"]["name"]}
    assert labels == {
        f"nvidia-tesla-v100-small-{slug}": {"gpu-platform.io/gpu-class": "small", "gpu-platform.io/capacity": label}
        for slug, label in (("reserved", "reserved"), ("spot", "spot"), ("on-demand", "on-demand"))
    }
    assert [_gpus(_queue(config, "team-a")["resourceGroups"][0]["flavors"])[n] for n in labels] == [3, 0, 0]


def test_an_eks_class_with_two_named_reservations_keeps_one_flavor() -> None:
    # Both reservation rungs' nodes are labelled reserved: no flavor could select one apart from the other.
    config = _eks_stack(
        [{"kind": "reservation", "reservation": "cr-0123456789abcdef0"}, {"kind": "reservation", "reservation": "cr-0a1b2c3d4e5f60718"}, {"kind": "on_demand"}]
    )
    plan = config.queues_plan
    assert plan is not None and not plan.problems
    (small,) = [s for s in config.pool_shapes() if s.name == "small"]
    assert len(small.rungs) == 3 and small.rung_nodes == ()
    assert [f["metadata"]["name"] for f in plan.flavors if "small" in f["metadata"]["name"]] == ["nvidia-tesla-v100-small"]
