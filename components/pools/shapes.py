"""Typed building blocks every node pool uses, on GKE and EKS alike.

Autoscaling bounds, the spot/on-demand capacity strategy, Kubernetes labels and taints.
They validate the Kubernetes syntax rules (label keys and values, taint effects) so a
bad value is refused before any cloud call.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, TypedDict

from pydantic import AfterValidator, BaseModel, Field, model_validator

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.labels import GPU_RESOURCE, PoolRole
from gpu_platform.components.core.models import ARGS_CONFIG, check_min_max, check_unique, field_error
from gpu_platform.components.core.numbers import Float, Int
from gpu_platform.components.pools.ladders import CapacityRung, CapacityStrategy, named_ladder, strategy_of
from gpu_platform.components.pools.reserves import ReserveFormula
from gpu_platform.components.pools.sharing import GpuSharing

__all__ = [
    "ENVIRONMENT_LABEL",
    "Environment",
    "AutoscalingBounds",
    "BoundsScope",
    "CapacityStrategy",
    "CapacityType",
    "GPU_TAINT",
    "MachineShapeArgs",
    "NodePoolShape",
    "PoolPlacement",
    "RungNodes",
    "Taint",
    "TaintEffect",
]


class Environment(StrEnum):
    """What a stack is for; production stacks get the stricter guardrails."""

    DEV = "dev"
    """Development: the base guardrails."""
    STAGING = "staging"
    """Staging: the base guardrails."""
    PROD = "prod"
    """Production: the production guardrails of the policy pack apply as well."""


ENVIRONMENT_LABEL = "gpu-platform-environment"
"""The GCP label and AWS tag that carry the cluster's Environment onto its cloud resources, where
the policy pack's production rules read it (a valid GCP label key and AWS tag key)."""

# --- Kubernetes label and taint syntax -------------------------------------------------

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

# Prefixes the kubelet, the cloud or Karpenter manage; a node pool may not set labels under them (Karpenter
# refuses a NodePool whose template labels are in its restricted domains karpenter.sh, karpenter.k8s.aws,
# kubernetes.io and k8s.io, and their subdomains).
RESERVED_LABEL_PREFIXES = ("kubernetes.io/", "k8s.io/", "cloud.google.com/", "eks.amazonaws.com/", "karpenter.sh/", "karpenter.k8s.aws/")


def _check_qualified_name(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        raise ValueError(f"key {key!r} has an invalid prefix {prefix!r}: it must be a DNS subdomain (lowercase letters, digits, '-' and '.')")
    if not name or len(name) > 63 or not _NAME.match(name):
        raise ValueError(f"key {key!r} is not a valid Kubernetes name: at most 63 characters, alphanumeric at both ends, '-', '_' and '.' inside")
    return key


def _check_label_value(value: str) -> str:
    if len(value) > 63 or not _VALUE.match(value):
        raise ValueError(f"value {value!r} is not a valid Kubernetes label value: at most 63 characters, alphanumeric at both ends, '-', '_' and '.' inside")
    return value


def _check_pool_label_key(key: str) -> str:
    _check_qualified_name(key)
    prefix = key.rpartition("/")[0] + "/"
    for reserved in RESERVED_LABEL_PREFIXES:
        if prefix.endswith(reserved) and (prefix == reserved or prefix.endswith("." + reserved)):
            raise ValueError(f"key {key!r} is under {reserved}, which the kubelet, the cloud or Karpenter manages; use your own prefix (e.g. example.com/team)")
    return key


LabelKey = Annotated[str, AfterValidator(_check_pool_label_key)]
LabelValue = Annotated[str, AfterValidator(_check_label_value)]
LabelMap = dict[LabelKey, LabelValue]
"""Node labels: Kubernetes label keys (not under a cloud- or kubelet-managed prefix) to values."""


class TaintEffect(StrEnum):
    """Kubernetes taint effects."""

    NO_SCHEDULE = "NoSchedule"
    """New pods that do not tolerate the taint are not scheduled on the node."""
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    """The scheduler avoids the node for pods that do not tolerate the taint."""
    NO_EXECUTE = "NoExecute"
    """Pods that do not tolerate the taint are evicted and not scheduled."""

    @property
    def gke(self) -> str:
        """The GKE API spelling (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)."""
        return {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}[self.value]


class Taint(BaseModel):
    """A node taint. Taints always carry a value, so the autoscaler's node templates match."""

    model_config = ARGS_CONFIG

    key: Annotated[str, AfterValidator(_check_qualified_name)]
    """Taint key, a Kubernetes qualified name. Required."""
    value: Annotated[str, Field(min_length=1), AfterValidator(_check_label_value)]
    """Taint value; never empty. Required."""
    effect: TaintEffect = TaintEffect.NO_SCHEDULE
    """What the taint does to pods that do not tolerate it. Default: NoSchedule."""

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect.value}"


