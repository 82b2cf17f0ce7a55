"""`gpu-platform simulate`: a stack's cluster under a workload, before anyone pays for it.

The stack's typed config (the same StackConfig the deployment reads) becomes the node groups
of the cluster model (infra/simulate/model.py): each pool's or GPU class's node groups with
their real shapes (the catalog, or a stated shape) and allocatable resources (the kubelet
reserve formulas plan-capacity uses), their bounds (per zone or total), their capacity type
and the order the autoscaler tries them (GKE ComputeClass priorities: spot before on-demand;
EKS priority tiers, ties by least-waste), the tenants' GPU quotas and the autoscaler's
settings (EKS: the stack's cluster-autoscaler settings; GKE: its autoscaling profile). On a Karpenter
stack, its NodePools (weights, limits, disruption) and Karpenter's provisioner and disruption controller
(infra/simulate/karpenter.py) in the autoscaler's place.
``ModelSettings`` holds what the stack does not say: timings of nodes and pods, spot
shortage and preemption, with documented defaults and their sources. ``--set KEY=VALUE``
overrides a stack key (``gke.gpu_pools[t4].autoscaling.min_nodes=2``) or a model key
(``model.autoscaler.scan_interval=5s``) for the run, or removes it with ``null``; ``--sweep KEY=V1,V2``
runs every combination.

The figures are the report's (infra/report/prometheus.py ``figures``) from the simulated run sampled
on its 1 s grid, plus the cost (infra/simulate/prices.json or ``--prices``), the failovers and the
pods refused at admission.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gpu_platform.infra.simulate.cluster import ModelInputs, model_inputs
from gpu_platform.infra.simulate.inputs import Job, Trace
from gpu_platform.infra.simulate.model import ClusterModel
from gpu_platform.infra.simulate.prices import Cost, PriceTable, cost_of
from gpu_platform.infra.simulate.settings import SimulationError, apply_overrides, validate_model

__all__ = [
    "HOLDS",
    "Configuration",
    "Outcome",
    "Work",
    "cheapest_meeting",
    "configurations",
    "inapplicable",
    "run",
    "run_all",
    "sweep_figure",
    "sweep_plot",
    "sweep_table",
    "trace_report",
    "unsettable",
]


def _steps(times: list[tuple[float, float, int]], horizon: int) -> list[float]:
    """Per 1 s step t in [0, horizon): the sum of ``value`` over (start, end, value) with start <= t < end,
    a sample at t counting an interval [start, end) as Prometheus sees it at a 1 s scrape."""
    import numpy as np

    delta = np.zeros(horizon + 1)
    for start, end, value in times:
        a, b = min(horizon, math.ceil(start)), min(horizon, math.ceil(end))
        if a < b:
            delta[a] += value
            delta[b] -= value
    steps: list[float] = np.cumsum(delta[:horizon]).tolist()
    return steps


def trace_report(trace: Trace, label: str = "simulation") -> Any:
    """The report (infra/report/prometheus.py) of a simulated run over [0, horizon) at 1 s, by the report's own rules."""
    from gpu_platform.infra.report.prometheus import figures

    horizon = math.ceil(trace.horizon)
    gpu_pods = [p for p in trace.pods if p.requests.gpus > 0]
    waits: dict[str, int] = {}
    at_end: list[str] = []
    for pod in gpu_pods:
        name = f"{pod.namespace}/{pod.name}"
        created = math.ceil(pod.created)
        if created >= horizon:
            continue
        running = horizon if pod.running is None else min(horizon, math.ceil(pod.running))
        if pod.lost and pod.running is None:
            running = min(running, math.ceil(pod.finished or horizon))
        waits[name] = max(0, running - created)
        if running >= horizon and not (pod.lost and pod.running is None):
            at_end.append(name)
    node_spans = [
        (n.gpu_ready, n.removed if n.removed is not None else horizon, n.group.allocatable.gpus)
        for n in trace.nodes
        if n.group.gpus_per_node > 0 and n.gpu_ready is not None
    ]
    available = _steps(node_spans, horizon)
    nodes = _steps([(a, b, 1) for a, b, _ in node_spans], horizon)
    utilised = _steps(
        [(p.running, p.finished if p.finished is not None else horizon, p.requests.gpus) for p in gpu_pods if p.running is not None],
        horizon,
    )
    return figures(
        prometheus=label,
        times=range(0, horizon),
        step=1,
        gpu_pods=len(gpu_pods),
        waits=waits,
        carried={},
        at_end=at_end,
        without=[],
        available=available,
        utilised=utilised,
        nodes=nodes,
        dcgm_values=[],
    )


