"""`gpu-platform simulate`: a stack's cluster under a workload, before anyone pays for it.

The stack's typed config (the same StackConfig the deployment reads) becomes the node groups
of the cluster model (infra/simulate/model.py): each pool's or GPU class's node groups with
their real shapes (the catalog, or a stated shape) and allocatable resources (the kubelet
reserve formulas plan-capacity uses), their bounds (per zone or total), their capacity type
and the order the autoscaler tries them (GKE ComputeClass priorities: spot before on-demand;
EKS priority tiers, ties by least-waste), the tenants' GPU quotas and the autoscaler's
settings (EKS: the stack's cluster-autoscaler settings; GKE: its autoscaling profile).
``ModelSettings`` holds what the stack does not say: timings of nodes and pods, spot
shortage and preemption, with documented defaults and their sources. ``--set KEY=VALUE``
overrides a stack key (``gke.gpu_pools[t4].autoscaling.min_nodes=2``) or a model key
(``model.autoscaler.scan_interval=5s``) for the run; ``--sweep KEY=V1,V2`` runs every
combination.

The figures are the report's (infra/report/prometheus.py ``figures``) from the simulated run sampled
on its 1 s grid, plus the cost (infra/simulate/prices.yaml or ``--prices``), the failovers and the
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

__all__ = ["Configuration", "Outcome", "Work", "cheapest_meeting", "configurations", "run", "run_all", "sweep_plot", "trace_report"]


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
    return np.cumsum(delta[:horizon]).tolist()


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
    gpu_nodes = [n for n in trace.nodes if n.group.gpus_per_node > 0 and n.gpu_ready is not None]
    node_spans = [(n.gpu_ready, n.removed if n.removed is not None else horizon, n.group.gpus_per_node) for n in gpu_nodes]
    available = _steps(node_spans, horizon)
    nodes = _steps([(a, b, 1) for a, b, _ in node_spans], horizon)
    utilised = _steps(
        [(p.running, p.finished if p.finished is not None else horizon, p.requests.gpus) for p in gpu_pods if p.running is not None],
        horizon,
    )
    return figures(
        prometheus=label, times=range(0, horizon), step=1, gpu_pods=len(gpu_pods), waits=waits, carried={},
        at_end=at_end, without=[], available=available, utilised=utilised, nodes=nodes, dcgm_values=[],
    )


@dataclass
class Outcome:
    """One simulated configuration: the report, the cost, failovers and admissions."""

    label: str
    overrides: dict[str, Any]
    report: Any
    cost: Cost
    trace: Trace

    @property
    def p90(self) -> int | None:
        from gpu_platform.infra.report.prometheus import nearest_rank

        waits = sorted(self.report.pending_by_pod.values())
        return nearest_rank(waits, 90) if waits else None

    def failover(self) -> dict[str, Any]:
        """Spot scale-ups that found no capacity: how long the autoscaler took to give up on each, and
        to the next scale-up of another group (the fallback; none when no other group could grow)."""
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
            "total_usd": self.cost.total_usd,
            "refused_pods": self.trace.refused_pods,
            "stalled_at_s": self.trace.stalled_at, "stalled_pods": self.trace.stalled_pods,
            **{k: v for k, v in self.failover().items() if not k.endswith("_seconds")},
        }

    def json_document(self, workload: dict[str, Any], inputs: ModelInputs) -> dict[str, Any]:
        """report.json's keys plus pending_p90_s, cost, failover, admission and what was simulated."""
        out = self.report.summary()
        out["pending_p90_s"] = self.p90
        out["cost"] = asdict(self.cost)
        out["failover"] = self.failover()
        out["admission"] = {
            "jobs": self.trace.jobs, "jobs_done": self.trace.jobs_done, "gangs": self.trace.gangs,
            "refused_gangs": self.trace.refused_gangs, "refused_jobs": self.trace.refused_jobs,
            "refused_pods": self.trace.refused_pods,
            "stalled_at_s": self.trace.stalled_at, "stalled_pods": self.trace.stalled_pods,
            "stall_causes": self.trace.stall_causes,
        }
        out["simulation"] = {
            "label": self.label, "overrides": self.overrides, "workload": workload, "seed": inputs.seed,
            "binding": inputs.binding.value, "model": inputs.settings,
            "node_groups": [
                {"name": g.name, "pool": g.pool, "role": g.role, "machine_type": g.machine_type, "spot": g.spot,
                 "priority": g.priority, "min_nodes": g.min_nodes, "max_nodes": g.max_nodes,
                 "bounds": "per_zone" if g.per_zone else "total", "zones": list(g.zones),
                 "allocatable": asdict(g.allocatable)}
                for g in inputs.groups
            ],
        }
        return out