def _check_pool_taints(managed: tuple[str, ...], value: list[Taint]) -> list[Taint]:
    keys = [t.key for t in value]
    for key in managed:
        if key in keys:
            raise ValueError(f"taint {key} is managed by the component; remove it from taints")
    check_unique(keys, "taints", "a key")
    return value


def pool_taints(*managed: str) -> AfterValidator:
    """The check of the taints a pool or class may declare, as ``Annotated[list[Taint], pool_taints(...)]``:
    each key once, and none of the ``managed`` keys (the taints the component adds itself: the GPU
    taint, GKE's compute-class taint)."""
    return AfterValidator(functools.partial(_check_pool_taints, managed))


GPU_TAINT = Taint(key=GPU_RESOURCE, value="present", effect=TaintEffect.NO_SCHEDULE)
"""The taint every GPU node carries, so only pods that ask for GPUs land there."""


# --- Autoscaling and capacity -----------------------------------------------------------


class BoundsScope(StrEnum):
    """Whether autoscaling bounds count nodes per zone or across all of a pool's zones."""

    PER_ZONE = "per_zone"
    """Bounds count nodes in each zone (like gcloud --min-nodes/--max-nodes)."""
    TOTAL = "total"
    """Bounds count nodes across all of the pool's zones."""


class AutoscalingBounds(BaseModel):
    """Node-count bounds the cluster autoscaler keeps a pool within.

    GKE's gcloud --min-nodes/--max-nodes are per zone: 1..20 on two zones is 2..40 nodes.
    The scope is required so that nobody has to guess which one a number means.
    """

    model_config = ARGS_CONFIG

    scope: BoundsScope
    """per_zone (counts per zone, like gcloud --min-nodes) or total (across the pool's zones). Required."""
    min_nodes: Int = Field(default=0, ge=0, le=1000)
    """Fewest nodes (0 lets the pool scale to zero and cost nothing when idle). Default: 0."""
    max_nodes: Int = Field(ge=1, le=1000)
    """Most nodes; bounds the spend. Required."""

    @model_validator(mode="after")
    def _min_not_above_max(self) -> AutoscalingBounds:
        check_min_max(self, "min_nodes", "max_nodes")
        return self

    def node_range(self, zones: int) -> tuple[int, int]:
        """The pool's total (min, max) node count over ``zones`` zones."""
        if self.scope is BoundsScope.TOTAL:
            return self.min_nodes, self.max_nodes
        return self.min_nodes * zones, self.max_nodes * zones


class CapacityType(StrEnum):
    """One concrete capacity type of a pool (a spot_then_on_demand pool has both)."""

    SPOT = "spot"
    ON_DEMAND = "on-demand"

    @classmethod
    def for_strategy(cls, strategy: CapacityStrategy) -> list[CapacityType]:
        """The pools a strategy creates, in the order the autoscaler should try them."""
        return {
            CapacityStrategy.ON_DEMAND: [cls.ON_DEMAND],
            CapacityStrategy.SPOT: [cls.SPOT],
            CapacityStrategy.SPOT_THEN_ON_DEMAND: [cls.SPOT, cls.ON_DEMAND],
        }[strategy]


# --- A machine's shape, stated where the catalog does not know the type -------------------


