"""Scheduling judged against the plan's pools (issue 36 item 2): the real kube-scheduler places the pods on
kwok nodes shaped like the pools; a pod it cannot place is either expected to wait here or a violation.

The pools are the plan's (``StackConfig.pool_shapes()`` and ``pool_zones()``, made into nodes by
infra/apply/nodes.py); nothing here derives them again or decides a fit itself. Each pool starts with its
minimum (at least one node). While pods are pending, the cluster autoscaler's part is played with the real
scheduler: every pool below its maximum gets one more node, the scheduler places what it can, and a new
node that took no pod (DaemonSet pods aside) is removed again, as the autoscaler would not have made it;
until no pod is pending or no new node took one. Then each pod still pending is:

- **expected** when it waits for a PersistentVolumeClaim that is not bound: no volume provisioner runs
  here (the cloud's CSI driver provisions it on the cluster). One ``expected:`` line each, never a failure
  (and one per custom resource carrying a pod spec: its operator, a kwok pod, makes no pods here);
- a **violation** otherwise: it fits no node of any pool even with every pool at its maximum (no pool's
  labels match its node selector or affinity, it tolerates no pool's taints, it asks for more than a
  node has, a claim it mounts does not exist). One line per workload: what its pod needs, and the
  scheduler's own reason.

The pools scaled above their minimum are named as expected too (the autoscaler would scale them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_platform.infra.apply.apply import ApplyResult, Server, create_nodes, settle
from gpu_platform.infra.apply.nodes import Pools, node_count

__all__ = ["MAX_ROUNDS", "Scheduling", "judge_scheduling"]

MAX_ROUNDS = 12
"""Autoscaling rounds at most (each adds at most one node per pool below its maximum)."""


@dataclass
class Scheduling:
    """What the scheduler did with the pods, judged against the pools."""

    pods: list[dict[str, Any]] = field(default_factory=list)
    """Every pod at the end."""
    unfit: list[str] = field(default_factory=list)
    """One line per workload (or bare pod) whose pods fit no node of any pool at its maximum."""
    expected: list[str] = field(default_factory=list)
    """One line per pod expected to stay pending here, and per pool scaled above its minimum, with why."""
    nodes: dict[str, int] = field(default_factory=dict)
    """Pool -> kwok nodes it has at the end."""


def _pod_key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}"


def _owner(pod: dict[str, Any]) -> tuple[str, str] | None:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("kind")), str(ref.get("name"))
    return None


def _daemon(pod: dict[str, Any]) -> bool:
    owner = _owner(pod)
    return owner is not None and owner[0] == "DaemonSet"


def _items(server: Server, path: str) -> list[dict[str, Any]]:
    status, document, _ = server.request("GET", path)
    return list(document.get("items", [])) if status == 200 else []


def _claims(pod: dict[str, Any]) -> list[str]:
    return [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"].get("volumes") or [] if (v.get("persistentVolumeClaim") or {}).get("claimName")]


def _waits_for_claim(pod: dict[str, Any], claims: dict[tuple[str, str], dict[str, Any]]) -> str | None:
    """Why the pod waits for a claim no provisioner binds here, or None (its claims are bound, or one is missing)."""
    namespace = str(pod["metadata"].get("namespace"))
    for name in _claims(pod):
        claim = claims.get((namespace, name))
        if claim is None:
            return None  # a claim that does not exist: the pod's own problem, not the provisioner's
        if (claim.get("status") or {}).get("phase") != "Bound":
            storage_class = (claim.get("spec") or {}).get("storageClassName")
            which = f"storage class {storage_class}" if storage_class else "the default storage class"
            return f"waits for PersistentVolumeClaim {namespace}/{name} ({which}): no volume provisioner runs here; the cluster's CSI driver provisions it"
    return None


def _pending(pods: Sequence[dict[str, Any]], claims: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods the scheduler has not placed that more nodes could help (not those waiting for a volume, nor a
    DaemonSet's, which is made for one node)."""
    return [
        p
        for p in pods
        if not p["spec"].get("nodeName")
        and (p.get("status") or {}).get("phase", "Pending") == "Pending"
        and not _daemon(p)
        and _waits_for_claim(p, claims) is None
    ]