@dataclass
class Outcome:
    """One simulated configuration: the report, the cost, failovers and admissions."""

    label: str
    overrides: dict[str, Any]
    report: Any
    cost: Cost
    trace: Trace
    gangs_per_workload: int = 0
    """Dask clusters or pipeline steps in one pass of the workload (0: unknown)."""

    @property
    def workloads(self) -> float | None:
        """How many passes of the workload the run finished: its finished clusters or steps over one pass's."""
        if not self.gangs_per_workload or not self.trace.gangs_done:
            return None
        return self.trace.gangs_done / self.gangs_per_workload

    @property
    def usd_per_workload(self) -> float | None:
        """The run's cost over the passes of the workload it finished: what the work costs, whatever the
        run's length (a setting that lengthens the run looks cheaper per day, not per workload)."""
        done = self.workloads
        return None if done is None else self.cost.total_usd / done

    @property
    def p90(self) -> int | None:
        from gpu_platform.infra.report.prometheus import nearest_rank

        waits = sorted(self.report.pending_by_pod.values())
        return nearest_rank(waits, 90) if waits else None

    def failover(self) -> dict[str, Any]:
        """Scale-ups that found no capacity (spot, or a named reservation's instances all taken; the JSON's
        ``spot_scale_ups_short`` counts both): how long the autoscaler took to give up on each, and to the next
        scale-up of another group (the fallback; none when no other group could grow); spot preemptions and
        flex-start nodes ended at their run limit."""
        fallbacks = self.trace.fallbacks
        gave_up = [f.gave_up - f.requested for f in fallbacks if f.gave_up > f.requested]
        done = [f.seconds for f in fallbacks if f.seconds is not None]
        return {
            "spot_scale_ups_short": len(fallbacks),
            "give_up_seconds": gave_up,
            "give_up_mean_s": sum(gave_up) / len(gave_up) if gave_up else None,
            "fallback_seconds": done,
            "fallback_mean_s": sum(done) / len(done) if done else None,
            "without_fallback": len(fallbacks) - len(done),
            "preemptions": self.trace.preemptions,
            "run_limit_ends": self.trace.run_limit_ends,
        }

    def summary(self) -> dict[str, Any]:
        """The key figures (a sweep's row): the report's, the p90 wait, the cost."""
        r = self.report
        return {
            "label": self.label,
            "overrides": self.overrides,
            "pending_median_s": r.pending_median_s,
            "pending_p90_s": self.p90,
            "pending_p99_s": r.pending_p99_s,
            "scheduled_within": r.scheduled_within,
            "utilisation_percent": r.utilisation_percent,
            "gpu_nodes_max": r.gpu_nodes_max,
            "usd_per_day": self.cost.usd_per_day,
            "usd_per_workload": self.usd_per_workload,
            "total_usd": self.cost.total_usd,
            "refused_pods": self.trace.refused_pods,
            "stalled_at_s": self.trace.stalled_at,
            "stalled_pods": self.trace.stalled_pods,
            **{k: v for k, v in self.failover().items() if not k.endswith("_seconds")},
        }

    def json_document(self, workload: dict[str, Any], inputs: ModelInputs) -> dict[str, Any]:
        """report.json's keys plus pending_p90_s, cost, failover, admission and what was simulated."""
        out: dict[str, Any] = self.report.summary()
        out["pending_p90_s"] = self.p90
        out["cost"] = {**asdict(self.cost), "usd_per_workload": self.usd_per_workload, "workloads_done": self.workloads}
        out["failover"] = self.failover()
        out["admission"] = {
            "jobs": self.trace.jobs,
            "jobs_done": self.trace.jobs_done,
            "gangs": self.trace.gangs,
            "refused_gangs": self.trace.refused_gangs,
            "refused_jobs": self.trace.refused_jobs,
            "refused_pods": self.trace.refused_pods,
            "stalled_at_s": self.trace.stalled_at,
            "stalled_pods": self.trace.stalled_pods,
            "stall_causes": self.trace.stall_causes,
        }
        out["simulation"] = {
            "label": self.label,
            "overrides": self.overrides,
            "workload": workload,
            "seed": inputs.seed,
            "binding": inputs.binding.value,
            "model": inputs.settings,
            "node_groups": [
                {
                    "name": g.name,
                    "pool": g.pool,
                    "role": g.role,
                    "machine_type": g.machine_type,
                    "spot": g.spot,
                    "priority": g.priority,
                    "compute_class": g.compute_class,
                    "min_nodes": g.min_nodes,
                    "max_nodes": g.max_nodes,
                    "bounds": "per_zone" if g.per_zone else "total",
                    "zones": list(g.zones),
                    "allocatable": asdict(g.allocatable),
                }
                for g in inputs.groups
            ],
            "karpenter": None if inputs.karpenter is None else _karpenter_json(inputs.karpenter),
        }
        return out


