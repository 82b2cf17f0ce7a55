"""The RAPIDS multi-tenant deep-dive's analysis as a command: GPU pod wait times and GPU utilisation.

Everything comes from the cluster's Prometheus over the HTTP API (``query_range`` at a
fixed step, chunked under Prometheus's 11,000 points per series; instant queries over the
same chunks for creation times; ``series`` for the pod population), from kube-state-metrics
series the platform's PrometheusStack scrapes:

- GPU pods: pods with a ``kube_pod_container_resource_requests{resource="nvidia_com_gpu"}``
  series in the range (CPU-only pods never count).
- Creation time of a pod: the value of its ``kube_pod_created`` (Unix seconds), from
  ``max by (namespace, pod) (last_over_time(kube_pod_created[<chunk>s]))`` at the end of
  each chunk of the range, restricted to GPU pods.
- Pending time of a pod: the number of evaluation steps in the range at which
  ``kube_pod_status_phase{phase="Pending"}`` is 1, times the step (the deep-dive sampled at
  1 s). A pod that was never seen Pending waited 0 s.
- The wait statistics cover the GPU pods created inside [start, end): a range that
  starts mid-workload does not count the pods created and scheduled before it as 0 s
  waits. Besides them the report counts:
  - carried over: GPU pods created before the start and still Pending at the start; not
    in the statistics (their wait began outside the range); report.json gives each one's
    pending seconds inside the range;
  - still pending at the end: GPU pods created in the range and Pending at its last
    step; they are in the statistics with the part of their wait inside the range (a
    lower bound of their real wait), and report.json lists them;
  - without kube_pod_created: GPU pods whose creation time Prometheus does not have
    (the series dropped or not scraped); they cannot be placed in or out of the range, so
    they are left out of the statistics, counted and listed. When no GPU pod has the
    series at all the report stops with an error (kube-state-metrics exports it by
    default: a denylist or relabelling dropped it).
- GPUs available at t: ``sum(kube_node_status_capacity{resource="nvidia_com_gpu"})``, the
  nodes' own GPU capacity (not node count x a constant).
- GPUs utilised at t: the GPUs requested by GPU pods whose phase is Running at t (the
  deep-dive's "utilised from running GPU pods": a GPU is utilised while a running pod holds
  it, whatever its SM load).
- GPU-hours: the sum over the steps in [start, end) of the value times the step;
  overhead = 1 - utilised / available GPU-hours.
- GPU nodes at t: ``count(kube_node_status_capacity{resource="nvidia_com_gpu"} > 0)``.
- Beside it, the mean of avg(DCGM_FI_DEV_GPU_UTIL) over the steps where dcgm-exporter has samples
  (SM busy %, over all GPUs it reports); omitted when dcgm-exporter is not scraped.
- Over time, in report.json: GPUs available, GPUs utilised and GPU nodes per minute
  bucket (buckets of 60 s from the range's first step; the means of GPUs available and
  utilised over the bucket's steps and the most GPU nodes at any of them), so at most
  one point per minute whatever the step; the plots use every step.

Statistics: median (of an even count, the mean of the middle two), mean, p99 by the
nearest-rank method (the smallest value with at least 99% of pods at or below it), and
the share of pods that waited at most 2 s, 5 s and 60 s. With no GPU pod created in the
range they are null (the table says so); the GPU-hours still count.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from gpu_platform.components.core.models import ARGS_CONFIG, field_error
from gpu_platform.components.core.numbers import Float, Int
from gpu_platform.components.core.quantities import Seconds

__all__ = [
    "GPU_REQUESTS",
    "MAX_POINTS",
    "MAX_STEPS",
    "Prometheus",
    "Report",
    "ReportError",
    "ReportInputs",
    "collect",
    "figures",
    "nearest_rank",
    "REPORT_FILES",
    "plot_files",
    "report_files",
]

MAX_POINTS = 11_000
"""Points per series per query_range request. Prometheus refuses a request whose
(end - start) / step exceeds 11,000 (web/api/v1/api.go: "exceeded maximum resolution of
11,000 points per timeseries"); a chunk of 11,000 points spans 10,999 steps."""
MAX_STEPS = 1_000_000
"""Most evaluation steps one report holds in memory (about 11.5 days at 1 s, 1.9 years at 60 s)."""
DAY = 86_400
FiniteTime = Annotated[Float, Field(allow_inf_nan=False, ge=0)]
"""A sample's Unix time as Prometheus answers it."""
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)

