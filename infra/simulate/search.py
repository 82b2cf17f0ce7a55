"""`gpu-platform simulate <stack> --target-p90 D` without a sweep: the cheapest configuration a user can set
that meets a p90 wait target on most seeds, searched over the settings the stack exposes for its GPU pools.

What is searched (``knobs``), each a stack key in ``--set`` grammar, never a setting the cloud keeps
(runs.unsettable), for each GPU pool of role gpu (or the one ``--pool`` names):

- GKE: the cluster's ``gke.autoscaling_profile`` (BALANCED, OPTIMIZE_UTILIZATION); the pool's
  ``autoscaling.min_nodes`` (0 to 3, at most its maximum) and ``autoscaling.max_nodes`` (1/8, 1/4, 1/2, 3/4
  and all of the configured maximum, rounded up); its ``node_locations`` (the cluster's first zone, its first two,
  ... all of them: the model provisions and prices every zone alike, so only how many zones changes a figure);
  its machine shape (``machine_type`` with ``accelerator_count``: per GPU count the catalog offers on the pool's
  machine series, the smallest machine of the series with at least the configured vCPUs per GPU;
  on a series whose machine type fixes the count, each machine type carrying the accelerator); its
  ``image_streaming`` (only when the workload image is one GKE streams: infra/simulate/cluster.py
  streamed_image; otherwise on and off pull the same image whole, and the search says so);
- EKS: the class's ``min_nodes`` (not on Karpenter stacks, whose NodePools have no minimum) and ``max_nodes``;
- both: ``warm_capacity.pools.<pool>`` (0, 1, 2 or 4 GPUs, at most the pool's GPUs at its maximum).

A key given with ``--set`` is held at that value and not searched.

How (``search``): a coordinate search from the stack as configured. Each round runs every neighbour of the
current configuration (one knob changed to another of its values) not run before; the search moves to the
cheapest neighbour that meets the target on at least HOLDS of the seeds when it is cheaper than the current
configuration (or, while the current one does not meet it, to the neighbour meeting it on the most seeds, then
with the lowest mean p90), and stops when no neighbour is better or after MAX_ROUNDS rounds. A candidate runs
its seeds in order and stops as soon as it has missed the target on more seeds than the rule allows (it cannot
hold any more). Candidates the stack's own validation refuses (a zone without the GPU, a machine the tenants'
pods do not fit) are counted apart and never run. The same seeds, the same answer, whatever --processes. A
local search: a cheaper configuration two or more settings away from every step it took can be missed.

Ranking: the mean cost per workload over the seeds (runs.cost_key: the cost of the work, whatever the run's
length; a setting that lengthens the run looks cheaper per day, not per workload), then per day, then the
fewest settings changed, then the label.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform.infra.simulate.runs import HOLDS, label_of, unsettable
from gpu_platform.infra.simulate.settings import SimulationError

__all__ = ["MAX_ROUNDS", "Candidate", "Knob", "Search", "knobs", "search", "search_document", "search_lines"]

MAX_ROUNDS = 8
"""The most rounds of the coordinate search (each round changes one knob of the configuration)."""

MIN_NODES_UP_TO = 3
"""The highest minimum tried (per zone or in total, as the pool's bounds are)."""

MAX_NODES_SHARES = (1 / 8, 1 / 4, 1 / 2, 3 / 4, 1)
"""The maxima tried, as shares of the configured maximum (rounded up, at least 1)."""

WARM_GPUS = (0, 1, 2, 4)
"""The warm capacities tried (GPUs), at most the pool's GPUs at its maximum."""


@dataclass(frozen=True)
class Knob:
    """One setting a user can set: its stack keys (one, or two set together: a machine shape), the values
    tried (a tuple per value, one item per key) and the stack's value as configured."""

    keys: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]
    current: tuple[Any, ...]

    def describe(self) -> str:
        shown = ", ".join("/".join(_text(v) for v in value) for value in self.values)
        return f"{'+'.join(self.keys)} ({shown})"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _max_values(current: int, low: int) -> list[int]:
    return sorted({max(low, 1, math.ceil(current * share)) for share in MAX_NODES_SHARES})