def _karpenter_json(k: Any) -> dict[str, Any]:
    """What the model took from a Karpenter stack's NodePools (KarpenterInputs), for the JSON: limits in the model's
    units (cpu millicores, memory MiB, GPUs), null where a NodePool does not limit."""
    from gpu_platform.infra.simulate.inputs import UNLIMITED

    def resources(r: Any) -> dict[str, int | None]:
        return {key: (None if value >= UNLIMITED else value) for key, value in asdict(r).items()}

    return {
        "node_pools": [{"name": p.name, "weight": p.weight, "capacity": resources(p.capacity), "limits": resources(p.limits)} for p in k.pools],
        "consolidation_policy": k.consolidation_policy,
        "consolidate_after_s": k.consolidate_after,
        "budgets": [asdict(b) for b in k.budgets],
        "batch_idle_s": k.batch_idle,
        "batch_max_s": k.batch_max,
        "start": k.start.isoformat().replace("+00:00", "Z"),
    }


def run(
    inputs: ModelInputs,
    jobs: Sequence[Job],
    horizon: float | None,
    prices: PriceTable,
    *,
    label: str = "",
    overrides: dict[str, Any] | None = None,
    progress: Callable[[float], None] | None = None,
    tail: float = 0.0,
    gangs_per_workload: int = 0,
) -> Outcome:
    """Simulate ``jobs`` on the cluster of ``inputs`` for ``horizon`` seconds (None: until the work is
    done, plus ``tail``)."""
    model = ClusterModel(
        inputs.groups,
        timings=inputs.timings,
        binding=inputs.binding,
        seed=inputs.seed + 1,
        quotas=inputs.quotas,
        queues=inputs.queues,
        tenants=inputs.tenants,
        warm=dict(inputs.warm),
        karpenter=inputs.karpenter,
    )
    # Price every group before running: a missing price fails in a moment, not after the run.
    for group in inputs.groups:
        prices.hourly(inputs.cloud, inputs.region, group)
    model.add_jobs(jobs)
    trace = model.run(horizon, progress=progress, tail=tail)
    report = trace_report(trace, label or "simulation")
    cost = cost_of(trace, inputs, prices, report.gpu_hours_utilised)
    if inputs.tenants:
        from gpu_platform.infra.simulate.queues import trace_tenants

        report.tenants = trace_tenants(trace, inputs, prices, report.pending_by_pod, model.queues)
    return Outcome(label, dict(overrides or {}), report, cost, trace, gangs_per_workload)


def combinations(sweeps: Sequence[tuple[str, list[Any]]]) -> list[list[tuple[str, Any]]]:
    """Every combination of the swept values, in order (the first key varies slowest)."""
    keys = [k for k, _ in sweeps]
    return [list(zip(keys, values, strict=True)) for values in itertools.product(*(v for _, v in sweeps))] if sweeps else [[]]


def label_of(pairs: Sequence[tuple[str, Any]]) -> str:
    return " ".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in pairs) or "as configured"


@dataclass(frozen=True)
class Configuration:
    label: str
    overrides: dict[str, Any]
    stack: Any
    inputs: ModelInputs


