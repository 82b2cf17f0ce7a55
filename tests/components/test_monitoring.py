"""PrometheusStack, DcgmExporter and GpuUtilizationAutoscaler: inputs, resources, values."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pulumi
import pytest
from pydantic import ValidationError

from gpu_platform.components import (
    DcgmExporter,
    DcgmExporterArgs,
    GpuUtilizationAutoscaler,
    GpuUtilizationAutoscalerArgs,
    PrometheusStack,
    PrometheusStackArgs,
)
from gpu_platform.components.monitoring.dcgm_args import DEFAULT_METRICS
from gpu_platform.components.monitoring.dcgm_resources import dcgm_values, metrics_csv
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
from gpu_platform.infra.stack.errors import format_validation_error
from tests.conftest import Engine, settled

EKS = MonitoredCluster(kind="eks", sources=frozenset({MetricSource.DCGM_EXPORTER, MetricSource.CLUSTER_AUTOSCALER}))


def refused(model: type, data: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return format_validation_error(info.value, model)


# --- PrometheusStack -----------------------------------------------------------------------


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


@pulumi.runtime.test
def test_prometheus_stack_alerts_follow_the_cluster(engine: Engine) -> pulumi.Output[Any]:
    gke = MonitoredCluster(kind="gke", sources=frozenset({MetricSource.DCGM_EXPORTER}))
    stack = PrometheusStack("mon", PrometheusStackArgs(), grafana_admin_password="pw", cluster=gke)

    def check(_: Any) -> None:
        (group,) = engine.resource("mon-gpu-alerts").inputs["spec"]["groups"]
        assert "NodeGroupScaleUpFailing" not in {r["alert"] for r in group["rules"]}  # GKE's autoscaler is out of reach
        values = engine.resource("mon-release").inputs["values"]
        assert values["kubeDns"] == {"enabled": True} and values["kubeEtcd"] == {"enabled": False}

    return settled(stack, stack.release, stack.alerts).apply(check)


def test_platform_dashboard_has_the_panels() -> None:
    titles = [p["title"] for p in dashboard_json()["panels"]]
    assert titles == ["GPUs available vs allocated vs busy", "Pending GPU pods", "GPU nodes: spot vs on-demand", "GPU utilisation by pod"]


@pulumi.runtime.test
def test_prometheus_stack_resources(engine: Engine) -> pulumi.Output[Any]:
    stack = PrometheusStack("mon", PrometheusStackArgs(), grafana_admin_password="pw-placeholder", cluster=EKS)

    def check(_: Any) -> None:
        release = engine.resource("mon-release").inputs
        assert (release["chart"], release["version"], release["name"]) == ("kube-prometheus-stack", "88.5.3", "kube-prometheus-stack")
        assert release["repositoryOpts"] == {"repo": "https://prometheus-community.github.io/helm-charts"}
        adapter = engine.resource("mon-adapter").inputs
        assert adapter["values"]["prometheus"]["url"] == "http://kube-prometheus-stack-prometheus.prometheus.svc"
        secret = engine.resource("mon-grafana-admin").inputs
        # the password is a Pulumi secret end to end
        assert secret["stringData"]["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"
        assert "pw-placeholder" not in json.dumps(release) + json.dumps(adapter)
        rule = engine.resource("mon-gpu-alerts")
        assert rule.type == "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
        assert engine.resource("mon-release").urn in rule.depends_on
        dashboard = engine.resource("mon-platform-dashboard").inputs
        assert dashboard["metadata"]["labels"] == {"grafana_dashboard": "1"}

    def check_all(values: list[Any]) -> None:
        check(values[0])
        assert values[1:] == ["http://kube-prometheus-stack-prometheus.prometheus.svc:9090", "kube-prometheus-stack-grafana"]

    return pulumi.Output.all(settled(stack, stack.release, stack.adapter, stack.alerts), stack.prometheus_url, stack.grafana_service_name).apply(check_all)


# --- DcgmExporter ----------------------------------------------------------------------------


def test_default_metrics() -> None:
    fields = [m.field for m in DcgmExporterArgs(node_selection="gke").metrics]
    assert fields == [m.field for m in DEFAULT_METRICS]
    for needed in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_XID_ERRORS"):
        assert needed in fields
    assert metrics_csv(list(DEFAULT_METRICS)).splitlines()[5] == "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %)."


def test_fails_when_probe_delay_is_below_20_seconds() -> None:
    (line,) = refused(DcgmExporterArgs, {"node_selection": "gke", "probe_initial_delay_seconds": 10})
    assert line.startswith("probe_initial_delay_seconds: Input should be greater than or equal to 20 (got 10)")


def test_fails_when_gpu_utilisation_is_not_exported() -> None:
    (line,) = refused(DcgmExporterArgs, {"node_selection": "eks", "metrics": [{"field": "DCGM_FI_DEV_GPU_TEMP", "type": "gauge", "help": "t"}]})
    assert "metrics must include DCGM_FI_DEV_GPU_UTIL" in line


def test_fails_when_image_floats() -> None:
    (line,) = refused(DcgmExporterArgs, {"node_selection": "gke", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:latest"})
    assert "must carry a version tag (never latest)" in line


def test_fails_when_node_selection_is_missing() -> None:
    assert refused(DcgmExporterArgs, {}) == ["node_selection: required (got nothing)"]


@pytest.mark.parametrize(("selection", "label"), [("gke", "cloud.google.com/gke-accelerator"), ("eks", "k8s.amazonaws.com/accelerator")])
def test_exporter_runs_on_gpu_nodes_only(selection: str, label: str) -> None:
    values = dcgm_values(DcgmExporterArgs(node_selection=selection), "m")
    (term,) = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": label, "operator": "Exists"}]}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["tolerations"]
    assert values["serviceMonitor"]["honorLabels"] is True
    assert values["livenessProbe"]["initialDelaySeconds"] >= 20 and values["readinessProbe"]["initialDelaySeconds"] >= 20
    assert values["image"] == {"repository": "nvcr.io/nvidia/k8s/dcgm-exporter", "tag": "4.5.3-4.8.2-distroless"}
    assert values["arguments"] == ["-f", "/etc/dcgm-exporter/gpu-platform-metrics.csv"]


def test_gke_driver_paths() -> None:
    gke = dcgm_values(DcgmExporterArgs(node_selection="gke"), "m")
    assert {"name": "nvidia-install-dir-host", "hostPath": "/home/kubernetes/bin/nvidia"} in gke["extraHostVolumes"]
    assert {"name": "nvidia-install-dir-host", "mountPath": "/usr/local/nvidia", "readOnly": True} in gke["extraVolumeMounts"]
    assert {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"} in gke["extraEnv"]
    eks = dcgm_values(DcgmExporterArgs(node_selection="eks"), "m")
    assert "extraHostVolumes" not in eks and "extraEnv" not in eks  # the AMI carries the driver


@pulumi.runtime.test
def test_dcgm_exporter_resources(engine: Engine) -> pulumi.Output[Any]:
    crd = pulumi.CustomResource("kubernetes:helm.sh/v3:Release", "monitoring")  # what installs the ServiceMonitor CRD
    exporter = DcgmExporter("dcgm", DcgmExporterArgs(node_selection="gke"), service_monitor_crd=crd)

    def check(_: Any) -> None:
        release = engine.resource("dcgm-release").inputs
        assert (release["chart"], release["version"]) == ("dcgm-exporter", "4.8.2")
        assert release["repositoryOpts"] == {"repo": "https://nvidia.github.io/dcgm-exporter/helm-charts"}
        metrics = engine.resource("dcgm-metrics").inputs
        assert metrics["data"]["metrics"].startswith("DCGM_FI_DEV_SM_CLOCK, gauge")
        assert release["values"]["extraConfigMapVolumes"][0]["configMap"]["name"] == metrics["metadata"]["name"]
        assert release["values"]["serviceMonitor"]["enabled"] is True
        assert engine.resource("monitoring").urn in engine.resource("dcgm-release").depends_on  # its ServiceMonitor after the CRD

    return settled(exporter, exporter.release, crd).apply(check)


# --- GpuUtilizationAutoscaler ---------------------------------------------------------------


def test_fails_when_metric_is_not_exposed() -> None:
    (line,) = refused(GpuUtilizationAutoscalerArgs, {"deployment": "infer", "namespace": "ml", "max_replicas": 4, "metric": "DCGM_FI_DEV_FB_USED"})
    assert line.startswith("metric: metric DCGM_FI_DEV_FB_USED is not exposed by the adapter rules; use DCGM_FI_DEV_GPU_UTIL or DCGM_FI_DEV_GPU_UTIL_AVG")


def test_fails_when_min_replicas_exceed_max() -> None:
    (line,) = refused(GpuUtilizationAutoscalerArgs, {"deployment": "infer", "namespace": "ml", "min_replicas": 5, "max_replicas": 4})
    assert line.startswith("min_replicas: min_replicas 5 is above max_replicas 4")


def test_autoscaler_defaults() -> None:
    args = GpuUtilizationAutoscalerArgs(deployment="infer", namespace="ml", max_replicas=4)
    assert (args.min_replicas, args.target_utilization_percent, args.metric) == (1, 70, "DCGM_FI_DEV_GPU_UTIL_AVG")


@pulumi.runtime.test
def test_hpa_is_a_valid_autoscaling_v2_object(engine: Engine) -> pulumi.Output[Any]:
    hpa = GpuUtilizationAutoscaler("infer", GpuUtilizationAutoscalerArgs(deployment="infer", namespace="ml", max_replicas=4))

    def check(_: Any) -> None:
        body = engine.resource("infer-hpa").inputs
        kubernetes_validate.validate(body, "1.34", strict=True)
        (metric,) = body["spec"]["metrics"]
        assert metric == {"type": "Pods", "pods": {"metric": {"name": "DCGM_FI_DEV_GPU_UTIL_AVG"}, "target": {"type": "AverageValue", "averageValue": "70"}}}
        assert body["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "infer"}

    return settled(hpa, hpa.hpa).apply(check)
