"""Admission through tenant queues as Kueue does it, for the cluster model, and the per-tenant figures of a
simulated run (the report's: infra/report/tenants.py).

The queues are the stack's Kueue ClusterQueues, one per tenant in one Cohort: each with a nominal GPU
quota, a borrowing limit (None: no limit), a lending limit (None: all of its unused quota) and a
fair-sharing weight; the Cohort's own nominal quota (the pools' GPUs no tenant has) is lent to any
queue. GPUs of every flavor count together (one GPU flavor: a tenant's limits are summed over flavors). A Dask cluster's or a pipeline step's pods (a gang of the model) are one workload:

- a workload is admitted when its queue's GPU usage plus its GPUs stays within the queue's nominal quota
  plus what it may borrow: at most its borrowing limit above its nominal quota, and only from the
  cohort's unused lendable quota (each queue lends at most its lending limit; the part of its nominal
  quota it does not lend stays its own);
- otherwise it waits in its queue (it is not refused): oldest first, a workload that does not fit
  letting younger ones of its queue that fit go first (Kueue's BestEffortFIFO);
- when quota frees, the queues are served by fair sharing: among the queues whose oldest fitting
  workload fits now, the one whose borrowed GPUs after admitting it, divided by its weight, is lowest
  goes first (Kueue's fair sharing by dominant resource share, for the one resource that is scarce
  here, GPUs); ties by the older workload;
- a workload that could never fit (more GPUs than its nominal quota plus its borrowing limit, or than
  the cohort's whole quota) is refused and counted, as Kueue would leave it inadmissible for good;
- a namespace without a queue is not queued (Kueue ignores pods without a queue name);
- the tenant's ResourceQuota (requests.nvidia.com/gpu) stays the ceiling under the queues: a workload is
  admitted only while the tenant's admitted GPUs plus its own stay within the quota (Kueue would admit
  it, but the quota refuses its pods until others end: the model holds it in its queue instead), and one
  asking for more than the quota is refused.

Not modelled: preemption (reclaiming lent quota by evicting borrowers; a queue within its nominal quota
then waits for borrowed quota to be released, so its simulated wait is an upper bound of Kueue's with
``reclaimWithinCohort``), CPU and memory quotas (the GPU is the scarce resource), flavors (one GPU flavor).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpu_platform.components.core.labels import GPU_RESOURCE

__all__ = ["KUEUE_BUCKETS", "Cohort", "Queues", "TenantQueue", "cohort_from_objects", "trace_tenants"]

KUEUE_BUCKETS = (1.0, *(2.5 * 2**i for i in range(15)))
"""Kueue 0.19.2's admission wait histogram buckets (pkg/metrics/metrics.go: kueue_admission_wait_time_seconds
has generateExponentialBuckets(16), 1 then 2.5 x 2^i: 1, 2.5, 5, 10 ... 40960 s): the simulated queue wait
percentiles are given as the same bucket bounds as the measured ones."""


@dataclass(frozen=True)
class TenantQueue:
    """One tenant's ClusterQueue, GPUs only."""

    tenant: str
    nominal: int
    borrowing_limit: int | None = None
    """GPUs above the nominal quota it may borrow; None: no limit."""
    lending_limit: int | None = None
    """GPUs of its unused nominal quota it lends; None: all of it."""
    weight: float = 1.0


@dataclass(frozen=True)
class Cohort:
    """The tenants' queues and the Cohort's own GPUs (lent to any of them)."""

    queues: tuple[TenantQueue, ...]
    gpus: int = 0


def _quantity(value: Any) -> int:
    text = str(value)
    return int(text[:-1]) * 1000 if text.endswith("k") else int(float(text))


def cohort_from_objects(objects: Iterable[Mapping[str, Any]], namespaces: Mapping[str, str]) -> Cohort:
    """The GPU queues of Kueue objects as the Kueue component renders them: each ClusterQueue of a tenant of
    ``namespaces`` (namespace -> tenant; a ClusterQueue is named as its tenant) with its
    spec.resourceGroups[].flavors[].resources[name=nvidia.com/gpu] nominalQuota, borrowingLimit and
    lendingLimit summed over flavors and spec.fairSharing.weight; the Cohort's GPU nominalQuota likewise."""
    tenants = set(namespaces.values())
    out = []
    cohort_gpus = 0
    for obj in objects:
        if obj.get("kind") == "Cohort":
            cohort_gpus += sum(
                _quantity(r.get("nominalQuota", 0))
                for group in obj.get("spec", {}).get("resourceGroups", [])
                for flavor in group.get("flavors", [])
                for r in flavor.get("resources", [])
                if r.get("name") == GPU_RESOURCE
            )
            continue
        if obj.get("kind") != "ClusterQueue" or obj["metadata"]["name"] not in tenants:
            continue
        spec = obj.get("spec", {})
        nominal = 0
        borrowing: int | None = 0
        lending: int | None = 0
        for group in spec.get("resourceGroups", []):
            for flavor in group.get("flavors", []):
                for resource in flavor.get("resources", []):
                    if resource.get("name") != GPU_RESOURCE:
                        continue
                    nominal += _quantity(resource.get("nominalQuota", 0))
                    b, le = resource.get("borrowingLimit"), resource.get("lendingLimit")
                    borrowing = None if borrowing is None or b is None else borrowing + _quantity(b)
                    lending = None if lending is None or le is None else lending + _quantity(le)
        weight = float(spec.get("fairSharing", {}).get("weight", 1) or 1)
        out.append(TenantQueue(obj["metadata"]["name"], nominal, borrowing, lending, weight))
    return Cohort(tuple(out), cohort_gpus)