def _shapes(pool: Any) -> list[tuple[Any, ...]]:
    """The machine shapes tried for a GKE GPU pool: (machine_type, accelerator_count)."""
    from gpu_platform.components.catalog.gpus import GCP_MACHINE_SHAPES, allowed_accelerator_counts, machine_types_for

    accelerator, machine = pool.accelerator_type, pool.machine_type
    shape = GCP_MACHINE_SHAPES.get(machine)
    if shape is None or pool.shape is not None:
        return []  # a machine the catalog does not know (a stated shape): only the stated one
    if shape.accelerator is not None:  # the machine type fixes the count (A2, A3, G2)
        return [(m, None) for m in machine_types_for(accelerator)]
    count = pool.accelerator_count or 1
    series = machine.rsplit("-", 1)[0]
    per_gpu = shape.vcpus / count
    machines = sorted((s for s in GCP_MACHINE_SHAPES.values() if s.name.rsplit("-", 1)[0] == series), key=lambda s: s.vcpus)
    out: list[tuple[Any, ...]] = []
    for k in sorted({c for s in machines for c in allowed_accelerator_counts(s.name, accelerator)}):
        fit = next((s for s in machines if s.vcpus >= per_gpu * k and k in allowed_accelerator_counts(s.name, accelerator)), None)
        if fit is not None:
            out.append((fit.name, k))
    return out


def knobs(stack: Any, pool: str | None, held: Sequence[str]) -> tuple[list[Knob], list[str]]:
    """The settings searched for ``stack`` (a StackConfig, with the user's --set applied) and one line per
    setting not searched and why. ``held``: the keys the user --set (held at that value)."""
    from gpu_platform.components.core.cloud import Cloud
    from gpu_platform.components.core.labels import PoolRole
    from gpu_platform.infra.simulate.cluster import streamed_image

    gpu_shapes = [s for s in stack.pool_shapes() if s.gpus_per_node > 0]
    names = [s.name for s in gpu_shapes]
    if pool is not None and pool not in names:
        raise SimulationError(f"--pool {pool}: not a GPU pool of the stack (GPU pools: {', '.join(names) or 'none'})")
    involved = [s for s in gpu_shapes if (s.name == pool if pool is not None else s.role is PoolRole.GPU)]
    out: list[Knob] = []
    notes: list[str] = []
    if stack.cloud is Cloud.GCP:
        gke = stack.gke
        out.append(Knob(("gke.autoscaling_profile",), (("BALANCED",), ("OPTIMIZE_UTILIZATION",)), (gke.autoscaling_profile.value,)))
        zones = list(gke.cluster_zones or [])
        image, streams = streamed_image(stack)
        by_name = {p.name: p for p in gke.gpu_pools}
        for shape in involved:
            p = by_name.get(shape.name)
            if p is None:
                continue
            key = f"gke.gpu_pools[{p.name}]"
            lo, hi = p.autoscaling.min_nodes, p.autoscaling.max_nodes
            out.append(Knob((f"{key}.autoscaling.min_nodes",), tuple((n,) for n in range(min(hi, MIN_NODES_UP_TO) + 1)), (lo,)))
            out.append(Knob((f"{key}.autoscaling.max_nodes",), tuple((n,) for n in _max_values(hi, 1)), (hi,)))
            if len(zones) > 1:
                here = list(p.node_locations or zones)
                # The model provisions and prices every zone alike (no zone's stock-out or price differs), so which
                # zones does not change a figure; how many does (per-zone bounds multiply by it).
                out.append(Knob((f"{key}.node_locations",), tuple((zones[:n],) for n in range(1, len(zones) + 1)), (here,)))
            shapes = _shapes(p)
            if len(shapes) > 1:
                out.append(Knob((f"{key}.machine_type", f"{key}.accelerator_count"), tuple(shapes), (p.machine_type, p.accelerator_count)))
            if streams:
                out.append(Knob((f"{key}.image_streaming",), ((True,), (False,)), (p.image_streaming,)))
            else:
                notes.append(
                    f"{key}.image_streaming: not searched: the workload image {image} is not in Artifact Registry in "
                    f"{stack.region} ({stack.region}-docker.pkg.dev), so GKE pulls it whole with streaming on or off"
                )
    else:
        karpenter = getattr(stack, "karpenter_plan", None) is not None
        by_name = {c.name: c for c in stack.eks_node_groups.classes}
        for shape in involved:
            c = by_name.get(shape.name)
            if c is None:
                continue
            key = f"eks_node_groups.classes[{c.name}]"
            if not karpenter:
                out.append(Knob((f"{key}.min_nodes",), tuple((n,) for n in range(min(c.max_nodes, MIN_NODES_UP_TO) + 1)), (c.min_nodes,)))
            out.append(Knob((f"{key}.max_nodes",), tuple((n,) for n in _max_values(c.max_nodes, 1)), (c.max_nodes,)))
        notes.append("eks_node_groups.classes[*].instance_types and eks.zones: not searched (a class's types, and the cluster's zones, stay as configured)")
    warm = {} if stack.warm_capacity is None else dict(stack.warm_capacity.pools)
    for shape in involved:
        if getattr(shape, "queued_provisioning", False):
            continue
        top = shape.max_schedulable_gpus
        key = f"warm_capacity.pools.{shape.name}"
        out.append(Knob((key,), tuple((n,) for n in WARM_GPUS if n <= top), (warm.get(shape.name, 0),)))
    kept = []
    for knob in out:
        if any(k in held for k in knob.keys):
            notes.append(f"{'+'.join(knob.keys)}: not searched: held at the value --set gives")
            continue
        if (why := next((w for k in knob.keys if (w := unsettable(stack.cloud, k)) is not None), None)) is not None:
            notes.append(why)
            continue
        values = tuple(v for v in knob.values if not any(_same(v, w) for w in knob.values[: knob.values.index(v)]))
        if not any(_same(v, knob.current) for v in values):
            values = (knob.current, *values)
        if len(values) > 1:
            kept.append(Knob(knob.keys, values, knob.current))
    return kept, notes


