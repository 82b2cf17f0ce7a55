"""Checks over everything the cluster gets: the plan's own Kubernetes objects and the objects
its Helm releases and Kustomize directories render to (infra/preview/render.py).

Each check returns findings with the object they are about; the preview prints them and
counts them as violations (exit 1):

- ``duplicate``: one object (group, kind, namespace, name) declared twice: plan vs release,
  release vs release, directory vs directory;
- ``crd-order``: a custom resource applied by a resource that does not wait for the resource
  installing its CRD (neither the same release/directory nor one it depends on);
- ``alert-unscraped``: an alert or recording rule of the stack's own PrometheusRules reads a
  metric that nothing in the stack scrapes (no ServiceMonitor/PodMonitor/scrape job that
  exposes it, no recording rule that produces it);
- ``default-credential``: an upstream default credential or login left in what the cluster
  gets (see DEFAULT_CREDENTIALS).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.infra.preview.engine import Plan, RecordedResource
from gpu_platform.infra.preview.manifests import ObjectView

__all__ = [
    "DEFAULT_CREDENTIALS",
    "ClusterFinding",
    "Obj",
    "check_alert_metrics",
    "check_crd_order",
    "check_default_credentials",
    "check_duplicates",
    "collect_objects",
    "promql_metrics",
]


@dataclass(frozen=True)
class Obj(ObjectView):
    """A Kubernetes object the cluster gets, with what declares it."""

    body: dict[str, Any]
    owner: RecordedResource
    """The plan resource that applies it: the object's own resource, or its release/directory."""
    rendered: bool

    @property
    def where(self) -> str:
        return f"{self.owner.name} ({'rendered' if self.rendered else 'plan'})"


@dataclass(frozen=True)
class ClusterFinding:
    check: str
    resource: str
    message: str


def collect_objects(plan: Plan, plan_objects: Iterable[Any], rendering: Any | None) -> list[Obj]:
    """The plan's objects and every rendered object, secrets unwrapped."""
    objects = [Obj(o.body, o.resource, False) for o in plan_objects]
    if rendering is not None:
        objects += [Obj(o.plain_body, o.source.resource, True) for o in rendering.objects]
    return objects


# --- duplicates -------------------------------------------------------------------------------


def check_duplicates(objects: list[Obj]) -> Iterator[ClusterFinding]:
    seen: dict[tuple[str, str, str | None, str], Obj] = {}
    for obj in objects:
        key = (obj.group, obj.kind, obj.namespace, obj.name)
        first = seen.get(key)
        if first is None:
            seen[key] = obj
            continue
        if first.owner.urn == obj.owner.urn and not first.rendered and not obj.rendered:
            continue
        yield ClusterFinding(
            "duplicate",
            obj.owner.name,
            f"{obj.label} is declared by {first.where} and again by {obj.where}: the second apply overwrites or fails on the first; declare it once",
        )


# --- CRDs before their custom resources -------------------------------------------------------

# APIs the managed clusters serve themselves (no CRD in the stack installs them). Keyed by the cloud's
# name (Cloud is a StrEnum), so a plan's cloud read back as a string finds its entry too.
CLUSTER_PROVIDED_GROUPS: dict[str, set[str]] = {
    Cloud.GCP: {
        "cloud.google.com",
        "networking.gke.io",
        "monitoring.googleapis.com",
        "snapshot.storage.k8s.io",
        "nodemanagement.gke.io",
        "hub.gke.io",
        "auto.gke.io",
        "internal.autoscaling.gke.io",
        "autoscaling.x-k8s.io",
    },
    Cloud.AWS: {"crd.k8s.amazonaws.com", "vpcresources.k8s.aws", "networking.k8s.aws", "snapshot.storage.k8s.io"},
}


def _dependencies(plan: Plan) -> dict[str, set[str]]:
    """URN -> every URN it waits for (depends_on, transitively; a component's dependency
    means all of its children)."""
    children: dict[str, list[str]] = {}
    for r in plan.resources:
        if r.parent:
            children.setdefault(r.parent, []).append(r.urn)
    direct = {r.urn: set(r.depends_on) for r in plan.resources}

    def expand(urn: str) -> set[str]:
        out = {urn}
        for child in children.get(urn, []):
            out |= expand(child)
        return out

    closure: dict[str, set[str]] = {}

    def deps(urn: str, stack: frozenset[str] = frozenset()) -> set[str]:
        if urn in closure:
            return closure[urn]
        found: set[str] = set()
        for d in direct.get(urn, set()):
            for e in expand(d):
                if e not in stack:
                    found |= {e} | deps(e, stack | {urn})
        closure[urn] = found
        return found

    for urn in direct:
        deps(urn)
    return closure


