"""Workloads judged (issue 36 item 1): a controller whose pods the server refuses is a violation, one line
naming the workload and the server's reason. One case per class, each a Deployment (or a DaemonSet,
StatefulSet, Job) the server takes at once, whose pods kube-controller-manager's controllers then cannot
create; each in a namespace of its own on the session's control plane. And `preview --program DIR --apply
KUBECONFIG` end to end: exit 1 and the one line.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.infra.apply.apply import ApplyObject, Server
from gpu_platform.infra.apply.judge import apply_and_judge

IMAGE = "busybox@sha256:" + "a" * 64


def _namespace(name: str, labels: dict[str, str] | None = None) -> ApplyObject:
    return ApplyObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}, "test")


def _pod_spec(**extra: Any) -> dict[str, Any]:
    container = {"name": "c", "image": IMAGE, "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}
    return {"containers": [container], **extra}


def _workload(kind: str, namespace: str, name: str, **pod: Any) -> ApplyObject:
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": _pod_spec(**pod)}
    spec: dict[str, Any] = {"selector": {"matchLabels": labels}, "template": template}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    if kind == "Job":
        spec = {"template": {**template, "spec": {**template["spec"], "restartPolicy": "Never"}}, "backoffLimit": 0}
    api = "batch/v1" if kind == "Job" else "apps/v1"
    return ApplyObject({"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec}, f"resource {name}")


def _cases() -> list[ApplyObject]:
    """Every case's objects, applied together (one bounded wait for the controllers, not one per case)."""
    small = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "small", "namespace": "wl-quota"}, "spec": {"hard": {"requests.cpu": "1"}}}
    roomy = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "roomy", "namespace": "wl-fine"}, "spec": {"hard": {"requests.cpu": "8"}}}
    privileged = _workload("Deployment", "wl-restricted", "root")
    privileged.body["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    objects = [
        _namespace("wl-quota"),
        ApplyObject(small, "test"),
        _workload("Deployment", "wl-quota", "greedy"),
        _namespace("wl-restricted", {"pod-security.kubernetes.io/enforce": "restricted"}),
        privileged,
        _namespace("wl-priority"),
        _workload("Deployment", "wl-priority", "urgent", priorityClassName="nope"),
        _namespace("wl-fine"),
        ApplyObject(roomy, "test"),
        _workload("Deployment", "wl-fine", "fits"),
    ]
    for kind in SA_KINDS:
        objects += [_namespace(f"wl-sa-{kind.lower()}"), _workload(kind, f"wl-sa-{kind.lower()}", "runner", serviceAccountName="ghost")]
    return objects


SA_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job")


@pytest.fixture(scope="module")
def judged(control_plane: Any) -> dict[str, str]:
    """The violation lines of all cases, by ``<kind> <namespace>/<name>``."""
    _node(control_plane, "wl-node")  # a DaemonSet wants pods only where a node is
    result = apply_and_judge(Server(control_plane.api_client()), _cases(), None)
    assert not result.refusals, [r.line for r in result.refusals]
    lines = {r.obj.label: r.line for r in result.workloads}
    assert len(lines) == len(result.workloads)
    return lines


def test_a_deployment_whose_requests_exceed_the_quota_is_a_violation(judged: dict[str, str]) -> None:
    line = judged["Deployment wl-quota/greedy"]
    assert line.startswith('Deployment wl-quota/greedy (resource greedy): replicaset-controller cannot create its pods (0 of 1): pods "greedy-'), line
    assert line.endswith("is forbidden: exceeded quota: small, requested: requests.cpu=2, used: requests.cpu=0, limited: requests.cpu=1"), line


def test_a_privileged_deployment_under_pod_security_restricted_is_a_violation(judged: dict[str, str]) -> None:
    line = judged["Deployment wl-restricted/root"]
    assert line.startswith("Deployment wl-restricted/root (resource root): replicaset-controller cannot create its pods (0 of 1): pods "), line
    assert 'is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true)' in line


@pytest.mark.parametrize("kind", SA_KINDS)
def test_a_workload_naming_a_missing_service_account_is_a_violation(judged: dict[str, str], kind: str) -> None:
    namespace = f"wl-sa-{kind.lower()}"
    line = judged[f"{kind} {namespace}/runner"]
    controller = {"Deployment": "replicaset", "StatefulSet": "statefulset", "DaemonSet": "daemonset", "Job": "job"}[kind] + "-controller"
    assert line.startswith(f"{kind} {namespace}/runner (resource runner): {controller} cannot create its pods"), line
    assert line.endswith(f'is forbidden: error looking up service account {namespace}/ghost: serviceaccount "ghost" not found'), line


def test_a_deployment_naming_a_missing_priority_class_is_a_violation(judged: dict[str, str]) -> None:
    line = judged["Deployment wl-priority/urgent"]
    assert line.startswith("Deployment wl-priority/urgent (resource urgent): replicaset-controller cannot create its pods (0 of 1): pods "), line
    assert line.endswith("is forbidden: no PriorityClass with name nope was found"), line


