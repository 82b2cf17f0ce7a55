"""Prometheus scrapes Kueue, asserted on what the cluster gets: each shipped stack with queues and a
Prometheus, rendered offline at its pins (the Kueue chart 0.19.2, kube-prometheus-stack), has the Kueue
chart's ServiceMonitor on the port and path its metrics Service serves (the controller's metrics address),
selected by the stack's Prometheus, which may get /metrics (Kueue's metrics endpoint authorizes the
scraper's token); and the controller's Configuration turns on the quota gauges `report` reads.
Without ../shared/reference/upstream (or kubectl) these skip."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_platform.infra.preview.render import Rendering
from tests.conftest import kubectl_or_skip, upstream_or_skip
from tests.infra.test_rendered_intent import STACKS, _matches, _rendered

QUEUED = [s for s in STACKS if s in ("prod-gke", "prod-eks")]
"""The shipped stacks with both queues and monitoring (a test below checks the list is all of them)."""


def _one(rendering: Rendering, kind: str, namespace: str | None = None, name_suffix: str = "") -> dict[str, Any]:
    found = [o.body for o in rendering.objects if o.kind == kind and (namespace is None or o.namespace == namespace) and o.name.endswith(name_suffix)]
    assert len(found) == 1, f"{kind} {namespace}/*{name_suffix}: {len(found)} rendered"
    return found[0]


@pytest.fixture(params=QUEUED)
def rendered(request: pytest.FixtureRequest) -> tuple[str, Any, Rendering]:
    upstream_or_skip()
    kubectl_or_skip()
    config, _, rendering = _rendered(request.param)
    return request.param, config, rendering


def test_the_queued_stacks_are_every_shipped_stack_with_queues_and_monitoring() -> None:
    from gpu_platform.infra.stack.read import load_stack
    from tests.conftest import PROJECT_DIR

    both = [s for s in STACKS if (c := load_stack(PROJECT_DIR, s)).queues is not None and c.monitoring.enabled]
    assert both == QUEUED


def test_prometheus_scrapes_kueues_metrics_service(rendered: tuple[str, Any, Rendering]) -> None:
    stack, config, rendering = rendered
    ns = config.queues.namespace
    monitor = _one(rendering, "ServiceMonitor", ns, "-controller-manager-metrics-monitor")
    service = _one(rendering, "Service", ns, "-controller-manager-metrics-service")
    deployment = _one(rendering, "Deployment", ns, "-controller-manager")
    # The monitor selects the metrics Service (and only it among Kueue's Services).
    selector = monitor["spec"]["selector"]
    kueue_services = [o.body for o in rendering.objects if o.kind == "Service" and o.namespace == ns]
    assert [s["metadata"]["name"] for s in kueue_services if _matches(selector, s["metadata"]["labels"])] == [service["metadata"]["name"]]
    (endpoint,) = monitor["spec"]["endpoints"]
    (port,) = [p for p in service["spec"]["ports"] if p["name"] == endpoint["port"]]
    assert (endpoint["path"], endpoint["scheme"]) == ("/metrics", "https")
    # The Service's target is the controller's metrics port, the address its Configuration binds.
    (container,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "manager"]
    ports = {p.get("name"): p["containerPort"] for p in container["ports"]}
    target = port["targetPort"]
    assert (ports["metrics"] if target == "metrics" else target) == ports["metrics"]
    config_map = next(
        o.body for o in rendering.objects if o.kind == "ConfigMap" and o.namespace == ns and "controller_manager_config.yaml" in (o.body.get("data") or {})
    )
    manager = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
    assert manager["metrics"]["bindAddress"] == f":{ports['metrics']}"
    assert manager["metrics"]["enableClusterQueueResources"] is True  # kueue_cluster_queue_resource_usage, _nominal_quota
    # The stack's Prometheus selects the monitor, in Kueue's namespace.
    prometheus = _one(rendering, "Prometheus")["spec"]
    namespaces = {b["metadata"]["name"]: b["metadata"].get("labels") or {} for b in (o.body for o in rendering.objects) if b["kind"] == "Namespace"}
    assert _matches(prometheus.get("serviceMonitorSelector"), monitor["metadata"].get("labels") or {}), stack
    assert _matches(prometheus.get("serviceMonitorNamespaceSelector"), {"kubernetes.io/metadata.name": ns, **namespaces.get(ns, {})}), stack
    # Kueue's endpoint authorizes the bearer token with a SubjectAccessReview (get on /metrics): Prometheus's
    # account may, and its token is the file the monitor names.
    account = prometheus.get("serviceAccountName")
    role = next(o.body for o in rendering.objects if o.kind == "ClusterRoleBinding" and any(s.get("name") == account for s in o.body.get("subjects") or []))[
        "roleRef"
    ]["name"]
    rules = _one(rendering, "ClusterRole", None, role)["rules"]
    assert any("/metrics" in r.get("nonResourceURLs", []) and "get" in r["verbs"] for r in rules)
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert prometheus.get("automountServiceAccountToken", True) is True
    assert not (prometheus.get("arbitraryFSAccessThroughSMs") or {}).get("deny"), "a token file would be refused"