def configurations(
    project_dir: Path,
    stack_name: str,
    sets: Sequence[tuple[str, Any]],
    sweeps: Sequence[tuple[str, list[Any]]],
    max_configs: int,
) -> list[Configuration]:
    """Every configuration to simulate, each validated as the deployment validates its stack: one line per
    problem (the key named) before anything runs."""
    import copy

    from gpu_platform.infra.stack.errors import ConfigError
    from gpu_platform.infra.stack.model import PROJECT
    from gpu_platform.infra.stack.read import read_stack_file, stack_config_from

    combos = combinations(sweeps)
    if len(combos) > max_configs:
        sizes = " x ".join(str(len(v)) for _, v in sweeps)
        raise SimulationError(
            f"--sweep: {sizes} = {len(combos)} configurations, more than --max-configs {max_configs}; sweep fewer values or raise --max-configs"
        )
    raw, secret_keys = read_stack_file(project_dir, stack_name)
    prefix = f"{PROJECT}:"
    stack_base = {k[len(prefix) :]: v for k, v in raw.items() if k.startswith(prefix)}
    others = {k: v for k, v in raw.items() if not k.startswith(prefix)}
    out: list[Configuration] = []
    problems: list[str] = []
    for combo in combos:
        stack_raw = copy.deepcopy(stack_base)
        model_raw: dict[str, Any] = {}
        pairs = [*sets, *combo]
        apply_overrides(stack_raw, model_raw, pairs)
        config = {**others, **{prefix + k: v for k, v in stack_raw.items()}}
        try:
            stack = stack_config_from(config, secret_keys, stack_name)
            refuse_existing_cluster(stack)
            if lines := inapplicable(stack, [k for k, _ in pairs]):
                raise SimulationError(lines)
            settings = validate_model(model_raw)
        except (ConfigError, SimulationError) as exc:
            lines = list(getattr(exc, "lines", None) or [str(exc)])
            where = f" (with {label_of(combo)})" if combo else ""
            problems += [line + where for line in lines if line + where not in problems]
            continue
        out.append(Configuration(label_of(combo), dict(combo), stack, model_inputs(stack, settings)))
    if problems:
        raise SimulationError(problems)
    return out


EXISTING_CLUSTER_NOT_MODELLED = (
    "gpu-platform:existing_cluster: simulate models the autoscaler a stack configures (GKE's with the stack's profile, or "
    "the cluster autoscaler's settings on EKS); an existing cluster's autoscaler and its settings are its owner's and not "
    "in the stack (got an existing cluster); simulate a stack that creates a cluster with the same pools"
)
"""Why simulate refuses a stack on an existing cluster (one line)."""


def refuse_existing_cluster(stack: Any) -> None:
    """SimulationError for a stack on an existing cluster: the autoscaler that would add its nodes is not described, and
    a model of another one's behaviour would be a wrong answer, not an estimate."""
    if getattr(stack, "existing_cluster", None) is not None:
        raise SimulationError(EXISTING_CLUSTER_NOT_MODELLED)


def inapplicable(stack: Any, keys: Sequence[str]) -> list[str]:
    """One line per model key the stack's provisioner never reads: ``model.autoscaler.*`` on a Karpenter stack
    (Karpenter provisions its GPU nodes: infra/simulate/karpenter.py), ``model.karpenter.*`` on any other (a value
    that changes nothing would read as a finding)."""
    karpenter = getattr(stack, "karpenter_plan", None) is not None
    lines = []
    for key in keys:
        if karpenter and key.startswith("model.autoscaler."):
            lines.append(
                f"{key}: the stack's GPU nodes are provisioned by Karpenter (eks_node_groups.provisioner: karpenter), which has no "
                "cluster-autoscaler loop; set model.karpenter.* (batch_idle_duration, batch_max_duration, start) or the NodePools' "
                "eks_node_groups.karpenter.disruption"
            )
        elif key.startswith("model.reservation.") and not _reservation_rungs(stack):
            lines.append(
                f"{key}: applies to GKE pools and EKS classes whose capacity_ladder has a reservation rung "
                "(gke.gpu_pools[].capacity_ladder, eks_node_groups.classes[].capacity_ladder), and this stack has none"
            )
        elif not karpenter and key.startswith("model.karpenter."):
            lines.append(
                f"{key}: applies to Karpenter stacks (eks_node_groups.provisioner: karpenter) and this stack's nodes are grown by the cluster autoscaler"
            )
    return lines


