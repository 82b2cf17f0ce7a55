"""Every stack's plan carries the monitoring the observability issue promises, and the
Grafana password appears only inside a Pulumi secret."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_platform.infra.preview.engine import SECRET_SIG, Plan
from tests.conftest import PROJECT_DIR
from tests.conftest import shipped_plan as plan

STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
PLACEHOLDER = "offline-placeholder-grafana_admin_password"


def releases(p: Plan) -> dict[str, dict[str, Any]]:
    return {r.inputs["chart"]: r.inputs for r in p.of_type("kubernetes:helm.sh/v3:Release")}


@pytest.mark.parametrize("stack", STACKS)
def test_plan_has_the_monitoring(stack: str) -> None:
    p = plan(stack)
    charts = releases(p)
    spec = charts["kube-prometheus-stack"]["values"]["prometheus"]["prometheusSpec"]
    assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False and spec["ruleSelectorNilUsesHelmValues"] is False
    assert charts["kube-prometheus-stack"]["values"]["grafana"]["admin"]["existingSecret"] == "grafana-admin"
    (secret,) = [r for r in p.of_type("kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "grafana-admin"]
    assert SECRET_SIG.items() <= secret.inputs["stringData"].items()
    assert [r["name"]["as"] for r in charts["prometheus-adapter"]["values"]["rules"]["custom"]] == [
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_GPU_UTIL_AVG",
    ]
    dcgm = charts["dcgm-exporter"]["values"]
    term = dcgm["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    gpu_label = "cloud.google.com/gke-accelerator" if stack.endswith("-gke") else "k8s.amazonaws.com/accelerator"
    assert term["matchExpressions"][0]["key"] == gpu_label
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in dcgm["tolerations"]
    assert dcgm["livenessProbe"]["initialDelaySeconds"] >= 20 and dcgm["readinessProbe"]["initialDelaySeconds"] >= 20
    (rule,) = p.of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule")
    alerts = {r["alert"] for g in rule.inputs["spec"]["groups"] for r in g["rules"]}
    assert {"GpuAllocatedButIdle", "GpuPodPending", "DcgmExporterDown", "GpuXidError"} <= alerts
    # Only the EKS stacks on the cluster autoscaler run it in-cluster, scraped through its chart's ServiceMonitor.
    assert ("NodeGroupScaleUpFailing" in alerts) is _cluster_autoscaled(stack)
    if _cluster_autoscaled(stack):
        assert charts["cluster-autoscaler"]["values"]["serviceMonitor"]["enabled"] is True
    assert p.outputs["prometheusUrl"] == "http://kube-prometheus-stack-prometheus.prometheus.svc:9090"


def _cluster_autoscaled(stack: str) -> bool:
    """Whether the stack file has an EKS stack provisioned by the cluster autoscaler (the default; prod-eks is Karpenter's)."""
    from gpu_platform.components.karpenter.args import Provisioner
    from gpu_platform.infra.stack.read import load_stack

    groups = load_stack(PROJECT_DIR, stack).eks_node_groups
    return groups is not None and groups.provisioner is Provisioner.CLUSTER_AUTOSCALER


MONITORING_KINDS = ("serviceMonitor", "podMonitor", "prometheusRule")


def _ships_monitoring_resources(values: Any) -> bool:
    """Whether chart values switch on a ServiceMonitor, PodMonitor or PrometheusRule anywhere (any subchart)."""
    if isinstance(values, dict):
        return any(
            (key in MONITORING_KINDS and isinstance(value, dict) and value.get("enabled") is True) or _ships_monitoring_resources(value)
            for key, value in values.items()
        )
    return isinstance(values, list) and any(_ships_monitoring_resources(v) for v in values)


@pytest.mark.parametrize("stack", STACKS)
def test_everything_that_ships_a_monitoring_resource_waits_for_the_crd(stack: str) -> None:
    p = plan(stack)
    (kps,) = [r for r in p.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "kube-prometheus-stack"]
    shipping = [r for r in p.of_type("kubernetes:helm.sh/v3:Release") if r is not kps and _ships_monitoring_resources(r.inputs["values"])]
    assert {r.inputs["chart"] for r in shipping} == ({"dcgm-exporter", "cluster-autoscaler"} if _cluster_autoscaled(stack) else {"dcgm-exporter"})
    custom = [r for r in p.resources if r.type.startswith("kubernetes:monitoring.coreos.com/")]
    for resource in [*shipping, *custom]:
        assert kps.urn in resource.depends_on, f"{resource.name} ships a monitoring.coreos.com resource before its CRD"


def _paths_of(value: Any, needle: str, path: str = "", in_secret: bool = False) -> list[tuple[str, bool]]:
    if isinstance(value, dict):
        secret = in_secret or SECRET_SIG.items() <= value.items()
        return [hit for k, v in value.items() for hit in _paths_of(v, needle, f"{path}.{k}", secret)]
    if isinstance(value, list):
        return [hit for i, v in enumerate(value) for hit in _paths_of(v, needle, f"{path}[{i}]", in_secret)]
    return [(path, in_secret)] if isinstance(value, str) and needle in value else []


@pytest.mark.parametrize("stack", STACKS)
def test_grafana_password_only_inside_a_secret(stack: str) -> None:
    document = json.loads(json.dumps(plan(stack).to_json()))
    hits = _paths_of(document, PLACEHOLDER)
    assert hits, "the placeholder should reach the Grafana admin Secret"
    assert all(in_secret for _, in_secret in hits), [p for p, s in hits if not s]
