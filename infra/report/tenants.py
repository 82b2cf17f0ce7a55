"""Cost per tenant, measured: what each tenant's GPUs held, what they cost, how long its pods and its
queue waited. `gpu-platform report --stack NAME` adds it to the report; `gpu-platform simulate` computes
the same figures (same keys in report.json) from a simulated run, so a plan and its measurement
compare line by line.

A tenant is a tenant namespace of the stack: each Dask tenant and each Kubeflow tenant (profile).
GPU pods of any other namespace share one row, ``OTHER``. Definitions, on the report's grid (every
``step`` s of [start, end)):

- GPU-hours used by a tenant: the GPUs its pods request while Running (kube-state-metrics'
  ``kube_pod_container_resource_requests{resource="nvidia_com_gpu"}`` with its ``node`` label, times
  ``kube_pod_status_phase{phase="Running"}``), times the step.
- Cost: every GPU node (``kube_node_status_capacity{resource="nvidia_com_gpu"}`` > 0 at the step) costs
  its hourly price times the step; the price is the simulator's price table (infra/simulate/prices.py,
  or --prices FILE) for the node's machine or instance type and capacity type, read from its labels
  (``kube_node_labels``: components/labels.NODE_COST_LABELS, which the PrometheusStack's kube-state-metrics
  exports; an N1 machine's GPUs, which GCP bills apart, are its pool's physical GPUs in the plan, ``node_price``).
  The step's cost of a node is shared out to the pods running on it by their share of its
  GPUs (requested / capacity; by their share of the requests when they exceed the capacity); the share
  of its GPUs no pod requests is the ``IDLE`` row, never spread over the tenants. System nodes, disks
  and the control plane fee are not in these figures.
- Spot share: of a tenant's GPU-hours, the share on spot nodes (a node is spot when one of its capacity
  labels says so: cloud.google.com/gke-spot=true, eks.amazonaws.com/capacityType=SPOT,
  gpu-platform.io/capacity=spot, karpenter.sh/capacity-type=spot).
- Pod wait: the report's pending seconds of the tenant's GPU pods created in the range
  (``pending_by_pod``), p50/p90/p99 by the nearest-rank method.
- Queue (Kueue's own metrics, per ClusterQueue, the tenant's: ``cluster_queue_of``): the pending
  workloads (``kueue_pending_workloads``, summed over status) mean and most over the steps; the
  workloads admitted in the range and their admission wait from the histogram
  ``kueue_admission_wait_time_seconds`` (the bucket counters at the last step minus those at the first:
  the mean is exact, p50/p90/p99 are the upper bound of the bucket holding that rank, "at most");
  the GPU quota in use (``kueue_cluster_queue_resource_usage{resource="nvidia.com/gpu"}``, mean) and
  the nominal GPU quota (``kueue_cluster_queue_nominal_quota``, most). Null when Prometheus has no
  Kueue series (Kueue not installed or not scraped); the usage and quota need Kueue's
  ``metrics.enableClusterQueueResources``. The Kueue component turns that on and, where the stack has a
  Prometheus, has it scrape Kueue (the chart's ServiceMonitor). A follower replica's series are left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gpu_platform.components.core.labels import (
    CAPACITY_LABEL,
    EKS_CAPACITY_LABEL,
    GKE_ACCELERATOR_LABEL,
    GKE_SPOT_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    KARPENTER_CAPACITY_LABEL,
    NODE_COST_LABELS,
)
from gpu_platform.components.pools.shapes import NodePoolShape
from gpu_platform.infra.report.prometheus import GPU_CAPACITY, GPU_REQUESTS, Prometheus, ReportError, ReportInputs, nearest_rank

__all__ = [
    "IDLE",
    "OTHER",
    "NodePrice",
    "QueueFigures",
    "Segment",
    "TenantFigures",
    "TenantReport",
    "cluster_queue_of",
    "collect_tenants",
    "ksm_label",
    "node_pool",
    "node_price",
    "sample_runs",
    "tenant_figures",
    "tenant_namespaces",
    "print_tenants",
    "tenant_plot",
    "tenant_rows",
]

IDLE = "idle"
"""The row of the GPU capacity no pod requested: its GPU-hours and what it cost."""
OTHER = "other"
"""The row of the GPU pods of namespaces that are not a tenant of the stack."""
TOTAL = "total"
"""The table's last row: the GPU nodes' capacity-hours and cost (the rows add up to it)."""
PERCENTS = (50, 90, 99)
SPOT_VALUES = {GKE_SPOT_LABEL: "true", EKS_CAPACITY_LABEL: "SPOT", CAPACITY_LABEL: "spot", KARPENTER_CAPACITY_LABEL: "spot"}
"""A node is spot when one of these labels has this value."""

HELD = (
    f"sum by (namespace, pod, node) ({GPU_REQUESTS}) * on (namespace, pod) group_left () "
    '(max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1)'
)
"""The GPUs each running GPU pod requests, by the node it runs on."""
CAPACITY = f"max by (node) ({GPU_CAPACITY})"
NODE_LABELS = "kube_node_labels"
LEADER = 'replica_role!="follower"'
"""Kueue labels every series with the replica's role (leader, follower or standalone; pkg/metrics at v0.19.2):
a follower's queue manager reports the same queues again, so only the leader's (or a lone replica's) count."""
PENDING_WORKLOADS = f"sum by (cluster_queue) (kueue_pending_workloads{{{LEADER}}})"
ADMISSION_BUCKETS = f"sum by (cluster_queue, le) (kueue_admission_wait_time_seconds_bucket{{{LEADER}}})"
ADMISSION_SUM = f"sum by (cluster_queue) (kueue_admission_wait_time_seconds_sum{{{LEADER}}})"
QUOTA_USED = f'sum by (cluster_queue) (kueue_cluster_queue_resource_usage{{resource="{GPU_RESOURCE}",{LEADER}}})'
QUOTA_NOMINAL = f'sum by (cluster_queue) (kueue_cluster_queue_nominal_quota{{resource="{GPU_RESOURCE}",{LEADER}}})'


def ksm_label(key: str) -> str:
    """The Prometheus label kube-state-metrics gives a Kubernetes label key in kube_node_labels:
    label_ + the key with every character outside [a-zA-Z0-9_] made _, camelCase made snake_case
    (eks.amazonaws.com/capacityType -> label_eks_amazonaws_com_capacity_type)."""
    sanitized = re.sub(r"[^a-zA-Z0-9_]", "_", key)
    return "label_" + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", sanitized).lower()


def cluster_queue_of(tenant: str) -> str:
    """The ClusterQueue of a tenant: named as the tenant (the Kueue component's naming)."""
    return tenant


def tenant_namespaces(config: Any) -> dict[str, str]:
    """namespace -> tenant of a stack config: each Dask tenant and each Kubeflow tenant is a namespace
    of its own name (StackConfig.tenant_namespaces: Dask first)."""
    return {name: name for name in config.tenant_namespaces()}


# --- the figures ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodePrice:
    """What one GPU node costs per hour (None: the price table has no price for it), and whether it is spot."""

    per_hour: float | None
    spot: bool


@dataclass
class QueueFigures:
    """A tenant's ClusterQueue over the range, from Kueue's metrics (or the simulator's queues)."""

    cluster_queue: str
    pending_workloads_mean: float
    pending_workloads_max: float
    admitted: int
    """Workloads admitted in the range."""
    admission_wait_mean_s: float | None
    admission_wait_p50_s: float | None
    """At most this (the upper bound of the histogram bucket holding the rank); None when none was admitted."""
    admission_wait_p90_s: float | None
    admission_wait_p99_s: float | None
    gpu_quota_used_mean: float | None
    """Mean GPUs of the queue's quota in use (borrowed included); None without the resource metrics."""
    gpu_quota_nominal: float | None


@dataclass
class TenantFigures:
    """One row: a tenant, OTHER or IDLE."""

    tenant: str
    gpu_hours: float
    """Used (requested x running time); for IDLE, the GPU capacity no pod requested."""
    cost: float
    """Its share of the GPU nodes' cost, in the price table's currency."""
    cost_share: float
    """Of the GPU nodes' cost (0..1)."""
    spot_share: float | None
    """Of its GPU-hours, on spot nodes (0..1); None with no GPU-hours."""
    pods_created: int
    """GPU pods created in the range (the waits)."""
    wait_p50_s: int | None
    wait_p90_s: int | None
    wait_p99_s: int | None
    queue: QueueFigures | None
    """None for IDLE and OTHER, and when Kueue's metrics are absent."""
    refused_workloads: int | None = None
    """Simulated runs with queues: the tenant's workloads that could never be admitted; None when measured."""


@dataclass
class TenantReport:
    currency: str
    prices_date: str
    region: str
    gpu_hours_paid: float
    """GPU capacity-hours of the GPU nodes (every row's GPU-hours add up to it)."""
    cost: float
    """What the GPU nodes cost over the range (every row's cost adds up to it)."""
    kueue_metrics: bool
    """Whether Prometheus had Kueue's series."""
    rows: list[TenantFigures] = field(default_factory=list)
    """The tenants in the stack's order, then OTHER (when it has GPU pods), then IDLE."""
    unpriced_nodes: list[str] = field(default_factory=list)
    """GPU nodes the price table has no price for: their GPU-hours count, their cost is 0 (named in the table)."""

    def summary(self) -> dict[str, Any]:
        return asdict(self)

    def row(self, tenant: str) -> TenantFigures:
        return next(r for r in self.rows if r.tenant == tenant)


def _percentiles(waits: list[int]) -> tuple[int | None, ...]:
    ordered = sorted(waits)
    return tuple(nearest_rank(ordered, p) if ordered else None for p in PERCENTS)


Segment = tuple[int, int, float]
"""A piecewise-constant stretch of a series on the grid: (start, stop, value), the value held over the
seconds [start, stop). ``tenant_figures`` reads series as such segments, so its cost grows with the
series' change points, not with the seconds they span (a simulated run: hours of seconds per pod)."""


def sample_runs(samples: Mapping[int, float], step: int) -> list[Segment]:
    """A series sampled every ``step`` s ({t: value}, as Prometheus answers a range query) as its runs of
    equal value: each sample stands for [t, t + step); a missing sample ends a run."""
    out: list[Segment] = []
    for t in sorted(samples):
        value = samples[t]
        if out and out[-1][1] == t and out[-1][2] == value:
            out[-1] = (out[-1][0], t + step, value)
        else:
            out.append((t, t + step, value))
    return out


def _stretches(capacity: Sequence[Segment], holders: Sequence[tuple[int, int, str, float]]) -> Iterator[tuple[int, int, float, list[tuple[str, float]]]]:
    """A node's time cut at every change point of its GPU capacity (segments that do not overlap: a series) and of
    the pods holding GPUs on it (``holders``: (start, stop, tenant, GPUs)): each stretch over which the node has
    GPUs, as (start, stop, its GPUs, [(tenant, GPUs)] of the pods holding GPUs all along it, in ``holders``' order)."""
    opens: dict[int, float] = {}
    closes: set[int] = set()
    for start, stop, value in capacity:
        if value <= 0 or stop <= start:
            continue
        opens[start] = value
        closes.add(stop)
    arrive: dict[int, list[int]] = {}
    leave: dict[int, list[int]] = {}
    for i, (start, stop, _, _) in enumerate(holders):
        arrive.setdefault(start, []).append(i)
        leave.setdefault(stop, []).append(i)
    points = sorted({*opens, *closes, *arrive, *leave})
    gpus: float | None = None
    active: dict[int, tuple[str, float]] = {}
    for at, until in zip(points, points[1:], strict=False):
        if at in closes:
            gpus = None
        gpus = opens.get(at, gpus)
        for i in leave.get(at, ()):
            del active[i]
        for i in arrive.get(at, ()):
            active[i] = holders[i][2:]
        if gpus is not None:
            yield at, until, gpus, [active[i] for i in sorted(active)]


def tenant_figures(
    *,
    tenants: Mapping[str, str],
    held: Iterable[tuple[str, str, Sequence[Segment]]],
    capacity: Mapping[str, Sequence[Segment]],
    prices: Mapping[str, NodePrice],
    waits: Mapping[str, int],
    queues: Mapping[str, QueueFigures] | None,
    currency: str,
    prices_date: str,
    region: str,
) -> TenantReport:
    """The per-tenant figures from what was measured (or simulated), the series given as segments
    (``sample_runs`` turns samples every ``step`` s into them).

    ``tenants``: namespace -> tenant; ``held``: (namespace, node, segments of the GPUs requested while
    running); ``capacity``: node -> segments of its GPU capacity; ``prices``: node -> its price and capacity
    type; ``waits``: namespace/pod -> pending seconds of the GPU pods created in the range; ``queues``:
    tenant -> its queue's figures, None when there are no queue metrics.

    Each second a node has GPUs it costs its price / 3600, shared out to the pods holding GPUs on it then
    by their share of its GPUs (of their requests when these exceed its GPUs), the rest to IDLE. Between
    two change points of a node's capacity and of its holders the sharing is the same every second, so
    each such stretch is shared out at once: its length times a second's share."""
    order = list(dict.fromkeys(tenants.values()))

    def tenant_of(namespace: str) -> str:
        return tenants.get(namespace, OTHER)

    # node -> [(start, stop, tenant, GPUs)], in the order of ``held``
    on_node: dict[str, list[tuple[int, int, str, float]]] = {}
    used: dict[str, float] = {}
    spot_used: dict[str, float] = {}
    for namespace, node, segments in held:
        tenant = tenant_of(namespace)
        price = prices.get(node)
        for start, stop, gpus in segments:
            if gpus <= 0 or stop <= start:
                continue
            on_node.setdefault(node, []).append((start, stop, tenant, gpus))
            used[tenant] = used.get(tenant, 0.0) + gpus * (stop - start)
            if price is not None and price.spot:
                spot_used[tenant] = spot_used.get(tenant, 0.0) + gpus * (stop - start)
    cost: dict[str, float] = {}
    idle_gpu_s = paid_gpu_s = total = idle_spot = 0.0
    for node, series in capacity.items():
        price = prices.get(node)
        rate = ((price.per_hour if price is not None else None) or 0.0) / 3600
        spot = price is not None and price.spot
        for start, stop, gpus, holders in _stretches(series, on_node.get(node, [])):
            length = stop - start
            requested = sum(g for _, g in holders)
            share_of = max(gpus, requested)
            idle = max(0.0, gpus - requested)
            paid_gpu_s += gpus * length
            idle_gpu_s += idle * length
            if spot:
                idle_spot += idle * length
            total += rate * length
            for tenant, g in holders:
                cost[tenant] = cost.get(tenant, 0.0) + rate * g / share_of * length
            cost[IDLE] = cost.get(IDLE, 0.0) + rate * idle / share_of * length
    by_tenant: dict[str, list[int]] = {}
    for pod, seconds in waits.items():
        by_tenant.setdefault(tenant_of(pod.split("/", 1)[0]), []).append(seconds)
    names = order + ([OTHER] if OTHER in used or OTHER in by_tenant else [])
    rows = []
    for tenant in names:
        gpu_s = used.get(tenant, 0.0)
        p50, p90, p99 = _percentiles(by_tenant.get(tenant, []))
        rows.append(
            TenantFigures(
                tenant=tenant,
                gpu_hours=gpu_s / 3600,
                cost=cost.get(tenant, 0.0),
                cost_share=cost.get(tenant, 0.0) / total if total else 0.0,
                spot_share=spot_used.get(tenant, 0.0) / gpu_s if gpu_s else None,
                pods_created=len(by_tenant.get(tenant, [])),
                wait_p50_s=p50,
                wait_p90_s=p90,
                wait_p99_s=p99,
                queue=None if queues is None or tenant == OTHER else queues.get(tenant),
            )
        )
    rows.append(
        TenantFigures(
            tenant=IDLE,
            gpu_hours=idle_gpu_s / 3600,
            cost=cost.get(IDLE, 0.0),
            cost_share=cost.get(IDLE, 0.0) / total if total else 0.0,
            spot_share=idle_spot / idle_gpu_s if idle_gpu_s else None,
            pods_created=0,
            wait_p50_s=None,
            wait_p90_s=None,
            wait_p99_s=None,
            queue=None,
        )
    )
    return TenantReport(
        currency=currency,
        prices_date=prices_date,
        region=region,
        gpu_hours_paid=paid_gpu_s / 3600,
        cost=total,
        kueue_metrics=queues is not None,
        rows=rows,
        unpriced_nodes=sorted(n for n in capacity if (p := prices.get(n)) is None or p.per_hour is None),
    )


# --- from Prometheus -----------------------------------------------------------------------------


def node_pool(machine: str, accelerator: str | None, advertised: int, pools: Sequence[NodePoolShape]) -> NodePoolShape | None:
    """The stack's pool (a NodePoolShape of the plan) a node of ``machine`` (and ``accelerator``, when labelled)
    advertising ``advertised`` nvidia.com/gpu belongs to: the GPU pool of that machine type whose schedulable GPUs
    per node are ``advertised``, else the only GPU pool of that machine type; None when the plan has no such pool."""
    same = [s for s in pools if s.gpus_per_node and s.machine_type == machine and accelerator in (None, s.accelerator)]
    exact = [s for s in same if s.schedulable_gpus_per_node == advertised]
    if exact or len(same) == 1:
        return (exact or same)[0]
    return None


def node_price(labels: Mapping[str, str], prices: Any, cloud: Any, region: str, pools: Sequence[NodePoolShape] = ()) -> NodePrice:
    """The price of a node from its kube_node_labels (no price when its type is unlabelled or not in the table). Its
    physical GPUs (what an N1 machine pays apart) are its pool's in the plan (``pools``: StackConfig.pool_shapes());
    the node's nvidia.com/gpu capacity counts a shared GPU once per client, so it stands in only for a node of no
    pool of the plan."""
    from gpu_platform.infra.simulate.inputs import NodeGroup, Resources
    from gpu_platform.infra.simulate.settings import SimulationError

    spot = any(labels.get(ksm_label(key)) == value for key, value in SPOT_VALUES.items())
    machine = labels.get(ksm_label(INSTANCE_TYPE_LABEL))
    if not machine:
        return NodePrice(None, spot)
    accelerator = labels.get(ksm_label(GKE_ACCELERATOR_LABEL)) or None
    gpus = int(labels.get("gpus", "0"))
    if (pool := node_pool(machine, accelerator, gpus, pools)) is not None:
        gpus, accelerator = pool.gpus_per_node, pool.accelerator
    group = NodeGroup(
        name=machine,
        pool=machine,
        role="gpu",
        machine_type=machine,
        allocatable=Resources(gpus=gpus),
        gpus_per_node=gpus,
        accelerator=accelerator,
        spot=spot,
    )
    try:
        return NodePrice(prices.hourly(cloud, region, group), spot)
    except SimulationError:
        return NodePrice(None, spot)


def _queue_figures(prom: Prometheus, inputs: ReportInputs, tenants: Iterable[str], progress: Callable[[str], None]) -> dict[str, QueueFigures] | None:
    times = inputs.grid()
    first, last = times[0], times[-1]
    if not prom.series("kueue_pending_workloads", first, last) and not prom.series("kueue_admission_wait_time_seconds_bucket", first, last):
        return None
    progress("Kueue's queues")

    def by_queue(result: Mapping[Any, Any]) -> dict[str, Any]:
        return {dict(labels).get("cluster_queue", ""): values for labels, values in result.items()}

    pending = by_queue(prom.query_range(PENDING_WORKLOADS, times, inputs.step, inputs.max_points))
    used = by_queue(prom.query_range(QUOTA_USED, times, inputs.step, inputs.max_points))
    nominal = by_queue(prom.query_range(QUOTA_NOMINAL, times, inputs.step, inputs.max_points))
    # The counters at the first step (0 when they did not exist yet) and at the last.
    buckets = {at: prom.instant(ADMISSION_BUCKETS, at) for at in (first, last)}
    sums = {at: by_queue(prom.instant(ADMISSION_SUM, at)) for at in (first, last)}
    out = {}
    for tenant in tenants:
        queue = cluster_queue_of(tenant)
        counts: dict[float, float] = {}
        for at, sign in ((last, 1), (first, -1)):
            for labels, value in buckets[at].items():
                items = dict(labels)
                if items.get("cluster_queue") == queue:
                    le = float(items["le"])
                    counts[le] = counts.get(le, 0.0) + sign * value
        admitted = int(round(max(counts.values(), default=0.0)))
        waited = sums[last].get(queue, 0.0) - sums[first].get(queue, 0.0)
        bounds = sorted(counts)

        def at_most(percent: int, bounds: list[float] = bounds, counts: dict[float, float] = counts, admitted: int = admitted) -> float | None:
            if not admitted:
                return None
            rank = max(1, -(-percent * admitted // 100))
            return next(le for le in bounds if counts[le] >= rank - 1e-9)

        steps = [pending.get(queue, {}).get(t, 0.0) for t in times]
        used_values = list(used.get(queue, {}).values())
        nominal_values = list(nominal.get(queue, {}).values())
        out[tenant] = QueueFigures(
            cluster_queue=queue,
            pending_workloads_mean=sum(steps) / len(steps),
            pending_workloads_max=max(steps),
            admitted=admitted,
            admission_wait_mean_s=waited / admitted if admitted else None,
            admission_wait_p50_s=at_most(50),
            admission_wait_p90_s=at_most(90),
            admission_wait_p99_s=at_most(99),
            gpu_quota_used_mean=(sum(used.get(queue, {}).get(t, 0.0) for t in times) / len(times)) if used_values else None,
            gpu_quota_nominal=max(nominal_values) if nominal_values else None,
        )
    return out


def collect_tenants(
    inputs: ReportInputs,
    waits: Mapping[str, int],
    tenants: Mapping[str, str],
    prices: Any,
    cloud: Any,
    region: str,
    progress: Callable[[str], None] = lambda _: None,
    pools: Sequence[NodePoolShape] = (),
) -> TenantReport:
    """The per-tenant figures from Prometheus over the report's range (``waits``: the report's pending_by_pod;
    ``pools``: the stack's pools, StackConfig.pool_shapes(), which say each GPU node's physical GPUs)."""
    prom = Prometheus(inputs.prometheus, inputs.timeout)
    times = inputs.grid()
    first, last = times[0], times[-1]
    progress("GPUs held per tenant and node")
    held = [
        (dict(labels).get("namespace", ""), dict(labels).get("node", ""), sample_runs(values, inputs.step))
        for labels, values in prom.query_range(HELD, times, inputs.step, inputs.max_points).items()
    ]
    progress("GPU capacity per node")
    capacity = {dict(labels).get("node", ""): values for labels, values in prom.query_range(CAPACITY, times, inputs.step, inputs.max_points).items()}
    progress("node labels")
    labels_of: dict[str, dict[str, str]] = {}
    for series in prom.series(NODE_LABELS, first, last):
        if series.get("node") in capacity:
            labels_of.setdefault(series["node"], {}).update(series)
    if capacity and not labels_of:
        raise ReportError(
            f"no {NODE_LABELS} series for the GPU nodes: is kube-state-metrics scraped, with "
            f"--metric-labels-allowlist=nodes=[{','.join(NODE_COST_LABELS)}] (the PrometheusStack sets it)?"
        )
    node_prices = {
        node: node_price({**labels_of.get(node, {}), "gpus": str(int(max(series.values(), default=0)))}, prices, cloud, region, pools)
        for node, series in capacity.items()
    }
    queues = _queue_figures(prom, inputs, dict.fromkeys(tenants.values()), progress)
    table = prices.region(cloud, region)  # checked by the command before any query
    return tenant_figures(
        tenants=tenants,
        held=held,
        capacity={node: sample_runs(series, inputs.step) for node, series in capacity.items()},
        prices=node_prices,
        waits=waits,
        queues=queues,
        currency=prices.currency,
        prices_date=prices.date,
        region=table.region,
    )


# --- output -------------------------------------------------------------------------------------


def _seconds(values: Iterable[float | int | None], prefix: str = "") -> str:
    shown = [v for v in values]
    if all(v is None for v in shown):
        return "-"
    return " / ".join("-" if v is None else f"{prefix}{v:g}" for v in shown)


def tenant_rows(report: TenantReport) -> list[tuple[str, ...]]:
    """The per-tenant table: tenant, GPU-h used, cost, share, spot, pod wait p50/p90/p99, queue wait, pending."""
    rows: list[tuple[str, ...]] = []
    for r in report.rows:
        q = r.queue
        rows.append(
            (
                r.tenant,
                f"{r.gpu_hours:.2f}",
                f"{r.cost:.2f}",
                f"{100 * r.cost_share:.1f}%",
                "-" if r.spot_share is None else f"{100 * r.spot_share:.0f}%",
                "-" if r.tenant == IDLE else _seconds((r.wait_p50_s, r.wait_p90_s, r.wait_p99_s)),
                "-" if q is None else _seconds((q.admission_wait_p50_s, q.admission_wait_p90_s, q.admission_wait_p99_s), "≤"),
                "-" if q is None else f"{q.pending_workloads_mean:.2f} / {q.pending_workloads_max:g}",
            )
        )
    rows.append((TOTAL, f"{report.gpu_hours_paid:.2f}", f"{report.cost:.2f}", "100.0%", "", "", "", ""))
    return rows


TENANT_COLUMNS = (
    "tenant",
    "GPU-h",
    "cost {currency}",
    "share",
    "spot",
    "pod wait p50/90/99 s",
    "queue wait p50/90/99 s",
    "pending mean/max",
)
"""The per-tenant table's columns (the queue's: Kueue's admission wait and pending workloads)."""


def tenant_plot(report: TenantReport) -> bytes:
    """tenants.png: per tenant, GPU-hours used (idle apart) and cost, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpu_platform.infra.report.prometheus import png

    names = [r.tenant for r in report.rows]
    colours = ["#bbbbbb" if r.tenant == IDLE else "#4477aa" for r in report.rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, max(3.0, 0.5 * len(names) + 1.5)))
    y = list(range(len(names)))
    left.barh(y, [r.gpu_hours for r in report.rows], color=colours)
    spot = [r.gpu_hours * (r.spot_share or 0.0) for r in report.rows]
    left.barh(y, spot, color="none", edgecolor="#ee6677", hatch="//", label="on spot nodes")
    left.set_yticks(y, names)
    left.invert_yaxis()
    left.set_xlabel("GPU-hours")
    left.set_title(f"GPU-hours used per tenant, idle apart (of {report.gpu_hours_paid:.1f} paid)")
    left.legend(loc="upper right")
    right.barh(y, [r.cost for r in report.rows], color=colours)
    right.set_yticks(y, names)
    right.invert_yaxis()
    right.set_xlabel(report.currency)
    right.set_title(f"Cost of the GPU nodes: {report.cost:.2f} {report.currency}")
    for i, r in enumerate(report.rows):
        right.annotate(f" {100 * r.cost_share:.0f}%", (r.cost, i), va="center", fontsize=8)
    right.margins(x=0.15)
    return png(fig)


def print_tenants(
    console: Any,
    report: TenantReport,
    no_queues: str = "no Kueue metrics in this Prometheus: the queue columns are empty",
) -> None:
    """The per-tenant table on the terminal (rich), and the nodes it could not price; ``no_queues``: the line
    printed when the figures have no queues (report: Prometheus has no Kueue series; simulate: the stack no queues)."""
    from rich.table import Table

    table = Table(title=f"Per tenant: GPU-hours used, cost of the GPU nodes ({report.region} prices of {report.prices_date})")
    for column in TENANT_COLUMNS:
        table.add_column(column.format(currency=report.currency))
    for row in tenant_rows(report):
        table.add_row(*row)
    console.print(table)
    if not report.kueue_metrics:
        console.print(no_queues)
    if report.unpriced_nodes:
        console.print(
            f"no price for {len(report.unpriced_nodes)} GPU node(s) (cost 0; add their type with --prices FILE): " + ", ".join(report.unpriced_nodes),
            soft_wrap=True,
        )
