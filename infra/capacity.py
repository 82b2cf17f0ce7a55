"""Capacity planning for parallel pipeline runs on one pool: the seed's Kubeflow method.

The seed measured every step of a pipeline (requests = limits, taken from a real run),
derived how many runs fit on one node from the node's allocatable resources, and scaled
linearly: N parallel runs need ceil(N / jobs per node) nodes, until a shared dependency
(the artifact store) becomes the bottleneck. This module does that arithmetic for a pool
of the stack, exactly: CPU in millicores, memory in MiB, GPUs and node counts as
integers, percentages as Fractions.

Rounding, always in the conservative direction:

- reserved resources (kube/system reserve, eviction threshold) round up to a whole
  millicore / MiB, so allocatable rounds down;
- jobs per node = floor(allocatable / request), the smallest over CPU, memory and GPUs
  and over the pipeline's steps (parallel runs started together are in the same step at
  the same time, so the largest step decides);
- waves (rounds of runs, each taking one run's duration) = ceil(N / (jobs per node x K));
  waves that fit in a window T = floor(T / run duration);
- nodes = ceil(N / (jobs per node x waves)).

The planner is pure: no I/O, no cloud; `plan()` takes a NodePoolShape (from
``StackConfig.pool_shapes()``) and the typed inputs.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, PlainSerializer, model_validator

from gpu_platform.components.numbers import Int
from gpu_platform.components.pools import ARGS_CONFIG, NodePoolShape, field_error

__all__ = [
    "CapacityInputs",
    "CapacityPlan",
    "DaemonSetOverhead",
    "NodeAllocatable",
    "NodeReserves",
    "PlanError",
    "ReserveFormula",
    "StepRequests",
    "allocatable",
    "eks_default_max_pods",
    "eks_reserved_memory_mib",
    "format_duration",
    "gke_reserved_cpu_millicores",
    "gke_reserved_memory_mib",
    "plan",
    "render",
]


class PlanError(Exception):
    """Inputs the pool cannot serve (a step that fits no node, a run longer than the window)."""


# --- typed quantities: Kubernetes spellings in, exact integers out ---------------------------

_CPU = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m?)$")
_MEMORY_UNITS = {"Ki": Fraction(1, 1024), "Mi": Fraction(1), "Gi": Fraction(1024), "Ti": Fraction(1024 * 1024)}
_MEMORY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti)?$")
_DURATION = re.compile(r"^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$")


def _millicores(value: Any) -> Any:
    """1.5, "1.5", "1500m" -> 1500; a fraction of a millicore is refused, as Kubernetes does."""
    if isinstance(value, bool):
        return value
    text = str(value).strip()
    m = _CPU.match(text)
    if not m:
        raise ValueError('CPU must be cores ("1.5") or millicores ("1500m")')
    amount = Fraction(m.group(1)) * (1 if m.group(2) else 1000)
    if amount.denominator != 1:
        raise ValueError("CPU finer than one millicore is not a Kubernetes quantity")
    return int(amount)


def _mib(value: Any) -> Any:
    """4096, "4096Mi", "4Gi" -> MiB; a bare number is MiB. Rounded up to a whole MiB."""
    if isinstance(value, bool):
        return value
    text = str(value).strip()
    m = _MEMORY.match(text)
    if not m:
        raise ValueError('memory must be MiB (4096) or a quantity with Ki, Mi, Gi or Ti ("4Gi")')
    amount = Fraction(m.group(1)) * _MEMORY_UNITS[m.group(2) or "Mi"]
    return -(-amount.numerator // amount.denominator)


def _seconds(value: Any) -> Any:
    """90, "90s", "36m", "3h", "1h30m" -> seconds; a bare number is seconds."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    m = _DURATION.match(text)
    if not text or not m:
        raise ValueError('a duration is seconds (90) or h/m/s ("36m", "3h", "1h30m")')
    h, mi, s = (int(g or 0) for g in m.groups())
    return h * 3600 + mi * 60 + s


# Stored as millicores; a bare number means cores, as in Kubernetes, so it serializes as "<n>m"
# and a dumped model validates back to itself.
Millicores = Annotated[Int, BeforeValidator(_millicores), Field(ge=0), PlainSerializer(lambda v: f"{v}m", return_type=str)]
MiB = Annotated[Int, BeforeValidator(_mib), Field(ge=0)]
Seconds = Annotated[Int, BeforeValidator(_seconds), Field(ge=1)]