GPU_REQUESTS = 'kube_pod_container_resource_requests{resource="nvidia_com_gpu"}'
GPU_CAPACITY = 'kube_node_status_capacity{resource="nvidia_com_gpu"}'
PHASE = "kube_pod_status_phase"
CREATED = "kube_pod_created"
BUCKET = 60
"""Seconds per point of the time series in report.json."""


def created_query(seconds: int) -> str:
    """The creation time of every GPU pod with samples in the ``seconds`` before the evaluation time."""
    return (
        f"max by (namespace, pod) (last_over_time({CREATED}[{seconds}s])) "
        f"and on (namespace, pod) (max by (namespace, pod) (last_over_time({GPU_REQUESTS}[{seconds}s])) > 0)"
    )


QUERIES = {
    "pending": (
        f'max by (namespace, pod) (kube_pod_status_phase{{phase="Pending"}}) == 1 and on (namespace, pod) (sum by (namespace, pod) ({GPU_REQUESTS}) > 0)'
    ),
    "available": f"sum({GPU_CAPACITY})",
    "utilised": (
        f'sum(sum by (namespace, pod) ({GPU_REQUESTS}) * on (namespace, pod) (max by (namespace, pod) (kube_pod_status_phase{{phase="Running"}}) == 1))'
    ),
    "nodes": f"count({GPU_CAPACITY} > 0)",
    "dcgm": "avg(DCGM_FI_DEV_GPU_UTIL)",
}
SHARES = (2, 5, 60)
"""Seconds: the report gives the share of GPU pods scheduled within each."""


class ReportError(Exception):
    """Why the report cannot be made, in one line."""


