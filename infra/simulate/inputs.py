"""What the cluster model is given (node groups, jobs of stages of gangs of pods, timings, the
binding policy) and what it records (nodes, pods, fallbacks: the trace the figures are made of)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from gpu_platform.components.core.labels import GPU_RESOURCE
from gpu_platform.infra.simulate.distributions import Dist, fixed

__all__ = [
    "Binding",
    "Budget",
    "Fallback",
    "Gang",
    "Job",
    "KarpenterInputs",
    "NodeGroup",
    "NodePoolInputs",
    "NodeRecord",
    "PodRecord",
    "PodSpec",
    "Resources",
    "Stage",
    "Timings",
    "Trace",
    "UNLIMITED",
]


class Binding(StrEnum):
    """How the scheduler scores the nodes a pod fits."""

    MOST_ALLOCATED = "most-allocated"
    """Bin packing: the fullest node first, so idle nodes empty out and scale down (GKE's optimize-utilization)."""
    LEAST_ALLOCATED = "least-allocated"
    """The default scheduler's spreading: the emptiest node first (fewer nodes ever empty)."""


@dataclass(frozen=True, order=True)
class Resources:
    """Requests or allocatable: CPU millicores, memory MiB, GPUs."""

    cpu: int = 0
    memory: int = 0
    gpus: int = 0

    def fits(self, request: Resources) -> bool:
        return request.cpu <= self.cpu and request.memory <= self.memory and request.gpus <= self.gpus

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.cpu + other.cpu, self.memory + other.memory, self.gpus + other.gpus)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.cpu - other.cpu, self.memory - other.memory, self.gpus - other.gpus)

    def count(self, request: Resources) -> int:
        """How many pods of ``request`` fit in these resources."""
        counts = [have // need for have, need in ((self.cpu, request.cpu), (self.memory, request.memory), (self.gpus, request.gpus)) if need]
        return min(counts) if counts else 10**9


@dataclass(frozen=True)
class NodeGroup:
    """One group the autoscaler grows: a GKE node pool or an EKS managed node group."""

    name: str
    pool: str
    """The configured pool or GPU class it belongs to (a spot_then_on_demand pool has two groups)."""
    role: str
    """system, scheduler or gpu (NodePoolShape.role)."""
    machine_type: str
    allocatable: Resources
    """What pods can request on one node (the capacity minus the kubelet's reserves and DaemonSets)."""
    gpus_per_node: int
    """The node's physical GPUs (what is paid for); ``allocatable.gpus`` is what pods can request, its
    schedulable GPUs (x clients on a shared pool), as kube_node_status_capacity reports nvidia.com/gpu."""
    accelerator: str | None = None
    spot: bool = False
    priority: int = 0
    """Higher is tried first, among the groups of the same ``compute_class`` only: EKS's priority expander tiers and
    Karpenter's NodePool weights (``compute_class`` None) order every group; a GKE ComputeClass's priorities order
    that class's node pools and nothing else (GKE's other node pools: 0)."""
    compute_class: str | None = None
    """The GKE ComputeClass whose ``priorities`` list this node pool (a capacity ladder of more than one rung): its
    ``priority`` ranks it among that class's node pools only, for the pods that select the class (their nodes carry
    the class's label and its taint ``cloud.google.com/compute-class=<class>:NoSchedule``). None: no class."""
    zones: tuple[str, ...] = ("zone",)
    min_nodes: int = 0
    """Fewest nodes: in total, or in each zone when ``per_zone``."""
    max_nodes: int = 1
    """Most nodes: in total, or in each zone when ``per_zone``."""
    per_zone: bool = False
    image_streaming: bool = False
    taints: tuple[str, ...] = ()
    """The taints (NoSchedule, NoExecute) every node carries, each ``key=value``; a pod must tolerate each one."""
    reserved: int | None = None
    """A reservation rung's node pool (GKE ``reservation_affinity``) or node group (EKS: an On-Demand Capacity
    Reservation, or a capacity block): the instances its reservation holds, billed over the whole run whether nodes
    use them or not (a node consuming one adds no charge), at the on-demand rate, a capacity block's at the table's
    capacity-block price. None: no reservation."""
    reservation_named: bool = False
    """A named (SPECIFIC) reservation: no node beyond ``reserved`` (the scale-up finds no capacity and the ladder's
    next rung is tried). False with ``reserved`` set: any matching reservation, and on-demand beyond it."""
    capacity_block: bool = False
    """An EC2 capacity block for ML (EKS ``CAPACITY_BLOCK``, Karpenter ``reserved`` on the block's id): ``reserved``
    instances paid for its window (the whole run) at the table's capacity-block price, named (no node beyond them)."""
    flex_start: bool = False
    """Flex-start VMs (GKE ``node_config.flex_start``): priced at the table's flex-start price."""
    run_limit: float | None = None
    """Flex-start's ``max_run_duration`` in seconds: GKE deletes the node this long after it joined (its VM
    started), its pods lost and recreated pending as at a preemption. None: no limit."""

    @property
    def total_max(self) -> int:
        return self.max_nodes * len(self.zones) if self.per_zone else self.max_nodes

    @property
    def total_min(self) -> int:
        return self.min_nodes * len(self.zones) if self.per_zone else self.min_nodes


@dataclass(frozen=True)
class PodSpec:
    """One pod of a stage."""

    role: str
    """worker, scheduler, step, ... (part of the pod's name)."""
    requests: Resources
    roles: tuple[str, ...] = ("gpu",)
    """The pool roles whose nodes it may run on."""
    prefers: str | None = None
    """A pool role it prefers (preferred node affinity): bound there first when it fits."""
    pools: tuple[str, ...] | None = None
    """Only these pools (a node selector on the pool or class); None: any pool of its roles."""
    tolerations: tuple[str, ...] | None = (GPU_RESOURCE,)
    """The taints it tolerates: ``key=value`` tolerates that taint only (operator Equal, as the stack renders every
    toleration: components/pools/shapes.tolerations), a bare ``key`` every value of the key (operator Exists); None:
    every taint of the pools it names (it carries their placement)."""
    home: tuple[str, ...] | None = None
    """Placed as the stack places the Dask pods (RapidsDaskClusterSpec.for_pools): on the first pool of the first of
    these roles the cluster has, whose taints it tolerates exactly (the scheduler: the scheduler pool's, else the
    first GPU pool's), in place of ``tolerations``; the cluster model resolves it against its groups (``placed``).
    None: ``tolerations`` as given."""
    pinned: bool = False
    """With ``home``: the pod also selects that pool (the workers' node selector, the pool's or its class's), so it
    runs on no other pool."""

    def placed(self, groups: Sequence[NodeGroup]) -> PodSpec:
        """This pod as the stack places it on ``groups`` (see ``home``); itself when it has no ``home``."""
        if self.home is None:
            return self
        pool = next((g for role in self.home for g in groups if g.role == role), None)
        if pool is None:
            return replace(self, home=None, pinned=False)
        return replace(self, tolerations=pool.taints, pools=(pool.pool,) if self.pinned else self.pools, home=None, pinned=False)

    def tolerates(self, taint: str) -> bool:
        """Whether it tolerates ``taint`` (``key=value``)."""
        return self.tolerations is None or taint in self.tolerations or taint.split("=", 1)[0] in self.tolerations

    def may_use(self, group: NodeGroup) -> bool:
        if group.role not in self.roles or (self.pools is not None and group.pool not in self.pools):
            return False
        return all(self.tolerates(t) for t in group.taints)


@dataclass(frozen=True)
class Gang:
    """Pods that work together: a Dask cluster (its scheduler and workers) or a pipeline step's pod."""

    pods: tuple[PodSpec, ...]
    work: float | None
    """Seconds of work once every pod of the gang runs; None: a session that holds its pods until every
    other job is done (the deep-dive's mock Jupyter cluster that submits the work)."""


@dataclass(frozen=True)
class Stage:
    """Gangs created together; the next stage starts when every one of them is done."""

    gangs: tuple[Gang, ...]

    @classmethod
    def of(cls, pods: Sequence[PodSpec], work: float | None) -> Stage:
        """A stage of one gang."""
        return cls((Gang(tuple(pods), work),))


@dataclass(frozen=True)
class Job:
    at: float
    """Arrival, seconds from the start."""
    namespace: str
    name: str
    stages: tuple[Stage, ...]


@dataclass(frozen=True)
class Timings:
    """The autoscaler's settings and the nodes' and pods' timings (see the module docstring)."""

    scan_interval: float = 10.0
    provision: Dist = fixed(90)
    gpu_ready: Dist = fixed(210)
    image_pull: Dist = fixed(300)
    image_pull_streaming: Dist = fixed(15)
    prepuller: bool = True
    pod_start: Dist = fixed(2)
    scale_down_unneeded: float = 600.0
    scale_down_delay_after_add: float = 600.0
    scale_down_utilisation_threshold: float = 0.5
    scale_down_gpu_utilisation_threshold: float = 0.5
    unremovable_recheck: float = 300.0
    max_node_provision: float = 900.0
    early_abort: bool = False
    failure_report: Dist = fixed(60)
    initial_backoff: float = 300.0
    max_backoff: float = 1800.0
    backoff_reset: float = 10_800.0
    spot_shortage: float = 0.0
    preemption_per_node_hour: float = 0.0
    preemption_notice: float = 30.0


@dataclass(frozen=True)
class NodePoolInputs:
    """A Karpenter NodePool as the model sees it (infra/simulate/karpenter.py): the node group of the same name
    plus what the NodePool object says."""

    name: str
    """The NodePool's name, which is its model group's (NodeGroup.name)."""
    weight: int
    """spec.weight: NodePools are tried by descending weight."""
    capacity: Resources
    """What one node counts against the limits: the instance type's capacity (vCPUs, memory, GPUs as advertised:
    x clients on a shared class, as its NodeOverlay says), not its allocatable."""
    limits: Resources
    """spec.limits (cpu, memory, nvidia.com/gpu) in the same units; a resource the NodePool does not limit is
    UNLIMITED."""


UNLIMITED = 2**62
"""A resource a NodePool's limits leave out."""


@dataclass(frozen=True)
class Budget:
    """One of spec.disruption.budgets."""

    nodes: str
    """A node count ("0", "3") or a percentage of the NodePool's nodes ("10%")."""
    schedule: str | None = None
    """Cron (UTC) when it becomes active; None: always."""
    duration: float | None = None
    """Seconds it stays active after each firing of ``schedule``."""
    reasons: tuple[str, ...] = ()
    """The disruption reasons it limits (Empty, Underutilized, Drifted); (): all."""


@dataclass(frozen=True)
class KarpenterInputs:
    """Karpenter's NodePools and settings: what provisions and removes the GPU nodes of a Karpenter stack."""

    pools: tuple[NodePoolInputs, ...]
    consolidation_policy: str = "WhenEmpty"
    """WhenEmpty (only empty nodes go) or WhenEmptyOrUnderutilized (also a node whose pods fit elsewhere, evicted)."""
    consolidate_after: float | None = 600.0
    """Seconds a node must be without pod events before it is consolidatable; None: Never (no consolidation)."""
    budgets: tuple[Budget, ...] = (Budget("10%"),)
    batch_idle: float = 1.0
    """--batch-idle-duration: a batch ends this long after its last new pending pod."""
    batch_max: float = 10.0
    """--batch-max-duration: a batch ends this long after its first pending pod at the latest."""
    start: datetime.datetime = datetime.datetime(2026, 1, 5, 9, 0, tzinfo=datetime.UTC)
    """The wall-clock time (UTC) of the run's second 0, for the budgets' schedules."""


@dataclass(eq=False)
class NodeRecord:
    name: str
    group: NodeGroup
    zone: str
    requested: float
    """The scale-up that asked for it (billing starts)."""
    joined: float | None = None
    gpu_ready: float | None = None
    """GPUs allocatable and advertised; None while not yet."""
    removed: float | None = None
    preempted: bool = False
    failed: bool = False
    """Asked for and never given (no spot capacity): not paid, never joined."""


@dataclass(eq=False)
class PodRecord:
    namespace: str
    name: str
    requests: Resources
    created: float
    bound: float | None = None
    running: float | None = None
    """Containers running: the end of Pending."""
    finished: float | None = None
    node: str | None = None
    lost: bool = False
    """Killed with its node (spot preemption) and replaced."""


@dataclass
class Fallback:
    """A spot scale-up that found no capacity."""

    group: str
    requested: float
    gave_up: float
    next_scale_up: float | None = None
    """The autoscaler's next scale-up of another group of the same role (the fallback), None if none followed."""
    role: str = "gpu"

    @property
    def seconds(self) -> float | None:
        """From the failed request to the fallback's request."""
        return None if self.next_scale_up is None else self.next_scale_up - self.requested


@dataclass
class Trace:
    """Everything a run did, for the report's figures, the cost and an export to Prometheus."""

    horizon: float
    pods: list[PodRecord] = field(default_factory=list)
    nodes: list[NodeRecord] = field(default_factory=list)
    refused_pods: int = 0
    refused_gangs: int = 0
    """Gangs (Dask clusters, pipeline steps) refused at admission: their tenant's quota was full."""
    refused_jobs: int = 0
    """Jobs that ended because every gang of a stage was refused."""
    jobs: int = 0
    jobs_done: int = 0
    gangs: int = 0
    """Gangs admitted (Dask clusters, pipeline steps, replayed pods)."""
    gangs_done: int = 0
    """Gangs whose work finished (sessions aside)."""
    fallbacks: list[Fallback] = field(default_factory=list)
    preemptions: int = 0
    run_limit_ends: int = 0
    """Flex-start nodes deleted at their max_run_duration (NodeGroup.run_limit)."""
    placeholders_preempted: int = 0
    """Warm-capacity placeholders evicted by the scheduler for a pod that fit no node (infra/simulate/warm.py)."""
    stalled_at: float | None = None
    """When the run stopped because pending pods could never be placed (the stack cannot run the workload)."""
    stalled_pods: int = 0
    stall_causes: list[str] = field(default_factory=list)
    """Why the pending pods of a stalled run can never be placed: one line per kind of pod, naming
    some of them, what they ask for, what the pools they may use offer and the fix."""
