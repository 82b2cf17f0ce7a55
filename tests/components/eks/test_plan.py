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
    assert small.node_groups() == [("small-spot", "spot", 0, 4), ("small-on-demand", "on-demand", 0, 4)]
    fallback = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(classes=[gpu_class(min_nodes=1, fallback_max_nodes=2)])).classes[0]
    assert fallback.node_groups() == [("small-spot", "spot", 1, 4), ("small-on-demand", "on-demand", 0, 2)]
    od = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(classes=[gpu_class(capacity="on_demand")])).classes[0]
    assert od.node_groups() == [("small-on-demand", "on-demand", 0, 4)]


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
