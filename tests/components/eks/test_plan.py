"""The EKS node-group plan (components/eks/plan.py): two node groups per class (spot and on-demand), and the pool
shapes an EKS stack gives its add-ons."""

from __future__ import annotations

from gpu_platform.components import (
    SpotFailoverEksNodeGroupsArgs,
)
from gpu_platform.infra.stack.model import StackConfig
from tests.factories import eks_node_groups, eks_stack, gpu_class


def test_node_groups_per_class_and_capacity() -> None:
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups())
    small = args.classes[0]
    assert [g[:4] for g in small.node_groups()] == [("small-spot", "spot", 0, 4), ("small-on-demand", "on-demand", 0, 4)]
    assert [str(g.rung) for g in small.node_groups()] == ["spot", "on_demand"]
    fallback = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(classes=[gpu_class(min_nodes=1, fallback_max_nodes=2)])).classes[0]
    assert [g[:4] for g in fallback.node_groups()] == [("small-spot", "spot", 1, 4), ("small-on-demand", "on-demand", 0, 2)]
    od = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(classes=[gpu_class(capacity="on_demand")])).classes[0]
    assert [g[:4] for g in od.node_groups()] == [("small-on-demand", "on-demand", 0, 4)]


LADDER = [
    {"kind": "capacity_block", "reservation": "cr-0a1b2c3d4e5f60718"},
    {"kind": "reservation", "reservation": "cr-0123456789abcdef0"},
    {"kind": "spot"},
    {"kind": "on_demand"},
]


def test_a_ladder_plans_one_node_group_per_rung_in_its_order() -> None:
    """capacity_block -> reservation -> spot -> on_demand: four groups, the first with min_nodes, each later one a
    fallback of 0..fallback_max_nodes, each carrying its rung, its EKS capacity type and its capacity label."""
    cls = gpu_class(name="h100", instance_types=["p5.48xlarge"], min_nodes=1, max_nodes=4, fallback_max_nodes=2, capacity_ladder=LADDER)
    (h100,) = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(classes=[cls])).classes
    groups = h100.node_groups()
    assert [g[:4] for g in groups] == [
        ("h100-block", "on-demand", 1, 4),
        ("h100-reserved", "on-demand", 0, 2),
        ("h100-spot", "spot", 0, 2),
        ("h100-on-demand", "on-demand", 0, 2),
    ]
    assert [(g.rung.kind.value, g.rung.reservation) for g in groups] == [
        ("capacity_block", "cr-0a1b2c3d4e5f60718"),
        ("reservation", "cr-0123456789abcdef0"),
        ("spot", None),
        ("on_demand", None),
    ]
    assert [g.eks_capacity_type for g in groups] == ["CAPACITY_BLOCK", "ON_DEMAND", "SPOT", "ON_DEMAND"]
    assert [g.capacity_label for g in groups] == ["capacity-block", "reserved", "spot", "on-demand"]
    assert [g.needs_launch_template for g in groups] == [True, True, False, False]


def test_pool_shapes_of_an_eks_stack() -> None:
    config = StackConfig.model_validate({**eks_stack(), "monitoring": {"enabled": False}})
    shapes = {s.name: s for s in config.pool_shapes()}
    assert [s.role for s in config.pool_shapes()] == ["system", "gpu", "gpu"]
    small, large = shapes["small"], shapes["large"]
    assert (small.vcpus, small.memory_mib, small.gpus_per_node, small.accelerator) == (8, 61 * 1024, 1, "nvidia-tesla-v100")
    assert (large.gpus_per_node, large.min_nodes, large.max_nodes) == (4, 0, 4)  # 2 spot + 2 on-demand
    assert small.placement.node_selector == {"gpu-platform.io/gpu-class": "small"}
    assert [str(t) for t in small.taints] == ["nvidia.com/gpu=present:NoSchedule"]
    assert shapes["system"].placement.node_selector == {"eks.amazonaws.com/nodegroup": "system"}
    assert (shapes["system"].min_nodes, shapes["system"].max_nodes, shapes["system"].vcpus) == (2, 4, 2)
