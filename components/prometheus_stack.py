"""PrometheusStack: kube-prometheus-stack, prometheus-adapter with GPU custom metrics,
Grafana with GPU dashboards, and GPU alerts.

Prometheus picks up every ServiceMonitor/PodMonitor/PrometheusRule in the cluster, keeps
its data on a volume that outlives the release, and the adapter exposes DCGM GPU
utilisation per pod (and its 1-minute average) as custom metrics for autoscaling.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import StrEnum
from importlib import resources
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pydantic import BaseModel, Field, model_validator

from gpu_platform.components.kube import ChartRepository, ChartVersion, DnsLabel, DnsSubdomain, Duration, helm_release
from gpu_platform.components.labels import PART_OF_LABEL
from gpu_platform.components.numbers import Int
from gpu_platform.components.pools import ARGS_CONFIG, field_error

__all__ = [
    "AlertSettings",
    "ClusterKind",
    "MetricSource",
    "MonitoredCluster",
    "GPU_CUSTOM_METRICS",
    "MetricsPreset",
    "PrometheusStack",
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


class ClusterKind(StrEnum):
    """The managed Kubernetes under the stack: what its control plane and DNS expose to an in-cluster Prometheus."""

    GKE = "gke"
    """GKE: etcd, the scheduler and the controller manager run out of reach; kube-proxy binds its metrics to
    localhost (or is absent under Dataplane V2); cluster DNS is kube-dns (metrics on 10054/10055), not CoreDNS."""
    EKS = "eks"
    """EKS: etcd, the scheduler and the controller manager run out of reach; the kube-proxy add-on binds its
    metrics to 127.0.0.1:10249; cluster DNS is CoreDNS (metrics on 9153)."""


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


ALWAYS_SCRAPED = frozenset({
    MetricSource.PROMETHEUS, MetricSource.KUBE_STATE_METRICS, MetricSource.NODE_EXPORTER, MetricSource.KUBELET,
    MetricSource.API_SERVER,
})
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

    gpu_idle_for: Duration = "30m"
    """How long a GPU may be allocated to a pod yet (almost) unused before GpuAllocatedButIdle fires. Default: 30m."""
    gpu_idle_below_percent: Int = Field(default=5, ge=1, le=100)
    """Utilisation (percent) under which an allocated GPU counts as idle. Default: 5."""
    gpu_pod_pending_for: Duration = "15m"
    """How long a pod asking for GPUs may stay Pending before GpuPodPending fires. Default: 15m."""
    exporter_down_for: Duration = "5m"
    """How long a DCGM exporter target may be down before DcgmExporterDown fires. Default: 5m."""
    scale_up_failure_window: Duration = "15m"
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
    scrape_interval: Duration | None = None
    """Overrides the preset's scrape interval. Default: none (the preset's)."""
    evaluation_interval: Duration | None = None
    """Overrides the preset's rule evaluation interval. Default: none (the preset's)."""
    retention: Duration = "15d"
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


_GPU_SERIES = 'DCGM_FI_DEV_GPU_UTIL{namespace!="",pod!=""}'
_POD_RESOURCES = {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}}


def adapter_rules() -> list[dict[str, Any]]:
    """prometheus-adapter custom rules: GPU utilisation per pod and its 1-minute average."""
    return [
        {
            "seriesQuery": _GPU_SERIES,
            "resources": _POD_RESOURCES,
            "name": {"matches": "^DCGM_FI_DEV_GPU_UTIL$", "as": "DCGM_FI_DEV_GPU_UTIL"},
            "metricsQuery": "avg by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>})",
        },
        {
            "seriesQuery": _GPU_SERIES,
            "resources": _POD_RESOURCES,
            "name": {"matches": "^DCGM_FI_DEV_GPU_UTIL$", "as": "DCGM_FI_DEV_GPU_UTIL_AVG"},
            "metricsQuery": "avg by (<<.GroupBy>>) (avg_over_time(<<.Series>>{<<.LabelMatchers>>}[1m]))",
        },
    ]


def gpu_alert_groups(alerts: AlertSettings, scraped: Iterable[MetricSource] = ALWAYS_SCRAPED) -> list[dict[str, Any]]:
    """The PrometheusRule groups of the GPU alerts whose every metric is ``scraped``: an alert on a metric
    nothing scrapes can never fire (NodeGroupScaleUpFailing without an in-cluster autoscaler, the DCGM
    alerts without dcgm-exporter). A metric of no known source is a ValueError."""
    present = set(scraped) | ALWAYS_SCRAPED
    groups = _gpu_alert_candidates(alerts)
    for group in groups:
        kept = []
        for rule in group["rules"]:
            sources = {metric: metric_source(metric) for metric in expression_metrics(rule["expr"])}
            if unknown := sorted(m for m, s in sources.items() if s is None):
                raise ValueError(f"alert {rule['alert']} reads {', '.join(unknown)}, which no source of the stack scrapes")
            # An alert on `up` of one source's targets watches that source too.
            watched = _WATCHES.get(rule["alert"])
            if set(sources.values()) <= present and (watched is None or watched in present):
                kept.append(rule)
        group["rules"] = kept
    return groups


_WATCHES = {"DcgmExporterDown": MetricSource.DCGM_EXPORTER}
"""Alerts on the targets of one source (``up{job=...}``), which exist only with it."""


def _gpu_alert_candidates(alerts: AlertSettings) -> list[dict[str, Any]]:
    gpu_requested = 'sum by (namespace, pod) (kube_pod_container_resource_requests{resource="nvidia_com_gpu"}) > 0'
    return [
        {
            "name": "gpu-platform.gpu",
            "rules": [
                {
                    "alert": "GpuAllocatedButIdle",
                    "expr": (
                        'avg by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{namespace!="",pod!=""}) '
                        f"< {alerts.gpu_idle_below_percent}"
                    ),
                    "for": alerts.gpu_idle_for,
                    "labels": {"severity": "warning"},
                    "annotations": {
                        "summary": "GPU allocated but idle",
                        "description": (
                            "{{ $labels.namespace }}/{{ $labels.pod }} holds a GPU that has been below "
                            f"{alerts.gpu_idle_below_percent}% utilisation for {alerts.gpu_idle_for}."
                        ),
                    },
                },
                {
                    "alert": "GpuPodPending",
                    "expr": (
                        'sum by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) > 0 '
                        f"and on (namespace, pod) ({gpu_requested})"
                    ),
                    "for": alerts.gpu_pod_pending_for,
                    "labels": {"severity": "warning"},
                    "annotations": {
                        "summary": "GPU pod pending",
                        "description": (
                            "{{ $labels.namespace }}/{{ $labels.pod }} asks for GPUs and has been Pending for "
                            f"{alerts.gpu_pod_pending_for}: GPU capacity is short or cannot scale up."
                        ),
                    },
                },
                {
                    "alert": "DcgmExporterDown",
                    "expr": 'up{job=~".*dcgm-exporter.*"} == 0',
                    "for": alerts.exporter_down_for,
                    "labels": {"severity": "warning"},
                    "annotations": {
                        "summary": "DCGM exporter down",
                        "description": "{{ $labels.instance }}: GPU telemetry is missing from this node.",
                    },
                },
                {
                    "alert": "GpuXidError",
                    "expr": "max by (Hostname, gpu, UUID) (DCGM_FI_DEV_XID_ERRORS) > 0",
                    "labels": {"severity": "critical"},
                    "annotations": {
                        "summary": "GPU XID error",
                        "description": (
                            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported XID {{ $value }}: "
                            "check the driver and the hardware, drain the node if it repeats."
                        ),
                    },
                },
                {
                    "alert": "NodeGroupScaleUpFailing",
                    "expr": f"increase(cluster_autoscaler_failed_scale_ups_total[{alerts.scale_up_failure_window}]) > 0",
                    "labels": {"severity": "warning"},
                    "annotations": {
                        "summary": "Node group failing to scale up",
                        "description": (
                            f"The cluster autoscaler failed to scale up in the last {alerts.scale_up_failure_window} "
                            "({{ $labels.reason }}): capacity (often spot) is missing; on-demand fallback should take over."
                        ),
                    },
                },
            ],
        }
    ]


def platform_dashboard() -> str:
    """The gpu-platform Grafana dashboard shipped in the package."""
    return resources.files(__package__).joinpath("dashboards/gpu-platform.json").read_text()


class PrometheusStack(pulumi.ComponentResource):
    """kube-prometheus-stack + prometheus-adapter + GPU alerts and dashboards."""

    namespace: pulumi.Output[str]
    """The monitoring namespace."""
    prometheus_url: pulumi.Output[str]
    """In-cluster Prometheus URL (http://<release>-prometheus.<namespace>.svc:9090)."""
    grafana_service_name: pulumi.Output[str]
    """Grafana's service name in the namespace."""
    release: k8s.helm.v3.Release
    """The kube-prometheus-stack release, which installs the monitoring.coreos.com CRDs: whatever creates a
    ServiceMonitor, PodMonitor or PrometheusRule (a chart's included) depends on it."""
    adapter: k8s.helm.v3.Release
    """The prometheus-adapter release."""
    alerts: k8s.apiextensions.CustomResource
    """The PrometheusRule of the GPU alerts."""

    def __init__(
        self,
        name: str,
        args: PrometheusStackArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: MonitoredCluster,
        grafana_admin_password: pulumi.Input[str],
    ) -> None:
        """``cluster``: the cluster under the stack and what it scrapes (decides the scrape targets and alerts)."""
        super().__init__("gpu-platform:prometheus_stack:PrometheusStack", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels=dict(PART_OF_LABEL)),
            opts=child,
        )
        ns = namespace.metadata.name
        admin = k8s.core.v1.Secret(
            f"{name}-grafana-admin",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="grafana-admin", namespace=ns),
            type="Opaque",
            string_data={"admin-user": "admin", "admin-password": pulumi.Output.secret(grafana_admin_password)},
            opts=child,
        )
        dashboard = k8s.core.v1.ConfigMap(
            f"{name}-platform-dashboard",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="gpu-platform-dashboard", namespace=ns, labels={"grafana_dashboard": "1"}
            ),
            data={"gpu-platform.json": platform_dashboard()},
            opts=child,
        )
        self.release = helm_release(
            f"{name}-release",
            chart="kube-prometheus-stack",
            version=args.chart_version,
            repository=args.repository,
            namespace=ns,
            release_name=args.release_name,
            values=stack_values(args, cluster),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[admin, dashboard]),
        )
        self.adapter = helm_release(
            f"{name}-adapter",
            chart="prometheus-adapter",
            version=args.adapter_chart_version,
            repository=args.repository,
            namespace=ns,
            release_name=f"{args.release_name}-adapter",
            values=adapter_values(args),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
        )
        self.alerts = k8s.apiextensions.CustomResource(
            f"{name}-gpu-alerts",
            api_version="monitoring.coreos.com/v1",
            kind="PrometheusRule",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="gpu-platform-gpu-alerts", namespace=ns),
            spec={"groups": gpu_alert_groups(args.alerts, cluster.scraped)},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
        )

        self.namespace = ns
        self.prometheus_url = pulumi.Output.from_input(args.prometheus_url)
        self.grafana_service_name = pulumi.Output.from_input(args.grafana_service)
        self.register_outputs(
            {"namespace": self.namespace, "prometheusUrl": self.prometheus_url, "grafanaServiceName": self.grafana_service_name}
        )