def format_duration(seconds: int) -> str:
    """3 h 0 min style: 10800 -> "3h", 2160 -> "36m", 5430 -> "1h30m30s"."""
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s else "")
    return out or "0s"


# --- inputs ---------------------------------------------------------------------------------------


class ReserveFormula(StrEnum):
    """How the kubelet's kube-reserved and system-reserved resources are computed."""

    GKE = "gke"
    """GKE's documented node allocatable formula (see gke_reserved_cpu_millicores/gke_reserved_memory_mib)."""
    EKS = "eks"
    """The EKS AMIs' formula: CPU as GKE's, memory 255 MiB + 11 MiB per pod the kubelet allows (max_pods, by default the instance type's ENI-based limit)."""
    NONE = "none"
    """No formula: only extra_cpu/extra_memory and the eviction threshold are reserved."""


class NodeReserves(BaseModel):
    """What the kubelet keeps from a node's capacity before pods get any of it."""

    model_config = ARGS_CONFIG

    formula: ReserveFormula | None = None
    """kube-reserved + system-reserved by GKE's or the EKS AMIs' formula, or none. Default: the stack's cloud's (gke on GCP, eks on AWS)."""
    max_pods: Int | None = Field(default=None, ge=1, le=5000)
    """Pods per node the kubelet allows, for the eks formula. Default: the instance type's, as the EKS AMIs set it: ENIs x (IPv4 addresses per ENI - 1) + 2 from the catalog (g4dn.xlarge 29, p3.8xlarge 234); 110 (the kubelet's default) for a type the catalog lacks."""
    eviction_memory: MiB = 100
    """Hard eviction threshold (memory.available); GKE and EKS both use 100Mi. Default: 100 (MiB)."""
    extra_cpu: Millicores = 0
    """CPU reserved on top of the formula (e.g. your own system daemons). Default: 0."""
    extra_memory: MiB = 0
    """Memory reserved on top of the formula. Default: 0."""


class DaemonSetOverhead(BaseModel):
    """Requests of the DaemonSet pods every node of the pool runs, summed."""

    model_config = ARGS_CONFIG

    cpu: Millicores = 300
    """Summed CPU requests of the node's DaemonSets (kube-proxy 100m, logging and metrics agents, node-exporter, dcgm-exporter). Default: 300m."""
    memory: MiB = 512
    """Summed memory requests of the node's DaemonSets. Default: 512 (MiB)."""


class StepRequests(BaseModel):
    """One pipeline step's resource requests, measured from a real run (requests = limits)."""

    model_config = ARGS_CONFIG

    name: str = "step"
    """The step's name, for messages. Default: step."""
    cpu: Millicores
    """CPU request: cores ("2", "1.5") or millicores ("1500m"). Required."""
    memory: MiB
    """Memory request: MiB (4096) or a quantity ("4Gi"). Required."""
    gpus: Int = Field(default=0, ge=0, le=16)
    """nvidia.com/gpu request. Default: 0."""

    @model_validator(mode="after")
    def _asks_for_something(self) -> StepRequests:
        if self.cpu == 0 and self.memory == 0 and self.gpus == 0:
            raise field_error("StepRequests", "cpu", "a step must request some CPU, memory or GPUs", 0)
        return self


class CapacityInputs(BaseModel):
    """What plan-capacity needs besides the pool: the pipeline's steps, a run's duration and the question."""

    model_config = ARGS_CONFIG

    steps: list[StepRequests] = Field(min_length=1)
    """The pipeline's steps and their requests. Required (at least one)."""
    run_duration: Seconds
    """Wall time of one run, measured: seconds (2160) or "36m", "3h", "1h30m". Required."""
    runs: Int | None = Field(default=None, ge=1)
    """N, the number of parallel runs to plan for. Default: none."""
    window: Seconds | None = None
    """T, the time the runs must finish in ("3h"). Default: none."""
    nodes: Int | None = Field(default=None, ge=1)
    """K, a node count to evaluate. Default: none."""
    reserves: NodeReserves = Field(default_factory=NodeReserves)
    """kubelet reserves. Default: the stack's cloud's formula and a 100 MiB eviction threshold."""
    daemonsets: DaemonSetOverhead = Field(default_factory=DaemonSetOverhead)
    """DaemonSet requests per node. Default: 300m CPU, 512 MiB."""

    @model_validator(mode="after")
    def _a_question(self) -> CapacityInputs:
        given = sum(x is not None for x in (self.runs, self.window, self.nodes))
        if given < 2:
            raise field_error(
                "CapacityInputs",
                "runs",
                "give two of runs (N), window (T) and nodes (K): N and T ask for nodes, N and K for the time, "
                "T and K for the runs that fit",
                self.runs,
            )
        return self