def run(
    inputs: ModelInputs, jobs: Sequence[Job], horizon: float | None, prices: PriceTable, *, label: str = "",
    overrides: dict[str, Any] | None = None, progress: Callable[[float], None] | None = None, tail: float = 0.0,
) -> Outcome:
    """Simulate ``jobs`` on the cluster of ``inputs`` for ``horizon`` seconds (None: until the work is
    done, plus ``tail``)."""
    model = ClusterModel(
        inputs.groups, timings=inputs.timings, binding=inputs.binding, seed=inputs.seed + 1, quotas=inputs.quotas,
        queues=inputs.queues, tenants=inputs.tenants,
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
    return Outcome(label, dict(overrides or {}), report, cost, trace)


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
    project_dir: Path, stack_name: str, sets: Sequence[tuple[str, Any]], sweeps: Sequence[tuple[str, list[Any]]],
    max_configs: int,
) -> list[Configuration]:
    """Every configuration to simulate, each validated as the deployment validates its stack: one line per
    problem (the key named) before anything runs."""
    import copy

    from gpu_platform.infra.preview.engine import PROJECT
    from gpu_platform.infra.stack.errors import ConfigError
    from gpu_platform.infra.stack.read import read_stack_file, stack_config_from

    combos = combinations(sweeps)
    if len(combos) > max_configs:
        sizes = " x ".join(str(len(v)) for _, v in sweeps)
        raise SimulationError(
            f"--sweep: {sizes} = {len(combos)} configurations, more than --max-configs {max_configs}; "
            "sweep fewer values or raise --max-configs"
        )
    raw, secret_keys = read_stack_file(project_dir, stack_name)
    prefix = f"{PROJECT}:"
    stack_base = {k[len(prefix):]: v for k, v in raw.items() if k.startswith(prefix)}
    others = {k: v for k, v in raw.items() if not k.startswith(prefix)}
    out: list[Configuration] = []
    problems: list[str] = []
    for combo in combos:
        stack_raw, model_raw = copy.deepcopy(stack_base), {}
        pairs = [*sets, *combo]
        apply_overrides(stack_raw, model_raw, pairs)
        config = {**others, **{prefix + k: v for k, v in stack_raw.items()}}
        try:
            stack = stack_config_from(config, secret_keys, stack_name)
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


def _run_one(work: Work, progress: Callable[[float], None] | None = None) -> Outcome:
    return run(work.inputs, work.jobs, work.horizon, work.prices, label=work.label, overrides=work.overrides,
               progress=progress, tail=work.tail)


def run_all(
    work: list[Work], processes: int, done: Callable[[Outcome], None] = lambda _: None,
    simulated: Callable[[float], None] | None = None,
) -> list[Outcome]:
    """Run configurations, in parallel processes when there are several (results in the given order).
    ``simulated`` is told the simulated seconds reached, every simulated hour, when one configuration
    runs in this process."""
    if len(work) == 1 or processes <= 1:
        results = []
        for item in work:
            results.append(_run_one(item, simulated if len(work) == 1 else None))
            done(results[-1])
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=min(processes, len(work)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_run_one, item): i for i, item in enumerate(work)}
        results_by_index: dict[int, Outcome] = {}
        for future in as_completed(futures):
            outcome = future.result()
            results_by_index[futures[future]] = outcome
            done(outcome)
    return [results_by_index[i] for i in range(len(work))]


def cheapest_meeting(outcomes: Sequence[Outcome], target_p90: float) -> Outcome | None:
    """The cheapest configuration whose p90 wait is at most ``target_p90`` seconds (None if none is)."""
    meeting = [o for o in outcomes if o.p90 is not None and o.p90 <= target_p90]
    return min(meeting, key=lambda o: (o.cost.usd_per_day, -o.report.utilisation_percent)) if meeting else None