def stack_values(args: PrometheusStackArgs, cluster: MonitoredCluster) -> dict[str, Any]:
    """kube-prometheus-stack values for ``cluster``."""
    volume: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": f"{args.storage_size_gib}Gi"}},
    }
    if args.storage_class:
        volume["storageClassName"] = args.storage_class
    retain = "Retain" if args.keep_volume_on_delete else "Delete"
    grafana: dict[str, Any] = {
        "admin": {"existingSecret": "grafana-admin", "userKey": "admin-user", "passwordKey": "admin-password"},
        "defaultDashboardsEnabled": True,
    }
    if args.grafana_dcgm_dashboard:
        grafana["dashboardProviders"] = {
            "dashboardproviders.yaml": {
                "apiVersion": 1,
                "providers": [
                    {
                        "name": "gpu",
                        "orgId": 1,
                        "folder": "GPU",
                        "type": "file",
                        "disableDeletion": False,
                        "editable": True,
                        "options": {"path": "/var/lib/grafana/dashboards/gpu"},
                    }
                ],
            }
        }
        grafana["dashboards"] = {
            "gpu": {"nvidia-dcgm": {"gnetId": DCGM_DASHBOARD_ID, "revision": 2, "datasource": "Prometheus"}}
        }
    return {
        "fullnameOverride": args.release_name,
        "prometheus": {
            "prometheusSpec": {
                "scrapeInterval": args.effective_scrape_interval,
                "evaluationInterval": args.effective_evaluation_interval,
                "retention": args.retention,
                "retentionSize": f"{args.retention_size_gib}GiB",
                # Without these, ServiceMonitors/PodMonitors/rules lacking the release label are ignored.
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "probeSelectorNilUsesHelmValues": False,
                "scrapeConfigSelectorNilUsesHelmValues": False,
                "storageSpec": {"volumeClaimTemplate": {"spec": volume}},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": retain, "whenScaled": retain},
            }
        },
        "grafana": grafana,
        # The platform dashboard tells spot from on-demand GPU nodes by their node labels.
        "kube-state-metrics": {
            "metricLabelsAllowlist": ["nodes=[cloud.google.com/gke-spot,eks.amazonaws.com/capacityType]"]
        },
        # Managed control planes: no scrape Service, no rule that could only say "down".
        **{component: {"enabled": False} for component in MANAGED_CONTROL_PLANE},
        "defaultRules": {"rules": {rule: False for rules in MANAGED_CONTROL_PLANE.values() for rule in rules}},
        # GKE's cluster DNS is kube-dns: CoreDNS's port 9153 is not there (TargetDown forever).
        "coreDns": {"enabled": cluster.kind is ClusterKind.EKS},
        "kubeDns": {"enabled": cluster.kind is ClusterKind.GKE},
    }


def adapter_values(args: PrometheusStackArgs) -> dict[str, Any]:
    """prometheus-adapter values: the stack's Prometheus and the GPU rules."""
    return {
        "prometheus": {"url": f"http://{args.prometheus_service}.{args.namespace}.svc", "port": 9090},
        # Only the GPU rules: the chart's default rules map every series with namespace and pod labels
        # (DCGM's too) to a pod metric of the same name, colliding with the GPU rule's. Nothing here reads
        # another custom metric, and the defaults never served metrics.k8s.io (kubectl top, CPU HPAs):
        # that is metrics-server's (GKE ships it; on EKS it is the metrics-server add-on).
        "rules": {"default": False, "custom": adapter_rules()},
    }


def dashboard_json() -> dict[str, Any]:
    return json.loads(platform_dashboard())
