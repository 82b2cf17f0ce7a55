"""PrometheusStackArgs and what it is checked against: presets, the monitored cluster and what it scrapes, the alert settings; every alert expression's metrics read with a real PromQL parser."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field, model_validator

from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.components.core.kube import ChartRepository, ChartVersion, DnsLabel, DnsSubdomain, PrometheusDuration
from gpu_platform.components.core.models import ARGS_CONFIG, field_error
from gpu_platform.components.core.numbers import Int

__all__ = [
    "GPU_CUSTOM_METRICS",
    "AlertSettings",
    "ClusterKind",
    "MetricSource",
    "MetricsPreset",
    "MonitoredCluster",
    "PrometheusStackArgs",
]

PROMETHEUS_COMMUNITY = "https://prometheus-community.github.io/helm-charts"
GPU_CUSTOM_METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_AVG")
"""The per-pod custom metrics the adapter exposes (GpuUtilizationAutoscaler scales on them)."""
DCGM_DASHBOARD_ID = 12239  # NVIDIA DCGM Exporter Dashboard on grafana.com


class MetricsPreset(StrEnum):
    """Scrape and rule-evaluation cadence."""

    PRODUCTION = "production"
    """30 s: what a production cluster can afford to keep."""
    ANALYSIS = "analysis"
    """1 s, as the RAPIDS deep-dive's wait-time analysis used: short-lived pending states show up."""


_PRESET_INTERVALS = {MetricsPreset.PRODUCTION: "30s", MetricsPreset.ANALYSIS: "1s"}


MANAGED_CONTROL_PLANE = {
    # chart component: its default rule groups (defaultRules.rules.<key>)
    "kubeEtcd": ("etcd",),
    "kubeScheduler": ("kubeSchedulerAlerting", "kubeSchedulerRecording"),
    "kubeControllerManager": ("kubeControllerManager",),
    "kubeProxy": ("kubeProxy",),
}
"""kube-prometheus-stack components that GKE and EKS do not expose: their scrape Services and rules
(KubeSchedulerDown, KubeControllerManagerDown, KubeProxyDown, etcdMembersDown, ...) would only ever
report them down."""


class MetricSource(StrEnum):
    """What puts series into the stack's Prometheus."""

    PROMETHEUS = "prometheus"
    """Prometheus, Alertmanager, the operator and their config reloaders (``up``, ``ALERTS``, ``prometheus_*``,
    ``alertmanager_*``, ``reloader_*``, ``process_*``); always there."""
    KUBE_STATE_METRICS = "kube-state-metrics"
    """kube-state-metrics (``kube_*``), part of kube-prometheus-stack; always there."""
    NODE_EXPORTER = "node-exporter"
    """node-exporter (``node_*``), part of kube-prometheus-stack; always there."""
    KUBELET = "kubelet"
    """The kubelets and their cAdvisor (``kubelet_*``, ``container_*``, ``rest_client_*``, ``kubernetes_build_info``); always there."""
    API_SERVER = "apiserver"
    """The API server (``apiserver_*``, ``aggregator_*``), which managed control planes still expose; always there."""
    DCGM_EXPORTER = "dcgm-exporter"
    """DcgmExporter's ServiceMonitor (``DCGM_FI_*``); not GKE's managed DCGM metrics, which go to Cloud Monitoring."""
    CLUSTER_AUTOSCALER = "cluster-autoscaler"
    """The cluster-autoscaler chart's ServiceMonitor (``cluster_autoscaler_*``; EKS; GKE's autoscaler runs out of reach)."""


ALWAYS_SCRAPED = frozenset(
    {
        MetricSource.PROMETHEUS,
        MetricSource.KUBE_STATE_METRICS,
        MetricSource.NODE_EXPORTER,
        MetricSource.KUBELET,
        MetricSource.API_SERVER,
    }
)
"""kube-prometheus-stack's own targets on GKE and EKS (with MANAGED_CONTROL_PLANE off)."""
_SOURCE_NAMES = {"up": MetricSource.PROMETHEUS, "ALERTS": MetricSource.PROMETHEUS, "kubernetes_build_info": MetricSource.KUBELET}
_SOURCE_PREFIXES = (
    ("DCGM_FI_", MetricSource.DCGM_EXPORTER),
    ("cluster_autoscaler_", MetricSource.CLUSTER_AUTOSCALER),
    ("kube_", MetricSource.KUBE_STATE_METRICS),
    ("node_", MetricSource.NODE_EXPORTER),
    ("kubelet_", MetricSource.KUBELET),
    ("container_", MetricSource.KUBELET),
    ("rest_client_", MetricSource.KUBELET),
    ("apiserver_", MetricSource.API_SERVER),
    ("aggregator_", MetricSource.API_SERVER),
    ("prometheus_", MetricSource.PROMETHEUS),
    ("alertmanager_", MetricSource.PROMETHEUS),
    ("reloader_", MetricSource.PROMETHEUS),
    ("process_", MetricSource.PROMETHEUS),
)


def metric_source(metric: str) -> MetricSource | None:
    """The source that scrapes ``metric``, or None when no source of the stack is known to.

    A recorded series (``level:metric:operations``, with a colon) is not scraped: resolve it to the
    rule that records it first.
    """
    if metric in _SOURCE_NAMES:
        return _SOURCE_NAMES[metric]
    return next((source for prefix, source in _SOURCE_PREFIXES if metric.startswith(prefix)), None)


