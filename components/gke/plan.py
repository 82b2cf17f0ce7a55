"""Planning a GKE cluster's pools: one pure pass from the Args to what gets created.

Both the component (which creates the node pools and ComputeClasses) and every reader of the
stack's pools (``GpuGkeClusterArgs.pool_shapes``: the add-ons' placement, plan-capacity, the
fit checks) consume this one plan, so what a workload is told about a pool is what the pool is.
No cloud call, no resource: unit-tested on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpu_platform.components.catalog.gpus import mig_slices
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.labels import COMPUTE_CLASS_LABEL, NODE_POOL_LABEL, POOL_ROLE_LABEL, SCHEDULER_LABEL, PoolRole
from gpu_platform.components.pools.ladders import CapacityRung, RungKind, named_ladder, strategy_of
from gpu_platform.components.pools.shapes import (
    GPU_TAINT,
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    NodePoolShape,
    PoolPlacement,
    RungNodes,
    Taint,
    TaintEffect,
)

if TYPE_CHECKING:
    from gpu_platform.components.gke.args import GpuGkeClusterArgs, GpuNodePoolArgs, SystemPoolArgs

__all__ = ["GKE_DEFAULT_ZONES", "PlannedNodePool", "PlannedPool", "PoolZones", "cluster_zones", "plan_pools", "pool_zones"]

REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
"""A GCP region (us-central1): the location of a regional cluster."""
ZONE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")
"""A GCP zone (us-central1-a), its region as group 1: the location of a zonal cluster."""
GKE_DEFAULT_ZONES = 3
"""The zones GKE spreads a regional cluster's nodes over when it names no node locations."""


@dataclass(frozen=True)
class PoolZones:
    """The zones a node pool's nodes run in, as the plan knows them."""

    names: tuple[str, ...] | None
    """The zones, when the stack names them or the cluster is zonal; None when GKE picks (a regional
    cluster without node locations)."""
    count: int
    """How many zones: per-zone bounds multiply over it."""


def cluster_zones(location: str, node_locations: Sequence[str] | None) -> tuple[str, ...] | None:
    """The zones a cluster's nodes run in: its node locations (a zonal cluster's own zone first, as GKE
    adds it), or a zonal cluster's zone alone; None for a regional cluster that leaves them to GKE."""
    zonal = ZONE.match(location) is not None
    if node_locations:
        zones = list(node_locations)
        if zonal and location not in zones:
            zones.insert(0, location)
        return tuple(zones)
    return (location,) if zonal else None


def pool_zones(location: str | None, cluster_node_locations: Sequence[str] | None, pool_node_locations: Sequence[str] | None = None) -> PoolZones:
    """The zones of a node pool of a cluster at ``location`` (a region or a zone; None when unknown,
    counted as a region): the pool's own node locations, else the cluster's zones, else GKE's three.
    The one zone count every reader uses (the component, the fit checks, the policy pack, the simulator)."""
    if pool_node_locations:
        return PoolZones(tuple(pool_node_locations), len(pool_node_locations))
    zones = cluster_zones(location or "", cluster_node_locations)
    if zones:
        return PoolZones(zones, len(zones))
    return PoolZones(None, GKE_DEFAULT_ZONES)


@dataclass(frozen=True)
class PlannedNodePool:
    """One GKE node pool to create."""

    gke_name: str
    """The node pool's name in GKE (and the child resource's role): the pool's name, or <pool>-<rung> (<pool>-spot, <pool>-on-demand)."""
    spot: bool
    """Spot VMs (the rung is spot) or not."""
    bounds: AutoscalingBounds
    """The node pool's autoscaling bounds (an on-demand fallback's own)."""
    min_total: int
    """Fewest nodes over all of the pool's zones."""
    max_total: int
    """Most nodes over all of the pool's zones."""
    initial_nodes: int
    """initial_node_count (per zone, as GKE counts it): per-zone bounds, their minimum; total bounds,
    the total minimum spread over the zones rounded up, never above the maximum."""
    rung: CapacityRung
    """The capacity rung the node pool buys (reservation, flex-start, spot or on-demand)."""


