"""Capacity planning for parallel pipeline runs on one pool: the Kubeflow Pipelines scalability guide's method.

The guide measures every step of a pipeline (requests = limits, taken from a real run),
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

GPUs are the pool's schedulable GPUs (``NodePoolShape.schedulable_gpus_per_node``): on a time-shared or
MPS pool a node's GPUs times the clients per GPU, on a MIG pool its MIG instances, as the device plugin
advertises nvidia.com/gpu and Kueue counts them.

The planner is pure: no I/O, no cloud; `plan()` takes a NodePoolShape (from
``StackConfig.pool_shapes()``) and the typed inputs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, Field, model_validator

from gpu_platform.components.core.models import ARGS_CONFIG, field_error
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.core.quantities import MiB, Millicores, Seconds, format_duration
from gpu_platform.components.pools.reserves import (
    DaemonSetOverhead,
    NodeAllocatable,
    NodeReserves,
    ReserveFormula,
    allocatable,
    eks_default_max_pods,
    eks_reserved_memory_mib,
    gke_reserved_cpu_millicores,
    gke_reserved_memory_mib,
)
from gpu_platform.components.pools.shapes import NodePoolShape

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


# --- inputs ---------------------------------------------------------------------------------------


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
                "give two of runs (N), window (T) and nodes (K): N and T ask for nodes, N and K for the time, T and K for the runs that fit",
                self.runs,
            )
        return self


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
    physical_gpus_per_node: int = 0
    """Physical GPUs per node; ``node.gpus`` counts schedulable GPUs (x clients when shared, MIG instances)."""
    units_per_gpu: int = 1
    """Schedulable GPUs per physical GPU (NodePoolShape.units_per_gpu): a step's GPU request takes one of them each."""
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


def plan(shape: NodePoolShape, inputs: CapacityInputs) -> CapacityPlan:
    """Jobs per node, the three answers and the autoscaling maximum for ``shape``; PlanError when it cannot.

    The kubelet reserves are the pool's cloud's formula (``shape.reserve_formula``) unless the
    inputs name one.
    """
    node = allocatable(shape, inputs.reserves, inputs.daemonsets)
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
                    f"step {step.name} requests {request}{unit} {resource}; {where} has {available}{unit} allocatable {resource}: it fits no node of this pool"
                )
            fits.append((available // request, f"{resource} of step {step.name}"))
    jobs_per_node, limited_by = min(fits, key=lambda f: f[0])

    d = inputs.run_duration
    nodes_needed = waves_needed = time_needed = runs_that_fit = None
    if inputs.runs is not None and inputs.window is not None:
        waves_in_window = inputs.window // d
        if waves_in_window == 0:
            raise PlanError(f"one run takes {format_duration(d)}, longer than the window {format_duration(inputs.window)}: no node count finishes it in time")
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
        physical_gpus_per_node=shape.gpus_per_node,
        units_per_gpu=shape.units_per_gpu,
    )


def render(p: CapacityPlan, shape: NodePoolShape) -> list[str]:
    """The plan as the lines plan-capacity prints."""
    n = p.node
    # The shape's one count: on a shared or MIG pool the node's schedulable GPUs, said as such.
    gpus = f", {shape.gpu_offer()}" if shape.gpus_per_node else ""
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
