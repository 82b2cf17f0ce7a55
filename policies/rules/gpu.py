"""GPU capacity guardrails: bounded pools, a GPU budget, tainted GPU nodes, allowed GPU
types, pinned drivers, and an on-demand fallback ranked below every spot GPU pool."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from gpu_platform.components.core.labels import PRIORITY_CONFIGMAP
from gpu_platform.components.pools.shapes import GPU_TAINT
from gpu_platform.policies.rules.base import (
    EKS_NODE_GROUP,
    GKE_CLUSTER,
    Resource,
    ResourceRule,
    RuleConfig,
    StackRule,
    accelerators,
    gpu_pool_gpus,
    is_gpu_node_pool,
)
from gpu_platform.policies.rules.karpenter import KARPENTER_NODE_POOL, launches_gpus, node_pool_gpus

if TYPE_CHECKING:
    from gpu_platform.components.eks.node_group_args import PriorityExpander

COMPUTE_CLASS = "kubernetes:cloud.google.com/v1:ComputeClass"
PRIORITY_CONFIGMAP_TYPE = "kubernetes:core/v1:ConfigMap"


class PoolBoundConfig(RuleConfig):
    maxGpusPerPool: int = Field(default=128, ge=1)  # noqa: N815
    """Most GPUs one pool may scale to. Default: 128."""


class StackBudgetConfig(RuleConfig):
    maxGpusPerStack: int = Field(default=512, ge=1)  # noqa: N815
    """Most GPUs all pools of a stack together may scale to. Default: 512."""


class AllowedGpuConfig(RuleConfig):
    allowedGpuTypes: list[str] = Field(default_factory=list)  # noqa: N815
    """GPU types pools may use: GKE accelerator types and EC2 GPU instance types (the catalog's are listed in the component reference). Default: [] (any type, including one stated with an explicit shape)."""


def _cluster_zones(resources: list[Resource]) -> dict[str, list[str]]:
    """The node locations of each GKE cluster by name (empty where GKE chooses, or a zonal cluster's own)."""
    return {str(r.props.get("name")): list(r.props.get("nodeLocations") or []) for r in resources if r.type == GKE_CLUSTER}


def _pool_gpus(resources: list[Resource]) -> Iterator[tuple[Resource, int | None]]:
    zones = _cluster_zones(resources)
    for r in resources:
        if is_gpu_node_pool(r):
            yield r, gpu_pool_gpus(r, zones.get(str(r.props.get("cluster"))))
        elif r.type == KARPENTER_NODE_POOL and launches_gpus(r):
            yield r, node_pool_gpus(r)


def check_pools_bounded(resources: list[Resource], config: PoolBoundConfig) -> Iterator[tuple[str, str]]:
    for pool, gpus in _pool_gpus(resources):
        if gpus is None:
            yield pool.name, "GPU pool has no autoscaling maximum, so its GPU count is unbounded"
        elif gpus > config.maxGpusPerPool:
            yield pool.name, f"GPU pool can scale to {gpus} GPUs; the per-pool limit is {config.maxGpusPerPool}"


def check_stack_budget(resources: list[Resource], config: StackBudgetConfig) -> Iterator[tuple[str, str]]:
    pools = list(_pool_gpus(resources))
    if any(g is None for _, g in pools):
        return  # gpu-pool-bounded reports the unbounded pool
    total = sum(g for _, g in pools if g is not None)
    if total > config.maxGpusPerStack:
        detail = ", ".join(f"{p.name} {g}" for p, g in pools)
        yield "", f"the stack's GPU pools can scale to {total} GPUs ({detail}); the stack budget is {config.maxGpusPerStack}"


def _taints(props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """GKE keeps taints under nodeConfig, EKS on the node group itself."""
    return list((props.get("nodeConfig") or {}).get("taints") or props.get("taints") or [])


def check_pool_tainted(r: Resource, config: RuleConfig) -> Iterator[str]:
    if not is_gpu_node_pool(r):
        return
    if not any(t.get("key") == GPU_TAINT.key and t.get("effect") in ("NO_SCHEDULE", "NoSchedule") for t in _taints(r.props)):
        yield f"GPU pool lacks the taint {GPU_TAINT}, so any pod can take its GPU nodes"


def check_gpu_type(r: Resource, config: AllowedGpuConfig) -> Iterator[str]:
    if not is_gpu_node_pool(r) or not config.allowedGpuTypes:
        return
    for itype in r.props.get("instanceTypes") or [] if r.type == EKS_NODE_GROUP else []:
        if itype not in config.allowedGpuTypes:
            yield f"GPU instance type {itype} is not allowed; allowed: {', '.join(config.allowedGpuTypes)}"
    for acc in accelerators(r.props):
        if acc.get("type") not in config.allowedGpuTypes:
            yield f"GPU type {acc.get('type')} is not allowed; allowed: {', '.join(config.allowedGpuTypes)}"


def check_driver_pinned(r: Resource, config: RuleConfig) -> Iterator[str]:
    if not is_gpu_node_pool(r):
        return
    for acc in accelerators(r.props):
        version = (acc.get("gpuDriverInstallationConfig") or {}).get("gpuDriverVersion")
        if not version:
            yield f"{acc.get('type')} has no explicit gpuDriverVersion: the driver drifts, and setting it later replaces the pool"


def _eks_priorities(resources: list[Resource]) -> list[PriorityExpander]:
    """The cluster autoscaler's priority-expander tiers declared in the stack, read back from each ConfigMap with the
    components' own reader (PriorityExpander.of_configmap_text); a value that is not such a map is passed over."""
    from gpu_platform.components.eks.node_group_args import PriorityExpander

    maps = []
    for r in resources:
        if r.type == PRIORITY_CONFIGMAP_TYPE and (r.props.get("metadata") or {}).get("name") == PRIORITY_CONFIGMAP:
            expander = PriorityExpander.of_configmap_text(str((r.props.get("data") or {}).get("priorities") or ""))
            if expander is not None:
                maps.append(expander)
    return maps


def _eks_priority(expander: PriorityExpander, node_group: str) -> int | None:
    """The priority the autoscaler gives a managed node group's ASG (eks-<nodegroup>-<uuid>): the components' rule
    (PriorityExpander.priority_of: the highest tier with a pattern RE2 finds in the name)."""
    from gpu_platform.components.eks.plan import example_asg_name

    return expander.priority_of(example_asg_name(node_group))


def check_spot_fallback(resources: list[Resource], config: RuleConfig) -> Iterator[tuple[str, str]]:
    pools = {str(r.props.get("name")): r for r in resources if is_gpu_node_pool(r) and r.type != EKS_NODE_GROUP}
    orders = [[list(p.get("nodepools") or []) for p in ((r.props.get("spec") or {}).get("priorities") or [])] for r in resources if r.type == COMPUTE_CLASS]
    for name, pool in pools.items():
        if not (pool.props.get("nodeConfig") or {}).get("spot"):
            continue
        covered = False
        for order in orders:
            for i, entry in enumerate(order):
                if name in entry:
                    below = [p for later in order[i + 1 :] for p in later]
                    if any(p in pools and not (pools[p].props.get("nodeConfig") or {}).get("spot") for p in below):
                        covered = True
        if not covered:
            yield pool.name, f"spot GPU pool {name} has no on-demand GPU pool ranked below it in a ComputeClass"

    groups = [r for r in resources if r.type == EKS_NODE_GROUP and is_gpu_node_pool(r)]
    on_demand = [g for g in groups if g.props.get("capacityType") != "SPOT"]
    maps = _eks_priorities(resources)
    for spot in (g for g in groups if g.props.get("capacityType") == "SPOT"):
        name = str(spot.props.get("nodeGroupName"))
        shape = sorted(spot.props.get("instanceTypes") or [])
        twins = [g for g in on_demand if sorted(g.props.get("instanceTypes") or []) == shape]
        covered = False
        for priorities in maps:
            mine = _eks_priority(priorities, name)
            ranks = [_eks_priority(priorities, str(t.props.get("nodeGroupName"))) for t in twins]
            if mine is not None and any(r is not None and r < mine for r in ranks):
                covered = True
        if not covered:
            yield (
                spot.name,
                (
                    f"spot GPU node group {name} has no on-demand node group of the same instance types ranked below it "
                    "in the cluster-autoscaler-priority-expander ConfigMap"
                ),
            )


RULES: list[ResourceRule | StackRule] = [
    StackRule(
        "gpu-pool-bounded",
        "Every GPU pool has an autoscaling maximum within the per-pool GPU limit.",
        "Set autoscaling.max_nodes (and the zones) so that GPUs per node x nodes stays within maxGpusPerPool.",
        check_pools_bounded,
        PoolBoundConfig,
    ),
    StackRule(
        "gpu-stack-budget",
        "All GPU pools of a stack together stay within the stack's GPU budget.",
        "Lower the pools' max_nodes, or raise maxGpusPerStack in the policy config if the budget allows.",
        check_stack_budget,
        StackBudgetConfig,
    ),
    ResourceRule(
        "gpu-pool-tainted",
        f"GPU nodes carry {GPU_TAINT} so only GPU pods land there.",
        "Declare the taint on the pool (GpuGkeCluster always does).",
        check_pool_tainted,
    ),
    ResourceRule(
        "gpu-type-allowed",
        "GPU pools use only the GPU types the organisation allows.",
        "Use an allowed accelerator type, or add it to allowedGpuTypes in the policy config.",
        check_gpu_type,
        AllowedGpuConfig,
    ),
    ResourceRule(
        "gpu-driver-pinned",
        "GPU pools set the NVIDIA driver version explicitly.",
        "Set gpu_driver_installation_config.gpu_driver_version (DEFAULT or LATEST).",
        check_driver_pinned,
    ),
    StackRule(
        "spot-has-on-demand-fallback",
        "Every spot GPU pool has an on-demand GPU pool ranked below it, so work runs when spot capacity is gone.",
        "Use capacity spot_then_on_demand (on GKE a ComputeClass, on EKS the autoscaler's priority expander ranks the on-demand twin below the spot pool).",
        check_spot_fallback,
    ),
]