def _node_pool(name: str, rung: CapacityRung, bounds: AutoscalingBounds, zones: int) -> PlannedNodePool:
    low, high = bounds.node_range(zones)
    if bounds.scope is BoundsScope.PER_ZONE:
        initial = bounds.min_nodes
    else:
        initial = min(-(-bounds.min_nodes // zones), bounds.max_nodes // zones)
    return PlannedNodePool(name, rung.kind is RungKind.SPOT, bounds, low, high, initial, rung)


@dataclass(frozen=True)
class PlannedPool:
    """A configured pool: the node pools it becomes, what its nodes carry, and how workloads see it."""

    args: SystemPoolArgs | GpuNodePoolArgs
    """The pool as configured."""
    role: PoolRole
    """system, scheduler or gpu."""
    node_pools: tuple[PlannedNodePool, ...]
    """One node pool per rung of the pool's capacity ladder, in its order (spot_then_on_demand: the spot pool then its on-demand twin)."""
    labels: dict[str, str]
    """Kubernetes labels on every node (role, the pool's own, the scheduler or compute-class label)."""
    taints: tuple[Taint, ...]
    """Taints on every node (the GPU taint and compute-class taint on GPU pools, then the pool's own)."""
    compute_class: str | None
    """The ComputeClass that orders the node pools of a ladder of more than one rung; None otherwise."""
    shape: NodePoolShape
    """The pool as workloads see it."""
    zones: PoolZones
    """The zones its nodes run in and how many."""

    @property
    def gpu(self) -> GpuNodePoolArgs | None:
        """The GPU pool's args; None for the system pool."""
        return None if self.role is PoolRole.SYSTEM else self.args  # type: ignore[return-value]


def _shape(
    pool: SystemPoolArgs | GpuNodePoolArgs,
    role: PoolRole,
    labels: dict[str, str],
    taints: tuple[Taint, ...],
    placement: PoolPlacement,
    node_pools: tuple[PlannedNodePool, ...],
    zones: PoolZones,
    region: str | None,
) -> NodePoolShape:
    machine = pool.machine
    gpu: GpuNodePoolArgs | None = None if role is PoolRole.SYSTEM else pool  # type: ignore[assignment]
    partition = gpu.gpu_partition_size if gpu is not None else None
    return NodePoolShape.build(
        name=pool.name,
        role=role,
        machine_type=pool.machine_type,
        vcpus=machine.vcpus,
        memory_mib=machine.memory_mib,
        gpus_per_node=gpu.gpus_per_node if gpu is not None else 0,
        accelerator=gpu.accelerator_type if gpu is not None else None,
        capacity=strategy_of(gpu.ladder) if gpu is not None else CapacityStrategy.ON_DEMAND,
        groups=[(p.min_total, p.max_total) for p in node_pools],
        labels=labels,
        taints=taints,
        placement=placement,
        cloud=Cloud.GCP,
        per_zone_over=zones.count if pool.autoscaling.scope is BoundsScope.PER_ZONE else None,
        gpu_sharing=gpu.gpu_sharing if gpu is not None else None,
        mig_partition=partition,
        mig_slices_per_gpu=mig_slices(gpu.accelerator_type, partition) if gpu is not None and partition is not None else None,
        zones=zones.names,
        zone_count=zones.count,
        region=region,
        queued_provisioning=gpu.queued_provisioning if gpu is not None else False,
        ladder=tuple(gpu.capacity_ladder) if gpu is not None and gpu.capacity_ladder is not None else (),
        rung_nodes=[RungNodes(p.rung, {NODE_POOL_LABEL: p.gke_name}, p.max_total) for p in node_pools] if len(node_pools) > 1 else (),
    )


def plan_pools(args: GpuGkeClusterArgs) -> list[PlannedPool]:
    """Every pool of the cluster, in creation order: the system pool, the scheduler pool, the GPU pools."""
    system = args.system_pool
    region = args.region
    system_labels = {POOL_ROLE_LABEL: PoolRole.SYSTEM.value, **system.labels}
    system_taints = tuple(system.taints)
    system_zones = pool_zones(args.location, args.node_locations, system.node_locations)
    system_pools = (_node_pool(system.name, named_ladder(CapacityStrategy.ON_DEMAND)[0], system.autoscaling, system_zones.count),)
    planned = [
        PlannedPool(
            system,
            PoolRole.SYSTEM,
            system_pools,
            system_labels,
            system_taints,
            None,
            _shape(
                system,
                PoolRole.SYSTEM,
                system_labels,
                system_taints,
                PoolPlacement({NODE_POOL_LABEL: system.name}, system_taints),
                system_pools,
                system_zones,
                region,
            ),
            system_zones,
        )
    ]
    gpu_pools: list[tuple[GpuNodePoolArgs, PoolRole, dict[str, str]]] = [(p, PoolRole.GPU, {}) for p in args.gpu_pools]
    if args.scheduler_pool is not None:
        gpu_pools.insert(0, (args.scheduler_pool, PoolRole.SCHEDULER, {SCHEDULER_LABEL[0]: SCHEDULER_LABEL[1]}))
    for pool, role, extra in gpu_pools:
        zones = pool_zones(args.location, args.node_locations, pool.node_locations)
        taints: tuple[Taint, ...] = (GPU_TAINT, *pool.taints)
        labels = {POOL_ROLE_LABEL: role.value, **pool.labels, **extra}
        compute_class = None
        rungs = pool.ladder
        if len(rungs) > 1:
            compute_class = pool.name
            taints = (*taints, Taint(key=COMPUTE_CLASS_LABEL, value=compute_class, effect=TaintEffect.NO_SCHEDULE))
            labels[COMPUTE_CLASS_LABEL] = compute_class
            placement = PoolPlacement({COMPUTE_CLASS_LABEL: compute_class}, taints)
            node_pools = tuple(_node_pool(n, r, pool.bounds_for(i), zones.count) for i, (n, r) in enumerate(zip(pool.gke_pool_names(), rungs, strict=True)))
        else:
            placement = PoolPlacement({NODE_POOL_LABEL: pool.name}, taints)
            node_pools = (_node_pool(pool.name, rungs[0], pool.autoscaling, zones.count),)
        planned.append(
            PlannedPool(pool, role, node_pools, labels, taints, compute_class, _shape(pool, role, labels, taints, placement, node_pools, zones, region), zones)
        )
    return planned
