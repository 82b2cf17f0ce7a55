"""The location class (issue 24): every location shape of GKE and EKS is simulated with exactly the
plan's own node groups, bounds and zones (gke_plan.plan_pools, eks_plan.plan_node_groups), compared
field by field. A zonal GKE cluster (``location: us-central1-a``, no node locations) used to be
simulated over three invented zones (us-central1-a-a, -a-b, -a-c): 20 per zone became 60."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform.components.eks.plan import plan_node_groups
from gpu_platform.components.gke.plan import GKE_DEFAULT_ZONES, plan_pools
from gpu_platform.components.pools.shapes import CapacityType
from gpu_platform.infra.simulate.runs import configurations
from tests.conftest import PROJECT_DIR

GKE_SHAPES = {
    # name: (the --set pairs on dev-gke, the zones every pool without its own node locations runs in)
    "regional, GKE's zones": ([("gke.node_locations", [])], None),
    "regional, node locations": ([], ("us-central1-b", "us-central1-c")),
    "zonal": ([("gke.location", "us-central1-a"), ("gke.node_locations", [])], ("us-central1-a",)),
    "zonal, extra node locations": (
        [("gke.location", "us-central1-a"), ("gke.node_locations", ["us-central1-b"])],
        ("us-central1-a", "us-central1-b"),
    ),
    "zonal, a pool in one zone": (
        [("gke.location", "us-central1-a"), ("gke.node_locations", ["us-central1-b"]), ("gke.gpu_pools[t4].node_locations", ["us-central1-b"])],
        ("us-central1-a", "us-central1-b"),
    ),
}


def _one(stack: str, sets: list[tuple[str, Any]]) -> Any:
    (config,) = configurations(PROJECT_DIR, stack, sets, [], 1)
    return config


@pytest.mark.parametrize("shape", list(GKE_SHAPES))
def test_every_gke_location_shape_is_simulated_with_the_plan_s_node_pools(shape: str) -> None:
    sets, cluster_zones = GKE_SHAPES[shape]
    config = _one("dev-gke", sets)
    simulated = {g.name: g for g in config.inputs.groups}
    planned = plan_pools(config.stack.gke)
    assert set(simulated) == {p.gke_name for pool in planned for p in pool.node_pools}
    for pool in planned:
        own = pool.args.node_locations
        expected = tuple(own) if own else cluster_zones
        assert pool.zones.names == expected
        assert pool.zones.count == (len(expected) if expected else GKE_DEFAULT_ZONES)
        for node_pool in pool.node_pools:
            group = simulated[node_pool.gke_name]
            assert len(group.zones) == pool.zones.count
            if pool.zones.names is not None:
                assert group.zones == pool.zones.names
            assert (group.min_nodes, group.max_nodes) == (node_pool.bounds.min_nodes, node_pool.bounds.max_nodes)
            assert (group.total_min, group.total_max) == (node_pool.min_total, node_pool.max_total)
            assert group.spot == node_pool.spot and group.pool == pool.shape.name
        assert sum(simulated[n.gke_name].total_max for n in pool.node_pools) == pool.shape.max_nodes


def test_a_zonal_cluster_keeps_its_per_zone_maximum() -> None:
    """The issue's case: 1..20 T4 nodes per zone on a zonal cluster are at most 20 nodes, in one zone."""
    config = _one("dev-gke", [("gke.location", "us-central1-a"), ("gke.node_locations", [])])
    t4 = next(g for g in config.inputs.groups if g.name == "t4")
    assert (t4.zones, t4.per_zone, t4.max_nodes, t4.total_max) == (("us-central1-a",), True, 20, 20)
    shape = next(s for s in config.stack.pool_shapes() if s.name == "t4")
    assert (shape.max_nodes, shape.per_zone_over) == (20, 1)


def test_a_regional_pool_s_per_zone_bounds_multiply_over_gke_s_three_zones() -> None:
    config = _one("dev-gke", [("gke.node_locations", [])])
    t4 = next(g for g in config.inputs.groups if g.name == "t4")
    assert (len(t4.zones), t4.total_max) == (3, 60)


EKS_SHAPES = {
    "zones named": ([], ("ap-northeast-2a", "ap-northeast-2c")),
    "zones looked up, default count": ([("eks.zones", None)], 3),
    "zones looked up, two": ([("eks.zones", None), ("eks.zone_count", 2)], 2),
    "an existing VPC's subnets": (
        [
            ("eks.zones", None),
            ("eks.nat_gateways", None),
            (
                "eks.vpc",
                {
                    "vpc_id": "vpc-0123456789abcdef0",
                    "private_subnet_ids": {"ap-northeast-2a": "subnet-0123456789abcdef0", "ap-northeast-2c": "subnet-0123456789abcdef1"},
                },
            ),
        ],
        ("ap-northeast-2a", "ap-northeast-2c"),
    ),
}


def _eks_config(sets: list[tuple[str, Any]]) -> Any:
    """dev-eks with ``sets``; a key set to None is removed (a stack file that leaves it out)."""
    from gpu_platform.infra.simulate.cluster import model_inputs
    from gpu_platform.infra.simulate.settings import ModelSettings

    removed = [k for k, v in sets if v is None]
    config = _one("dev-eks", [(k, v) for k, v in sets if v is not None and k != "eks.vpc"])
    vpc = dict(sets).get("eks.vpc")
    if not removed and vpc is None:
        return config
    data = config.stack.eks.model_dump(mode="json", exclude_unset=True)
    for key in removed:
        data.pop(key.removeprefix("eks."), None)
    if vpc is not None:
        data["vpc"] = vpc
    eks = type(config.stack.eks).model_validate(data)
    stack = config.stack.model_copy(update={"eks": eks})
    return type(config)(config.label, config.overrides, stack, model_inputs(stack, ModelSettings()))


@pytest.mark.parametrize("shape", list(EKS_SHAPES))
def test_every_eks_zone_shape_is_simulated_with_the_plan_s_node_groups(shape: str) -> None:
    sets, zones = EKS_SHAPES[shape]
    config = _eks_config(sets)
    plan = plan_node_groups(config.stack.eks, config.stack.eks_node_groups)
    if isinstance(zones, int):
        assert (plan.zones.names, plan.zones.count) == (None, zones)
    else:
        assert (plan.zones.names, plan.zones.count) == (zones, len(zones))
    simulated = [g for g in config.inputs.groups]
    assert [g.name for g in simulated] == [p.group.name for p in plan.node_groups]
    for group, planned in zip(simulated, plan.node_groups, strict=True):
        assert len(group.zones) == plan.zones.count
        if plan.zones.names is not None:
            assert group.zones == plan.zones.names
        # Managed node groups count their bounds over all zones.
        assert not group.per_zone
        assert (group.min_nodes, group.max_nodes) == (planned.group.min_nodes, planned.group.max_nodes)
        assert (group.total_min, group.total_max) == (planned.group.min_nodes, planned.group.max_nodes)
        assert group.spot == (planned.group.capacity is CapacityType.SPOT)
        assert (group.priority, group.pool) == (planned.priority, planned.shape.name)