def check_crd_order(
    plan: Plan, objects: list[Obj], crds_by_owner: dict[str, list[dict[str, Any]]], builtin_groups: frozenset[str], cloud: Cloud | str
) -> Iterator[ClusterFinding]:
    """Every custom resource waits for the resource that installs its CRD."""
    installers: dict[tuple[str, str], set[str]] = {}
    for owner, crds in crds_by_owner.items():
        for crd in crds:
            spec = crd.get("spec") or {}
            installers.setdefault((str(spec.get("group")), str((spec.get("names") or {}).get("kind"))), set()).add(owner)
    for obj in objects:
        if obj.kind == "CustomResourceDefinition" and obj.rendered is False:
            spec = obj.body.get("spec") or {}
            installers.setdefault((str(spec.get("group")), str((spec.get("names") or {}).get("kind"))), set()).add(obj.owner.urn)
    by_urn = plan.by_urn()
    deps = _dependencies(plan)
    for obj in objects:
        if obj.group in builtin_groups or obj.group == "" or obj.group in CLUSTER_PROVIDED_GROUPS.get(cloud, set()):
            continue
        owners = installers.get((obj.group, obj.kind))
        if not owners:
            yield ClusterFinding(
                "crd-order",
                obj.owner.name,
                f"{obj.label} ({obj.api_version}) from {obj.where}: nothing in the stack installs its CRD "
                f"and {cloud.upper()} clusters do not serve {obj.group}",
            )
            continue
        if obj.owner.urn in owners or owners & deps.get(obj.owner.urn, set()):
            continue
        names = ", ".join(sorted(by_urn[u].name for u in owners if u in by_urn))
        yield ClusterFinding(
            "crd-order",
            obj.owner.name,
            f"{obj.label} ({obj.api_version}) from {obj.where} can be applied before its CRD: {names} installs it "
            f"and {obj.owner.name} does not depend on it; add depends_on",
        )


# --- alerts read scraped metrics --------------------------------------------------------------

# What each scrape target exposes, by metric-name prefix. A target is known by its
# ServiceMonitor/PodMonitor (or Service) labels app.kubernetes.io/name, app or k8s-app, or,
# for kube-prometheus-stack's own ServiceMonitors, by their name suffix.
EXPORTER_PREFIXES: dict[str, tuple[str, ...]] = {
    "kube-state-metrics": ("kube_",),
    "prometheus-node-exporter": ("node_",),
    "node-exporter": ("node_",),
    "kubelet": (
        "kubelet_",
        "container_",
        "machine_",
        "volume_manager_",
        "storage_operation_",
        "csi_",
        "prober_",
        "kubernetes_",
        "rest_client_",
        "process_",
        "go_",
    ),
    "dcgm-exporter": ("DCGM_",),
    "cluster-autoscaler": ("cluster_autoscaler_",),
    "prometheus": ("prometheus_", "net_conntrack_", "process_", "go_"),
    "alertmanager": ("alertmanager_",),
    "apiserver": ("apiserver_", "etcd_", "workqueue_", "authentication_", "authorization_", "rest_client_", "aggregator_", "kubernetes_", "process_", "go_"),
    "coredns": ("coredns_",),
    "kube-dns": ("coredns_",),
    "grafana": ("grafana_",),
    "kube-prometheus-stack-operator": ("prometheus_operator_",),
    "prometheus-operator": ("prometheus_operator_",),
    "kube-proxy": ("kubeproxy_",),
    "kube-etcd": ("etcd_",),
    "kube-scheduler": ("scheduler_",),
    "kube-controller-manager": ("node_collector_", "workqueue_", "attachdetach_controller_"),
}
SYNTHETIC = ("up", "scrape_", "ALERTS", "ALERTS_FOR_STATE")


def promql_metrics(expr: str) -> set[str]:
    """The metric names an expression reads (components.monitoring.prometheus_args.expression_metrics)."""
    from gpu_platform.components.monitoring.prometheus_args import expression_metrics

    return expression_metrics(expr)