def _reservation_rungs(stack: Any) -> bool:
    """Whether any node pool of the stack's GKE plan, or managed node group of its EKS plan, buys a reservation rung."""
    from gpu_platform.components.core.cloud import Cloud
    from gpu_platform.components.pools.ladders import RungKind

    if stack.cloud is Cloud.GCP:
        gke = getattr(stack, "gke", None)
        return gke is not None and any(p.rung.kind is RungKind.RESERVATION for planned in gke.plan for p in planned.node_pools)
    plan = getattr(stack, "eks_plan", None)
    return plan is not None and any(p.group.rung.kind is RungKind.RESERVATION for p in plan.node_groups)


@dataclass(frozen=True)
class Work:
    """One configuration to run (picklable: a sweep sends it to another process)."""

    inputs: ModelInputs
    jobs: list[Job]
    horizon: float | None
    """Seconds to simulate; None: until the work is done, plus ``tail``."""
    tail: float
    prices: PriceTable
    label: str
    overrides: dict[str, Any]
    gangs_per_workload: int = 0
    """Dask clusters or pipeline steps in one pass of the workload's pattern (for the cost per workload)."""


def _run_one(work: Work, progress: Callable[[float], None] | None = None) -> Outcome:
    return run(
        work.inputs,
        work.jobs,
        work.horizon,
        work.prices,
        label=work.label,
        overrides=work.overrides,
        progress=progress,
        tail=work.tail,
        gangs_per_workload=work.gangs_per_workload,
    )


def process_pool(processes: int) -> Any:
    """A pool of ``processes`` worker processes for simulator runs.

    The workers are forked from a fork server (multiprocessing's "forkserver" start method) that has imported
    this module, and with it the model, the plan and the components, once: under "spawn" every worker imported
    them itself (over a second of CPU each) for every pool a command or a test opened. The fork server is one
    single-threaded process started for the first pool, so no worker inherits another thread's state, as with
    "spawn" and unlike a plain fork of the caller. Where there is no fork server (not a POSIX system), "spawn"."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if "forkserver" in multiprocessing.get_all_start_methods():
        context: Any = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
    else:
        context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=processes, mp_context=context)


def run_all(
    work: list[Work],
    processes: int,
    done: Callable[[Outcome], None] = lambda _: None,
    simulated: Callable[[float], None] | None = None,
    executor: Any = None,
) -> list[Outcome]:
    """Run configurations, in parallel processes when there are several (results in the given order).
    ``simulated`` is told the simulated seconds reached, every simulated hour, when one configuration
    runs in this process. ``executor``: a process pool to run them in (a search's many small batches
    keep one, so its processes start once)."""
    if executor is not None and len(work) > 1:
        outcomes = list(executor.map(_run_one, work))
        for outcome in outcomes:
            done(outcome)
        return outcomes
    if len(work) == 1 or processes <= 1:
        results = []
        for item in work:
            results.append(_run_one(item, simulated if len(work) == 1 else None))
            done(results[-1])
        return results
    from concurrent.futures import as_completed

    with process_pool(min(processes, len(work))) as pool:
        futures = {pool.submit(_run_one, item): i for i, item in enumerate(work)}
        results_by_index: dict[int, Outcome] = {}
        for future in as_completed(futures):
            outcome = future.result()
            results_by_index[futures[future]] = outcome
            done(outcome)
    return [results_by_index[i] for i in range(len(work))]


def unsettable(cloud: Any, key: str) -> str | None:
    """Why a user cannot set ``key`` on ``cloud`` (None: they can). GKE runs the cluster autoscaler itself
    and exposes only its profile (ClusterAutoscaling.autoscalingProfile, BALANCED or OPTIMIZE_UTILIZATION),
    so none of its flags the model's ``model.autoscaler.*`` and ``model.binding`` stand for can be set there."""
    from gpu_platform.components.core.cloud import Cloud

    if cloud is Cloud.GCP and (key.startswith("model.autoscaler.") or key == "model.binding"):
        return (
            f"GKE does not let a user set {key} (it runs the autoscaler itself and exposes only the "
            "profile: gke.autoscaling_profile=BALANCED or OPTIMIZE_UTILIZATION)"
        )
    return None


