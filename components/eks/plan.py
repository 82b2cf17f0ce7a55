"""Planning an EKS cluster's node groups: one pure pass from the Args to what gets created.

The EKS counterpart of gke_plan: the node-group names (<class>-spot, <class>-on-demand), their bounds
(totals over the cluster's zones, as a managed node group counts them), their initial size, the
autoscaler's priority of each, the cluster's zones and zone count, and every pool as workloads see
it. The components (EksCluster's system group, SpotFailoverEksNodeGroups), the stack checks,
preflight, plan-capacity and the simulator all read this plan. No cloud call, no resource.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from gpu_platform.components.catalog.gpus import aws_shape
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.labels import CAPACITY_LABEL, CLASS_LABEL, EKS_NODEGROUP_LABEL, POOL_ROLE_LABEL, PoolRole
from gpu_platform.components.pools.ladders import CapacityRung, RungKind, rung_slugs
from gpu_platform.components.pools.shapes import CapacityStrategy, CapacityType, NodePoolShape, PoolPlacement, RungNodes

if TYPE_CHECKING:
    from gpu_platform.components.eks.args import EksClusterArgs, SystemNodeGroupArgs
    from gpu_platform.components.eks.node_group_args import GpuClassArgs, SpotFailoverEksNodeGroupsArgs

__all__ = [
    "EksPlan",
    "EksZones",
    "NodeGroupPlan",
    "PlannedNodeGroup",
    "asg_name_pattern",
    "capacity_label",
    "class_node_groups",
    "class_shape",
    "cluster_zones",
    "example_asg_name",
    "plan_node_groups",
    "system_node_group",
    "system_shape",
]

# The UUID part of a managed node group's ASG name (eks-<nodegroup>-<uuid>).
_ASG_UUID = r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}"


def example_asg_name(node_group: str) -> str:
    """An ASG name as EKS gives a managed node group: eks-<nodegroup>-<uuid> (a stable example UUID)."""
    return f"eks-{node_group}-{uuid.uuid5(uuid.NAMESPACE_DNS, node_group)}"


def asg_name_pattern(node_group: str) -> str:
    """The regex that matches exactly the ASG of one managed node group."""
    return f"^eks-{node_group}-{_ASG_UUID}$"


_ON_DEMAND = CapacityRung(kind=RungKind.ON_DEMAND)

_EKS_CAPACITY_TYPE = {RungKind.SPOT: "SPOT", RungKind.CAPACITY_BLOCK: "CAPACITY_BLOCK"}
"""A managed node group's capacityType per rung kind (EKS's ON_DEMAND for the others: an On-Demand Capacity
Reservation is consumed by on-demand instances)."""

_CAPACITY_LABEL = {RungKind.SPOT: "spot", RungKind.ON_DEMAND: "on-demand", RungKind.RESERVATION: "reserved", RungKind.CAPACITY_BLOCK: "capacity-block"}


def capacity_label(rung: CapacityRung) -> str:
    """The value of the capacity node label (labels.CAPACITY_LABEL) on the nodes of an EKS rung, a managed node group's
    or a Karpenter NodePool's: spot, on-demand, reserved or capacity-block."""
    return _CAPACITY_LABEL[rung.kind]


class NodeGroupPlan(NamedTuple):
    """One EKS managed node group a GPU class (or the system group) becomes: one rung of the class's ladder."""

    name: str
    """The node group's name: <class>-<rung> (<class>-spot, <class>-on-demand, <class>-reserved, <class>-block; ladders.rung_slugs), the system group: its name."""
    capacity: CapacityType
    """Spot for a spot rung; on-demand for every other (reservations and capacity blocks run as on-demand instances in a reservation)."""
    min_nodes: int
    """Fewest nodes over all zones (every fallback group 0); also the initial (desired) size."""
    max_nodes: int
    """Most nodes over all zones."""
    rung: CapacityRung = _ON_DEMAND
    """The ladder's rung the group buys (the system group: on_demand): its kind and reservation id, which Kueue's
    flavors and preflight read from here."""

    @property
    def eks_capacity_type(self) -> str:
        """The managed node group's capacityType: SPOT, CAPACITY_BLOCK, or ON_DEMAND (on_demand and reservation rungs)."""
        return _EKS_CAPACITY_TYPE.get(self.rung.kind, "ON_DEMAND")

    @property
    def capacity_label(self) -> str:
        """The value of the capacity node label (labels.CAPACITY_LABEL): spot, on-demand, reserved or capacity-block."""
        return capacity_label(self.rung)

    @property
    def needs_launch_template(self) -> bool:
        """Whether the group is launched from a launch template: a reservation or capacity block rung (the template's
        capacity reservation specification; a capacity block's market type and instance type)."""
        return self.rung.kind in (RungKind.RESERVATION, RungKind.CAPACITY_BLOCK)


def class_node_groups(cls: GpuClassArgs) -> list[NodeGroupPlan]:
    """A class's node groups, one per rung of its ladder, in the order the autoscaler should try them: the first
    keeps min_nodes and max_nodes, every later one (a fallback) 0 and fallback_max_nodes (default max_nodes)."""
    groups = []
    for i, (rung, slug) in enumerate(zip(cls.ladder, rung_slugs(cls.ladder), strict=True)):
        fallback = i > 0
        maximum = (cls.fallback_max_nodes or cls.max_nodes) if fallback else cls.max_nodes
        capacity = CapacityType.SPOT if rung.kind is RungKind.SPOT else CapacityType.ON_DEMAND
        groups.append(NodeGroupPlan(f"{cls.name}-{slug}", capacity, 0 if fallback else cls.min_nodes, maximum, rung))
    return groups


