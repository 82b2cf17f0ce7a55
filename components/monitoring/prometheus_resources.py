"""PrometheusStack's mapping to chart values and objects: kube-prometheus-stack and prometheus-adapter values, the GPU adapter rules, alert groups and the dashboards."""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from typing import Any

from gpu_platform.components.core.labels import NODE_COST_LABELS
from gpu_platform.components.monitoring.prometheus_args import (
    ALWAYS_SCRAPED,
    DCGM_DASHBOARD_ID,
    MANAGED_CONTROL_PLANE,
    AlertSettings,
    ClusterKind,
    MetricSource,
    MonitoredCluster,
    PrometheusStackArgs,
    expression_metrics,
    metric_source,
)

__all__ = ["adapter_rules", "adapter_values", "dashboard_json", "gpu_alert_groups", "platform_dashboard", "stack_values"]


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
                    "expr": (f'avg by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{{namespace!="",pod!=""}}) < {alerts.gpu_idle_below_percent}'),
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
                    "expr": (f'sum by (namespace, pod) (kube_pod_status_phase{{phase="Pending"}}) > 0 and on (namespace, pod) ({gpu_requested})'),
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
        grafana["dashboards"] = {"gpu": {"nvidia-dcgm": {"gnetId": DCGM_DASHBOARD_ID, "revision": 2, "datasource": "Prometheus"}}}
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
        # The platform dashboard tells spot from on-demand GPU nodes by their node labels; `gpu-platform
        # report` prices each GPU node by its type and capacity type.
        "kube-state-metrics": {"metricLabelsAllowlist": [f"nodes=[{','.join(NODE_COST_LABELS)}]"]},
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
    dashboard: dict[str, Any] = json.loads(platform_dashboard())
    return dashboard