def sweep_plot(outcomes: Sequence[Outcome], chosen: Outcome | None, target_p90: float | None) -> bytes:
    """The trade-off: p90 wait against GPU utilisation, the marker's area the cost per day."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpu_platform.infra.report.prometheus import png

    fig, ax = plt.subplots(figsize=(10, 6))
    costs = [o.cost.usd_per_day for o in outcomes]
    top = max(costs) or 1.0
    for o in outcomes:
        size = 60 + 900 * o.cost.usd_per_day / top
        color = "#228833" if o is chosen else "#4477aa"
        ax.scatter(o.report.utilisation_percent, o.p90 or 0, s=size, alpha=0.6, color=color, edgecolors="black", linewidths=0.5)
        ax.annotate(f"{o.label}\n${o.cost.usd_per_day:,.0f}/day", (o.report.utilisation_percent, o.p90 or 0),
                    fontsize=7, xytext=(6, 4), textcoords="offset points")
    if target_p90 is not None:
        ax.axhline(target_p90, color="#aa3377", linestyle=":", linewidth=1, label=f"target p90 {target_p90:g} s")
        ax.legend(loc="upper left")
    ax.set_xlabel("GPU utilisation, % (GPUs held by running pods / GPUs available)")
    ax.set_ylabel("p90 pending time, s")
    ax.set_title("Wait against utilisation; marker area: cost per day")
    return png(fig)


def table_rows(outcome: Outcome) -> list[tuple[str, str]]:
    """The report's rows plus the p90 wait, the cost, failovers and admissions."""
    from gpu_platform.infra.report.prometheus import table_rows as report_rows

    rows = [row for row in report_rows(outcome.report) if not row[0].startswith(("range", "carried", "without", "DCGM"))]
    trace = outcome.trace
    rows.insert(0, ("simulated", f"{trace.horizon / 3600:.2f} h: {trace.jobs} jobs ({trace.jobs_done} done), "
                                 f"{trace.gangs} Dask clusters or steps"))
    rows.append(("pending p90", "-" if outcome.p90 is None else f"{outcome.p90} s"))
    cost = outcome.cost
    for line in cost.lines:
        rows.append((f"cost {line.machine_type} {line.capacity}",
                     f"{line.node_hours:.1f} node-h x ${line.usd_per_hour:.4f} = ${line.usd:,.2f}"))
    rows.append(("cost control plane", f"${cost.cluster_usd:,.2f}"))
    rows.append(("cost total / per day", f"${cost.total_usd:,.2f} / ${cost.usd_per_day:,.2f} ({cost.region}, prices of {cost.prices_date})"))
    rows.append(("GPU-hours paid / used", f"{cost.gpu_hours_paid:.1f} / {cost.gpu_hours_used:.1f}"))
    rows.append(("spot share of GPU node-hours", f"{100 * cost.spot_share:.1f}%"))
    failover = outcome.failover()
    mean = failover["fallback_mean_s"]
    give_up = failover["give_up_mean_s"]
    rows.append(("spot scale-ups short / gave up after (mean)",
                 f"{failover['spot_scale_ups_short']} / {'-' if give_up is None else f'{give_up:.0f} s'}"))
    rows.append(("fallback to another group after (mean)",
                 f"{'-' if mean is None else f'{mean:.0f} s'} ({failover['without_fallback']} with no group left to grow)"))
    rows.append(("spot preemptions", str(failover["preemptions"])))
    if trace.stalled_at is not None:
        rows.append(("STALLED", f"at {trace.stalled_at / 3600:.2f} h: {trace.stalled_pods} pods no node can ever take"))
    rows.append(("refused at admission (quota)",
                 f"{outcome.trace.refused_pods} pods of {outcome.trace.refused_gangs} Dask clusters or steps"))
    return rows


SWEEP_COLUMNS = ("configuration", "median s", "p90 s", "<=5s", "<=60s", "util %", "nodes max", "$/day")


def sweep_row(o: Outcome) -> tuple[str, ...]:
    r = o.report
    within = r.scheduled_within or {}
    return (
        o.label, "-" if r.pending_median_s is None else f"{r.pending_median_s:g}", "-" if o.p90 is None else str(o.p90),
        f"{100 * within.get('5s', 0):.0f}%", f"{100 * within.get('60s', 0):.0f}%", f"{r.utilisation_percent:.1f}",
        str(r.gpu_nodes_max), f"{o.cost.usd_per_day:,.0f}",
    )
