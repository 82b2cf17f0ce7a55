"""Warm capacity on the real scheduler (kube-scheduler 1.34 with kwok nodes, the session's control plane):
the placeholders the stack renders (components/warm/warm_capacity.py) hold a GPU node's GPUs, and a pod with no
priority class that finds no free GPU preempts one and is bound to that node, while the Deployment's
replacement placeholder waits, as the simulator models it (infra/simulate/warm.py)."""

from __future__ import annotations

import copy
import time
from typing import Any

from gpu_platform.components.core.labels import GPU_RESOURCE
from gpu_platform.infra.apply.apply import ApplyObject, ApplyResult, Server, apply_objects, create_nodes
from gpu_platform.infra.apply.nodes import pool_nodes

NODE = "warm-t4-kwok-0"


def _warm_objects() -> tuple[list[dict[str, Any]], Any]:
    from tests.infra.test_warm_capacity import _objects, _stack

    shape = next(s for s in _stack().pool_shapes() if s.name == "t4")
    bodies = [
        copy.deepcopy(r.inputs)
        for kind in ("Namespace", "PriorityClass", "Deployment")
        for r in _objects(kind)
        if r.name in ("dev-gke-warm-namespace", "dev-gke-warm-priority-class", "dev-gke-warm-t4")
    ]
    return bodies, shape


def _pods(server: Server, namespace: str) -> list[dict[str, Any]]:
    status, document, _ = server.request("GET", f"/api/v1/namespaces/{namespace}/pods")
    return document.get("items", []) if status == 200 else []


def _until(check: Any, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.5)
    return check()


def test_a_pod_preempts_a_placeholder_on_the_real_scheduler(control_plane: Any) -> None:
    server = Server(control_plane.api_client())
    bodies, shape = _warm_objects()
    (deployment,) = [b for b in bodies if b["kind"] == "Deployment"]
    deployment["spec"]["replicas"] = shape.gpus_per_node  # one t4 node's GPUs, all held by placeholders
    node = pool_nodes([shape], {"t4": 1})[0]
    node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = NODE
    result = ApplyResult()
    create_nodes(server, [node], result)
    apply_objects(server, [ApplyObject(b, "warm capacity") for b in bodies], result)
    assert not result.refusals, result.refusals[0].line
    namespace = deployment["metadata"]["namespace"]

    def held() -> bool:
        return sum(1 for p in _pods(server, namespace) if p["spec"].get("nodeName") == NODE) == shape.gpus_per_node

    assert _until(held), [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in _pods(server, namespace)]
    # A workload pod (no priority class: priority 0) on the same pool, asking one GPU: none is free.
    apply_objects(server, [ApplyObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "warm-tenant"}}, "test")], result)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "worker", "namespace": "warm-tenant"},
        "spec": {
            **shape.placement.pod_spec_fields(),
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi", GPU_RESOURCE: "1"}, "limits": {GPU_RESOURCE: "1"}},
                }
            ],
        },
    }
    apply_objects(server, [ApplyObject(pod, "test")], result)
    assert not result.refusals, result.refusals[0].line

    def bound() -> bool:
        return any(p["metadata"]["name"] == "worker" and p["spec"].get("nodeName") == NODE for p in _pods(server, "warm-tenant"))

    assert _until(bound), _pods(server, "warm-tenant")

    def replaced() -> list[dict[str, Any]] | None:
        pods = [p for p in _pods(server, namespace) if not p["metadata"].get("deletionTimestamp")]
        on_node = [p for p in pods if p["spec"].get("nodeName") == NODE]
        pending = [p for p in pods if not p["spec"].get("nodeName")]
        return pods if len(on_node) == shape.gpus_per_node - 1 and len(pending) == 1 else None

    # One placeholder evicted (the fewest victims), its replacement pending: the autoscaler's cue.
    assert _until(replaced), [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in _pods(server, namespace)]