def test_nothing_else_is_a_violation_even_a_workload_refused_once_then_created(judged: dict[str, str]) -> None:
    """A quota applied just before the Deployment: the first pod creations may be refused until the quota
    controller records the quota's status; the retry then succeeds, so nothing is reported."""
    assert sorted(judged) == sorted(
        ["Deployment wl-quota/greedy", "Deployment wl-restricted/root", "Deployment wl-priority/urgent", *(f"{k} wl-sa-{k.lower()}/runner" for k in SA_KINDS)]
    )


def _node(control_plane: Any, name: str) -> None:
    server = Server(control_plane.api_client())
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
    status, document, _ = server.request("POST", "/api/v1/nodes", node)
    assert status in (201, 409), document
    # The node is not Ready (no kubelet, no kwok annotation), so the node lifecycle controller taints it and
    # nothing is scheduled there; the DaemonSet controller still wants a pod for it.
    deadline = time.monotonic() + 10
    while not server.request("GET", f"/api/v1/nodes/{name}")[0] == 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_preview_apply_reports_a_refused_deployment_in_one_line_and_exits_1(control_plane: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.cli import main

    (tmp_path / "Pulumi.yaml").write_text("name: mine\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(
        textwrap.dedent(
            f"""
            import pulumi, pulumi_kubernetes as k8s
            ns = k8s.core.v1.Namespace("ns", metadata={{"name": "wl-cli"}})
            k8s.apps.v1.Deployment("web", metadata={{"name": "web", "namespace": "wl-cli"}}, spec={{
                "selector": {{"matchLabels": {{"app": "web"}}}},
                "template": {{"metadata": {{"labels": {{"app": "web"}}}},
                             "spec": {{"serviceAccountName": "web", "containers": [{{"name": "web", "image": "{IMAGE}"}}]}}}}}},
                opts=pulumi.ResourceOptions(depends_on=[ns]))
            """
        )
    )
    code = main(["preview", "--program", str(tmp_path), "--quiet", "--apply", str(control_plane.kubeconfig)])
    out = capsys.readouterr().out
    found = [line for line in out.splitlines() if line.startswith("violation: ")]
    assert found == [
        "violation: workload: Deployment wl-cli/web (resource web): replicaset-controller cannot create its pods (0 of 1): "
        + found[0].split(": replicaset-controller cannot create its pods (0 of 1): ", 1)[-1]
    ], out
    assert found[0].endswith('error looking up service account wl-cli/web: serviceaccount "web" not found'), out
    assert "judged: 1 workloads, 1 refused their pods" in out
    assert code == 1


def test_a_program_s_gpu_pod_lands_on_kwok_nodes_of_its_cluster_component(control_plane: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`preview --program DIR --apply` makes kwok nodes of the program's cluster components' pools (issue 34 item 3) and
    says so: a Deployment asking one GPU on the program's L4 pool is scheduled there, none is left unfit."""
    from gpu_platform.infra.cli import main

    (tmp_path / "Pulumi.yaml").write_text("name: mine\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(
        textwrap.dedent(
            f"""
            import pulumi, pulumi_kubernetes as k8s
            from gpu_platform.components import AutoscalingBounds, BoundsScope, GpuGkeCluster, GpuGkeClusterArgs, GpuNodePoolArgs

            cluster = GpuGkeCluster("ml", GpuGkeClusterArgs(project="my-project", location="us-central1", node_locations=["us-central1-b"],
                gpu_pools=[GpuNodePoolArgs(name="l4", machine_type="g2-standard-8", accelerator_type="nvidia-l4", capacity="on_demand",
                                           autoscaling=AutoscalingBounds(scope=BoundsScope.TOTAL, min_nodes=0, max_nodes=2))]))
            l4 = next(s for s in cluster.pool_shapes() if s.name == "l4")
            ns = k8s.core.v1.Namespace("ns", metadata={{"name": "wl-pools"}})
            k8s.apps.v1.Deployment("gpu", metadata={{"name": "gpu", "namespace": "wl-pools"}}, spec={{
                "replicas": 2,
                "selector": {{"matchLabels": {{"app": "gpu"}}}},
                "template": {{"metadata": {{"labels": {{"app": "gpu"}}}},
                             "spec": {{**l4.placement.pod_spec_fields(), "containers": [{{"name": "c", "image": "{IMAGE}",
                                       "resources": {{"limits": {{"nvidia.com/gpu": "1"}}, "requests": {{"cpu": "1", "memory": "1Gi"}}}}}}]}}}}}},
                opts=pulumi.ResourceOptions(depends_on=[ns]))
            """
        )
    )
    code = main(["preview", "--program", str(tmp_path), "--quiet", "--apply", str(control_plane.kubeconfig), "--apply-kwok-nodes"])
    captured = capsys.readouterr()
    out = captured.out
    assert "kwok nodes: the pools of the program's cluster components (GpuGkeCluster ml): system, l4" in out, captured.err[-2000:]
    assert "judged: 1 workloads, 0 refused their pods; 0 fit no pool" in out, out
    (applied,) = [line for line in out.splitlines() if line.startswith("applied: ")]
    assert applied.endswith("kwok nodes, 2 pods") and " 0 kwok nodes" not in applied, out
    assert not [line for line in out.splitlines() if line.startswith("violation: ")], out
    assert code == 0, out
