"""What the monitoring components set, checked against the pinned upstream charts and CRDs
in ../shared/reference (beside the checkout in CI; the tests skip with the reason elsewhere)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from gpu_platform.components import DcgmExporterArgs, PrometheusStackArgs
from gpu_platform.components.monitoring.dcgm_resources import dcgm_values
from gpu_platform.components.monitoring.prometheus_args import AlertSettings, ClusterKind, MetricSource, MonitoredCluster
from gpu_platform.components.monitoring.prometheus_resources import adapter_rules, adapter_values, gpu_alert_groups, stack_values
from tests.conftest import load_yaml

# Keys of subcharts whose own values.yaml is not among the references: the
# kube-state-metrics chart (prometheus-community) documents metricLabelsAllowlist.
SUBCHART_KEYS = {"kube-state-metrics": {"metricLabelsAllowlist"}}
# Values a chart hands to Kubernetes as they are: checked against the Kubernetes schema instead.
KUBERNETES_OBJECTS = {"securityContext", "selector"}  # a Kubernetes object or a label map: free-form here


def load(shared: Path, name: str) -> Any:
    return load_yaml((shared / "reference" / "charts" / name).read_text())


def unknown_keys(values: Any, reference: Any, path: str = "") -> Iterator[str]:
    """Keys of ``values`` the reference does not have; an empty map in the reference is free-form."""
    if not isinstance(values, dict) or not isinstance(reference, dict) or reference == {}:
        return
    for key, value in values.items():
        where = f"{path}.{key}" if path else key
        if key not in reference:
            yield where
        elif key not in KUBERNETES_OBJECTS:
            yield from unknown_keys(value, reference[key], where)


@pytest.mark.parametrize("kind", list(ClusterKind))
def test_kube_prometheus_stack_values_exist_upstream(shared_dir: Path, kind: ClusterKind) -> None:
    reference = load(shared_dir, "kube-prometheus-stack-88.5.3.values.yaml")
    grafana = load(shared_dir, "grafana-12.11.1.values.yaml")
    values = stack_values(PrometheusStackArgs(storage_class="standard-rwo"), MonitoredCluster(kind=kind))
    unknown = []
    for key, value in values.items():
        if key == "grafana":  # the subchart: its own values plus what the parent chart adds
            unknown += unknown_keys(value, {**grafana, **reference["grafana"]}, "grafana")
        elif key in SUBCHART_KEYS:
            unknown += [f"{key}.{k}" for k in value if k not in reference[key] and k not in SUBCHART_KEYS[key]]
        else:
            unknown += unknown_keys({key: value}, reference)
    assert unknown == []


def test_adapter_values_exist_upstream(shared_dir: Path) -> None:
    reference = load(shared_dir, "prometheus-adapter-5.3.0.values.yaml")
    assert list(unknown_keys(adapter_values(PrometheusStackArgs()), reference)) == []


@pytest.mark.parametrize("selection", ["gke", "eks"])
def test_dcgm_values_exist_upstream(shared_dir: Path, selection: str) -> None:
    reference = load(shared_dir, "dcgm-exporter-4.8.2.values.yaml")
    values = dcgm_values(DcgmExporterArgs(node_selection=selection), "m")
    assert list(unknown_keys(values, reference)) == []
    assert values["image"]["tag"] == reference["image"]["tag"]  # the pinned exporter matches the chart
    # The container securityContext Helm merges over the chart's default is a valid one.
    context = {**reference["securityContext"], **values.get("securityContext", {})}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": [{"name": "x", "image": "x:1", "securityContext": context}]}}
    kubernetes_validate.validate(pod, "1.34", strict=True)
    if context.get("privileged"):
        assert context["allowPrivilegeEscalation"] is True  # the API server refuses privileged without it


def test_the_checker_catches_a_misspelt_key(shared_dir: Path) -> None:
    reference = load(shared_dir, "kube-prometheus-stack-88.5.3.values.yaml")
    bad = {"prometheus": {"prometheusSpec": {"serviceMonitorSelectorNilUseHelmValues": False}}}
    assert list(unknown_keys(bad, reference)) == ["prometheus.prometheusSpec.serviceMonitorSelectorNilUseHelmValues"]


def crd_schema(shared: Path, name: str) -> dict[str, Any]:
    crd = load_yaml((shared / "reference" / "crds" / name).read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version["schema"]["openAPIV3Schema"]


def prometheus_rule(groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {"name": "gpu"}, "spec": {"groups": groups}}


def test_prometheus_rule_matches_the_crd(shared_dir: Path) -> None:
    # Validated as the API server would, without checking the schema itself: its Go regexes
    # (e.g. ^(?i)(abort|warn)?$) are not Python ones.
    validator = jsonschema.Draft7Validator(crd_schema(shared_dir, "monitoring.coreos.com_prometheusrules.yaml"))
    assert list(validator.iter_errors(prometheus_rule(gpu_alert_groups(AlertSettings(), set(MetricSource))))) == []
    broken = prometheus_rule([{"name": "x", "rules": [{"alert": "A"}]}])  # no expr
    assert [e.message for e in validator.iter_errors(broken)] == ["'expr' is a required property"]


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool is not installed (Debian's prometheus package; .ci/run installs it)")
    return path


def test_every_promql_expression_parses(tmp_path: Path) -> None:
    tool = promtool()
    groups = gpu_alert_groups(AlertSettings(), set(MetricSource))
    # The adapter's queries are templates: render them as the adapter would, as recording rules.
    rendered = [
        {
            "record": f"gpu_platform:adapter:{rule['name']['as'].lower()}",
            "expr": rule["metricsQuery"]
            .replace("<<.GroupBy>>", "namespace, pod")
            .replace("<<.Series>>", "DCGM_FI_DEV_GPU_UTIL")
            .replace("<<.LabelMatchers>>", 'namespace="ml",pod=~"infer-.*"'),
        }
        for rule in adapter_rules()
    ]
    rendered.append({"record": "gpu_platform:adapter:series", "expr": adapter_rules()[0]["seriesQuery"]})
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": [*groups, {"name": "adapter", "rules": rendered}]}))
    result = subprocess.run([tool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_refuses_bad_promql(tmp_path: Path) -> None:
    tool = promtool()
    path = tmp_path / "bad.yml"
    path.write_text(json.dumps({"groups": [{"name": "x", "rules": [{"alert": "A", "expr": "avg by (pod (up)"}]}]}))
    assert subprocess.run([tool, "check", "rules", str(path)], capture_output=True, timeout=60).returncode != 0


# cluster-autoscaler flags the EKS component sets that the chart's values.yaml does not list in
# its extraArgs comments; each is a flag of cluster-autoscaler 1.35 (config/flags/flags.go:
# initial-node-group-backoff-duration 5m, max-node-group-backoff-duration 30m,
# node-group-backoff-reset-timeout 3h).
AUTOSCALER_FLAGS_BEYOND_CHART_COMMENTS = {
    "initial-node-group-backoff-duration",
    "max-node-group-backoff-duration",
    "node-group-backoff-reset-timeout",
}


def test_autoscaler_values_exist_upstream(shared_dir: Path) -> None:
    from gpu_platform.components.eks.node_group_args import ClusterAutoscalerSettings
    from gpu_platform.components.eks.node_group_resources import autoscaler_values

    path = shared_dir / "reference" / "charts" / "cluster-autoscaler-9.59.0.values.yaml"
    reference = load_yaml(path.read_text())
    settings = ClusterAutoscalerSettings(image="registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.2")
    values = autoscaler_values(settings, "c", "us-west-2", "arn:aws:iam::123456789012:role/r")
    # extraArgs is the chart's free-form map of container flags: its keys are checked below.
    assert list(unknown_keys({k: v for k, v in values.items() if k != "extraArgs"}, reference)) == []
    assert ClusterAutoscalerSettings().chart_version == "9.59.0" and reference["image"]["tag"] == "v1.35.0"
    # Flags the chart documents in its extraArgs comments ("# max-node-provision-time: 15m0s").
    text = path.read_text()
    section = text[text.index("\nextraArgs:") : text.index("\ncustomArgs:")]
    documented = set(re.findall(r"^\s+#?\s*([a-z][a-z0-9-]+):", section, re.M))
    flags = set(values["extraArgs"])
    assert flags - documented == AUTOSCALER_FLAGS_BEYOND_CHART_COMMENTS
    assert "expander" in documented and "max-node-provision-time" in documented
    # The chart renders the priority ConfigMap itself only from expanderPriorities, which stays unset:
    # the component's own ConfigMap is the only one.
    assert "expanderPriorities" not in values and reference["expanderPriorities"] == {}
