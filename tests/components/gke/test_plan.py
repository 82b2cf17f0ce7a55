"""The GKE pool plan: one pure pass that the component and every reader of the pools consume."""

from __future__ import annotations

from gpu_platform.components.core.labels import PoolRole
from gpu_platform.components.gke.args import GpuGkeClusterArgs
from gpu_platform.components.gke.plan import plan_pools
from gpu_platform.components.pools.reserves import ReserveFormula
from gpu_platform.components.pools.shapes import GPU_TAINT, Taint, TaintEffect
from tests.factories import a100_pool, gke, t4_pool

TRAINING = {"key": "gpu-platform.io/workload", "value": "training", "effect": "NoSchedule"}


def _plan() -> list:
    args = GpuGkeClusterArgs.model_validate(gke(scheduler_pool={}, gpu_pools=[t4_pool(taints=[TRAINING]), a100_pool(fallback_max_nodes=3)]))
    return plan_pools(args)


def test_pools_come_in_creation_order_with_their_roles() -> None:
    planned = _plan()
    assert [(p.args.name, p.role) for p in planned] == [
        ("system", PoolRole.SYSTEM),
        ("scheduler", PoolRole.SCHEDULER),
        ("t4", PoolRole.GPU),
        ("a100", PoolRole.GPU),
    ]
    assert [p.gpu is None for p in planned] == [True, False, False, False]


def test_a_spot_then_on_demand_pool_is_two_node_pools_and_a_compute_class() -> None:
    a100 = _plan()[3]
    assert [(n.gke_name, n.spot, n.bounds.min_nodes, n.bounds.max_nodes) for n in a100.node_pools] == [
        ("a100-spot", True, 0, 8),
        ("a100-on-demand", False, 0, 3),
    ]
    class_taint = Taint(key="cloud.google.com/compute-class", value="a100", effect=TaintEffect.NO_SCHEDULE)
    assert a100.compute_class == "a100" and a100.taints == (GPU_TAINT, class_taint)
    assert a100.labels == {"gpu-platform.io/pool-role": "gpu", "cloud.google.com/compute-class": "a100"}
    assert a100.shape.placement.node_selector == {"cloud.google.com/compute-class": "a100"}
    assert (a100.shape.min_nodes, a100.shape.max_nodes) == (0, 11), "spot and fallback maxima add up"


def test_other_pools_are_one_node_pool_selected_by_name() -> None:
    _, scheduler, t4, _ = _plan()
    assert [n.gke_name for n in t4.node_pools] == ["t4"] and t4.compute_class is None
    assert t4.taints == (GPU_TAINT, Taint.model_validate(TRAINING))
    assert t4.shape.placement.node_selector == {"cloud.google.com/gke-nodepool": "t4"}
    assert scheduler.labels["dedicated"] == "scheduler"
    assert (t4.shape.per_zone_over, t4.shape.reserve_formula) == (2, ReserveFormula.GKE)


def test_the_args_pool_shapes_are_the_plans() -> None:
    args = GpuGkeClusterArgs.model_validate(gke(scheduler_pool={}, gpu_pools=[t4_pool(), a100_pool()]))
    assert args.pool_shapes() == [p.shape for p in plan_pools(args)]


LADDER = [
    {"kind": "reservation", "reservation": "a100-res"},
    {"kind": "flex_start", "max_run_duration": "24h"},
    {"kind": "spot"},
    {"kind": "on_demand"},
]


def test_a_ladder_is_one_node_pool_per_rung_in_its_order() -> None:
    pool = a100_pool(capacity_ladder=LADDER, fallback_max_nodes=2)
    del pool["capacity"]
    a100 = plan_pools(GpuGkeClusterArgs.model_validate(gke(gpu_pools=[pool])))[1]
    assert [(n.gke_name, str(n.rung), n.spot, n.bounds.min_nodes, n.bounds.max_nodes) for n in a100.node_pools] == [
        ("a100-reserved", "reservation(a100-res)", False, 0, 8),
        ("a100-flex", "flex_start(24h)", False, 0, 2),
        ("a100-spot", "spot", True, 0, 2),
        ("a100-on-demand", "on_demand", False, 0, 2),
    ]
    assert a100.compute_class == "a100"
    assert a100.shape.rungs == tuple(a100.args.capacity_ladder or ())
    assert (a100.shape.max_nodes, a100.shape.capacity.value) == (14, "spot_then_on_demand")


def test_a_one_rung_ladder_is_one_node_pool_selected_by_name() -> None:
    pool = t4_pool(capacity_ladder=[{"kind": "flex_start"}], autoscaling={"scope": "total", "min_nodes": 0, "max_nodes": 4})
    t4 = plan_pools(GpuGkeClusterArgs.model_validate(gke(gpu_pools=[pool])))[1]
    assert [(n.gke_name, str(n.rung)) for n in t4.node_pools] == [("t4", "flex_start(168h)")]
    assert t4.compute_class is None and t4.shape.placement.node_selector == {"cloud.google.com/gke-nodepool": "t4"}


def test_a_named_strategy_plans_as_its_ladder() -> None:
    named = plan_pools(GpuGkeClusterArgs.model_validate(gke(gpu_pools=[a100_pool()])))[1]
    pool = a100_pool(capacity_ladder=[{"kind": "spot"}, {"kind": "on_demand"}])
    del pool["capacity"]
    stated = plan_pools(GpuGkeClusterArgs.model_validate(gke(gpu_pools=[pool])))[1]
    assert named.node_pools == stated.node_pools and named.compute_class == stated.compute_class
    assert named.shape.rungs == stated.shape.rungs
