"""Intent, asserted (issue 13 item 5): what the RENDERED objects of each shipped stack must do.

General rules over every rendered object, not a list of today's names. Each stack is rendered
once per session from ../shared/reference/upstream; without it (or kubectl) the tests skip.
"""

from __future__ import annotations

import shutil
from functools import lru_cache
from typing import Any

import pytest

from infra.cluster_checks import DEFAULT_CREDENTIALS, check_default_credentials, collect_objects
from infra.preview import load_stack
from infra.render import Rendering, render_plan
from infra.upstream import Sources, load_lock
from tests.conftest import PROJECT_DIR, UPSTREAM_DIR, shipped_plan, upstream_or_skip

STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
MONITOR_KINDS = {"ServiceMonitor": "serviceMonitor", "PodMonitor": "podMonitor", "PrometheusRule": "rule"}


@lru_cache(maxsize=None)
def _rendered(stack: str) -> tuple[Any, Any, Rendering]:
    config = load_stack(PROJECT_DIR, stack)
    plan = shipped_plan(stack)
    lock = load_lock()
    return config, plan, render_plan(plan, config.kubernetes_version, Sources(lock, upstream_dir=UPSTREAM_DIR), lock)


@pytest.fixture(params=STACKS)
def rendered(request: pytest.FixtureRequest) -> tuple[str, Any, Any, Rendering]:
    upstream_or_skip()
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: its kustomize builds the Kustomize directories")
    return (request.param, *_rendered(request.param))


def _bodies(rendering: Rendering, kind: str) -> list[dict[str, Any]]:
    return [o.body for o in rendering.objects if o.kind == kind]


def _matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def test_prometheus_selects_every_monitor_and_rule(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, _, _, rendering = rendered
    prometheus = _bodies(rendering, "Prometheus")
    if not prometheus:
        pytest.skip(f"{stack} renders no Prometheus")
    spec = prometheus[0]["spec"]
    namespaces = {b["metadata"]["name"]: (b["metadata"].get("labels") or {}) for b in _bodies(rendering, "Namespace")}
    missed = []
    for o in rendering.objects:
        if o.kind not in MONITOR_KINDS:
            continue
        prefix = MONITOR_KINDS[o.kind]
        labels = o.body["metadata"].get("labels") or {}
        ns = o.namespace or ""
        ns_labels = {"kubernetes.io/metadata.name": ns, **namespaces.get(ns, {})}
        if not (_matches(spec.get(f"{prefix}Selector"), labels)
                and _matches(spec.get(f"{prefix}NamespaceSelector"), ns_labels)):
            missed.append(f"{o.kind} {ns}/{o.name}")
    assert not missed, f"{stack}: Prometheus does not select {missed}"


def test_grafana_admin_credentials_come_from_a_secret(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, _, _, rendering = rendered
    grafana = [b for b in _bodies(rendering, "Deployment") if "grafana" in b["metadata"]["name"]]
    if not grafana:
        pytest.skip(f"{stack} renders no Grafana")
    env = {e["name"]: e for c in grafana[0]["spec"]["template"]["spec"]["containers"] for e in c.get("env") or []}
    for name in ("GF_SECURITY_ADMIN_USER", "GF_SECURITY_ADMIN_PASSWORD"):
        assert "secretKeyRef" in (env[name].get("valueFrom") or {}), f"{stack}: {name} is not from a Secret"
        assert "value" not in env[name]


def test_dcgm_runs_only_on_gpu_nodes_and_probes_late_enough(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, _, _, rendering = rendered
    dcgm = [b for b in _bodies(rendering, "DaemonSet") if "dcgm" in b["metadata"]["name"]]
    if not dcgm:
        pytest.skip(f"{stack} renders no DCGM exporter")
    pod = dcgm[0]["spec"]["template"]["spec"]
    required = (((pod.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    keys = {e["key"] for t in required.get("nodeSelectorTerms") or [] for e in t.get("matchExpressions") or []}
    keys |= set((pod.get("nodeSelector") or {}).keys())
    assert keys & {"cloud.google.com/gke-accelerator", "nvidia.com/gpu.present", "k8s.amazonaws.com/accelerator",
                   "nvidia.com/gpu"}, f"{stack}: DCGM is not bound to GPU nodes ({keys})"
    for c in pod["containers"]:
        for probe in ("livenessProbe", "readinessProbe"):
            if probe in c:
                assert c[probe].get("initialDelaySeconds", 0) >= 20, f"{stack}: {probe} too early"


def test_no_upstream_default_credential_survives(rendered: tuple[str, Any, Any, Rendering]) -> None:
    stack, _, plan, rendering = rendered
    findings = list(check_default_credentials(collect_objects(plan, [], rendering)))
    assert not findings, f"{stack}: {[f.message for f in findings]}"
    assert DEFAULT_CREDENTIALS, "the check's list of upstream defaults is empty"
