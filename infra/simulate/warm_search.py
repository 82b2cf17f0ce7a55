"""`gpu-platform simulate <stack> --target-p90 D` without a sweep: the smallest warm capacity
(StackConfig.warm_capacity, infra/simulate/warm.py) of one pool that meets a p90 wait target on most
seeds, with its cost beside the no-buffer baseline.

Sizes 0, 1, 2, ... GPUs are tried in order, each on the same seeds (``--seeds``, from the model's seed);
the first that meets the target on at least HOLDS of them is named. Warm capacity is the stack's own
deployment (placeholder pods), so a user can set it on GKE and EKS alike: the recommendation names a
key of the stack, never an autoscaler setting the cloud keeps (runs.unsettable).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform.infra.simulate.runs import HOLDS
from gpu_platform.infra.simulate.settings import SimulationError

__all__ = ["HOLDS", "SEARCH_BOUND", "WarmRow", "WarmSearch", "search", "search_lines", "warm_key", "warm_pool"]

SEARCH_BOUND = 16
"""The most warm GPUs tried (or the pool's GPUs at its maximum, if fewer)."""


def warm_key(pool: str) -> str:
    """The stack key a size is set at (``--set`` grammar)."""
    return f"warm_capacity.pools.{pool}"


def warm_pool(stack: Any, pool: str | None) -> tuple[str, int]:
    """The pool the search sizes and its bound: ``pool`` (--pool), else the stack's one GPU pool of role gpu."""
    from gpu_platform.components.core.labels import PoolRole

    shapes = [s for s in stack.pool_shapes() if s.gpus_per_node > 0]
    if pool is not None:
        chosen = [s for s in shapes if s.name == pool]
        if not chosen:
            raise SimulationError(f"--pool {pool}: not a GPU pool of the stack (GPU pools: {', '.join(s.name for s in shapes) or 'none'})")
    else:
        chosen = [s for s in shapes if s.role is PoolRole.GPU]
        if len(chosen) != 1:
            raise SimulationError(
                f"--target-p90 without --sweep sizes one pool's warm capacity: name it with --pool (GPU pools: {', '.join(s.name for s in shapes) or 'none'})"
            )
    shape = chosen[0]
    return shape.name, min(SEARCH_BOUND, shape.max_schedulable_gpus)


@dataclass(frozen=True)
class WarmRow:
    """One size tried: its p90 per seed and its mean cost over the seeds."""

    gpus: int
    p90s: tuple[int | None, ...]
    met: int
    usd_per_workload: float | None
    usd_per_day: float

    def holds(self) -> bool:
        return self.met * HOLDS[1] >= HOLDS[0] * len(self.p90s)


@dataclass(frozen=True)
class WarmSearch:
    pool: str
    target: float
    seeds: tuple[int, ...]
    bound: int
    rows: tuple[WarmRow, ...]

    @property
    def chosen(self) -> WarmRow | None:
        return next((r for r in self.rows if r.holds()), None)


def _mean(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None) / len(values)


def row_of(gpus: int, outcomes: Sequence[Any], target: float) -> WarmRow:
    p90s = tuple(o.p90 for o in outcomes)
    return WarmRow(
        gpus=gpus,
        p90s=p90s,
        met=sum(1 for p in p90s if p is not None and p <= target),
        usd_per_workload=_mean([o.usd_per_workload for o in outcomes]),
        usd_per_day=sum(o.cost.usd_per_day for o in outcomes) / len(outcomes),
    )


def search(pool: str, bound: int, target: float, seeds: Sequence[int], run_size: Callable[[int], Sequence[Any]]) -> WarmSearch:
    """Try 0..bound warm GPUs in order (``run_size(n)``: the outcomes of size n, one per seed) and stop at the
    first that meets ``target`` on HOLDS of the seeds."""
    rows: list[WarmRow] = []
    for gpus in range(bound + 1):
        rows.append(row_of(gpus, run_size(gpus), target))
        if rows[-1].holds():
            break
    return WarmSearch(pool, target, tuple(seeds), bound, tuple(rows))


def _money(value: float | None, spec: str) -> str:
    return "-" if value is None else f"${value:{spec}}"


def search_lines(result: WarmSearch) -> list[str]:
    """What the command prints: one line per size tried, then the recommendation (or why there is none)."""
    seeds = result.seeds
    span = f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"
    lines = [f"warm capacity of pool {result.pool} for p90 <= {result.target:g} s on at least {HOLDS[0]} in {HOLDS[1]} of {span}:"]
    for row in result.rows:
        p90s = ", ".join("-" if p is None else str(p) for p in row.p90s)
        lines.append(
            f"  {row.gpus} warm GPUs{' (baseline)' if row.gpus == 0 else ''}: meets on {row.met} of {len(seeds)} "
            f"(p90 {p90s} s), {_money(row.usd_per_workload, ',.2f')}/workload, {_money(row.usd_per_day, ',.0f')}/day"
        )
    chosen, base = result.chosen, result.rows[0]
    if chosen is None:
        return lines
    if chosen.gpus == 0:
        lines.append(
            f"smallest warm capacity meeting p90 <= {result.target:g} s: none ({warm_key(result.pool)}=0): the pool as "
            f"configured meets it ({_money(base.usd_per_workload, ',.2f')}/workload, {_money(base.usd_per_day, ',.0f')}/day)"
        )
        return lines
    lines.append(
        f"smallest warm capacity meeting p90 <= {result.target:g} s: {warm_key(result.pool)}={chosen.gpus} "
        f"({_money(chosen.usd_per_workload, ',.2f')}/workload, {_money(chosen.usd_per_day, ',.0f')}/day; "
        f"no buffer: {_money(base.usd_per_workload, ',.2f')}/workload, {_money(base.usd_per_day, ',.0f')}/day)"
    )
    return lines


def refusal(result: WarmSearch) -> str:
    """The one line when no size up to the bound meets the target."""
    return (
        f"{warm_key(result.pool)}: no warm capacity from 0 to {result.bound} GPUs meets p90 <= {result.target:g} s on at least "
        f"{HOLDS[0]} in {HOLDS[1]} of {len(result.seeds)} seeds (the bound: the pool's GPUs at its maximum, at most {SEARCH_BOUND})"
    )


def search_document(result: WarmSearch) -> dict[str, Any]:
    """The search as --json writes it."""
    chosen = result.chosen
    return {
        "pool": result.pool,
        "key": warm_key(result.pool),
        "target_p90_s": result.target,
        "seeds": list(result.seeds),
        "bound_gpus": result.bound,
        "rule": f"meets the target on at least {HOLDS[0]} in {HOLDS[1]} seeds",
        "sizes": [
            {
                "warm_gpus": r.gpus,
                "pending_p90_s_by_seed": list(r.p90s),
                "seeds_meeting": r.met,
                "usd_per_workload": r.usd_per_workload,
                "usd_per_day": r.usd_per_day,
            }
            for r in result.rows
        ],
        "recommended_warm_gpus": None if chosen is None else chosen.gpus,
    }