# --- allocatable ---------------------------------------------------------------------------------

# GKE, "Standard cluster architecture: node allocatable resources" (cloud.google.com/kubernetes-engine
# /docs/concepts/plan-node-sizes): memory 25% of the first 4 GiB, 20% of the next 4 GiB, 10% of the next
# 8 GiB, 6% of the next 112 GiB, 2% above 128 GiB (255 MiB on machines under 1 GiB); CPU 6% of the
# first core, 1% of the next, 0.5% of the next 2, 0.25% of every core above 4. Eviction: 100 MiB.
_GKE_MEMORY_TIERS = ((4 * 1024, Fraction(25, 100)), (4 * 1024, Fraction(20, 100)), (8 * 1024, Fraction(10, 100)),
                     (112 * 1024, Fraction(6, 100)), (None, Fraction(2, 100)))
_GKE_CPU_TIERS = ((1000, Fraction(6, 100)), (1000, Fraction(1, 100)), (2000, Fraction(5, 1000)), (None, Fraction(25, 10000)))


def _tiered(total: int, tiers: tuple[tuple[int | None, Fraction], ...]) -> int:
    reserved = Fraction(0)
    left = total
    for size, rate in tiers:
        chunk = left if size is None else min(left, size)
        reserved += chunk * rate
        left -= chunk
        if left <= 0:
            break
    return -(-reserved.numerator // reserved.denominator)  # round up: allocatable rounds down


def gke_reserved_memory_mib(memory_mib: int) -> int:
    """GKE's kube-reserved memory for a node of ``memory_mib`` (no eviction threshold), rounded up."""
    if memory_mib < 1024:
        return 255
    return _tiered(memory_mib, _GKE_MEMORY_TIERS)


def eks_reserved_memory_mib(max_pods: int) -> int:
    """The EKS AMIs' kube-reserved memory: 255 MiB + 11 MiB per pod (amazon-eks-ami, nodeadm)."""
    return 255 + 11 * max_pods


KUBELET_DEFAULT_MAX_PODS = 110
"""The kubelet's own default --max-pods, used for an instance type the catalog does not know."""


def eks_default_max_pods(instance_type: str) -> int:
    """The max pods the EKS AMIs give ``instance_type``: its ENI-based limit from the catalog
    (components.gpu_catalog.AwsInstanceType.eks_max_pods), else the kubelet's default 110."""
    from gpu_platform.components.gpu_catalog import AWS_INSTANCE_TYPES

    row = AWS_INSTANCE_TYPES.get(instance_type)
    return row.eks_max_pods if row is not None else KUBELET_DEFAULT_MAX_PODS


def gke_reserved_cpu_millicores(vcpus: int) -> int:
    """GKE's kube-reserved CPU for a node of ``vcpus`` cores, in millicores, rounded up."""
    return _tiered(vcpus * 1000, _GKE_CPU_TIERS)


@dataclass(frozen=True)
class NodeAllocatable:
    """One node of a pool: capacity, what the kubelet and DaemonSets take, and what is left for jobs."""

    formula: str
    """The reserve formula applied (gke, eks or none)."""
    max_pods: int | None
    """The pods per node the eks formula counted; None for the other formulas."""
    capacity_cpu: int
    capacity_memory_mib: int
    reserved_cpu: int
    reserved_memory_mib: int
    daemonset_cpu: int
    daemonset_memory_mib: int
    gpus: int

    @property
    def cpu(self) -> int:
        """Millicores left for jobs: capacity - reserves - DaemonSets (never below 0)."""
        return max(0, self.capacity_cpu - self.reserved_cpu - self.daemonset_cpu)

    @property
    def memory_mib(self) -> int:
        """MiB left for jobs."""
        return max(0, self.capacity_memory_mib - self.reserved_memory_mib - self.daemonset_memory_mib)


def allocatable(
    shape: NodePoolShape,
    reserves: NodeReserves,
    daemonsets: DaemonSetOverhead,
    default_formula: ReserveFormula = ReserveFormula.GKE,
) -> NodeAllocatable:
    """A node of ``shape`` as the scheduler sees it, minus the DaemonSets' requests.

    ``default_formula`` applies when ``reserves.formula`` is unset (the stack's cloud's).
    """
    cpu = shape.vcpus * 1000
    formula = reserves.formula or default_formula
    max_pods = None
    if formula is ReserveFormula.GKE:
        reserved_cpu = gke_reserved_cpu_millicores(shape.vcpus)
        reserved_mem = gke_reserved_memory_mib(shape.memory_mib)
    elif formula is ReserveFormula.EKS:
        reserved_cpu = gke_reserved_cpu_millicores(shape.vcpus)  # the EKS AMIs use the same CPU tiers
        max_pods = reserves.max_pods or eks_default_max_pods(shape.machine_type)
        reserved_mem = eks_reserved_memory_mib(max_pods)
    else:
        reserved_cpu = reserved_mem = 0
    return NodeAllocatable(
        formula=formula.value,
        max_pods=max_pods,
        capacity_cpu=cpu,
        capacity_memory_mib=shape.memory_mib,
        reserved_cpu=reserved_cpu + reserves.extra_cpu,
        reserved_memory_mib=reserved_mem + reserves.eviction_memory + reserves.extra_memory,
        daemonset_cpu=daemonsets.cpu,
        daemonset_memory_mib=daemonsets.memory,
        gpus=shape.gpus_per_node,
    )


# --- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapacityPlan:
    """The answers for one pool; durations in seconds, counts as integers."""

    pool: str
    machine_type: str
    pool_min_nodes: int
    pool_max_nodes: int
    node: NodeAllocatable
    jobs_per_node: int
    limited_by: str
    """The resource and step that set jobs per node, e.g. "gpus of step train"."""
    run_duration: int
    runs: int | None
    window: int | None
    nodes: int | None
    nodes_needed: int | None
    """Nodes for N runs in T (N and T given)."""
    waves_needed: int | None
    time_needed: int | None
    """Seconds N runs take on K nodes (N and K given)."""
    runs_that_fit: int | None
    """Runs that finish in T on K nodes (T and K given)."""
    recommended_max_nodes: int
    """The autoscaling maximum the answers need: nodes_needed, else K."""
    per_zone_over: int | None = None
    """Zones a per_zone pool's bounds multiply over (GKE scope per_zone); None for total bounds."""
    recommended_max_nodes_per_zone: int | None = None
    """For a per_zone pool, the max_nodes to set in the stack file: ceil(recommended_max_nodes / zones)."""

    @property
    def pool_max_too_low(self) -> bool:
        return self.recommended_max_nodes > self.pool_max_nodes

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["node"]["allocatable_cpu"] = self.node.cpu
        out["node"]["allocatable_memory_mib"] = self.node.memory_mib
        out["pool_max_too_low"] = self.pool_max_too_low
        return out


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def plan(shape: NodePoolShape, inputs: CapacityInputs, default_formula: ReserveFormula = ReserveFormula.GKE) -> CapacityPlan:
    """Jobs per node, the three answers and the autoscaling maximum for ``shape``; PlanError when it cannot.

    ``default_formula``: the kubelet reserve formula of the stack's cloud, used unless the
    inputs name one.
    """
    node = allocatable(shape, inputs.reserves, inputs.daemonsets, default_formula)
    where = f"a node of pool {shape.name} ({shape.machine_type})"
    fits: list[tuple[int, str]] = []
    for step in inputs.steps:
        # GPUs first: on a tie, the scarce resource is the one reported as the limit.
        for resource, request, available, unit in (
            ("gpus", step.gpus, node.gpus, ""),
            ("cpu", step.cpu, node.cpu, "m"),
            ("memory", step.memory, node.memory_mib, " MiB"),
        ):
            if request == 0:
                continue
            if request > available:
                raise PlanError(
                    f"step {step.name} requests {request}{unit} {resource}; {where} has {available}{unit} "
                    f"allocatable {resource}: it fits no node of this pool"
                )
            fits.append((available // request, f"{resource} of step {step.name}"))
    jobs_per_node, limited_by = min(fits, key=lambda f: f[0])

    d = inputs.run_duration
    nodes_needed = waves_needed = time_needed = runs_that_fit = None
    if inputs.runs is not None and inputs.window is not None:
        waves_in_window = inputs.window // d
        if waves_in_window == 0:
            raise PlanError(
                f"one run takes {format_duration(d)}, longer than the window {format_duration(inputs.window)}: "
                "no node count finishes it in time"
            )
        # The fewest waves that still fit, for the fewest nodes: all the waves the window allows.
        nodes_needed = _ceil_div(inputs.runs, jobs_per_node * waves_in_window)
        waves_needed = _ceil_div(inputs.runs, jobs_per_node * nodes_needed)
    if inputs.runs is not None and inputs.nodes is not None:
        time_needed = _ceil_div(inputs.runs, jobs_per_node * inputs.nodes) * d
    if inputs.window is not None and inputs.nodes is not None:
        runs_that_fit = (inputs.window // d) * jobs_per_node * inputs.nodes
    recommended = max(x for x in (nodes_needed, inputs.nodes) if x is not None)
    return CapacityPlan(
        pool=shape.name,
        machine_type=shape.machine_type,
        pool_min_nodes=shape.min_nodes,
        pool_max_nodes=shape.max_nodes,
        node=node,
        jobs_per_node=jobs_per_node,
        limited_by=limited_by,
        run_duration=d,
        runs=inputs.runs,
        window=inputs.window,
        nodes=inputs.nodes,
        nodes_needed=nodes_needed,
        waves_needed=waves_needed,
        time_needed=time_needed,
        runs_that_fit=runs_that_fit,
        recommended_max_nodes=recommended,
        per_zone_over=shape.per_zone_over,
        recommended_max_nodes_per_zone=None if shape.per_zone_over is None else _ceil_div(recommended, shape.per_zone_over),
    )


def render(p: CapacityPlan, shape: NodePoolShape) -> list[str]:
    """The plan as the lines plan-capacity prints."""
    n = p.node
    gpus = f", {shape.gpus_per_node}x {shape.accelerator}" if shape.gpus_per_node else ""
    lines = [
        f"pool {p.pool}: {p.machine_type}{gpus}, {p.pool_min_nodes}..{p.pool_max_nodes} nodes in total",
        f"node: capacity {n.capacity_cpu}m CPU, {n.capacity_memory_mib} MiB; kubelet reserves "
        f"({n.formula}{'' if n.max_pods is None else f', max {n.max_pods} pods'}) {n.reserved_cpu}m, "
        f"{n.reserved_memory_mib} MiB; DaemonSets {n.daemonset_cpu}m, {n.daemonset_memory_mib} MiB; "
        f"left for jobs {n.cpu}m CPU, {n.memory_mib} MiB, {n.gpus} GPUs",
        f"jobs per node: {p.jobs_per_node} (limited by {p.limited_by}); one run takes {format_duration(p.run_duration)}",
    ]
    if p.nodes_needed is not None:
        assert p.runs is not None and p.window is not None and p.waves_needed is not None
        lines.append(
            f"{p.runs} runs in {format_duration(p.window)}: {p.nodes_needed} nodes "
            f"({p.waves_needed} waves of up to {p.nodes_needed * p.jobs_per_node} runs, done in "
            f"{format_duration(p.waves_needed * p.run_duration)})"
        )
    if p.time_needed is not None:
        lines.append(f"{p.runs} runs on {p.nodes} nodes: {format_duration(p.time_needed)}")
    if p.runs_that_fit is not None:
        lines.append(f"runs that finish in {format_duration(p.window or 0)} on {p.nodes} nodes: {p.runs_that_fit}")
    verdict = (
        f"too low: pool {p.pool} allows at most {p.pool_max_nodes} nodes; raise its autoscaling maximum"
        if p.pool_max_too_low
        else f"ok: pool {p.pool} allows up to {p.pool_max_nodes}"
    )
    lines.append(f"recommended autoscaling maximum: {p.recommended_max_nodes} nodes; {verdict}")
    if p.per_zone_over is not None and p.recommended_max_nodes_per_zone is not None:
        # The stack file's per_zone max_nodes multiplies over the zones: setting the total there asks for zones x it.
        lines.append(
            f"per zone: pool {p.pool}'s autoscaling bounds are per_zone over {p.per_zone_over} zones: the "
            f"recommendation is max_nodes {p.recommended_max_nodes_per_zone} per zone "
            f"(ceil({p.recommended_max_nodes} / {p.per_zone_over})), not {p.recommended_max_nodes}"
        )
    return lines
