"""Scheduling judged against the plan's pools (issue 36 item 2), on a control plane of its own (kwok nodes
come and go here): the pools are dev-eks's plan (StackConfig.pool_shapes() and pool_zones()); the real
scheduler places the pods, the autoscaler's part is played by adding nodes up to each pool's maximum.

A GPU pod that fits no pool is a violation, one line per workload naming what its pod needs; a pod that
waits for a claim no local provisioner binds, and a pool scaled above its minimum, are expected lines,
never violations.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gpu_platform.infra.apply.apply import ApplyObject, ApplyResult, Server
from gpu_platform.infra.apply.judge import apply_and_judge
from gpu_platform.infra.apply.nodes import Pools
from tests.conftest import PROJECT_DIR, control_plane_gate_or_skip

IMAGE = "busybox@sha256:" + "a" * 64
NAMESPACE = "sched"
GPU = "nvidia.com/gpu"
T4 = {"gpu-platform.io/gpu-class": "t4"}
TOLERATE_GPU = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]


def _deployment(name: str, replicas: int = 1, gpus: int = 1, selector: dict[str, str] | None = None, tolerations: Any = None, **pod: Any) -> ApplyObject:
    resources: dict[str, Any] = {"requests": {"cpu": "500m", "memory": "512Mi"}}
    if gpus:
        resources = {"requests": {**resources["requests"], GPU: str(gpus)}, "limits": {GPU: str(gpus)}}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": IMAGE, "resources": resources}], **pod}
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    labels = {"app": name}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": spec}},
    }
    return ApplyObject(body, f"resource {name}")


def _claim_volume(claim: str) -> dict[str, Any]:
    return {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}


@pytest.fixture(scope="module")
def judged() -> Iterator[ApplyResult]:
    from gpu_platform.infra.apply.local import ControlPlaneError, control_plane, find_binaries
    from gpu_platform.infra.stack.read import load_stack

    control_plane_gate_or_skip()
    try:
        binaries = find_binaries(build=False)
    except ControlPlaneError as exc:
        pytest.skip(f"the control plane is not built (tests/kube/build.sh; the control_plane fixture builds it): {exc}")
    config = load_stack(PROJECT_DIR, "dev-eks")
    pools = Pools(config.pool_shapes(), config.pool_zones())
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": NAMESPACE},
        "spec": {"storageClassName": "gp3", "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    objects = [
        ApplyObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, "test"),
        ApplyObject(claim, "resource data"),
        _deployment("fits", replicas=3, selector=T4, tolerations=TOLERATE_GPU),
        _deployment("h100", selector={"k8s.amazonaws.com/accelerator": "nvidia-h100-80gb"}, tolerations=TOLERATE_GPU),
        _deployment("untolerated", selector=T4),
        _deployment("greedy", gpus=4, selector=T4, tolerations=TOLERATE_GPU),
        _deployment("database", gpus=0, **_claim_volume("data")),
        _deployment("orphan", gpus=0, **_claim_volume("nope")),
    ]
    with control_plane(binaries) as plane:
        yield apply_and_judge(Server(plane.api_client()), objects, pools)


def _unfit(result: ApplyResult, name: str) -> str:
    (line,) = [u for u in result.unfit if u.startswith(f"Deployment {NAMESPACE}/{name} ")]
    return line


def test_a_gpu_pod_whose_selector_matches_no_pool_is_a_violation(judged: ApplyResult) -> None:
    line = _unfit(judged, "h100")
    assert line.startswith("Deployment sched/h100 (1 pod pending): fits no node of any pool at its maximum (system at 3, t4 at 8, scheduler at 2): "), line
    assert (
        "needs requests cpu 500m, memory 512Mi, nvidia.com/gpu 1; node selector k8s.amazonaws.com/accelerator=nvidia-h100-80gb; tolerates nvidia.com/gpu"
        in line
    )
    assert "didn't match Pod's node affinity/selector" in line


def test_a_gpu_pod_without_the_gpu_taints_toleration_is_a_violation(judged: ApplyResult) -> None:
    line = _unfit(judged, "untolerated")
    assert "node selector gpu-platform.io/gpu-class=t4; tolerates no taint; the scheduler: " in line, line
    assert "untolerated taint" in line, line


def test_a_pod_asking_more_gpus_than_any_node_has_is_a_violation(judged: ApplyResult) -> None:
    line = _unfit(judged, "greedy")
    assert "nvidia.com/gpu 4;" in line, line
    assert "Insufficient nvidia.com/gpu" in line, line


def test_a_pod_mounting_a_claim_that_does_not_exist_is_a_violation(judged: ApplyResult) -> None:
    line = _unfit(judged, "orphan")
    assert line.endswith("the scheduler: mounts PersistentVolumeClaim nope, which does not exist"), line


def test_a_pod_waiting_for_an_unbound_claim_and_the_pools_scaled_are_expected_not_violations(judged: ApplyResult) -> None:
    assert sorted(line.split(" (")[0] for line in judged.unfit) == [f"Deployment {NAMESPACE}/{n}" for n in ("greedy", "h100", "orphan", "untolerated")]
    pending = [line for line in judged.expected if line.startswith("pending: ")]
    assert len(pending) == 1, judged.expected
    assert pending[0].startswith(f"pending: Pod {NAMESPACE}/database-"), pending
    assert pending[0].endswith(
        f"waits for PersistentVolumeClaim {NAMESPACE}/data (storage class gp3): no volume provisioner runs here; the cluster's CSI driver provisions it"
    )
    # The three replicas that fit took the t4 pool from its minimum (0, so one node) to three nodes.
    assert judged.node_counts["t4"] == 3, judged.node_counts
    assert [line for line in judged.expected if line.startswith("scale-up: ")] == [
        "scale-up: pool t4 to 3 nodes (minimum 0, maximum 8) for pods its nodes at the minimum could not take: the autoscaler would add them"
    ]
    assert sum(1 for p in judged.pods if p["metadata"]["name"].startswith("fits-") and p["spec"].get("nodeName")) == 3
    assert not judged.workloads and not judged.refusals
