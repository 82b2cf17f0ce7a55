"""Planning a GKE cluster's pools: one pure pass from the Args to what gets created.

Both the component (which creates the node pools and ComputeClasses) and every reader of the
stack's pools (``GpuGkeClusterArgs.pool_shapes``: the add-ons' placement, plan-capacity, the
fit checks) consume this one plan, so what a workload is told about a pool is what the pool is.
No cloud call, no resource: unit-tested on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpu_platform.components.labels import COMPUTE_CLASS_LABEL, NODE_POOL_LABEL, POOL_ROLE_LABEL, SCHEDULER_LABEL, PoolRole
from gpu_platform.components.pools import (
    GPU_TAINT,
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    CapacityType,
    NodePoolShape,
    PoolPlacement,
    Taint,
    TaintEffect,
)
from gpu_platform.components.reserves import ReserveFormula

if TYPE_CHECKING:
    from gpu_platform.components.gke_args import GpuGkeClusterArgs, GpuNodePoolArgs, SystemPoolArgs

__all__ = ["PlannedNodePool", "PlannedPool", "plan_pools"]


@dataclass(frozen=True)
class PlannedNodePool:
    """One GKE node pool to create."""

    gke_name: str
    """The node pool's name in GKE (and the child resource's role): the pool's name, or <pool>-spot / <pool>-on-demand."""
    spot: bool
    """Spot VMs or on-demand."""
    bounds: AutoscalingBounds
    """The node pool's autoscaling bounds (an on-demand fallback's own)."""


@dataclass(frozen=True)
class PlannedPool:
    """A configured pool: the node pools it becomes, what its nodes carry, and how workloads see it."""

    args: SystemPoolArgs | GpuNodePoolArgs
    """The pool as configured."""
    role: PoolRole
    """system, scheduler or gpu."""
    node_pools: tuple[PlannedNodePool, ...]
    """One node pool, or for spot_then_on_demand the spot pool then its on-demand twin."""
    labels: dict[str, str]
    """Kubernetes labels on every node (role, the pool's own, the scheduler or compute-class label)."""
    taints: tuple[Taint, ...]
    """Taints on every node (the GPU taint and compute-class taint on GPU pools, then the pool's own)."""
    compute_class: str | None
    """The ComputeClass that orders a spot_then_on_demand pool's node pools; None otherwise."""
    shape: NodePoolShape
    """The pool as workloads see it."""

    @property
    def gpu(self) -> GpuNodePoolArgs | None:
        """The GPU pool's args; None for the system pool."""
        return None if self.role is PoolRole.SYSTEM else self.args  # type: ignore[return-value]


def _shape(args: GpuGkeClusterArgs, pool: SystemPoolArgs | GpuNodePoolArgs, role: PoolRole, labels: dict[str, str],
           taints: tuple[Taint, ...], placement: PoolPlacement, node_pools: tuple[PlannedNodePool, ...]) -> NodePoolShape:
    zones = args.pool_zone_count(pool)
    ranges = [p.bounds.node_range(zones) for p in node_pools]
    machine = pool.machine
    gpu = None if role is PoolRole.SYSTEM else pool
    return NodePoolShape(
        name=pool.name, role=role, machine_type=pool.machine_type, vcpus=machine.vcpus, memory_mib=machine.memory_mib,
        gpus_per_node=gpu.gpus_per_node if gpu is not None else 0,  # type: ignore[union-attr]
        accelerator=gpu.accelerator_type if gpu is not None else None,  # type: ignore[union-attr]
        capacity=gpu.capacity if gpu is not None else CapacityStrategy.ON_DEMAND,  # type: ignore[union-attr]
        min_nodes=sum(r[0] for r in ranges), max_nodes=sum(r[1] for r in ranges),
        labels=labels, taints=taints, placement=placement,
        per_zone_over=zones if pool.autoscaling.scope is BoundsScope.PER_ZONE else None,
        reserve_formula=ReserveFormula.GKE,
    )


def plan_pools(args: GpuGkeClusterArgs) -> list[PlannedPool]:
    """Every pool of the cluster, in creation order: the system pool, the scheduler pool, the GPU pools."""
    system = args.system_pool
    system_labels = {POOL_ROLE_LABEL: PoolRole.SYSTEM.value, **system.labels}
    system_taints = tuple(system.taints)
    system_pools = (PlannedNodePool(system.name, False, system.autoscaling),)
    planned = [
        PlannedPool(
            system, PoolRole.SYSTEM, system_pools, system_labels, system_taints, None,
            _shape(args, system, PoolRole.SYSTEM, system_labels, system_taints,
                   PoolPlacement({NODE_POOL_LABEL: system.name}, system_taints), system_pools),
        )
    ]
    gpu_pools: list[tuple[GpuNodePoolArgs, PoolRole, dict[str, str]]] = [(p, PoolRole.GPU, {}) for p in args.gpu_pools]
    if args.scheduler_pool is not None:
        gpu_pools.insert(0, (args.scheduler_pool, PoolRole.SCHEDULER, {SCHEDULER_LABEL[0]: SCHEDULER_LABEL[1]}))
    for pool, role, extra in gpu_pools:
        taints: tuple[Taint, ...] = (GPU_TAINT, *pool.taints)
        labels = {POOL_ROLE_LABEL: role.value, **pool.labels, **extra}
        compute_class = None
        if pool.capacity is CapacityStrategy.SPOT_THEN_ON_DEMAND:
            compute_class = pool.name
            taints = (*taints, Taint(key=COMPUTE_CLASS_LABEL, value=compute_class, effect=TaintEffect.NO_SCHEDULE))
            labels[COMPUTE_CLASS_LABEL] = compute_class
            placement = PoolPlacement({COMPUTE_CLASS_LABEL: compute_class}, taints)
            node_pools = tuple(
                PlannedNodePool(pool.gke_pool_name(c), c is CapacityType.SPOT, pool.bounds_for(c)) for c in pool.capacity_types()
            )
        else:
            placement = PoolPlacement({NODE_POOL_LABEL: pool.name}, taints)
            node_pools = (PlannedNodePool(pool.name, pool.capacity is CapacityStrategy.SPOT, pool.autoscaling),)
        planned.append(
            PlannedPool(pool, role, node_pools, labels, taints, compute_class,
                        _shape(args, pool, role, labels, taints, placement, node_pools))
        )
    return planned
