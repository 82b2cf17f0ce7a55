"""PrometheusStack: kube-prometheus-stack, prometheus-adapter with GPU custom metrics,
Grafana with GPU dashboards, and GPU alerts.

Prometheus picks up every ServiceMonitor/PodMonitor/PrometheusRule in the cluster, keeps
its data on a volume that outlives the release, and the adapter exposes DCGM GPU
utilisation per pod (and its 1-minute average) as custom metrics for autoscaling.
"""

from __future__ import annotations

import json
from enum import StrEnum
from importlib import resources
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pydantic import BaseModel, Field, model_validator

from components.kube import ChartRepository, ChartVersion, DnsLabel, DnsSubdomain, Duration, helm_release
from components.numbers import Int
from components.pools import ARGS_CONFIG, field_error

__all__ = [
    "AlertSettings",
    "GPU_CUSTOM_METRICS",
    "MetricsPreset",
    "PrometheusStack",
    "PrometheusStackArgs",
    "adapter_rules",
    "gpu_alert_groups",
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
    """1 s, as the seed's wait-time analysis used: short-lived pending states show up."""


_PRESET_INTERVALS = {MetricsPreset.PRODUCTION: "30s", MetricsPreset.ANALYSIS: "1s"}


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
    """production (30 s scrape and evaluation) or analysis (1 s, as the seed's analysis). Default: production."""
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


def gpu_alert_groups(alerts: AlertSettings) -> list[dict[str, Any]]:
    """The PrometheusRule groups of the GPU alerts."""
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
    return resources.files("components").joinpath("dashboards/gpu-platform.json").read_text()


class PrometheusStack(pulumi.ComponentResource):
    """kube-prometheus-stack + prometheus-adapter + GPU alerts and dashboards."""

    namespace: pulumi.Output[str]
    """The monitoring namespace."""
    prometheus_url: pulumi.Output[str]
    """In-cluster Prometheus URL (http://<release>-prometheus.<namespace>.svc:9090)."""
    grafana_service_name: pulumi.Output[str]
    """Grafana's service name in the namespace."""
    release: k8s.helm.v3.Release
    """The kube-prometheus-stack release (depend on it before creating monitoring CRs)."""
    adapter: k8s.helm.v3.Release
    """The prometheus-adapter release."""
    alerts: k8s.apiextensions.CustomResource
    """The PrometheusRule of the GPU alerts."""

    def __init__(
        self,
        name: str,
        args: PrometheusStackArgs,
        grafana_admin_password: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpu-platform:prometheus_stack:PrometheusStack", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels={"app.kubernetes.io/part-of": "gpu-platform"}),
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
            values=stack_values(args),
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
            spec={"groups": gpu_alert_groups(args.alerts)},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
        )

        self.namespace = ns
        self.prometheus_url = pulumi.Output.from_input(args.prometheus_url)
        self.grafana_service_name = pulumi.Output.from_input(args.grafana_service)
        self.register_outputs(
            {"namespace": self.namespace, "prometheusUrl": self.prometheus_url, "grafanaServiceName": self.grafana_service_name}
        )


def stack_values(args: PrometheusStackArgs) -> dict[str, Any]:
    """kube-prometheus-stack values."""
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
    }


def adapter_values(args: PrometheusStackArgs) -> dict[str, Any]:
    """prometheus-adapter values: the stack's Prometheus and the GPU rules."""
    return {
        "prometheus": {"url": f"http://{args.prometheus_service}.{args.namespace}.svc", "port": 9090},
        "rules": {"default": True, "custom": adapter_rules()},
    }


def dashboard_json() -> dict[str, Any]:
    return json.loads(platform_dashboard())