class MachineShapeArgs(BaseModel):
    """The shape of a machine or instance type, stated for a type the catalog does not know
    (GCP c3, a3-ultragpu or a4; AWS p5en or m7a): everything that reads shapes uses it (fit
    checks, plan-capacity, the autoscaler's node templates, simulation). It is refused only
    where it contradicts itself or the catalog: for a type the catalog knows every stated
    value must equal the catalog's, and for a GPU the catalog knows the count must fit one
    machine. The catalog is listed in the component reference."""

    model_config = ARGS_CONFIG

    vcpus: Int = Field(ge=1, le=2048)
    """vCPUs per machine. Required."""
    memory_gib: Float = Field(gt=0, le=65536)
    """Memory per machine in GiB, as the cloud lists it (n1-standard-1: 3.75). Required."""
    gpus: Int | None = Field(default=None, ge=0, le=16)
    """GPUs per machine. On a GKE GPU pool it may be left to accelerator_count; an EKS GPU class needs it; CPU pools leave it unset or 0. Default: none."""
    gpu_type: str | None = Field(default=None, min_length=1, max_length=64)
    """The GPU model: on GKE the accelerator type (it must equal the pool's accelerator_type, so it may be left unset); on EKS the model as ec2:DescribeInstanceTypes names it (H200, B200). Default: none."""

    @property
    def memory_mib(self) -> int:
        """Memory per machine in MiB (the unit capacity arithmetic uses)."""
        return round(self.memory_gib * 1024)

    @model_validator(mode="after")
    def _gpus_and_type(self) -> MachineShapeArgs:
        if self.gpu_type is not None and self.gpus == 0:
            raise field_error(
                "MachineShapeArgs",
                "gpus",
                f"gpus 0 contradicts gpu_type {self.gpu_type}; state the GPUs per machine or remove gpu_type",
                self.gpus,
            )
        return self


# --- What a declared pool offers to the workloads placed on it ---------------------------


class Toleration(TypedDict):
    """A toleration in pod-spec form, as ``tolerations`` renders it."""

    key: str
    operator: str
    value: str
    effect: str


def tolerations(taints: Iterable[Taint]) -> list[Toleration]:
    """The one rendering of tolerations: pod-spec form, each taint tolerated exactly (key, value
    and effect; operator Equal). ``k8s.core.v1.TolerationArgs(**t)`` takes each entry as it is."""
    return [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect.value} for t in taints]


@dataclass(frozen=True)
class PoolPlacement:
    """What a pod spec needs to run on a pool: a node selector and tolerations."""

    node_selector: dict[str, str]
    """The labels a pod selects the pool's nodes by (its node pool, compute class or GPU class)."""
    tolerations: tuple[Taint, ...]
    """The taints of the pool's nodes a pod must tolerate (each tolerated exactly)."""

    def pod_spec_fields(self) -> dict[str, Any]:
        """nodeSelector and tolerations in Kubernetes pod spec form."""
        return {
            "nodeSelector": dict(self.node_selector),
            "tolerations": tolerations(self.tolerations),
        }


def _own_ladder(ladder: Sequence[CapacityRung]) -> bool:
    """Whether ``ladder`` is stated, of more than one rung, and not one a capacity strategy names: a pool that names
    spot_then_on_demand, or states [spot, on_demand], plans exactly as the strategy, so its rungs' nodes are not told
    apart (Kueue keeps one flavor for it)."""
    return len(ladder) > 1 and tuple(ladder) != named_ladder(strategy_of(ladder))


@dataclass(frozen=True)
class RungNodes:
    """One rung of a pool's capacity ladder as its nodes are: the node pool (GKE) or node group (EKS) that buys it."""

    rung: CapacityRung
    """The rung its nodes buy."""
    node_selector: dict[str, str]
    """The node labels that select this rung's nodes and no other rung's (GKE: the node pool's name label)."""
    max_nodes: int
    """Most nodes of this rung, over all of the pool's zones."""