HOLDS = (3, 4)
"""A recommendation (a sweep's with --target-p90, or a warm-capacity size) must meet its target on at least
3 in 4 of the seeds it is run with (--seeds)."""


def cost_key(o: Outcome) -> tuple[float, float]:
    """How a sweep ranks cost: per workload when the run finished some, then per day."""
    per_workload = o.usd_per_workload
    return (math.inf if per_workload is None else per_workload, o.cost.usd_per_day)


def cheapest_meeting(outcomes: Sequence[Outcome], target_p90: float) -> Outcome | None:
    """The cheapest configuration (per workload, then per day) whose p90 wait is at most ``target_p90``
    seconds (None if none is)."""
    meeting = [o for o in outcomes if o.p90 is not None and o.p90 <= target_p90]
    return min(meeting, key=lambda o: (*cost_key(o), -o.report.utilisation_percent)) if meeting else None


def short_key(key: str, keys: Sequence[str]) -> str:
    """A swept key as a column heading: its last part (with the list item it is under when another swept
    key ends the same), underscores as spaces so the heading wraps."""
    from gpu_platform.infra.simulate.settings import parse_key

    def tail(k: str, n: int) -> str:
        return " ".join(parse_key(k)[-n:])

    n = 1
    while n < len(parse_key(key)) and sum(1 for k in keys if tail(k, n) == tail(key, n)) > 1:
        n += 1
    return tail(key, n).replace("_", " ")


def _value(v: Any) -> str:
    """A swept value as the table prints it: text as given, a capacity ladder in one line (spot -> on_demand, as
    components/pools/ladders.ladder_text names it), anything else as JSON."""
    if isinstance(v, str):
        return v
    if isinstance(v, list) and v and all(isinstance(r, dict) and "kind" in r for r in v):
        from pydantic import ValidationError

        from gpu_platform.components.pools.ladders import CapacityRung, ladder_text

        try:
            return ladder_text([CapacityRung.model_validate(r) for r in v])
        except ValidationError:
            pass  # not a ladder after all: as JSON
    return json.dumps(v)


def _differ(values: Sequence[Any]) -> bool:
    return len({json.dumps(v) for v in values}) > 1


def sweep_columns(outcomes: Sequence[Outcome], keys: Sequence[str]) -> list[tuple[str, Callable[[Outcome], str]]]:
    """The sweep table's columns: one per swept key (its value), then the figures; the p99 wait and the
    spot fallback time only when they differ between the configurations."""

    def fmt(value: float | None, spec: str = "g", unit: str = "") -> str:
        return "-" if value is None else f"{value:{spec}}{unit}"

    def swept(k: str) -> Callable[[Outcome], str]:
        return lambda o: _value(o.overrides[k]) if k in o.overrides else "-"

    columns: list[tuple[str, Callable[[Outcome], str]]] = [(short_key(k, keys), swept(k)) for k in keys]
    columns += [
        ("median s", lambda o: fmt(o.report.pending_median_s)),
        ("p90 s", lambda o: fmt(o.p90)),
    ]
    if _differ([o.report.pending_p99_s for o in outcomes]):
        columns.append(("p99 s", lambda o: fmt(o.report.pending_p99_s)))
    columns += [
        ("<=5s", lambda o: f"{100 * (o.report.scheduled_within or {}).get('5s', 0):.0f}%"),
        ("<=60s", lambda o: f"{100 * (o.report.scheduled_within or {}).get('60s', 0):.0f}%"),
        ("util %", lambda o: f"{o.report.utilisation_percent:.1f}"),
        ("nodes max", lambda o: str(o.report.gpu_nodes_max)),
    ]
    fallbacks = [o.failover()["fallback_mean_s"] for o in outcomes]
    if _differ([None if f is None else round(f) for f in fallbacks]):
        columns.append(("fallback s", lambda o: fmt(o.failover()["fallback_mean_s"], ".0f")))
    columns += [
        ("$/day", lambda o: f"{o.cost.usd_per_day:,.0f}"),
        ("$ per workload", lambda o: fmt(o.usd_per_workload, ",.2f")),
    ]
    return columns