@dataclass(frozen=True)
class Candidate:
    """One configuration run: the settings that differ from the stack as configured, and per seed run its
    p90 and p99 waits, cost per workload and per day (fewer than the seeds when it stopped early)."""

    settings: tuple[tuple[str, Any], ...]
    p90s: tuple[int | None, ...] = ()
    p99s: tuple[int | None, ...] = ()
    per_workload: tuple[float | None, ...] = ()
    per_day: tuple[float, ...] = ()
    utilisation: tuple[float, ...] = ()
    refused: str | None = None
    """Why the stack's validation refused it (never run)."""
    target: float = 0.0
    seeds: int = 0

    @property
    def label(self) -> str:
        return label_of(self.settings)

    @property
    def met(self) -> int:
        return sum(1 for p in self.p90s if p is not None and p <= self.target)

    @property
    def holds(self) -> bool:
        return self.refused is None and len(self.p90s) == self.seeds and self.met * HOLDS[1] >= HOLDS[0] * self.seeds

    @property
    def usd_per_workload(self) -> float | None:
        values = self.per_workload
        return None if not values or any(v is None for v in values) else sum(v for v in values if v is not None) / len(values)

    @property
    def usd_per_day(self) -> float:
        return sum(self.per_day) / len(self.per_day) if self.per_day else math.inf

    def key(self) -> tuple[float, float, int, str]:
        """The ranking: mean cost per workload, then per day; among equals the fewest settings changed, then the label."""
        per = self.usd_per_workload
        return (math.inf if per is None else per, self.usd_per_day, len(self.settings), self.label)

    def progress(self) -> tuple[int, float]:
        """How close it is to the target, for a search that starts from a configuration that misses it: seeds
        met (more is better), then the mean p90 (lower is better)."""
        p90s = [math.inf if p is None else p for p in self.p90s]
        return (self.met, -(sum(p90s) / len(p90s)) if p90s else -math.inf)


@dataclass(frozen=True)
class Round:
    """One round of the search: the candidates it ran for the first time and where it moved (None: it stopped)."""

    new: tuple[Candidate, ...]
    moved: Candidate | None
    changed: tuple[tuple[str, Any], ...] = ()
    """The settings the move changed (one knob's keys)."""


@dataclass(frozen=True)
class Search:
    target: float
    seeds: tuple[int, ...]
    knobs: tuple[Knob, ...]
    notes: tuple[str, ...]
    base: Candidate
    candidates: tuple[Candidate, ...]
    """Every configuration tried, in the order run (the stack as configured first)."""
    rounds: tuple[Round, ...]
    chosen: Candidate | None
    runs: int = 0

    @property
    def refused(self) -> int:
        return sum(1 for c in self.candidates if c.refused is not None)


Runner = Callable[[tuple[tuple[str, Any], ...], Sequence[int]], Sequence[Any]]
"""Runs a configuration (its settings) on the given seeds: one outcome per seed (p90, report.pending_p99_s,
usd_per_workload, cost.usd_per_day, report.utilisation_percent); SimulationError when the stack refuses it."""