def _remove_node(server: Server, name: str, pods: Sequence[dict[str, Any]]) -> None:
    server.request("DELETE", f"/api/v1/nodes/{name}")
    for pod in pods:
        if pod["spec"].get("nodeName") == name:
            namespace, pod_name = pod["metadata"].get("namespace"), pod["metadata"]["name"]
            server.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{pod_name}", query=[("gracePeriodSeconds", "0")])


def _autoscale(
    server: Server, pools: Pools, result: ApplyResult, pods: list[dict[str, Any]], namespaces: set[str]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    counts = {s.name: node_count(s) for s in pools.shapes}
    for _ in range(MAX_ROUNDS):
        claims = _claims_by_key(server)
        if not _pending(pods, claims):
            break
        grow = [s for s in pools.shapes if counts[s.name] < s.max_nodes]
        if not grow:
            break
        added = {}
        for shape in grow:
            (node,) = pools.nodes([shape], {shape.name: 1}, {shape.name: counts[shape.name]})
            added[node["metadata"]["name"]] = shape.name
            create_nodes(server, [node], result)
        pods = [p for p in settle(server) if p["metadata"].get("namespace") in namespaces]
        removed = set()
        for name, pool in added.items():
            if any(p["spec"].get("nodeName") == name and not _daemon(p) for p in pods):
                counts[pool] += 1
            else:
                removed.add(name)
                _remove_node(server, name, pods)
        pods = [p for p in pods if p["spec"].get("nodeName") not in removed and _daemon_node(p) not in removed]
        if len(removed) == len(added):
            break
    return pods, counts


def _claims_by_key(server: Server) -> dict[tuple[str, str], dict[str, Any]]:
    return {(str(c["metadata"].get("namespace")), str(c["metadata"]["name"])): c for c in _items(server, "/api/v1/persistentvolumeclaims")}


def _daemon_node(pod: dict[str, Any]) -> str | None:
    """The node a DaemonSet pod is made for (its required affinity to one node's name), else None."""
    if not _daemon(pod):
        return None
    required = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms"
    )
    for term in required or []:
        for field_ in term.get("matchFields") or []:
            if field_.get("key") == "metadata.name" and field_.get("values"):
                return str(field_["values"][0])
    return None


def _quantity_text(pod: dict[str, Any]) -> str:
    totals: dict[str, list[str]] = {}
    for container in pod["spec"].get("containers") or []:
        resources = container.get("resources") or {}
        for key, value in {**(resources.get("limits") or {}), **(resources.get("requests") or {})}.items():
            totals.setdefault(key, []).append(str(value))
    return ", ".join(f"{key} {'+'.join(values)}" for key, values in sorted(totals.items())) or "no requests"


def _needs(pod: dict[str, Any]) -> str:
    """What the pod asks of a node: requests, node selector, required affinity, tolerations."""
    spec = pod["spec"]
    parts = [f"requests {_quantity_text(pod)}"]
    if spec.get("nodeSelector"):
        parts.append("node selector " + ", ".join(f"{k}={v}" for k, v in sorted(spec["nodeSelector"].items())))
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    for term in required or []:
        for expression in term.get("matchExpressions") or []:
            parts.append(f"node affinity {expression.get('key')} {expression.get('operator')} {','.join(expression.get('values') or [])}".rstrip())
    tolerated = sorted({str(t.get("key") or "*") for t in spec.get("tolerations") or [] if not str(t.get("key") or "").startswith("node.kubernetes.io/")})
    parts.append("tolerates " + (", ".join(tolerated) if tolerated else "no taint"))
    return "; ".join(parts)


def _scheduler_reason(pod: dict[str, Any]) -> str:
    conditions = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or []}
    message = " ".join(str((conditions.get("PodScheduled") or {}).get("message") or "not scheduled yet").split())
    return message.split(" preemption: ", 1)[0].removesuffix(" no new claims to deallocate,").rstrip(",")