def _unbroken(value: str) -> int:
    """The narrowest a swept value's cell may be: the value, or for a ladder its longest rung and arrow."""
    return max(len(rung) + 3 for rung in value.split(" -> ")) if " -> " in value else len(value)


def sweep_table(outcomes: Sequence[Outcome], keys: Sequence[str], chosen: Outcome | None, title: str) -> Any:
    """The sweep as a rich Table that fits 100 columns: the swept values in columns of their own (never
    cut), headings that wrap, the chosen configuration in bold green."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    # No vertical rules: two spaces between columns leave the room to the values.
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), title_justify="left")
    columns = sweep_columns(outcomes, keys)
    for i, (heading, cell) in enumerate(columns):
        # A value is never cut: a column is as wide as its widest value or the longest word of its
        # heading, which wraps at its spaces; a capacity ladder (spot -> on_demand) wraps after a rung's arrow.
        width = max(max(_unbroken(cell(o)) for o in outcomes), *(len(word) for word in heading.split()))
        table.add_column(escape(heading), justify="left" if i < len(keys) else "right", width=width)
    for o in outcomes:
        table.add_row(*(escape(cell(o)) for _, cell in columns), style="bold green" if o is chosen else None)
    return table


def sweep_plot(outcomes: Sequence[Outcome], chosen: Outcome | None, target_p90: float | None, keys: Sequence[str] = ()) -> bytes:
    """The trade-off: p90 wait against GPU utilisation, the marker's area the cost per workload (per day
    when no run finished a workload). Axes that do not exaggerate: utilisation spans at least 20 points
    and the wait starts at 0; each point is numbered, the configurations listed under the plot."""
    return png_of(sweep_figure(outcomes, chosen, target_p90, keys))


def png_of(fig: Any) -> bytes:
    from gpu_platform.infra.report.prometheus import png

    return png(fig)


def sweep_figure(outcomes: Sequence[Outcome], chosen: Outcome | None, target_p90: float | None, keys: Sequence[str] = ()) -> Any:
    """The matplotlib Figure of sweep_plot (for its tests: axis limits, text inside the figure, no overlap)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    costs = [c for c in (o.usd_per_workload for o in outcomes) if c is not None]
    per_workload = len(costs) == len(outcomes)
    if not per_workload:
        costs = [o.cost.usd_per_day for o in outcomes]
    unit = "workload" if per_workload else "day"
    lines = []
    for i, o in enumerate(outcomes, 1):
        what = ", ".join(f"{short_key(k, keys)}={_value(o.overrides[k])}" for k in keys if k in o.overrides) or o.label
        mark = " (chosen)" if o is chosen else ""
        lines.append(f"{i}: {what}: ${costs[i - 1]:,.2f}/{unit}{mark}")
    fig, ax = plt.subplots(figsize=(10, 6 + 0.16 * len(lines)))
    top = max(costs) or 1.0
    xs = [o.report.utilisation_percent for o in outcomes]
    ys = [o.p90 or 0 for o in outcomes]
    for i, o in enumerate(outcomes):
        size = 60 + 900 * costs[i] / top
        color = "#228833" if o is chosen else "#4477aa"
        ax.scatter(xs[i], ys[i], s=size, alpha=0.6, color=color, edgecolors="black", linewidths=0.5)
    # Utilisation: at least 20 points wide, within 0..100; the wait from 0 to above the highest point.
    lo, hi = min(xs), max(xs)
    span = max(20.0, (hi - lo) * 1.3)
    left = max(0.0, min(100.0 - span, (lo + hi) / 2 - span / 2))
    ax.set_xlim(left, min(100.0, left + span))
    ceiling = max([*ys, target_p90 or 0, 10])
    ax.set_ylim(0, ceiling * 1.25)
    _number_points(ax, xs, ys)
    if target_p90 is not None:
        ax.axhline(target_p90, color="#aa3377", linestyle=":", linewidth=1, label=f"target p90 {target_p90:g} s")
        ax.legend(loc="best")
    ax.set_xlabel("GPU utilisation, % (GPUs held by running pods / GPUs available)")
    ax.set_ylabel("p90 pending time, s")
    ax.set_title(f"Wait against utilisation; marker area: cost per {unit}")
    # The configurations, numbered, under the axis label (tight_layout makes room for them).
    ax.annotate(
        "\n".join(lines),
        xy=(0.5, 0),
        xycoords=ax.xaxis.label,
        xytext=(0, -8),
        textcoords="offset points",
        ha="center",
        va="top",
        multialignment="left",
        fontsize=8,
        family="monospace",
    )
    fig.tight_layout()
    return fig


