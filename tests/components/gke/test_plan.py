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