def _evaluate(settings: tuple[tuple[str, Any], ...], target: float, seeds: Sequence[int], runner: Runner, chunk: int) -> tuple[Candidate, int]:
    """Run ``settings`` on ``seeds`` (``chunk`` at a time, in parallel), up to the one on which it has missed on more
    seeds than HOLDS allows. Outcomes past that seed (run in the same chunk) are dropped, so the candidate and the
    count of runs are the same whatever the chunk: the runs counted are those the answer uses."""
    allowed = len(seeds) - math.ceil(HOLDS[0] * len(seeds) / HOLDS[1])
    outcomes: list[Any] = []
    try:
        for start in range(0, len(seeds), max(1, chunk)):
            outcomes += list(runner(settings, seeds[start : start + max(1, chunk)]))
            missed = [i for i, o in enumerate(outcomes) if o.p90 is None or o.p90 > target]
            if len(missed) > allowed:
                outcomes = outcomes[: missed[allowed] + 1]
                break
    except SimulationError as exc:
        return Candidate(settings, refused=exc.lines[0], target=target, seeds=len(seeds)), 0
    return (
        Candidate(
            settings,
            p90s=tuple(o.p90 for o in outcomes),
            p99s=tuple(o.report.pending_p99_s for o in outcomes),
            per_workload=tuple(o.usd_per_workload for o in outcomes),
            per_day=tuple(o.cost.usd_per_day for o in outcomes),
            utilisation=tuple(o.report.utilisation_percent for o in outcomes),
            target=target,
            seeds=len(seeds),
        ),
        len(outcomes),
    )


def search(knobs_: Sequence[Knob], target: float, seeds: Sequence[int], runner: Runner, *, notes: Sequence[str] = (), chunk: int = 1) -> Search:
    """The coordinate search of the module docstring over ``knobs_``, from the values as configured."""
    state: tuple[tuple[Any, ...], ...] = tuple(k.current for k in knobs_)

    def settings_of(values: tuple[tuple[Any, ...], ...]) -> tuple[tuple[str, Any], ...]:
        return tuple((key, v) for k, value in zip(knobs_, values, strict=True) if not _same(value, k.current) for key, v in zip(k.keys, value, strict=True))

    tried: dict[str, Candidate] = {}
    order: list[Candidate] = []
    runs = 0

    def run(values: tuple[tuple[Any, ...], ...]) -> Candidate:
        nonlocal runs
        settings = settings_of(values)
        label = label_of(settings)
        if label not in tried:
            candidate, n = _evaluate(settings, target, seeds, runner, chunk)
            runs += n
            tried[label] = candidate
            order.append(candidate)
        return tried[label]

    current = base = run(state)
    rounds: list[Round] = []
    while len(rounds) < MAX_ROUNDS:
        before = len(order)
        neighbours = []
        for i, knob in enumerate(knobs_):
            for value in knob.values:
                if not _same(value, state[i]):
                    moved = (*state[:i], value, *state[i + 1 :])
                    neighbours.append((moved, run(moved)))
        holding = [(v, c) for v, c in neighbours if c.holds]
        move = None
        if holding:
            best = min(holding, key=lambda vc: vc[1].key())
            if not current.holds or best[1].key() < current.key():
                move = best
        elif not current.holds:
            ran = [(v, c) for v, c in neighbours if c.refused is None]
            closest = max(ran, key=lambda vc: vc[1].progress(), default=None)
            if closest is not None and closest[1].progress() > current.progress():
                move = closest
        new = tuple(order[before:])
        if move is None:
            rounds.append(Round(new, None))
            break
        changed = tuple((key, v) for i, k in enumerate(knobs_) if not _same(move[0][i], state[i]) for key, v in zip(k.keys, move[0][i], strict=True))
        state, current = move
        rounds.append(Round(new, current, changed))
    chosen = min((c for c in order if c.holds), key=Candidate.key, default=None)
    return Search(target, tuple(seeds), tuple(knobs_), tuple(notes), base, tuple(order), tuple(rounds), chosen, runs)


def _money(value: float | None, spec: str) -> str:
    return "-" if value is None or math.isinf(value) else f"${value:{spec}}"


