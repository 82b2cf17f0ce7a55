"""The kube-prometheus-stack and prometheus-adapter values, the GPU alerts and the platform dashboard."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_platform.components import (
    PrometheusStackArgs,
)
from gpu_platform.components.monitoring.prometheus_args import (
    ALWAYS_SCRAPED,
    GPU_CUSTOM_METRICS,
    MANAGED_CONTROL_PLANE,
    ClusterKind,
    MetricSource,
    MonitoredCluster,
    expression_metrics,
    metric_source,
)
from gpu_platform.components.monitoring.prometheus_resources import adapter_rules, adapter_values, dashboard_json, gpu_alert_groups, stack_values

EKS = MonitoredCluster(kind="eks", sources=frozenset({MetricSource.DCGM_EXPORTER, MetricSource.CLUSTER_AUTOSCALER}))


def test_stack_values() -> None:
    args = PrometheusStackArgs(preset="analysis", storage_class="premium-rwo")
    spec = stack_values(args, EKS)["prometheus"]["prometheusSpec"]
    for selector in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig"):
        assert spec[f"{selector}SelectorNilUsesHelmValues"] is False
    assert (spec["scrapeInterval"], spec["evaluationInterval"], spec["retention"], spec["retentionSize"]) == ("1s", "1s", "15d", "45GiB")
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "premium-rwo" and claim["resources"]["requests"]["storage"] == "50Gi"
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    grafana = stack_values(args, EKS)["grafana"]
    assert grafana["admin"] == {"existingSecret": "grafana-admin", "userKey": "admin-user", "passwordKey": "admin-password"}
    assert "adminPassword" not in json.dumps(grafana)
    assert grafana["dashboards"]["gpu"]["nvidia-dcgm"]["gnetId"] == 12239
    assert (
        stack_values(PrometheusStackArgs(keep_volume_on_delete=False), EKS)["prometheus"]["prometheusSpec"]["persistentVolumeClaimRetentionPolicy"][
            "whenDeleted"
        ]
        == "Delete"
    )


def test_adapter_rules_expose_the_two_gpu_metrics() -> None:
    rules = adapter_rules()
    assert [r["name"]["as"] for r in rules] == list(GPU_CUSTOM_METRICS)
    for rule in rules:
        assert rule["seriesQuery"] == 'DCGM_FI_DEV_GPU_UTIL{namespace!="",pod!=""}'
        assert rule["resources"]["overrides"] == {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}
    assert "avg_over_time(<<.Series>>{<<.LabelMatchers>>}[1m])" in rules[1]["metricsQuery"]


def test_alerts_follow_their_thresholds() -> None:
    from gpu_platform.components import AlertSettings

    (group,) = gpu_alert_groups(AlertSettings(gpu_idle_for="1h", gpu_idle_below_percent=10, gpu_pod_pending_for="5m"), EKS.scraped)
    alerts = {r["alert"]: r for r in group["rules"]}
    assert set(alerts) == {"GpuAllocatedButIdle", "GpuPodPending", "DcgmExporterDown", "GpuXidError", "NodeGroupScaleUpFailing"}
    assert alerts["GpuAllocatedButIdle"]["for"] == "1h" and alerts["GpuAllocatedButIdle"]["expr"].endswith("< 10")
    assert alerts["GpuPodPending"]["for"] == "5m"


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        (set(), {"GpuPodPending"}),
        ({MetricSource.DCGM_EXPORTER}, {"GpuAllocatedButIdle", "GpuPodPending", "DcgmExporterDown", "GpuXidError"}),
        ({MetricSource.CLUSTER_AUTOSCALER}, {"GpuPodPending", "NodeGroupScaleUpFailing"}),
    ],
)
def test_alerts_ship_only_when_what_they_read_is_scraped(sources: set[MetricSource], expected: set[str]) -> None:
    from gpu_platform.components import AlertSettings

    (group,) = gpu_alert_groups(AlertSettings(), sources)
    assert {r["alert"] for r in group["rules"]} == expected
    for rule in group["rules"]:  # the general rule: every metric an alert reads is scraped
        assert {metric_source(m) for m in expression_metrics(rule["expr"])} <= sources | ALWAYS_SCRAPED


def test_fails_when_an_alert_reads_a_metric_nothing_scrapes(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpu_platform.components import AlertSettings
    from gpu_platform.components.monitoring import prometheus_resources

    candidates = prometheus_resources._gpu_alert_candidates

    def with_unscraped(alerts: AlertSettings) -> list[dict[str, Any]]:
        groups = candidates(alerts)
        groups[0]["rules"].append({"alert": "Nvml", "expr": "nvml_gpu_temperature_celsius > 90"})
        return groups

    monkeypatch.setattr(prometheus_resources, "_gpu_alert_candidates", with_unscraped)
    with pytest.raises(ValueError, match="alert Nvml reads nvml_gpu_temperature_celsius, which no source of the stack scrapes"):
        gpu_alert_groups(AlertSettings(), set(MetricSource))


@pytest.mark.parametrize("kind", list(ClusterKind))
def test_managed_control_planes_get_no_scrape_targets_or_rules_they_hide(kind: ClusterKind) -> None:
    values = stack_values(PrometheusStackArgs(), MonitoredCluster(kind=kind))
    for component, rules in MANAGED_CONTROL_PLANE.items():
        assert values[component] == {"enabled": False}
        assert all(values["defaultRules"]["rules"][rule] is False for rule in rules)
    assert set(MANAGED_CONTROL_PLANE) == {"kubeEtcd", "kubeScheduler", "kubeControllerManager", "kubeProxy"}
    # Cluster DNS: CoreDNS on EKS, kube-dns on GKE.
    assert (values["coreDns"]["enabled"], values["kubeDns"]["enabled"]) == (kind is ClusterKind.EKS, kind is ClusterKind.GKE)


def test_adapter_serves_only_the_gpu_rules() -> None:
    rules = adapter_values(PrometheusStackArgs())["rules"]
    assert rules["default"] is False  # the defaults map DCGM_FI_DEV_GPU_UTIL to a pod metric of the same name too
    assert {r["name"]["as"] for r in rules["custom"]} == set(GPU_CUSTOM_METRICS)
    assert "resource" not in rules and "external" not in rules


def test_platform_dashboard_has_the_panels() -> None:
    titles = [p["title"] for p in dashboard_json()["panels"]]
    assert titles == ["GPUs available vs allocated vs busy", "Pending GPU pods", "GPU nodes: spot vs on-demand", "GPU utilisation by pod"]