def _target_names(obj: Obj) -> set[str]:
    metadata = obj.body.get("metadata") or {}
    labels = metadata.get("labels") or {}
    names = {str(labels[k]) for k in ("app.kubernetes.io/name", "app", "k8s-app", "app.kubernetes.io/component") if k in labels}
    name = str(metadata.get("name") or "")
    names |= {key for key in EXPORTER_PREFIXES if name.endswith(key)}
    return names


def scraped_prefixes(objects: list[Obj]) -> tuple[set[str], list[str]]:
    """(metric prefixes something scrapes, names of the scrape targets)."""
    prefixes: set[str] = set()
    targets: list[str] = []
    for obj in objects:
        if obj.kind in ("ServiceMonitor", "PodMonitor"):
            targets.append(obj.label)
            for name in _target_names(obj):
                prefixes |= set(EXPORTER_PREFIXES.get(name, ()))
        if obj.kind == "Prometheus":
            # Prometheus scrapes itself when its own ServiceMonitor is there; counted above.
            pass
    return prefixes, targets


def _rules(obj: Obj) -> Iterator[dict[str, Any]]:
    for group in (obj.body.get("spec") or {}).get("groups") or []:
        yield from group.get("rules") or []


def check_alert_metrics(objects: list[Obj]) -> Iterator[ClusterFinding]:
    """The stack's own PrometheusRules (declared by the program) read only scraped metrics."""
    prefixes, _ = scraped_prefixes(objects)
    recorded = {r["record"] for o in objects if o.kind == "PrometheusRule" for r in _rules(o) if r.get("record")}
    for obj in objects:
        if obj.kind != "PrometheusRule" or obj.rendered:
            continue
        for rule in _rules(obj):
            name = rule.get("alert") or rule.get("record")
            for metric in sorted(promql_metrics(str(rule.get("expr", "")))):
                if metric in recorded or metric.startswith(SYNTHETIC) or metric.startswith(tuple(prefixes)):
                    continue
                yield ClusterFinding(
                    "alert-unscraped",
                    obj.owner.name,
                    f"{obj.label}: rule {name} reads {metric}, which nothing in the stack scrapes "
                    "(no ServiceMonitor or PodMonitor of an exporter of it): the rule can never fire",
                )


# --- upstream default credentials -------------------------------------------------------------

DEFAULT_CREDENTIALS: dict[str, str] = {
    "minio123": "the object store's upstream secret key (minio / minio123)",
    "user@example.com": "upstream Kubeflow's default login and profile owner",
    "$2y$12$4K/VkmDd1q1Orb3xAt82zu8gk7Ad6ReFR4LCP9UeYE90NLiN9Df72": "the bcrypt hash of upstream Kubeflow's default password 12341234",
    "pUBnBOY80SnXgjibTYM9ZWNzY2xreNGQok": "the oauth2-proxy <-> Dex client secret upstream Kubeflow ships",
}
"""Values kubeflow/manifests and kubeflow/pipelines ship as credentials or logins; none may
reach a cluster. (An empty MySQL root password is checked apart: MYSQL_ALLOW_EMPTY_PASSWORD.)"""


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value


def _decoded(obj: Obj) -> dict[str, Any]:
    """A Secret's data decoded, so base64 does not hide a default."""
    import base64
    import binascii

    if obj.kind != "Secret":
        return obj.body
    data = {}
    for key, value in (obj.body.get("data") or {}).items():
        try:
            data[key] = base64.b64decode(str(value), validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            data[key] = value
    return {**obj.body, "data": data}


def check_default_credentials(objects: list[Obj]) -> Iterator[ClusterFinding]:
    for obj in objects:
        # A CRD's schema holds no credential; the rest is searched in full.
        if not obj.rendered or obj.kind == "CustomResourceDefinition":
            continue
        for path, text in _strings(_decoded(obj)):
            for value, what in DEFAULT_CREDENTIALS.items():
                if value in text:
                    yield ClusterFinding(
                        "default-credential",
                        obj.owner.name,
                        f"{obj.label} ({obj.where}) keeps {what} at {path}: generate or configure it",
                    )
            if path.endswith(".name") and text == "MYSQL_ALLOW_EMPTY_PASSWORD":
                yield ClusterFinding(
                    "default-credential",
                    obj.owner.name,
                    f"{obj.label} ({obj.where}) starts MySQL with an empty root password ({path}): set MYSQL_ROOT_PASSWORD from a generated secret",
                )