@dataclass
class _Workload:
    key: object
    queue: str
    gpus: int
    created: float
    admit: Callable[[], None]


@dataclass
class _QueueState:
    spec: TenantQueue
    used: int = 0
    waiting: list[_Workload] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    refused: int = 0
    pending_changes: list[tuple[float, int]] = field(default_factory=list)
    """(time, pending workloads from then on)."""
    used_changes: list[tuple[float, int]] = field(default_factory=list)

    @property
    def guaranteed(self) -> int:
        """The part of its nominal quota it does not lend."""
        lend = self.spec.nominal if self.spec.lending_limit is None else min(self.spec.nominal, self.spec.lending_limit)
        return self.spec.nominal - lend


class Queues:
    """The cohort's queues: submit a workload, release it when done; admissions call back."""

    def __init__(self, cohort: Cohort, namespaces: Mapping[str, str], now: Callable[[], float], quotas: Mapping[str, int] | None = None) -> None:
        """``quotas``: namespace -> the GPUs its ResourceQuota allows; a tenant's ceiling is the sum over its namespaces."""
        self.state = {q.tenant: _QueueState(q) for q in cohort.queues}
        self.namespaces = dict(namespaces)
        self.now = now
        self.ceiling: dict[str, int] = {}
        """tenant -> the GPUs its namespaces' ResourceQuotas allow together (absent: no quota)."""
        for namespace, gpus in (quotas or {}).items():
            tenant = self.namespaces.get(namespace)
            if tenant in self.state:
                self.ceiling[tenant] = self.ceiling.get(tenant, 0) + gpus
        self.admitted: dict[object, tuple[str, int]] = {}
        self.pool = cohort.gpus + sum(s.spec.nominal - s.guaranteed for s in self.state.values())
        """The cohort's lendable quota: its own and what the queues lend."""

    def queue_of(self, namespace: str) -> str | None:
        tenant = self.namespaces.get(namespace)
        return tenant if tenant in self.state else None

    def _pool_used(self) -> int:
        return sum(max(0, s.used - s.guaranteed) for s in self.state.values())

    def _fits(self, state: _QueueState, gpus: int) -> bool:
        spec = state.spec
        ceiling = self.ceiling.get(spec.tenant)
        if ceiling is not None and state.used + gpus > ceiling:
            return False
        if spec.borrowing_limit is not None and state.used + gpus > spec.nominal + spec.borrowing_limit:
            return False
        extra = max(0, state.used + gpus - state.guaranteed) - max(0, state.used - state.guaranteed)
        return self._pool_used() + extra <= self.pool

    def _never_fits(self, state: _QueueState, gpus: int) -> bool:
        spec = state.spec
        most = state.guaranteed + self.pool
        if spec.borrowing_limit is not None:
            most = min(most, spec.nominal + spec.borrowing_limit)
        if (ceiling := self.ceiling.get(spec.tenant)) is not None:
            most = min(most, ceiling)
        return gpus > most

    def _record(self, state: _QueueState) -> None:
        now = self.now()
        state.pending_changes.append((now, len(state.waiting)))
        state.used_changes.append((now, state.used))

    def submit(self, key: object, namespace: str, gpus: int, admit: Callable[[], None]) -> bool:
        """A workload of ``gpus`` GPUs arrives: admitted now (``admit`` called), queued (called at its
        admission), or refused (False: it could never be admitted)."""
        queue = self.queue_of(namespace)
        if queue is None:
            admit()
            return True
        state = self.state[queue]
        if self._never_fits(state, gpus):
            state.refused += 1
            return False
        state.waiting.append(_Workload(key, queue, gpus, self.now(), admit))
        self._record(state)
        self._admit()
        return True

    def release(self, key: object) -> None:
        """A workload is over (done, or never admitted): its quota frees and waiting workloads may go."""
        if key in self.admitted:
            queue, gpus = self.admitted.pop(key)
            state = self.state[queue]
            state.used -= gpus
            self._record(state)
            self._admit()
            return
        for state in self.state.values():
            for workload in state.waiting:
                if workload.key is key:
                    state.waiting.remove(workload)
                    self._record(state)
                    return

    def _admit(self) -> None:
        """Admit while some queue's workload fits, the lowest weighted borrowing first (fair sharing)."""
        while True:
            best: tuple[tuple[float, float], _QueueState, _Workload] | None = None
            for state in self.state.values():
                candidate = next((w for w in state.waiting if self._fits(state, w.gpus)), None)
                if candidate is None:
                    continue
                share = max(0, state.used + candidate.gpus - state.spec.nominal) / state.spec.weight
                rank = (share, candidate.created)
                if best is None or rank < best[0]:
                    best = (rank, state, candidate)
            if best is None:
                return
            _, state, workload = best
            state.waiting.remove(workload)
            state.used += workload.gpus
            state.waits.append(self.now() - workload.created)
            self.admitted[workload.key] = (state.spec.tenant, workload.gpus)
            self._record(state)
            workload.admit()

    # --- the figures ---------------------------------------------------------------------------

    def figures(self, horizon: int) -> dict[str, Any]:
        """tenant -> (QueueFigures, refused workloads) over [0, horizon) at 1 s, as the report reads Kueue's metrics."""
        from gpu_platform.infra.report.prometheus import nearest_rank
        from gpu_platform.infra.report.tenants import QueueFigures

        out = {}
        for tenant, state in self.state.items():
            pending = _runs(state.pending_changes, horizon)
            used = _runs(state.used_changes, horizon)
            waits = sorted(w for w in state.waits)
            admitted = len(waits)

            def bucket(percent: int, waits: list[float] = waits) -> float | None:
                if not waits:
                    return None
                value = nearest_rank(waits, percent)  # type: ignore[arg-type]
                return next((le for le in KUEUE_BUCKETS if value <= le), math.inf)

            out[tenant] = (
                QueueFigures(
                    cluster_queue=tenant,
                    pending_workloads_mean=sum(n * v for n, v in pending) / horizon if horizon else 0.0,
                    pending_workloads_max=max((v for _, v in pending), default=0),
                    admitted=admitted,
                    admission_wait_mean_s=sum(waits) / admitted if admitted else None,
                    admission_wait_p50_s=bucket(50),
                    admission_wait_p90_s=bucket(90),
                    admission_wait_p99_s=bucket(99),
                    gpu_quota_used_mean=sum(n * v for n, v in used) / horizon if horizon else None,
                    gpu_quota_nominal=state.spec.nominal,
                ),
                state.refused,
            )
        return out