def _number_points(ax: Any, xs: Sequence[float], ys: Sequence[float]) -> None:
    """Number each point, moving a number aside when it would overlap one placed before."""
    fig = ax.figure
    fig.canvas.draw()
    placed: list[Any] = []
    offsets = [(6, 4), (6, -12), (-14, 4), (-14, -12), (6, 16), (-14, 16), (6, -24), (-14, -24)]
    for i, (x, y) in enumerate(zip(xs, ys, strict=True), 1):
        for dx, dy in offsets:
            text = ax.annotate(str(i), (x, y), fontsize=8, xytext=(dx, dy), textcoords="offset points")
            box = text.get_window_extent(fig.canvas.get_renderer())
            if not any(box.overlaps(other) for other in placed):
                placed.append(box)
                break
            text.remove()
        else:
            placed.append(ax.annotate(str(i), (x, y), fontsize=8, xytext=(6, 4), textcoords="offset points").get_window_extent(fig.canvas.get_renderer()))


def table_rows(outcome: Outcome) -> list[tuple[str, str]]:
    """The report's rows plus the p90 wait, the cost, failovers and admissions."""
    from gpu_platform.infra.report.prometheus import table_rows as report_rows

    rows = [row for row in report_rows(outcome.report) if not row[0].startswith(("range", "carried", "without", "DCGM"))]
    trace = outcome.trace
    rows.insert(0, ("simulated", f"{trace.horizon / 3600:.2f} h: {trace.jobs} jobs ({trace.jobs_done} done), {trace.gangs} Dask clusters or steps"))
    rows.append(("pending p90", "-" if outcome.p90 is None else f"{outcome.p90} s"))
    cost = outcome.cost
    for line in cost.lines:
        rows.append((f"cost {line.machine_type} {line.capacity}", f"{line.node_hours:.1f} node-h x ${line.usd_per_hour:.4f} = ${line.usd:,.2f}"))
    rows.append(("cost control plane", f"${cost.cluster_usd:,.2f}"))
    per = outcome.usd_per_workload
    rows.append(("cost per workload", "-" if per is None else f"${per:,.2f} ({outcome.workloads:.2f} workloads done)"))
    rows.append(("cost total / per day", f"${cost.total_usd:,.2f} / ${cost.usd_per_day:,.2f} ({cost.region}, prices of {cost.prices_date})"))
    rows.append(("GPU-hours paid / used", f"{cost.gpu_hours_paid:.1f} / {cost.gpu_hours_used:.1f}"))
    rows.append(("spot share of GPU node-hours", f"{100 * cost.spot_share:.1f}%"))
    failover = outcome.failover()
    mean = failover["fallback_mean_s"]
    give_up = failover["give_up_mean_s"]
    # Short: spot scale-ups and named reservations' full ones alike (Outcome.failover).
    rows.append(("scale-ups short / gave up after (mean)", f"{failover['spot_scale_ups_short']} / {'-' if give_up is None else f'{give_up:.0f} s'}"))
    rows.append(
        ("fallback to another group after (mean)", f"{'-' if mean is None else f'{mean:.0f} s'} ({failover['without_fallback']} with no group left to grow)")
    )
    rows.append(("spot preemptions", str(failover["preemptions"])))
    if any(g.run_limit is not None for g in {n.group.name: n.group for n in trace.nodes}.values()):
        rows.append(("flex-start nodes ended at their max_run_duration", str(failover["run_limit_ends"])))
    if trace.stalled_at is not None:
        rows.append(("STALLED", f"at {trace.stalled_at / 3600:.2f} h: {trace.stalled_pods} pods no node can ever take"))
    rows.append(("refused at admission (quota)", f"{outcome.trace.refused_pods} pods of {outcome.trace.refused_gangs} Dask clusters or steps"))
    return rows