def _workload(pod: dict[str, Any], replica_sets: dict[tuple[str, str], tuple[str, str] | None]) -> str:
    owner = _owner(pod)
    namespace = str(pod["metadata"].get("namespace"))
    if owner is None:
        return f"Pod {_pod_key(pod)}"
    kind, name = owner
    if kind == "ReplicaSet":
        parent = replica_sets.get((namespace, name))
        if parent is not None:
            kind, name = parent
    return f"{kind} {namespace}/{name}"


BUILTIN_GROUPS = frozenset({"", "apps", "batch", "policy", "autoscaling", "networking.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io"})
"""API groups of the kinds kube-controller-manager turns into pods (or that make none)."""


def _has_pod_spec(value: Any) -> bool:
    if isinstance(value, dict):
        if isinstance(value.get("containers"), list):
            return True
        return any(_has_pod_spec(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_pod_spec(v) for v in value)
    return False


def operator_pods(objects: Sequence[Any]) -> list[str]:
    """One line per custom resource that carries a pod spec: its pods are made by its operator, whose own
    pods kwok only pretends to run, so they never exist here (a DaskCluster's scheduler and workers, a
    Kubeflow Notebook's StatefulSet)."""
    lines = []
    for o in objects:
        group = o.api_version.rpartition("/")[0]
        if group not in BUILTIN_GROUPS and "." in group and o.kind != "CustomResourceDefinition" and _has_pod_spec(o.body.get("spec")):
            lines.append(f"operator: {o.label} ({o.source}): its pods are made by its operator, which runs no container here")
    return lines


def judge_scheduling(server: Server, pools: Pools, result: ApplyResult, pods: list[dict[str, Any]]) -> Scheduling:
    """Play the autoscaler with the real scheduler (bounded), then judge every pod still pending in a
    namespace the stack applied to (a cluster of one's own may run other pods: not judged)."""
    namespaces = {o.namespace for o in result.applied if o.namespace} | {o.name for o in result.applied if o.kind == "Namespace"}
    pods = [p for p in pods if p["metadata"].get("namespace") in namespaces]
    pods, counts = _autoscale(server, pools, result, pods, namespaces)
    claims = _claims_by_key(server)
    replica_sets: dict[tuple[str, str], tuple[str, str] | None] = {}
    for rs in _items(server, "/apis/apps/v1/replicasets"):
        parent = next(((str(r.get("kind")), str(r.get("name"))) for r in rs["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
        replica_sets[(str(rs["metadata"].get("namespace")), str(rs["metadata"]["name"]))] = parent
    judged = Scheduling(pods=pods, nodes=counts)
    unfit: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        if pod["spec"].get("nodeName") or (pod.get("status") or {}).get("phase", "Pending") != "Pending":
            continue
        waits = _waits_for_claim(pod, claims)
        if waits is not None:
            judged.expected.append(f"pending: Pod {_pod_key(pod)}: {waits}")
            continue
        unfit.setdefault(_workload(pod, replica_sets), []).append(pod)
    for workload, stuck in unfit.items():
        pod = stuck[0]
        pools_text = ", ".join(f"{s.name} at {s.max_nodes}" for s in pools.shapes)
        missing = [c for c in _claims(pod) if (str(pod["metadata"].get("namespace")), c) not in claims]
        why = f"mounts PersistentVolumeClaim {', '.join(missing)}, which does not exist" if missing else _scheduler_reason(pod)
        judged.unfit.append(
            f"{workload} ({len(stuck)} pod{'s' if len(stuck) > 1 else ''} pending): fits no node of any pool at its maximum ({pools_text}): "
            f"needs {_needs(pod)}; the scheduler: {why}"
        )
    judged.expected += operator_pods(result.applied)
    for shape in pools.shapes:
        if counts[shape.name] > node_count(shape):
            judged.expected.append(
                f"scale-up: pool {shape.name} to {counts[shape.name]} nodes (minimum {shape.min_nodes}, maximum {shape.max_nodes}) "
                "for pods its nodes at the minimum could not take: the autoscaler would add them"
            )
    return judged
