"""The Karpenter plan (components/karpenter/plan.py): a NodePool per node group of the one EKS plan, spot weighing
more, and the NodeOverlays of shared classes."""

from __future__ import annotations

from gpu_platform.components.core.labels import (
    AWS_ACCELERATOR_LABEL,
    CAPACITY_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    KARPENTER_NODEPOOL_LABEL,
)
from gpu_platform.components.eks.plan import class_node_groups
from gpu_platform.components.karpenter.plan import node_overlays, plan_node_pools
from gpu_platform.components.monitoring.dcgm_resources import dcgm_values
from tests.components.karpenter.test_node_pools import karpenter_args, shared_classes
from tests.factories import gpu_class


def test_a_node_pool_per_node_group_of_the_plan_spot_weighing_more() -> None:
    args = karpenter_args(classes=[gpu_class(max_nodes=6, fallback_max_nodes=2), gpu_class(name="large", instance_types=["p3.8xlarge"], max_nodes=2)])
    pools = {p.name: p for p in plan_node_pools(args)}
    groups = {g.name: g for c in args.classes for g in class_node_groups(c)}
    assert set(pools) == set(groups)
    for name, pool in pools.items():
        assert (pool.capacity, pool.max_nodes) == (groups[name].capacity, groups[name].max_nodes)
    assert pools["small-spot"].weight > pools["small-on-demand"].weight
    assert pools["large-spot"].weight > pools["large-on-demand"].weight
    assert pools["small-on-demand"].weight > pools["large-spot"].weight  # small classes first, as the derived expander
    # Limits: the tier's maximum times the class's shape (p3.2xlarge: 8 vCPU, 61 GiB, 1 V100).
    assert pools["small-spot"].limits == {"cpu": "48", "memory": f"{62464 * 6}Mi", GPU_RESOURCE: "6"}
    assert pools["small-on-demand"].limits == {"cpu": "16", "memory": f"{62464 * 2}Mi", GPU_RESOURCE: "2"}


def test_a_shared_class_is_accepted_with_karpenter_and_overlaid_as_gpus_times_clients() -> None:
    args = karpenter_args(classes=shared_classes())
    (overlay,) = node_overlays(plan_node_pools(args))
    assert overlay == {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "small"},
        "spec": {
            "requirements": [
                {"key": KARPENTER_NODEPOOL_LABEL, "operator": "In", "values": ["small-on-demand", "small-spot"]},
                {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": ["p3.2xlarge"]},
            ],
            "capacity": {GPU_RESOURCE: "4"},  # 1 V100 x 4 clients
        },
    }
    assert node_overlays(plan_node_pools(karpenter_args())) == []  # no sharing, no overlay (and the gate stays off)


def test_dcgm_exporter_lands_on_karpenter_gpu_nodes() -> None:
    """dcgm-exporter's eks node selection requires the accelerator label; every GPU NodePool puts it on its nodes."""
    from gpu_platform.components.monitoring.dcgm_args import DcgmExporterArgs

    values = dcgm_values(DcgmExporterArgs(node_selection="eks"), "metrics")
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (expression,) = terms[0]["matchExpressions"]
    assert expression["key"] == AWS_ACCELERATOR_LABEL and expression["operator"] == "Exists"
    for pool in plan_node_pools(karpenter_args()):
        assert pool.labels[AWS_ACCELERATOR_LABEL] and pool.labels[CAPACITY_LABEL] == pool.capacity.value
