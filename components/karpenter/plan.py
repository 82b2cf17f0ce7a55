"""Planning Karpenter's NodePools from the typed GPU classes: one pure pass, no resource.

The same classes and tiers the cluster autoscaler's node groups come from (eks_plan.class_node_groups)
become a NodePool per node group: ``<class>-spot`` and ``<class>-on-demand``, each allowing one capacity
type, its limits the group's maximum nodes times the class's shape, its labels and taints those of the
group (GpuClassArgs.node_labels / node_taints), its zones the plan's. Spot first, on-demand when spot
runs out is expressed with NodePool weights, the way Karpenter orders NodePools (see NodePoolPlan.weight).

A class that shares its GPUs (gpu_sharing) gets a NodeOverlay (karpenter.sh/v1alpha1, Karpenter 1.14's
alpha NodeOverlay feature, gated by NodeOverlay=true): Karpenter otherwise sizes a node by the instance
type's physical GPUs, so it would launch a node per shared GPU a pod asks for; the overlay sets the
class's instance types' nvidia.com/gpu capacity, on the class's NodePools only, to GPUs x clients (what
the device plugin's time-slicing or MPS config advertises), and the NodePools' GPU limits count the same.

Also the refusals of a stack that mixes the provisioners' settings (``provisioner_problems``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpu_platform.components.core.labels import GPU_RESOURCE, INSTANCE_TYPE_LABEL, KARPENTER_NODEPOOL_LABEL
from gpu_platform.components.eks.plan import capacity_label
from gpu_platform.components.karpenter.args import Provisioner
from gpu_platform.components.pools.ladders import CapacityRung, RungKind, eks_provisioner_ladder_problems
from gpu_platform.components.pools.shapes import CapacityType, Taint

if TYPE_CHECKING:
    from gpu_platform.components.eks.node_group_args import GpuClassArgs, SpotFailoverEksNodeGroupsArgs

__all__ = [
    "MAX_NODE_POOLS",
    "NODE_OVERLAY_API_VERSION",
    "NodePoolPlan",
    "ami_alias",
    "node_capacity",
    "node_overlays",
    "node_pool_limits",
    "plan_node_pools",
    "provisioner_problems",
    "reservation_terms",
]

NODE_OVERLAY_API_VERSION = "karpenter.sh/v1alpha1"
"""The NodeOverlay CRD's one version in karpenter-crd 1.14.1 (alpha: the controller reads overlays only with
its NodeOverlay feature gate on)."""

MAX_NODE_POOLS = 100
"""NodePool weights run 1..100 (the CRD's bounds), one per pool: at most 100 pools."""

_AMI_FAMILIES = {"AL2023_x86_64_NVIDIA": "al2023", "BOTTLEROCKET_x86_64_NVIDIA": "bottlerocket"}
"""The EC2NodeClass alias family of each class AMI type Karpenter can launch (Karpenter picks the
NVIDIA variant of the family for GPU instance types)."""

Problem = tuple[tuple[str | int, ...], str, Any]

_CAPACITY_TYPES = {RungKind.SPOT: ("spot",), RungKind.ON_DEMAND: ("on-demand",), RungKind.RESERVATION: ("reserved",), RungKind.CAPACITY_BLOCK: ("reserved",)}
"""The karpenter.sh/capacity-type values of a NodePool per rung kind (a reservation named by id)."""
_ANY_RESERVATION = ("reserved", "on-demand")
"""A reservation rung without an id: any open reservation Karpenter finds, else on-demand."""


def provisioner_problems(args: SpotFailoverEksNodeGroupsArgs) -> list[Problem]:
    """Every setting of the provisioner the stack does not use, and every class Karpenter cannot
    launch: (key path, what is wrong and the fix, value)."""
    problems: list[Problem] = []
    if args.provisioner is Provisioner.KARPENTER:
        fix = "remove it (Karpenter does not read it), or set provisioner: cluster_autoscaler"
        if "autoscaler" in args.model_fields_set:
            for key in sorted(args.autoscaler.model_fields_set):
                value = getattr(args.autoscaler, key)
                shown = ",".join(str(getattr(v, "value", v)) for v in value) if isinstance(value, list) else value
                problems.append(
                    (
                        ("autoscaler", key),
                        f"autoscaler.{key} is a cluster autoscaler setting and provisioner is karpenter: {fix}",
                        shown,
                    )
                )
        if args.priority_expander is not None:
            problems.append(
                (
                    ("priority_expander",),
                    f"priority_expander ranks the cluster autoscaler's node groups and provisioner is karpenter (NodePool weights order the tiers): {fix}",
                    "set",
                )
            )
        for i, cls in enumerate(args.classes):
            if cls.ami_type.value not in _AMI_FAMILIES:
                problems.append(
                    (
                        ("classes", i, "ami_type"),
                        f"class {cls.name}: Karpenter launches AL2023_x86_64_NVIDIA or BOTTLEROCKET_x86_64_NVIDIA "
                        f"(EC2NodeClass aliases al2023, bottlerocket); use one of them",
                        cls.ami_type.value,
                    )
                )
        pools = sum(len(c.node_groups()) for c in args.classes)
        if pools > MAX_NODE_POOLS:
            problems.append((("classes",), f"{pools} NodePools would be made; Karpenter weights allow at most {MAX_NODE_POOLS}", pools))
    else:
        for i, cls in enumerate(args.classes):
            problems += [
                (("classes", i, "capacity_ladder", *loc), f"class {cls.name}: {message}", value)
                for loc, message, value in eks_provisioner_ladder_problems(cls.ladder, cls.instance_types, karpenter=False)
            ]
    if args.provisioner is not Provisioner.KARPENTER and "karpenter" in args.model_fields_set:
        problems.append(
            (
                ("karpenter",),
                "karpenter settings apply to provisioner karpenter and provisioner is cluster_autoscaler: set provisioner: karpenter, or remove them",
                "set",
            )
        )
    return problems


def ami_alias(cls: GpuClassArgs, version: str) -> str:
    """The EC2NodeClass amiSelectorTerms alias of a class: <family>@<version> (al2023, bottlerocket)."""
    return f"{_AMI_FAMILIES[cls.ami_type.value]}@{version}"


def node_capacity(cls: GpuClassArgs) -> dict[str, int]:
    """What one node of the class counts against its NodePool's limits: its instance type's capacity (Karpenter
    counts capacity, not allocatable: kubernetes-sigs/karpenter v1.14.1 pkg/controllers/provisioning/scheduling/
    scheduler.go:834-843, :1068-1085): vCPUs, memory in MiB, nvidia.com/gpu as advertised (x clients on a shared
    class, as its NodeOverlay says)."""
    shape = cls.planned_shape
    return {"cpu": shape.vcpus, "memory": shape.memory_mib, GPU_RESOURCE: cls.advertised_gpus}


def node_pool_limits(cls: GpuClassArgs, max_nodes: int) -> dict[str, str]:
    """A NodePool's limits: ``max_nodes`` nodes of the class's capacity (node_capacity). Karpenter stops launching
    once the pool's nodes would exceed any of them."""
    capacity = node_capacity(cls)
    return {
        "cpu": str(capacity["cpu"] * max_nodes),
        "memory": f"{capacity['memory'] * max_nodes}Mi",
        GPU_RESOURCE: str(capacity[GPU_RESOURCE] * max_nodes),
    }


@dataclass(frozen=True)
class NodePoolPlan:
    """One NodePool: a GPU class at one rung of its capacity ladder."""

    name: str
    """<class>-<rung> (<class>-spot, <class>-on-demand, <class>-reserved, <class>-block): the name of the node group the cluster autoscaler would grow."""
    cls: GpuClassArgs
    """The class it provisions (instance types, shape, AMI, root volume, labels, taints)."""
    capacity: CapacityType
    """Spot for a spot rung, on-demand for every other (as the node group's, NodeGroupPlan.capacity); what it launches is ``capacity_types``."""
    max_nodes: int
    """Most nodes (over all zones): the class's max_nodes for its first rung, fallback_max_nodes (or max_nodes) for every later one."""
    weight: int
    """Karpenter tries NodePools by descending weight, and a NodePool whose offerings are all unavailable
    (spot capacity exhausted: Karpenter caches insufficient-capacity offerings; a reservation full or a
    capacity block not active) is passed over for the next: each class's pools weigh more the earlier
    their rung in its ladder. The order is the cluster autoscaler's derived one (scheduler classes first,
    then small GPU classes above large)."""
    rung: CapacityRung
    """The ladder's rung it buys (its kind and reservation id), which Kueue's flavors read from here."""

    @property
    def capacity_types(self) -> list[str]:
        """Its karpenter.sh/capacity-type values: spot, on-demand, or reserved for a named reservation or capacity block
        (Karpenter's capacity type of both, found through the EC2NodeClass's capacityReservationSelectorTerms); any open
        reservation is reserved then on-demand (Karpenter prefers reserved within a NodePool), as the managed node
        group's open preference falls back to on-demand."""
        return list(_CAPACITY_TYPES[self.rung.kind] if self.rung.reservation is not None or self.rung.kind is not RungKind.RESERVATION else _ANY_RESERVATION)

    @property
    def capacity_label(self) -> str:
        """The value of its nodes' capacity label (labels.CAPACITY_LABEL), as the rung's node group's (NodeGroupPlan.capacity_label)."""
        return capacity_label(self.rung)

    @property
    def limits(self) -> dict[str, str]:
        return node_pool_limits(self.cls, self.max_nodes)

    @property
    def node_capacity(self) -> dict[str, int]:
        """What each of its nodes counts against ``limits`` (node_capacity)."""
        return node_capacity(self.cls)

    @property
    def physical_gpus(self) -> int:
        """The most physical GPUs it launches: ``max_nodes`` times the plan's GPUs per node (NodePoolShape.gpus_per_node),
        which its ``nvidia.com/gpu`` limit counts once per client on a shared class."""
        return self.max_nodes * self.cls.planned_shape.gpus_per_node

    @property
    def labels(self) -> dict[str, str]:
        """The labels of the matching node group, generated by the class (never copied)."""
        return self.cls.node_labels(self.capacity_label)

    @property
    def taints(self) -> list[Taint]:
        return self.cls.node_taints()


def plan_node_pools(args: SpotFailoverEksNodeGroupsArgs) -> tuple[NodePoolPlan, ...]:
    """Every NodePool, in weight order (highest first)."""
    groups = [(c, g) for c in args.classes_in_order() for g in c.node_groups()]
    return tuple(NodePoolPlan(g.name, c, g.capacity, g.max_nodes, len(groups) - i, g.rung) for i, (c, g) in enumerate(groups))


def reservation_terms(cls: GpuClassArgs) -> list[dict[str, str]]:
    """The capacityReservationSelectorTerms of a class's EC2NodeClass: each named reservation or capacity block of its
    ladder by id, any open one by instanceMatchCriteria open (Karpenter 1.14 offers reserved capacity only from
    reservations these terms select: "Karpenter does not support open matching for ODCRs"). Empty when the ladder has
    no reservation rung (the class's EC2NodeClass then has no terms, as before ladders)."""
    terms: list[dict[str, str]] = []
    for rung in cls.ladder:
        if rung.kind in (RungKind.RESERVATION, RungKind.CAPACITY_BLOCK):
            terms.append({"id": rung.reservation} if rung.reservation is not None else {"instanceMatchCriteria": "open"})
    return terms


def node_overlays(pools: tuple[NodePoolPlan, ...]) -> list[dict[str, Any]]:
    """A NodeOverlay per class that shares its GPUs, named as the class: on the class's NodePools and instance
    types, nvidia.com/gpu capacity = GPUs x clients (the class has one shape, so one figure). Empty when no
    class shares (and then the controller's NodeOverlay gate stays off)."""
    classes: dict[str, tuple[GpuClassArgs, list[str]]] = {}
    for pool in pools:
        if pool.cls.gpu_sharing is not None:
            classes.setdefault(pool.cls.name, (pool.cls, []))[1].append(pool.name)
    return [
        {
            "apiVersion": NODE_OVERLAY_API_VERSION,
            "kind": "NodeOverlay",
            "metadata": {"name": name},
            "spec": {
                "requirements": [
                    {"key": KARPENTER_NODEPOOL_LABEL, "operator": "In", "values": sorted(names)},
                    {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": sorted(cls.instance_types)},
                ],
                "capacity": {GPU_RESOURCE: str(cls.advertised_gpus)},
            },
        }
        for name, (cls, names) in classes.items()
    ]