def _span(values: Sequence[int | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "-"
    lo, hi = min(known), max(known)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _describe(c: Candidate) -> str:
    if c.refused is not None:
        return f"refused: {c.refused}"
    ran = len(c.p90s)
    return (
        f"meets on {c.met} of {ran}{'' if ran == c.seeds else f' seeds run (stopped: too many misses to hold on {c.seeds})'}, "
        f"p90 {_span(c.p90s)} s, p99 {_span(c.p99s)} s, {_money(c.usd_per_workload, ',.2f')}/workload, {_money(c.usd_per_day, ',.0f')}/day"
    )


def set_flags(settings: Sequence[tuple[str, Any]]) -> str:
    """The settings as --set flags, quoted for a shell."""
    return " ".join(f"--set '{k}={_text(v)}'" for k, v in settings)


def search_lines(result: Search) -> list[str]:
    """What the command prints: what was searched, each candidate, the pick beside the stack as configured."""
    seeds = result.seeds
    span = f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"
    lines = [f"cheapest settings meeting p90 <= {result.target:g} s on at least {HOLDS[0]} in {HOLDS[1]} of {span}, by cost per workload:"]
    lines += [f"  searched: {k.describe()}" for k in result.knobs]
    lines += [f"  {note}" for note in result.notes]
    lines.append(f"  as configured: {_describe(result.base)}")
    for i, r in enumerate(result.rounds, 1):
        refused = sum(1 for c in r.new if c.refused is not None)
        holding = sum(1 for c in r.new if c.holds)
        tried = f"round {i}: {len(r.new)} new candidates ({refused} refused), {holding} meet the target"
        if r.moved is None:
            lines.append(f"  {tried}; none better: stopped")
        else:
            lines.append(f"  {tried}; moved: {label_of(r.changed)}: {_describe(r.moved)}")
    ran = len(result.candidates) - result.refused
    lines.append(
        f"{len(result.candidates)} candidates tried ({ran} run, {result.refused} refused by the stack's validation), "
        f"{result.runs} runs, {len(result.rounds)} rounds of a coordinate search (every candidate: --json)"
    )
    chosen, base = result.chosen, result.base
    if chosen is None:
        return lines
    p90s = ", ".join("-" if p is None else str(p) for p in chosen.p90s)
    p99s = ", ".join("-" if p is None else str(p) for p in chosen.p99s)
    util = sum(chosen.utilisation) / len(chosen.utilisation)
    what = "the stack as configured" if not chosen.settings else set_flags(chosen.settings)
    lines.append(
        f"cheapest meeting p90 <= {result.target:g} s: {what} ({_money(chosen.usd_per_workload, ',.2f')}/workload, "
        f"{_money(chosen.usd_per_day, ',.0f')}/day, {util:.1f}% utilised; p90 {p90s} s; p99 {p99s} s; meets on {chosen.met} of {len(seeds)})"
    )
    if chosen is not base:
        lines.append(f"as configured: {_describe(base)}")
    return lines


def refusal(result: Search) -> str:
    """The one line when no candidate meets the target."""
    return (
        f"--target-p90: no configuration of the {len(result.candidates)} tried meets p90 <= {result.target:g} s on at least "
        f"{HOLDS[0]} in {HOLDS[1]} of {len(result.seeds)} seeds"
    )


def search_document(result: Search) -> dict[str, Any]:
    """The search as --json writes it."""

    def row(c: Candidate) -> dict[str, Any]:
        return {
            "label": c.label,
            "settings": dict(c.settings),
            "refused": c.refused,
            "pending_p90_s_by_seed": list(c.p90s),
            "pending_p99_s_by_seed": list(c.p99s),
            "seeds_meeting": c.met,
            "holds": c.holds,
            "usd_per_workload": c.usd_per_workload,
            "usd_per_day": None if math.isinf(c.usd_per_day) else c.usd_per_day,
        }

    chosen = result.chosen
    return {
        "target_p90_s": result.target,
        "seeds": list(result.seeds),
        "rule": f"meets the target on at least {HOLDS[0]} in {HOLDS[1]} seeds; ranked by mean cost per workload, then per day",
        "searched": [{"keys": list(k.keys), "values": [list(v) for v in k.values], "as_configured": list(k.current)} for k in result.knobs],
        "not_searched": list(result.notes),
        "candidates_tried": len(result.candidates),
        "candidates_refused": result.refused,
        "runs": result.runs,
        "rounds": [{"new_candidates": [c.label for c in r.new], "moved_to": None if r.moved is None else r.moved.label} for r in result.rounds],
        "candidates": [row(c) for c in result.candidates],
        "recommendation": None if chosen is None else {**row(chosen), "set": [f"{k}={_text(v)}" for k, v in chosen.settings]},
    }