class ReportInputs(BaseModel):
    """What `gpu-platform report` reads: where Prometheus is and the time range."""

    model_config = ARGS_CONFIG

    prometheus: str
    """Prometheus base URL, http(s)://host:port (the PrometheusStack service is <fullname>-prometheus:9090). Required."""
    start: AwareDatetime
    """Start of the range, RFC 3339 (2026-11-20T10:00:00Z) or Unix seconds; a time without zone is UTC. Required."""
    end: AwareDatetime
    """End of the range (excluded), after start. Required."""
    step: Annotated[Seconds, Field(le=DAY)] = 1
    """Sampling step, at most a day: pending time and GPU-hours are counted at this resolution; the RAPIDS deep-dive used 1 s. Default: 1 (s)."""
    timeout: Annotated[Seconds, Field(le=DAY)] = 30
    """Seconds to wait for each HTTP request, at most a day. Default: 30."""
    max_points: Int = Field(default=MAX_POINTS, ge=2, le=MAX_POINTS)
    """Points per series per query_range request; longer ranges are queried in chunks. Default: 11000."""
    max_steps: Int = Field(default=MAX_STEPS, ge=1, le=MAX_STEPS)
    """Most evaluation steps of one report: the report keeps every step's GPU counts in memory (for the
    GPU-hours and the plots), so a longer range needs a larger step. Default: 1000000 (11.5 days at 1 s)."""

    @field_validator("prometheus")
    @classmethod
    def _url(cls, value: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("prometheus must be an http:// or https:// URL with a host, e.g. http://localhost:9090")
        return value.rstrip("/")

    @field_validator("start", "end", mode="before")
    @classmethod
    def _utc(cls, value: Any) -> Any:
        return _timestamp(value)

    @model_validator(mode="after")
    def _range(self) -> ReportInputs:
        if self.end.timestamp() - self.start.timestamp() < self.step:
            raise field_error(
                "ReportInputs",
                "end",
                f"end {self.end.isoformat()} must be at least one step ({self.step}s) after start {self.start.isoformat()}: the range is empty",
                self.end.isoformat(),
            )
        steps = len(self.grid())
        if steps > self.max_steps:
            raise field_error(
                "ReportInputs",
                "step",
                f"{self.start.isoformat()} to {self.end.isoformat()} at step {self.step}s is {steps:,} steps; "
                f"a report holds at most {self.max_steps:,}: raise --step to at least "
                f"{math.ceil((self.end.timestamp() - self.start.timestamp()) / self.max_steps)}s or shorten --start/--end",
                self.step,
            )
        return self

    def grid(self) -> range:
        """The evaluation times, Unix seconds: start, start + step, ... before end (lazy: a range)."""
        start = math.ceil(self.start.timestamp())
        end = self.end.timestamp()
        return range(start, math.ceil(end), self.step)


def _timestamp(value: Any) -> Any:
    """RFC 3339 or Unix seconds -> an aware datetime in [EARLIEST, LATEST]; ValueError otherwise."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, bool):
        raise ValueError(f"a time is RFC 3339 (2026-11-20T10:00:00Z) or Unix seconds, not {value}")
    elif isinstance(value, (int, float, str)):
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            seconds = None
        if seconds is not None:
            if not math.isfinite(seconds) or not EARLIEST.timestamp() <= seconds <= LATEST.timestamp():
                raise ValueError(f"Unix seconds must be between 0 ({_iso(0)}) and {int(LATEST.timestamp())} ({_iso(int(LATEST.timestamp()))})")
            parsed = datetime.fromtimestamp(seconds, tz=UTC)
        else:
            try:
                parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
            except ValueError:
                raise ValueError("a time is RFC 3339 (2026-11-20T10:00:00Z) or Unix seconds") from None
    else:
        raise ValueError("a time is RFC 3339 (2026-11-20T10:00:00Z) or Unix seconds")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        in_range = EARLIEST <= parsed <= LATEST
    except OverflowError:
        in_range = False
    if not in_range:
        raise ValueError(f"a time must be between {_iso(0)} and {_iso(int(LATEST.timestamp()))}")
    return parsed


# --- the HTTP API -------------------------------------------------------------------------------


class Prometheus:
    """The few Prometheus HTTP API calls the report makes, with one-line errors."""

    def __init__(self, url: str, timeout: int) -> None:
        import requests

        self.url = url
        self.shown = redact_url(url)
        """The URL for messages and report.json: a password in it is never shown."""
        self.timeout = timeout
        self.session = requests.Session()

    def _get(self, path: str, params: dict[str, Any] | list[tuple[str, Any]], shape: Any) -> Any:
        """The ``data`` of a successful answer, validated against ``shape`` (a TypeAdapter)."""
        import requests

        try:
            response = self.session.get(self.url + path, params=params, timeout=self.timeout)
        except requests.ConnectionError:
            raise ReportError(f"cannot connect to Prometheus at {self.shown}: is the URL right and the server up?") from None
        except requests.Timeout:
            raise ReportError(f"Prometheus at {self.shown} did not answer within {self.timeout}s") from None
        except requests.RequestException as exc:
            raise ReportError(f"request to Prometheus at {self.shown} failed: {type(exc).__name__}") from None
        try:
            body = response.json()
        except ValueError:
            raise ReportError(f"{self.shown}{path} answered HTTP {response.status_code} without Prometheus JSON: is this a Prometheus URL?") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error", "unknown error") if isinstance(body, dict) else "unexpected answer"
            raise ReportError(f"Prometheus refused {path}: {_clip(error)}")
        try:
            return shape.validate_python(body.get("data"))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "data" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
            raise ReportError(
                f"Prometheus at {self.shown} answered {path} with an unexpected shape: {where}: {first['msg']} "
                f"(got {_clip(first.get('input'))}); is this a Prometheus HTTP API?"
            ) from None

    def query_range(self, expr: str, times: range, step: int, max_points: int) -> dict[tuple[tuple[str, str], ...], dict[int, float]]:
        """``expr`` at every time of ``times`` (a regular grid), chunked; {labels: {t: value}}."""
        out: dict[tuple[tuple[str, str], ...], dict[int, float]] = {}
        for i in range(0, len(times), max_points):
            chunk = times[i : i + max_points]
            data = self._get("/api/v1/query_range", {"query": expr, "start": chunk[0], "end": chunk[-1], "step": f"{step}s"}, _MATRIX)
            for series in data.result:
                key = tuple(sorted(series.metric.items()))
                values = out.setdefault(key, {})
                for t, v in series.values:
                    values[int(round(t))] = v
        return out

    def instant(self, expr: str, at: int) -> dict[tuple[tuple[str, str], ...], float]:
        """``expr`` evaluated at ``at``; {labels: value}."""
        data = self._get("/api/v1/query", {"query": expr, "time": at}, _VECTOR)
        return {tuple(sorted(s.metric.items())): s.value[1] for s in data.result}

    def series(self, match: str, start: int, end: int) -> list[dict[str, str]]:
        return list(self._get("/api/v1/series", [("match[]", match), ("start", start), ("end", end)], _SERIES))


def redact_url(url: str) -> str:
    """``url`` with the password of its user info (http://user:secret@host) replaced by ***."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def _clip(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."


# The answers of the Prometheus HTTP API the report reads (docs: querying/api, "Expression
# query result formats"): sample values are strings ("1", "NaN"), timestamps numbers.
class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _RangeSeries(_Answer):
    metric: dict[str, str]
    values: list[tuple[FiniteTime, Float]]


class _InstantSeries(_Answer):
    metric: dict[str, str]
    value: tuple[FiniteTime, Float]


class _Matrix(_Answer):
    resultType: Literal["matrix"]  # noqa: N815 - Prometheus's key
    result: list[_RangeSeries]


class _Vector(_Answer):
    resultType: Literal["vector"]  # noqa: N815
    result: list[_InstantSeries]


_MATRIX = TypeAdapter(_Matrix)
_VECTOR = TypeAdapter(_Vector)
_SERIES = TypeAdapter(list[dict[str, str]])


# --- the report ---------------------------------------------------------------------------------


def nearest_rank(sorted_values: list[int], percent: int) -> int:
    """The nearest-rank percentile: the smallest value with ``percent``% of values at or below it."""
    rank = max(1, -(-percent * len(sorted_values) // 100))
    return sorted_values[rank - 1]


@dataclass
class Report:
    """The numbers; times are Unix seconds, waits are seconds."""

    prometheus: str
    start: int
    end: int
    step: int
    gpu_pods: int
    """GPU pods with a GPU request series in the range (created in it or before)."""
    pods_created: int
    """GPU pods created in [start, end): the pods the wait statistics cover."""
    carried_over: int
    """GPU pods created before the start and Pending at it: not in the wait statistics."""
    pending_at_end: int
    """GPU pods created in the range and still Pending at its last step: in the statistics, their wait counted to the end."""
    without_created: int
    """GPU pods with no kube_pod_created series: not in the wait statistics."""
    pending_median_s: float | None
    """None (like the other statistics) when no GPU pod was created in the range."""
    pending_mean_s: float | None
    pending_p99_s: int | None
    pending_max_s: int | None
    scheduled_within: dict[str, float] | None
    """Share of the GPU pods created in the range (0..1) that waited at most 2, 5 and 60 s."""
    gpu_hours_available: float
    gpu_hours_utilised: float
    utilisation_percent: float
    overhead_percent: float
    gpu_nodes_max: int
    gpu_nodes_mean: float
    dcgm_gpu_util_mean_percent: float | None
    """Mean DCGM_FI_DEV_GPU_UTIL over the range; None when dcgm-exporter is not scraped."""
    pending_by_pod: dict[str, int] = field(repr=False)
    """namespace/pod -> seconds pending in the range, for the GPU pods created in it."""
    carried_over_by_pod: dict[str, int] = field(repr=False)
    """namespace/pod -> seconds pending inside the range, for the carried-over pods."""
    pending_at_end_pods: list[str] = field(repr=False)
    """The pods created in the range and still pending at its end (their wait is a lower bound)."""
    without_created_pods: list[str] = field(repr=False)
    """The GPU pods without a kube_pod_created series."""
    times: list[int] = field(repr=False)
    available: list[float] = field(repr=False)
    utilised: list[float] = field(repr=False)
    nodes: list[float] = field(repr=False)
    tenants: Any = field(default=None, repr=False)
    """Per tenant (report --stack, and simulate): infra/report/tenants.TenantReport; None otherwise."""

    def per_minute(self) -> dict[str, Any]:
        """The time series in buckets of BUCKET s from the first step: means of the GPUs, most nodes."""
        buckets: dict[int, list[int]] = {}
        for i, t in enumerate(self.times):
            buckets.setdefault((t - self.times[0]) // BUCKET, []).append(i)
        order = sorted(buckets)
        return {
            "bucket_s": BUCKET,
            "t": [self.times[0] + b * BUCKET for b in order],
            "gpus_available_mean": [statistics.fmean(self.available[i] for i in buckets[b]) for b in order],
            "gpus_utilised_mean": [statistics.fmean(self.utilised[i] for i in buckets[b]) for b in order],
            "gpu_nodes_max": [int(max(self.nodes[i] for i in buckets[b])) for b in order],
        }

    def summary(self) -> dict[str, Any]:
        """The JSON summary: the numbers, the per-pod waits and the per-minute time series."""
        out = asdict(self)
        for key in ("times", "available", "utilised", "nodes"):
            out.pop(key)
        out["over_time"] = self.per_minute()
        return out

    def json_bytes(self) -> bytes:
        """report.json."""
        return (json.dumps(self.summary(), indent=2, sort_keys=True) + "\n").encode("utf-8")


def _series_at(result: dict[Any, dict[int, float]], times: Sequence[int]) -> list[float]:
    """The one series of an aggregated query on the grid, 0 where Prometheus returned no point."""
    merged: dict[int, float] = {}
    for values in result.values():
        for t, v in values.items():
            merged[t] = merged.get(t, 0.0) + v
    return [merged.get(t, 0.0) for t in times]


def _pod(labels: dict[str, str] | tuple[tuple[str, str], ...]) -> str:
    items = dict(labels)
    return f"{items.get('namespace', '')}/{items.get('pod', '')}"


def gpu_pods(prom: Prometheus, inputs: ReportInputs) -> set[str]:
    """namespace/pod of every GPU pod with a request series in the range."""
    times = inputs.grid()
    return {_pod(s) for s in prom.series(GPU_REQUESTS, times[0], times[-1]) if s.get("pod")}


def creation_times(prom: Prometheus, inputs: ReportInputs) -> dict[str, float]:
    """namespace/pod -> kube_pod_created of the GPU pods with samples in the range, queried in chunks."""
    times, step = inputs.grid(), inputs.step
    created: dict[str, float] = {}
    for i in range(0, len(times), inputs.max_points):
        chunk = times[i : i + inputs.max_points]
        # The samples since the previous chunk's last step, up to this chunk's last: the chunks tile the range.
        for labels, value in prom.instant(created_query(chunk[-1] - chunk[0] + step), chunk[-1]).items():
            created[_pod(labels)] = value
    return created


def collect(inputs: ReportInputs, progress: Callable[[str], None] = lambda _: None) -> Report:
    """Query Prometheus and compute the report; ReportError with one line when it cannot."""
    prom = Prometheus(inputs.prometheus, inputs.timeout)
    times = inputs.grid()
    step = inputs.step
    first, last = times[0], times[-1]
    start, end = first, last + step

    progress("GPU pods (series)")
    pods = gpu_pods(prom, inputs)
    if not pods:
        for metric in ("kube_pod_container_resource_requests", PHASE, "kube_node_status_capacity"):
            if not prom.series(metric, first, last):
                raise ReportError(
                    f"no {metric} series between {_iso(first)} and {_iso(last)}: is kube-state-metrics scraped by this Prometheus, and the range right?"
                )
        raise ReportError(f"no GPU pods ({GPU_REQUESTS}) between {_iso(first)} and {_iso(last)}")
    if not prom.series(PHASE, first, last):
        raise ReportError(f"no {PHASE} series between {_iso(first)} and {_iso(last)}: is kube-state-metrics scraped?")

    progress("pod creation times")
    created = creation_times(prom, inputs)
    if not created.keys() & pods:
        raise ReportError(
            f"no {CREATED} series for the {len(pods)} GPU pod{'' if len(pods) == 1 else 's'} between {_iso(first)} and {_iso(last)}: "
            "kube-state-metrics exports it by default; is it dropped by a denylist or relabelling?"
        )

    def run(name: str) -> dict[Any, dict[int, float]]:
        progress(name)
        return prom.query_range(QUERIES[name], times, step, inputs.max_points)

    pending = run("pending")
    available = _series_at(run("available"), times)
    if not any(available):
        raise ReportError(
            f"no GPU capacity: {GPU_CAPACITY} is absent or 0 between {_iso(first)} and {_iso(last)}; "
            "are GPU nodes in the range and their device plugin running?"
        )
    utilised = _series_at(run("utilised"), times)
    nodes = _series_at(run("nodes"), times)
    dcgm_result = run("dcgm")
    dcgm_values = [v for values in dcgm_result.values() for v in values.values()]

    pending_steps = {_pod(labels): {t for t, v in values.items() if v == 1} for labels, values in pending.items()}
    waits: dict[str, int] = {}
    carried: dict[str, int] = {}
    at_end: list[str] = []
    for pod in pods:
        seen = pending_steps.get(pod, set())
        if pod not in created:
            continue
        if start <= created[pod] < end:
            waits[pod] = len(seen) * step
            if last in seen:
                at_end.append(pod)
        elif created[pod] < start and first in seen:
            carried[pod] = len(seen) * step
    return figures(
        prometheus=redact_url(inputs.prometheus),
        times=times,
        step=step,
        gpu_pods=len(pods),
        waits=waits,
        carried=carried,
        at_end=at_end,
        without=sorted(pods - created.keys()),
        available=available,
        utilised=utilised,
        nodes=nodes,
        dcgm_values=dcgm_values,
    )


def figures(
    *,
    prometheus: str,
    times: range,
    step: int,
    gpu_pods: int,
    waits: dict[str, int],
    carried: dict[str, int],
    at_end: list[str],
    without: list[str],
    available: list[float],
    utilised: list[float],
    nodes: list[float],
    dcgm_values: list[float],
) -> Report:
    """The report's figures from what it measured on the grid ``times``: the pending seconds of the GPU
    pods created in the range (``waits``), the carried-over pods, those pending at the end, those
    without a creation time, and per step the GPUs available and utilised and the GPU nodes.
    ``gpu-platform simulate`` computes its figures here too, from a simulated run."""
    ordered = sorted(waits.values())
    gpu_s_available = sum(available) * step
    gpu_s_utilised = sum(utilised) * step
    utilisation = 100 * gpu_s_utilised / gpu_s_available if gpu_s_available else 0.0
    return Report(
        prometheus=prometheus,
        start=times[0],
        end=times[-1] + step,
        step=step,
        gpu_pods=gpu_pods,
        pods_created=len(ordered),
        carried_over=len(carried),
        pending_at_end=len(at_end),
        without_created=len(without),
        pending_median_s=float(statistics.median(ordered)) if ordered else None,
        pending_mean_s=statistics.fmean(ordered) if ordered else None,
        pending_p99_s=nearest_rank(ordered, 99) if ordered else None,
        pending_max_s=ordered[-1] if ordered else None,
        scheduled_within={f"{s}s": sum(1 for w in ordered if w <= s) / len(ordered) for s in SHARES} if ordered else None,
        gpu_hours_available=gpu_s_available / 3600,
        gpu_hours_utilised=gpu_s_utilised / 3600,
        utilisation_percent=utilisation,
        overhead_percent=100 - utilisation,
        gpu_nodes_max=int(max(nodes)) if nodes else 0,
        gpu_nodes_mean=statistics.fmean(nodes) if nodes else 0.0,
        dcgm_gpu_util_mean_percent=statistics.fmean(dcgm_values) if dcgm_values else None,
        pending_by_pod=dict(sorted(waits.items())),
        carried_over_by_pod=dict(sorted(carried.items())),
        pending_at_end_pods=sorted(at_end),
        without_created_pods=without,
        times=list(times),
        available=available,
        utilised=utilised,
        nodes=nodes,
    )


def _iso(t: int) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- output -------------------------------------------------------------------------------------


def table_rows(report: Report) -> list[tuple[str, str]]:
    """The terminal table: what, value."""
    rows = [
        ("range", f"{_iso(report.start)} .. {_iso(report.end)} (step {report.step}s)"),
        ("GPU pods", str(report.gpu_pods)),
        ("GPU pods created in the range (waits)", str(report.pods_created)),
        ("still pending at the end (wait to the end)", str(report.pending_at_end)),
        ("carried over (pending at the start)", str(report.carried_over)),
        ("without kube_pod_created (not in waits)", str(report.without_created)),
    ]
    if report.pending_median_s is None or report.scheduled_within is None:
        rows.append(("pending median / mean / p99 / max", "no GPU pod created in the range"))
    else:
        rows.append(
            (
                "pending median / mean / p99 / max",
                f"{report.pending_median_s:g} s / {report.pending_mean_s:.1f} s / {report.pending_p99_s} s / {report.pending_max_s} s",
            )
        )
        for limit, share in report.scheduled_within.items():
            rows.append((f"scheduled within {limit}", f"{100 * share:.1f}%"))
    rows += [
        ("GPU-hours available", f"{report.gpu_hours_available:.2f}"),
        ("GPU-hours utilised (held by running pods)", f"{report.gpu_hours_utilised:.2f}"),
        ("utilisation / overhead", f"{report.utilisation_percent:.1f}% / {report.overhead_percent:.1f}%"),
        ("GPU nodes mean / max", f"{report.gpu_nodes_mean:.1f} / {report.gpu_nodes_max}"),
        (
            "DCGM GPU util mean",
            "not scraped" if report.dcgm_gpu_util_mean_percent is None else f"{report.dcgm_gpu_util_mean_percent:.1f}%",
        ),
    ]
    return rows


REPORT_FILES = ("report.json", "wait_times.png", "gpus.png", "tenants.png")
"""What a report --out folder may hold: gpu-platform replaces it whole (infra/output.py)."""


def report_files(report: Report) -> dict[str, bytes]:
    """report.json and the plots, by file name, for the atomic folder writer."""
    return {"report.json": report.json_bytes(), **plot_files(report)}


def plot_files(report: Report) -> dict[str, bytes]:
    """wait_times.png (histograms of pending time) and gpus.png (GPUs available vs utilised, nodes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    waits = list(report.pending_by_pod.values())
    pngs: dict[str, bytes] = {}

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.hist(waits, bins=min(60, max(10, len(set(waits)))), color="#4477aa")
    left.set_title(f"Pending time of the {len(waits)} GPU pods created in the range")
    left.set_xlabel("seconds pending")
    left.set_ylabel("pods")
    short = [w for w in waits if w <= 60]
    right.hist(short, bins=range(0, 62, max(1, report.step)), color="#66ccee")
    right.set_title(f"Zoom: the {len(short)} pods pending at most 60 s")
    right.set_xlabel("seconds pending")
    for limit in SHARES:
        right.axvline(limit, color="#aa3377", linestyle=":", linewidth=1)
    pngs["wait_times.png"] = png(fig)

    start = report.times[0]
    minutes = [(t - start) / 60 for t in report.times]
    fig, ax = plt.subplots(figsize=(11, 4))
    ax.plot(minutes, report.available, label="GPUs available (node capacity)", color="#4477aa")
    ax.fill_between(minutes, report.utilised, step=None, alpha=0.5, label="GPUs utilised (running pods)", color="#228833")
    ax.set_xlabel(f"minutes after {_iso(start)}")
    ax.set_ylabel("GPUs")
    ax.set_title(f"GPUs available vs utilised: {report.utilisation_percent:.1f}% utilised, {report.overhead_percent:.1f}% overhead")
    nodes_ax = ax.twinx()
    nodes_ax.plot(minutes, report.nodes, color="#ee6677", linestyle="--", linewidth=1, label="GPU nodes")
    nodes_ax.set_ylabel("GPU nodes")
    handles = ax.get_legend_handles_labels()[0] + nodes_ax.get_legend_handles_labels()[0]
    ax.legend(handles, [str(h.get_label()) for h in handles], loc="upper left")
    pngs["gpus.png"] = png(fig)
    return pngs


def png(fig: Any) -> bytes:
    """A matplotlib figure as PNG bytes (laid out, 100 dpi), the figure closed: every plot the commands write."""
    import io

    import matplotlib.pyplot as plt

    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()
