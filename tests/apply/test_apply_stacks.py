"""Every shipped stack, the Kubeflow platform-edition variant and the capacity-ladder variants on a real Kubernetes 1.34 API server
(issue 26): applied with server-side apply in the engine's order to the control plane built from the
upstream modules, with kwok nodes shaped like the stack's pools; the pods the controllers create are
read back from the server to see where the real scheduler put them. And `preview --apply KUBECONFIG`
end to end against a server the command did not start.

Each stack gets a control plane of its own (stacks share namespaces and cluster-scoped objects with
different values). A stack takes about a minute on two idle cores, so these run when
GPU_PLATFORM_APPLY_STACKS=1: `.ci/run` runs this file so after the test command, not in it;
without it they skip and say so. Rendering needs ../shared/reference/upstream and
kubectl: without them they skip too.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.infra.apply.apply import ApplyObject, Server, stack_objects
from tests.conftest import PROJECT_DIR, UPSTREAM_DIR, kubectl_or_skip, shipped_plan, upstream_or_skip
from tests.infra.test_preview_ladders import LADDER_STACKS, ladder_project

STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
PLATFORM = "prod-eks-platform"
GPU = "nvidia.com/gpu"

pytestmark = pytest.mark.skipif(
    os.environ.get("GPU_PLATFORM_APPLY_STACKS") != "1",
    reason="every stack on a real API server takes minutes: GPU_PLATFORM_APPLY_STACKS=1 runs it (.ci/run does)",
)


@functools.cache
def _stack(stack: str) -> tuple[Any, Any, list[ApplyObject]]:
    """(plan, stack config, the objects to apply in the engine's order), as `preview --apply` builds them."""
    from gpu_platform.infra.preview.engine import run_program
    from gpu_platform.infra.preview.manifests import kubernetes_objects
    from gpu_platform.infra.preview.render import render_plan
    from gpu_platform.infra.preview.upstream import Sources, load_lock
    from gpu_platform.infra.stack.read import load_stack, read_stack_file

    if stack == PLATFORM or stack in LADDER_STACKS:
        from tests.infra.test_render import platform_variant

        # The variant's project folder is only read here: removed once read, so no run leaves it behind.
        with tempfile.TemporaryDirectory(prefix="gpu-platform-variant-") as folder:
            root = platform_variant(Path(folder)) if stack == PLATFORM else ladder_project(Path(folder), stack)
            values, secret_keys = read_stack_file(root, stack)
            plan = run_program(root, stack, values, secret_keys)
            config = load_stack(root, stack)
    else:
        plan, config = shipped_plan(stack), load_stack(PROJECT_DIR, stack)
    lock = load_lock()
    rendering = render_plan(plan, config.kubernetes_version, Sources(lock, upstream_dir=UPSTREAM_DIR), lock)
    assert not rendering.errors and not rendering.unavailable, (rendering.errors, rendering.unavailable)
    return plan, config, stack_objects(plan, kubernetes_objects(plan), rendering)


def _requests_gpu(pod: dict[str, Any]) -> bool:
    return any(
        GPU in ((c.get("resources") or {}).get("requests") or {}) or GPU in ((c.get("resources") or {}).get("limits") or {})
        for c in pod["spec"].get("containers", [])
    )


def _owner_kind(pod: dict[str, Any]) -> str | None:
    owners = pod["metadata"].get("ownerReferences") or []
    return owners[0]["kind"] if owners else None


def _read(server: Server, path: str) -> list[dict[str, Any]]:
    status, document, _ = server.request("GET", path)
    assert status == 200, document
    return document.get("items", [])


# Every shipped stack, the platform edition, and the issue-38 ladders (the guide's GKE pool and its EKS h100 class under
# the cluster autoscaler and under Karpenter: tests/infra/test_preview_ladders.py LADDER_STACKS).
@pytest.mark.parametrize("stack", [*STACKS, PLATFORM, *LADDER_STACKS])
def test_stack_applies_with_zero_refusals_and_its_pods_land_on_matching_pools(stack: str) -> None:
    upstream_or_skip()
    kubectl_or_skip()
    from gpu_platform.infra.apply.local import ControlPlaneError, control_plane, find_binaries
    from gpu_platform.infra.apply.nodes import POOL_NODE_LABEL, Pools

    try:
        binaries = find_binaries(build=False)
    except ControlPlaneError as exc:
        pytest.skip(f"the control plane is not built (tests/kube/build.sh; the control_plane fixture builds it): {exc}")
    plan, config, objects = _stack(stack)
    shapes = {s.name: s for s in config.pool_shapes()}
    pools = Pools(list(shapes.values()), config.pool_zones())
    # The Dask scheduler as the operator creates it from the stack's DaskCluster (its own code), and a pipeline step.
    extra = _dask_scheduler(objects) + _kfp_step(plan)
    with control_plane(binaries) as plane:
        server = Server(plane.api_client())
        from gpu_platform.infra.apply.judge import apply_and_judge
        from gpu_platform.infra.preview.cluster_checks import CLUSTER_PROVIDED_GROUPS

        # APIs GKE or EKS serve themselves (GKE's ComputeClass) are not served here: not applied, said.
        provided = frozenset(CLUSTER_PROVIDED_GROUPS[config.cloud.value])
        result = apply_and_judge(server, [*objects, *extra], pools, provided)
        assert not result.refusals, f"{stack}: " + "\n".join(r.line for r in result.refusals)
        unserved = [o for o in objects if o.api_version.rpartition("/")[0] in provided]
        assert len(result.applied) + len(unserved) == len(objects) + len(extra)
        assert len(result.unserved) == len(unserved)
        # Every workload got its pods, every pod fits a pool; what waits is explained (a claim no local provisioner binds).
        assert not result.workloads, f"{stack}: " + "\n".join(r.line for r in result.workloads)
        assert not result.unfit, f"{stack}: " + "\n".join(result.unfit)
        pods = result.pods
        pending = [p for p in pods if not p["spec"].get("nodeName")]
        explained = [line for line in result.expected if line.startswith("pending: ")]
        assert len(pending) == len(explained), f"{stack}: unexplained pending pods: {[p['metadata']['name'] for p in pending]} vs {explained}"
        node_pool = {n["metadata"]["name"]: shapes[n["metadata"]["labels"][POOL_NODE_LABEL]] for n in _read(server, "/api/v1/nodes")}

    placed = [p for p in pods if p["spec"].get("nodeName")]
    assert placed, f"{stack}: no pod was scheduled"
    # Nothing GPU-less on a GPU node but the DaemonSets every node runs (monitoring agents).
    stray = [
        f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        for p in placed
        if node_pool[p["spec"]["nodeName"]].gpus_per_node and not _requests_gpu(p) and _owner_kind(p) != "DaemonSet"
    ]
    assert not stray, f"{stack}: GPU-less pods on GPU nodes: {stray}"
    # A pod that asks for GPUs is on a GPU node.
    assert all(node_pool[p["spec"]["nodeName"]].gpus_per_node for p in placed if _requests_gpu(p))

    gpu_nodes = {name for name, shape in node_pool.items() if shape.gpus_per_node}
    dcgm = [p for p in pods if _owner_kind(p) == "DaemonSet" and "dcgm" in p["metadata"]["name"]]
    assert dcgm, f"{stack}: the DCGM exporter DaemonSet made no pods"
    assert {p["spec"].get("nodeName") for p in dcgm} == gpu_nodes, f"{stack}: DCGM pods are not on exactly the GPU nodes"

    schedulers = [p for p in pods if (p["metadata"].get("labels") or {}).get("dask.org/component") == "scheduler"]
    assert schedulers, f"{stack}: no Dask scheduler pod"
    for pod in schedulers:
        assert pod["spec"].get("nodeName"), f"{stack}: Dask scheduler {pod['metadata']['name']} not scheduled"
        assert node_pool[pod["spec"]["nodeName"]].role.value == "scheduler", (
            f"{stack}: the Dask scheduler landed on pool {node_pool[pod['spec']['nodeName']].name}"
        )

    steps = [p for p in pods if (p["metadata"].get("labels") or {}).get("gpu-platform.io/test") == "kfp-step"]
    if "kubeflowTrainingPlacement" in plan.outputs:
        (step,) = steps
        selector = plan.outputs["kubeflowTrainingPlacement"]["nodeSelector"]
        shape = node_pool[step["spec"]["nodeName"]]
        assert shape.gpus_per_node and selector.items() <= dict(shape.placement.node_selector).items() | dict(shape.labels).items()


def _dask_scheduler(objects: list[ApplyObject]) -> list[ApplyObject]:
    """The scheduler Deployment the Dask operator makes for each DaskCluster of the stack
    (dask_kubernetes' own build_scheduler_deployment_spec, as its daskcluster_create_components calls it)."""
    from dask_kubernetes.operator.controller.controller import build_scheduler_deployment_spec

    made = []
    for o in objects:
        if o.kind != "DaskCluster":
            continue
        scheduler = o.body["spec"]["scheduler"]
        meta = scheduler.get("metadata") or {}
        labels = {**((o.body.get("metadata") or {}).get("labels") or {}), **(meta.get("labels") or {})}
        body = build_scheduler_deployment_spec(o.name, scheduler["spec"], dict(meta.get("annotations") or {}), labels)
        body["metadata"]["namespace"] = o.namespace
        made.append(ApplyObject(body, f"dask operator for DaskCluster {o.namespace}/{o.name}", o.owner))
    return made


def _kfp_step(plan: Any) -> list[ApplyObject]:
    """A pipeline step placed with the stack's exported training placement (what
    place_on_training_pool puts on a KFP task), asking for one GPU, in the Kubeflow namespace."""
    placement = plan.outputs.get("kubeflowTrainingPlacement")
    if not placement:
        return []
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kfp-step", "namespace": "kubeflow", "labels": {"gpu-platform.io/test": "kfp-step"}},
        "spec": {
            **placement,
            "containers": [{"name": "main", "image": "python:3.11", "resources": {"requests": {"cpu": "1", "memory": "1Gi", GPU: "1"}, "limits": {GPU: "1"}}}],
        },
    }
    return [ApplyObject(body, "a pipeline step", "")]