def expression_metrics(expr: str) -> set[str]:
    """The metric names a PromQL expression reads, from its syntax tree (promql-parser, the
    Rust PromQL parser): selectors by name or by a ``__name__`` equality matcher; label
    matchers, ranges, groupings, functions and literals are not metrics."""
    import promql_parser

    names: set[str] = set()

    def walk(node: object) -> None:
        if type(node).__name__ == "VectorSelector":
            if node.name:  # type: ignore[attr-defined]
                names.add(node.name)  # type: ignore[attr-defined]
            for matcher in node.matchers.matchers:  # type: ignore[attr-defined]
                if matcher.name == "__name__" and str(matcher.op).endswith(".Equal"):
                    names.add(matcher.value)
            return
        for attr in ("lhs", "rhs", "expr", "vector_selector", "param"):
            child = getattr(node, attr, None)
            if child is not None and type(child).__module__.startswith("promql_parser"):
                walk(child)
        for child in getattr(node, "args", None) or []:
            walk(child)

    walk(promql_parser.parse(expr))
    return names


class MonitoredCluster(BaseModel):
    """The cluster under the stack as Prometheus sees it. The program that builds the cluster knows this;
    it is not stack config."""

    model_config = ARGS_CONFIG

    kind: ClusterKind
    """gke or eks: which control-plane and DNS targets exist. Required."""
    sources: frozenset[MetricSource] = ALWAYS_SCRAPED
    """What the stack scrapes besides kube-prometheus-stack's own targets (ALWAYS_SCRAPED); an alert is shipped only when every metric it reads is among them. Default: kube-prometheus-stack's own only."""

    @property
    def scraped(self) -> frozenset[MetricSource]:
        return self.sources | ALWAYS_SCRAPED


class AlertSettings(BaseModel):
    """Thresholds of the GPU alerts."""

    model_config = ARGS_CONFIG

    gpu_idle_for: PrometheusDuration = "30m"
    """How long a GPU may be allocated to a pod yet (almost) unused before GpuAllocatedButIdle fires. Default: 30m."""
    gpu_idle_below_percent: Int = Field(default=5, ge=1, le=100)
    """Utilisation (percent) under which an allocated GPU counts as idle. Default: 5."""
    gpu_pod_pending_for: PrometheusDuration = "15m"
    """How long a pod asking for GPUs may stay Pending before GpuPodPending fires. Default: 15m."""
    exporter_down_for: PrometheusDuration = "5m"
    """How long a DCGM exporter target may be down before DcgmExporterDown fires. Default: 5m."""
    scale_up_failure_window: PrometheusDuration = "15m"
    """Window over which failed autoscaler scale-ups fire NodeGroupScaleUpFailing. Default: 15m."""


class PrometheusStackArgs(BaseModel):
    """Inputs of PrometheusStack."""

    model_config = ARGS_CONFIG

    namespace: DnsLabel = "prometheus"
    """Namespace of Prometheus, Grafana and the adapter (created). Default: prometheus."""
    release_name: DnsLabel = Field(default="kube-prometheus-stack", max_length=40)
    """Helm release name; the Prometheus service is <release_name>-prometheus, Grafana's <release_name>-grafana. Default: kube-prometheus-stack."""
    chart_version: ChartVersion = "88.5.3"
    """kube-prometheus-stack chart release. Default: 88.5.3."""
    adapter_chart_version: ChartVersion = "5.3.0"
    """prometheus-adapter chart release. Default: 5.3.0."""
    repository: ChartRepository = PROMETHEUS_COMMUNITY
    """Helm repository of both charts. Default: https://prometheus-community.github.io/helm-charts."""
    preset: MetricsPreset = MetricsPreset.PRODUCTION
    """production (30 s scrape and evaluation) or analysis (1 s, as the RAPIDS deep-dive's analysis). Default: production."""
    scrape_interval: PrometheusDuration | None = None
    """Overrides the preset's scrape interval. Default: none (the preset's)."""
    evaluation_interval: PrometheusDuration | None = None
    """Overrides the preset's rule evaluation interval. Default: none (the preset's)."""
    retention: PrometheusDuration = "15d"
    """How long samples are kept. Default: 15d."""
    storage_size_gib: Int = Field(default=50, ge=1, le=65536)
    """Size of Prometheus's persistent volume. Default: 50."""
    retention_size_gib: Int = Field(default=45, ge=1, le=65536)
    """Samples are dropped oldest first above this size; below the volume size. Default: 45."""
    storage_class: DnsSubdomain | None = None
    """StorageClass of the volume. Default: none (the cluster's default class)."""
    keep_volume_on_delete: bool = True
    """The metrics volume outlives the release and the StatefulSet (PVC retention Retain). Default: true."""
    grafana_dcgm_dashboard: bool = True
    """Import the NVIDIA DCGM dashboard (grafana.com 12239; Grafana needs egress). Default: true."""
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    """GPU alert thresholds. Default: see AlertSettings."""

    @model_validator(mode="after")
    def _retention_fits(self) -> PrometheusStackArgs:
        if self.retention_size_gib >= self.storage_size_gib:
            raise field_error(
                "PrometheusStackArgs",
                "retention_size_gib",
                f"retention_size_gib {self.retention_size_gib} must stay below storage_size_gib "
                f"{self.storage_size_gib}, or Prometheus fills its volume; use at most {self.storage_size_gib - 1}",
                self.retention_size_gib,
            )
        return self

    @property
    def effective_scrape_interval(self) -> str:
        return self.scrape_interval or _PRESET_INTERVALS[self.preset]

    @property
    def effective_evaluation_interval(self) -> str:
        return self.evaluation_interval or _PRESET_INTERVALS[self.preset]

    @property
    def prometheus_service(self) -> str:
        return f"{self.release_name}-prometheus"

    @property
    def grafana_service(self) -> str:
        return f"{self.release_name}-grafana"

    @property
    def prometheus_url(self) -> str:
        return f"http://{self.prometheus_service}.{self.namespace}.svc:9090"