def _runs(changes: list[tuple[float, int]], horizon: int) -> list[tuple[int, int]]:
    """A step function given by its changes (0 before the first) on the whole seconds of [0, horizon), as its runs:
    (seconds, value), the seconds adding up to ``horizon``. A second holds the value of the last change at or
    before it (of those at the same time, the last made)."""
    runs = []
    since, value = 0, 0
    for _, (t, after) in sorted(enumerate(changes), key=lambda c: (c[1][0], c[0])):
        at = min(horizon, math.ceil(t))
        if at > since:
            runs.append((at - since, value))
            since = at
        value = after
    if horizon > since:
        runs.append((horizon - since, value))
    return runs


def trace_tenants(trace: Any, inputs: Any, prices: Any, waits: Mapping[str, int], queues: Queues | None) -> Any:
    """The report's per-tenant figures (infra/report/tenants.py) of a simulated run over [0, horizon) at 1 s:
    each pod holds its GPUs on its node from running to finished, each GPU node's capacity counts (and is
    paid) from its GPUs' readiness to its removal, as the report sees kube_node_status_capacity (the
    simulator's cost also pays the provisioning before), priced as the simulator prices it."""
    from gpu_platform.infra.report.tenants import NodePrice, Segment, tenant_figures

    horizon = math.ceil(trace.horizon)

    def seconds(start: float, end: float | None, value: float) -> list[Segment]:
        """The whole seconds of [start, end) within [0, horizon) as one segment (none when there are none)."""
        first = min(horizon, math.ceil(start))
        stop = horizon if end is None else min(horizon, math.ceil(end))
        return [(first, stop, value)] if stop > first else []

    held = [
        (p.namespace, p.node, seconds(p.running, p.finished, p.requests.gpus))
        for p in trace.pods
        if p.requests.gpus > 0 and p.running is not None and p.node is not None
    ]
    gpu_nodes = [n for n in trace.nodes if n.group.gpus_per_node > 0 and n.gpu_ready is not None]
    capacity = {n.name: seconds(n.gpu_ready, n.removed, n.group.allocatable.gpus) for n in gpu_nodes}
    node_prices = {n.name: NodePrice(prices.hourly(inputs.cloud, inputs.region, n.group), n.group.spot) for n in gpu_nodes}
    figures = queues.figures(horizon) if queues is not None else None
    table = prices.region(inputs.cloud, inputs.region)
    report = tenant_figures(
        tenants=inputs.tenants,
        held=held,
        capacity=capacity,
        prices=node_prices,
        waits=waits,
        queues=None if figures is None else {t: q for t, (q, _) in figures.items()},
        currency=prices.currency,
        prices_date=prices.date,
        region=table.region,
    )
    if figures is not None:
        for row in report.rows:
            if row.tenant in figures:
                row.refused_workloads = figures[row.tenant][1]
    return report