@dataclass(frozen=True)
class NodePoolShape:
    """One configured pool as the workloads on it see it, the same on GKE and EKS.

    Computed from the Args alone (no cloud call), so add-ons, checks and the capacity
    planner can reason about a stack's pools before anything is deployed. A pool with
    capacity spot_then_on_demand is one shape: its spot and on-demand node groups share
    the machine type, labels, taints and placement.
    """

    name: str
    """The pool (GKE) or GPU class (EKS) name as configured."""
    role: PoolRole
    """What the pool is for: system, gpu or scheduler."""
    machine_type: str
    """The machine type (GKE) or the first instance type (EKS; all of a class share one shape)."""
    vcpus: int
    """vCPUs per node."""
    memory_mib: int
    """Memory per node, MiB."""
    gpus_per_node: int
    """GPUs per node (0 on CPU pools)."""
    accelerator: str | None
    """GPU model name as the cloud labels it (nvidia-tesla-t4, t4, ...); None on CPU pools."""
    capacity: CapacityStrategy
    """How the pool buys capacity: the strategy it names, or for a stated ladder the nearest one (``strategy_of``)."""
    min_nodes: int
    """Fewest nodes in total (all zones, all capacity types)."""
    max_nodes: int
    """Most nodes in total (all zones; spot and on-demand fallback added up)."""
    labels: dict[str, str] = field(default_factory=dict)
    """Kubernetes labels every node of the pool carries (those the platform sets)."""
    taints: tuple[Taint, ...] = ()
    """Taints every node of the pool carries."""
    placement: PoolPlacement = PoolPlacement({}, ())
    """How a pod lands on this pool."""
    reserve_formula: ReserveFormula = field(kw_only=True)
    """How the kubelet's reserves are computed on the pool's nodes: its cloud's formula (gke or eks)."""
    per_zone_over: int | None = None
    """When the pool's autoscaling bounds count per zone (GKE scope per_zone): the number of zones they
    multiply over, so a total node count N needs max_nodes ceil(N / zones) in the stack file. None when
    the bounds are totals (GKE scope total, EKS node groups)."""
    gpu_sharing: GpuSharing | None = None
    """How containers share each physical GPU (time-sharing or MPS, clients per GPU); None when each
    container gets whole GPUs."""
    mig_partition: str | None = None
    """The MIG partition size each GPU is cut into (GKE's gpu_partition_size, e.g. 1g.10gb); None without MIG."""
    mig_slices_per_gpu: int | None = None
    """MIG instances per GPU at ``mig_partition`` as the catalog knows them; None without MIG, or when the
    catalog does not know the GPU (then each GPU counts once)."""
    zones: tuple[str, ...] | None = None
    """The zones the pool's nodes run in, when the plan knows their names; None when the cloud picks them
    at deploy time (a regional GKE cluster without node locations, EKS zones looked up)."""
    zone_count: int = 1
    """How many zones the pool's nodes spread over (``len(zones)`` when named)."""
    region: str | None = None
    """The region of the pool's zones, when the plan knows it."""
    queued_provisioning: bool = False
    """Whether the pool's nodes come only for a ProvisioningRequest (GKE's queued provisioning, Dynamic
    Workload Scheduler): a pod outside such a request (a warm placeholder, an inference replica) never lands there."""
    ladder: tuple[CapacityRung, ...] = ()
    """The pool's capacity ladder when the stack states one (a GKE pool's or an EKS class's capacity_ladder); empty when the pool names a
    capacity strategy. ``rungs`` reads either."""
    rung_nodes: tuple[RungNodes, ...] = ()
    """Each rung's nodes, in the ladder's order (its node pools or node groups: what selects them, how many at most), when
    the stack states a ladder of more than one rung that no capacity strategy names (one with a reservation, capacity
    block or flex-start rung, or on-demand before spot); empty otherwise, and for an EKS class whose rungs' nodes no
    label tells apart."""

    def __post_init__(self) -> None:
        # A role given as its value ("gpu") is the enum member, so `shape.role is PoolRole.GPU` holds.
        object.__setattr__(self, "role", PoolRole(self.role))

    @property
    def rungs(self) -> tuple[CapacityRung, ...]:
        """The pool's capacity ladder, first rung first: the one stated, else the one ``capacity`` names."""
        return self.ladder or named_ladder(self.capacity)

    # --- what the pool offers: the one capacity model every reader takes ----------------------

    @property
    def units_per_gpu(self) -> int:
        """Schedulable nvidia.com/gpu per physical GPU: the clients per GPU when shared, the MIG instances
        per GPU when partitioned (and known), else 1."""
        if self.gpu_sharing is not None:
            return self.gpu_sharing.max_shared_clients_per_gpu
        return self.mig_slices_per_gpu or 1

    @property
    def schedulable_gpus_per_node(self) -> int:
        """nvidia.com/gpu one node advertises, what pods, Kueue and the capacity planner count: physical
        GPUs x ``units_per_gpu`` (0 on CPU pools)."""
        return self.gpus_per_node * self.units_per_gpu

    @property
    def max_schedulable_gpus(self) -> int:
        """nvidia.com/gpu the pool holds at its maximum size (``max_nodes`` x ``schedulable_gpus_per_node``)."""
        return self.max_nodes * self.schedulable_gpus_per_node

    @property
    def shares_gpus(self) -> bool:
        """Whether containers share the pool's GPUs (time-sharing or MPS): then a container asks for exactly one."""
        return self.gpu_sharing is not None

    def gpu_offer(self) -> str:
        """What one node offers, in words: "1x nvidia-l4 shared by 8 clients (TIME_SHARING): 8 schedulable GPUs";
        "2x nvidia-tesla-a100 as 7 MIG 1g.5gb instances each: 14 schedulable GPUs"; "4x t4"; "" on CPU pools."""
        if not self.gpus_per_node:
            return ""
        physical = f"{self.gpus_per_node}x {self.accelerator}"
        if self.gpu_sharing is not None:
            sharing = self.gpu_sharing
            return f"{physical} shared by {sharing.max_shared_clients_per_gpu} clients ({sharing.strategy.value}): {self.schedulable_gpus_per_node} schedulable GPUs"
        if self.mig_partition is not None:
            each = (
                f"{self.mig_slices_per_gpu} MIG {self.mig_partition} instances each"
                if self.mig_slices_per_gpu
                else f"MIG {self.mig_partition} (instances unknown)"
            )
            return f"{physical} as {each}: {self.schedulable_gpus_per_node} schedulable GPUs"
        return physical

    def zone_names(self) -> tuple[str, ...]:
        """The pool's zones by name: the plan's, or where the cloud picks them at deploy time, ``zone_count``
        stand-ins named ``<region>-zone<i>`` (the simulator's groups and the local nodes use the same)."""
        if self.zones is not None:
            return self.zones
        return tuple(f"{self.region or 'region'}-zone{i + 1}" for i in range(self.zone_count))

    def nodes_per_zone(self) -> tuple[int, int]:
        """(min, max) nodes in each zone, the totals spread evenly and rounded up (the scheduler's and the
        autoscaler's zone balancing)."""
        zones = max(1, self.zone_count)
        return -(-self.min_nodes // zones), -(-self.max_nodes // zones)

    @classmethod
    def build(
        cls,
        *,
        name: str,
        role: PoolRole,
        machine_type: str,
        vcpus: int,
        memory_mib: int,
        gpus_per_node: int,
        accelerator: str | None,
        capacity: CapacityStrategy,
        groups: Sequence[tuple[int, int]],
        labels: dict[str, str],
        taints: tuple[Taint, ...],
        placement: PoolPlacement,
        cloud: Cloud,
        per_zone_over: int | None = None,
        gpu_sharing: GpuSharing | None = None,
        mig_partition: str | None = None,
        mig_slices_per_gpu: int | None = None,
        zones: Sequence[str] | None = None,
        zone_count: int | None = None,
        region: str | None = None,
        queued_provisioning: bool = False,
        ladder: Sequence[CapacityRung] = (),
        rung_nodes: Sequence[RungNodes] = (),
    ) -> NodePoolShape:
        """The one builder of a pool's shape, on GKE and EKS alike (gke_plan and eks_plan call it): ``groups``
        are the (min, max) node totals of the pool's node pools or node groups as the plan counted them
        (zones included), summed here; the reserve formula is the cloud's. ``gpu_sharing``, ``mig_partition``
        and ``mig_slices_per_gpu`` say what one physical GPU offers; ``zones`` (names, when known) and
        ``zone_count`` (default: len(zones), else 1) where the nodes run."""
        named = tuple(zones) if zones else None
        return cls(
            name=name,
            role=role,
            machine_type=machine_type,
            vcpus=vcpus,
            memory_mib=memory_mib,
            gpus_per_node=gpus_per_node,
            accelerator=accelerator,
            capacity=capacity,
            min_nodes=sum(low for low, _ in groups),
            max_nodes=sum(high for _, high in groups),
            labels=labels,
            taints=taints,
            placement=placement,
            reserve_formula=ReserveFormula.of(cloud),
            per_zone_over=per_zone_over,
            gpu_sharing=gpu_sharing,
            mig_partition=mig_partition,
            mig_slices_per_gpu=mig_slices_per_gpu if mig_partition is not None else None,
            zones=named,
            zone_count=zone_count if zone_count is not None else len(named or ()) or 1,
            region=region,
            queued_provisioning=queued_provisioning,
            ladder=tuple(ladder),
            rung_nodes=tuple(rung_nodes) if _own_ladder(ladder) else (),
        )

    def in_zones(self, zones: Sequence[str] | None, zone_count: int, region: str | None) -> NodePoolShape:
        """This pool running in the cluster's zones (an EKS GPU class, whose zones are the cluster's subnets',
        planned with the cluster)."""
        named = tuple(zones) if zones else None
        return dataclasses.replace(self, zones=named, zone_count=len(named) if named else zone_count, region=region)
