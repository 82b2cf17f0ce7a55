"""Why a stalled run's pending pods can never be placed: one line per kind of pod, naming some of
them, what they ask for, what the pools they may use offer and the fix (the cluster model's
``stall_causes``, infra/simulate/model.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpu_platform.infra.simulate.inputs import NodeGroup, PodSpec, Resources

__all__ = ["stall_causes"]


def _amount(what: str, value: int) -> str:
    if what == "gpus":
        return f"{value} GPU{'s' if value != 1 else ''}"
    if what == "cpu":
        return f"{value / 1000:g} CPU"
    return f"{value / 1024:g} GiB" if value >= 1024 else f"{value} MiB"


def _resources(r: Resources) -> str:
    return ", ".join(_amount(w, getattr(r, w)) for w in ("gpus", "cpu", "memory") if getattr(r, w) or w == "gpus")


def _names(groups: Iterable[NodeGroup]) -> str:
    return ", ".join(dict.fromkeys(g.pool for g in groups))


def _pods(pods: list[Any]) -> str:
    """``3 pods (ns/a, ns/b and 1 more)``."""
    names = [f"{p.record.namespace}/{p.record.name}" for p in pods]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"{len(pods)} pod{'s' if len(pods) != 1 else ''} ({shown})"


def stall_causes(model: Any) -> list[str]:
    """Why each kind of pending pod of ``model`` (a ClusterModel) is never placed (see Trace.stall_causes)."""
    by_spec: dict[PodSpec, list[Any]] = {}
    for pod in (p for p in model.pending if not p.placeholder):  # warm capacity's placeholders are not the workload
        by_spec.setdefault(pod.spec, []).append(pod)
    return [f"{_pods(pods)}: {_why_unplaced(model, spec)}" for spec, pods in by_spec.items()]


def _why_unplaced(model: Any, spec: PodSpec) -> str:
    need = spec.requests
    asking = f"asking for {_resources(need)}"
    roles = [g for g in model.groups if g.role in spec.roles and (spec.pools is None or g.pool in spec.pools)]
    if not roles:
        where = f"pools {', '.join(spec.pools)}" if spec.pools is not None else f"a pool of role {' or '.join(spec.roles)}"
        have = ", ".join(sorted({f"{g.pool} ({g.role})" for g in model.groups})) or "none"
        return f"{asking} on {where}; the stack has no such pool (pools: {have}); add one or change the pods' pool"
    usable = [g for g in roles if spec.may_use(g)]
    if not usable:
        taints = sorted({t for g in roles for t in g.taints if not spec.tolerates(t)})
        return (
            f"{asking}; every pool they may use ({_names(roles)}) carries a taint they do not tolerate "
            f"({', '.join(taints)}); add the toleration or a pool without the taint"
        )
    fitting = [g for g in usable if g.allocatable.fits(need)]
    if not fitting:
        short = []
        for what, value in (("gpus", need.gpus), ("cpu", need.cpu), ("memory", need.memory)):
            largest = max(usable, key=lambda g, w=what: getattr(g.allocatable, w))  # type: ignore[misc]
            offered = getattr(largest.allocatable, what)
            if value > offered:
                short.append(f"the largest node offers {_amount(what, offered)} ({largest.pool}: {largest.machine_type})")
        return f"{asking}; {'; '.join(short)}, after the kubelet's reserves and DaemonSets; ask for less or give a pool a larger machine type"
    full = [g for g in fitting if model.size(g) >= g.total_max]
    if len(full) == len(fitting):
        sizes = ", ".join(f"{g.pool}: {g.total_max} node{'s' if g.total_max != 1 else ''} of {g.machine_type}" for g in full)
        per = min(g.allocatable.count(need) for g in full) or 1
        return (
            f"{asking}; the pools that fit them are at their maximum ({sizes}, {per} such pod{'s' if per != 1 else ''} "
            f"a node) and the pods running there wait for these (a gang starts whole); raise the pool's "
            "max_nodes or make the gang smaller"
        )
    backoff = [g for g in fitting if model.backoff_until[g.name] > model.env.now]
    return f"{asking}; no pool that fits them can grow (backed off: {_names(backoff) or 'none'}); raise the pools' max_nodes"