def system_node_group(system: SystemNodeGroupArgs) -> NodeGroupPlan:
    """EksCluster's on-demand system node group."""
    return NodeGroupPlan(system.name, CapacityType.ON_DEMAND, system.min_nodes, system.max_nodes)


def system_shape(system: SystemNodeGroupArgs) -> NodePoolShape:
    """The system node group as workloads see it."""
    machine = aws_shape(system.instance_types, system.shape, gpu=False)
    group = system_node_group(system)
    return NodePoolShape.build(
        name=system.name,
        role=PoolRole.SYSTEM,
        machine_type=machine.name,
        vcpus=machine.vcpus,
        memory_mib=machine.memory_mib,
        gpus_per_node=0,
        accelerator=None,
        capacity=CapacityStrategy.ON_DEMAND,
        groups=[(group.min_nodes, group.max_nodes)],
        labels={POOL_ROLE_LABEL: PoolRole.SYSTEM.value, **system.labels},
        taints=(),
        placement=PoolPlacement({EKS_NODEGROUP_LABEL: system.name}, ()),
        cloud=Cloud.AWS,
    )


def class_shape(cls: GpuClassArgs) -> NodePoolShape:
    """A GPU class as workloads see it (total node bounds over its spot and on-demand groups)."""
    shape = cls.instance_shape
    groups = cls.node_groups()
    taints = tuple(cls.node_taints())
    labels = {k: v for k, v in cls.node_labels(groups[0].capacity_label).items() if k != CAPACITY_LABEL}
    return NodePoolShape.build(
        name=cls.name,
        role=PoolRole(cls.role.value),
        machine_type=shape.name,
        vcpus=shape.vcpus,
        memory_mib=shape.memory_mib,
        gpus_per_node=shape.gpu_count,
        accelerator=shape.accelerator_label,
        capacity=cls.strategy,
        groups=[(g.min_nodes, g.max_nodes) for g in groups],
        labels=labels,
        taints=taints,
        placement=PoolPlacement({CLASS_LABEL: cls.name}, taints),
        cloud=Cloud.AWS,
        gpu_sharing=cls.gpu_sharing,
        ladder=tuple(cls.capacity_ladder or ()),
        rung_nodes=_rung_nodes(groups),
    )


def _rung_nodes(groups: list[NodeGroupPlan]) -> list[RungNodes]:
    """Each rung's nodes, selected by their capacity label (which the node groups and Karpenter's NodePools both set),
    when the class has more than one rung and the label tells each apart; none otherwise (two named reservations are
    both labelled reserved: such a class is one whole to what selects by labels, as Kueue's flavors)."""
    labels = [g.capacity_label for g in groups]
    if len(groups) < 2 or len(set(labels)) < len(labels):
        return []
    return [RungNodes(g.rung, {CAPACITY_LABEL: g.capacity_label}, g.max_nodes) for g in groups]


@dataclass(frozen=True)
class EksZones:
    """The zones of an EKS cluster's subnets, where every node group runs."""

    names: tuple[str, ...] | None
    """The zones the stack names (``zones``, or an existing VPC's private subnets); None when the component
    looks them up at deploy time (the zones that offer every GPU instance type)."""
    count: int
    """How many zones: the named ones, or ``zone_count`` looked up."""


def cluster_zones(eks: EksClusterArgs) -> EksZones:
    """The cluster's zones as the stack states them."""
    named = eks.configured_zones
    if named is not None:
        return EksZones(tuple(named), len(named))
    return EksZones(None, eks.zone_count)


@dataclass(frozen=True)
class PlannedNodeGroup:
    """One managed node group to create, as every reader sees it."""

    group: NodeGroupPlan
    """Its name, capacity type and bounds (totals over the zones)."""
    shape: NodePoolShape
    """The pool (the system group or the GPU class) it belongs to."""
    priority: int
    """The priority expander's priority of its ASG; 0 when the expander chain has no priority."""


@dataclass(frozen=True)
class EksPlan:
    """The cluster's zones, node groups and pools."""

    zones: EksZones
    node_groups: tuple[PlannedNodeGroup, ...]
    """The system group, then each class's groups in the autoscaler's order."""
    shapes: tuple[NodePoolShape, ...]
    """The system group's shape, then each class's."""


def plan_node_groups(eks: EksClusterArgs, classes: SpotFailoverEksNodeGroupsArgs, region: str | None = None) -> EksPlan:
    """The plan of an EKS cluster and its GPU node groups: every pool in the cluster's zones (its subnets'),
    in ``region`` (default: eks.region)."""
    expander = classes.priorities_in_force()
    zones = cluster_zones(eks)
    where = region or eks.region

    def priority(name: str) -> int:
        return (expander.priority_of(example_asg_name(name)) or 0) if expander is not None else 0

    system = eks.system_node_group.pool_shape().in_zones(zones.names, zones.count, where)
    shapes = [system]
    planned = [PlannedNodeGroup(system_node_group(eks.system_node_group), system, priority(system.name))]
    for cls in classes.classes:
        shape = cls.planned_shape.in_zones(zones.names, zones.count, where)
        shapes.append(shape)
        planned += [PlannedNodeGroup(g, shape, priority(g.name)) for g in cls.node_groups()]
    return EksPlan(zones, tuple(planned), tuple(shapes))
