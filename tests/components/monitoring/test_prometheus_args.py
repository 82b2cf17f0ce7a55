"""PrometheusStackArgs and what the stack scrapes: presets, validators, the metrics an expression reads and their sources."""

from __future__ import annotations

import pytest

from gpu_platform.components import (
    PrometheusStackArgs,
)
from gpu_platform.components.monitoring.prometheus_args import (
    MetricSource,
    expression_metrics,
    metric_source,
)
from tests.conftest import refused


def test_presets() -> None:
    assert PrometheusStackArgs().effective_scrape_interval == "30s"
    analysis = PrometheusStackArgs(preset="analysis")
    assert (analysis.effective_scrape_interval, analysis.effective_evaluation_interval) == ("1s", "1s")
    assert PrometheusStackArgs(preset="analysis", scrape_interval="5s").effective_scrape_interval == "5s"


def test_fails_when_retention_size_fills_the_volume() -> None:
    (line,) = refused(PrometheusStackArgs, {"storage_size_gib": 50, "retention_size_gib": 50})
    assert line.startswith("retention_size_gib: retention_size_gib 50 must stay below storage_size_gib 50")


def test_fails_when_retention_is_not_a_duration() -> None:
    (line,) = refused(PrometheusStackArgs, {"retention": "two weeks"})
    assert line.startswith("retention: 'two weeks' is not a Prometheus duration")


def test_fails_when_chart_version_is_a_range() -> None:
    (line,) = refused(PrometheusStackArgs, {"chart_version": "^88"})
    assert "must be one exact release" in line


def test_fails_when_namespace_is_not_a_dns_label() -> None:
    (line,) = refused(PrometheusStackArgs, {"namespace": "Monitoring"})
    assert line.startswith("namespace: 'Monitoring' is not a DNS label")


def test_expression_metrics_leaves_out_labels_ranges_groupings_and_functions() -> None:
    expr = 'sum by (namespace, pod) (rate(a_total{job=~"x.*",le="0.5"}[5m])) / on (pod) group_left (node) b and c offset 1h > 0'
    assert expression_metrics(expr) == {"a_total", "b", "c"}
    upper = "count(up == 0) BY (cluster, job) / ON (instance) GROUP_LEFT() sum WITHOUT (cpu) (d) OR e # a comment names f\n"
    assert expression_metrics(upper) == {"up", "d", "e"}
    assert expression_metrics('{__name__="g"} + h{job!="z"}') == {"g", "h"}
    assert expression_metrics("increase(cluster_autoscaler_failed_scale_ups_total[15m]) > 0") == {"cluster_autoscaler_failed_scale_ups_total"}


@pytest.mark.parametrize(
    ("metric", "source"),
    [
        ("DCGM_FI_DEV_GPU_UTIL", MetricSource.DCGM_EXPORTER),
        ("cluster_autoscaler_failed_scale_ups_total", MetricSource.CLUSTER_AUTOSCALER),
        ("kube_pod_status_phase", MetricSource.KUBE_STATE_METRICS),
        ("node_cpu_seconds_total", MetricSource.NODE_EXPORTER),
        ("container_memory_rss", MetricSource.KUBELET),
        ("apiserver_request_total", MetricSource.API_SERVER),
        ("ALERTS", MetricSource.PROMETHEUS),
        # what managed control planes hide: no source scrapes it
        ("etcd_server_has_leader", None),
        ("scheduler_pending_pods", None),
        ("workqueue_depth", None),
        ("kubeproxy_sync_proxy_rules_duration_seconds_bucket", None),
    ],
)
def test_metric_sources(metric: str, source: MetricSource | None) -> None:
    assert metric_source(metric) is source
