"""What `pulumi up` waits for, on every shipped stack and on one with warm capacity: a Deployment skips the
provider's readiness await exactly when its pods need GPUs the minimum nodes of the pool they land on cannot
hold (every pool that starts at zero) or it is a warm-capacity placeholder, and a Service exactly when its
endpoints are such a Deployment's pods; nothing else does. Recomputed here from the plan itself (the pods'
node selectors, GPU limits and replicas against the stack's pool shapes), not from the components' rule."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from gpu_platform.components.core.labels import GPU_RESOURCE
from gpu_platform.components.pools.awaits import skips_await
from gpu_platform.components.warm.warm_capacity import PRIORITY_CLASS
from gpu_platform.infra.preview.engine import Plan, run_program
from gpu_platform.infra.stack.read import read_stack_file
from tests.conftest import PROJECT_DIR, shipped_plan
from tests.infra.test_preview import STACKS


@functools.cache
def warm_plan() -> Plan:
    config, secret = read_stack_file(PROJECT_DIR, "dev-gke")
    config["gpu-platform:warm_capacity"] = {"pools": {"t4": 3, "scheduler": 1}}
    return run_program(PROJECT_DIR, "dev-gke", config, secret)


def plan_of(stack: str) -> Plan:
    return warm_plan() if stack == "dev-gke+warm" else shipped_plan(stack)


def waits_on_capacity(deployment: dict[str, Any], plan: Plan) -> bool:
    pod = deployment["spec"]["template"]["spec"]
    if pod.get("priorityClassName") == PRIORITY_CLASS:
        return True
    gpus = sum(int((c.get("resources") or {}).get("limits", {}).get(GPU_RESOURCE, 0)) for c in pod["containers"])
    gpus *= int(deployment["spec"].get("replicas", 1))
    selector = pod.get("nodeSelector") or {}
    pools = [p for p in plan.stack_config.pool_shapes() if selector and dict(p.placement.node_selector) == selector]
    return gpus > 0 and len(pools) == 1 and gpus > pools[0].min_nodes * pools[0].gpus_per_node


@pytest.mark.parametrize("stack", [*STACKS, "dev-gke+warm"])
def test_exactly_the_workloads_that_wait_on_capacity_skip_the_await(stack: str) -> None:
    plan = plan_of(stack)
    deployments = {r.name: r.inputs for r in plan.of_type("kubernetes:apps/v1:Deployment")}
    waiting = {name for name, d in deployments.items() if waits_on_capacity(d, plan)}
    for name, d in deployments.items():
        assert skips_await(d["metadata"]) is (name in waiting), f"{stack}: Deployment {name}"
    for service in plan.of_type("kubernetes:core/v1:Service"):
        selector = (service.inputs.get("spec") or {}).get("selector") or {}
        behind = [
            name
            for name, d in deployments.items()
            if selector
            and d["metadata"].get("namespace") == service.inputs["metadata"].get("namespace")
            and selector.items() <= (d["spec"]["template"]["metadata"].get("labels") or {}).items()
        ]
        assert skips_await(service.inputs["metadata"]) is any(n in waiting for n in behind), f"{stack}: Service {service.name}"
    others = [
        r.name
        for r in plan.resources
        if r.type not in ("kubernetes:apps/v1:Deployment", "kubernetes:core/v1:Service") and skips_await((r.inputs or {}).get("metadata"))
    ]
    assert others == []


def test_the_stacks_with_gpu_pools_at_zero_do_not_wait_for_their_notebooks() -> None:
    """dev-eks' GPU classes and the pools prod-eks and prod-gke put notebooks on start at zero nodes: their
    notebooks skip; dev-gke's T4 pool keeps a node per zone, so its notebooks are awaited as before."""
    skipped = {
        stack: sorted(r.name for r in shipped_plan(stack).of_type("kubernetes:apps/v1:Deployment") if skips_await(r.inputs["metadata"])) for stack in STACKS
    }
    assert skipped == {
        "dev-eks": ["dev-eks-dask-team-a-notebook", "dev-eks-dask-team-b-notebook"],
        "dev-gke": [],
        "prod-eks": ["prod-eks-dask-analytics-notebook", "prod-eks-dask-research-notebook"],
        "prod-gke": ["prod-gke-dask-analytics-notebook", "prod-gke-dask-research-notebook"],
    }