def test_preview_apply_kubeconfig_applies_a_stack_to_a_running_server(control_plane: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI path end to end against a server it did not start (the session's control plane, as a
    user's own cluster): every object applied, no kwok nodes created there, exit 0."""
    upstream_or_skip()
    kubectl_or_skip()
    from gpu_platform.infra.cli import main

    code = main(
        [
            "preview",
            "dev-gke",
            "--quiet",
            "--project-dir",
            str(PROJECT_DIR),
            "--upstream",
            str(UPSTREAM_DIR),
            "--render",
            "--apply",
            str(control_plane.kubeconfig),
        ]
    )
    out = capsys.readouterr().out
    applied = [line for line in out.splitlines() if line.startswith("applied: ")]
    assert len(applied) == 1, out
    total = len(_stack("dev-gke")[2])
    assert applied[0].startswith(f"applied: {total} of {total} objects to {control_plane.kubeconfig} in "), applied[0]
    assert applied[0].endswith(", 0 refused"), applied[0]
    assert "violation: apply:" not in out
    assert code == 0, out
    server = Server(control_plane.api_client())
    assert not [n for n in _read(server, "/api/v1/nodes")], "nodes were created on a user's cluster without --apply-kwok-nodes"


COMPOSED = {
    "gke": ("GpuGkeCluster ml", "system, scheduler, l4", 2),
    "eks": ("EksCluster ml, SpotFailoverEksNodeGroups ml-gpu", "system, t4, scheduler", 0),
    "eks-karpenter": ("EksCluster ml, KarpenterNodePools ml-gpu", "system, t4, scheduler", 0),
}
"""examples/composed's stacks: the cluster components it makes, their pools, and the pods expected pending (the GKE
stack's Kubeflow Pipelines claims, which no provisioner binds here)."""


@pytest.mark.parametrize("stack", sorted(COMPOSED))
def test_a_program_of_one_s_own_applies_on_kwok_nodes_of_its_pools(stack: str, capsys: pytest.CaptureFixture[str]) -> None:
    """examples/composed through `preview --program DIR --apply local` (issue 34 item 3): its kwok nodes are its
    cluster components' pools, said in a line; nothing is refused (Headlamp's RoleBinding and the autoscaler's HPA
    wait for the Dask tenant's namespace) and every pod fits a pool. Measured: 60 to 110 s a stack on two busy cores."""
    from gpu_platform.infra.cli import main

    upstream = upstream_or_skip()
    kubectl_or_skip()
    made, pools, expected = COMPOSED[stack]
    program = PROJECT_DIR / "examples" / "composed"
    code = main(["preview", stack, "--program", str(program), "--quiet", "--upstream", str(upstream), "--offline", "--apply", "local"])
    out = capsys.readouterr().out.splitlines()
    assert f"kwok nodes: the pools of the program's cluster components ({made}): {pools}" in out, out
    (applied,) = [line for line in out if line.startswith("applied: ")]
    assert ", 0 refused; " in applied and " 0 kwok nodes" not in applied, applied
    (judged,) = [line for line in out if line.startswith("judged: ")]
    assert judged.endswith(f"0 refused their pods; 0 fit no pool, {expected} expected"), judged
    assert not [line for line in out if line.startswith("violation: ")], out
    assert code == 0
