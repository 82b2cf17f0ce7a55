"""What `pulumi up` waits for, under the real engine (issue 40): a stack whose GPU pools start at zero nodes comes
up without waiting for a GPU node. dev-eks's Dask tenants are deployed by the real DaskOperator on the local control
plane, whose nodes are the stack's pools at their minimum (the system node group's two nodes; no GPU node, as on a
cluster where the autoscaler has not added one yet): the operator and everything else is awaited and becomes ready,
the GPU notebooks are created and stay Pending, and `up` does not wait for them (components/pools/awaits.py)."""

from __future__ import annotations

import time
from typing import Any

import pulumi

from gpu_platform.components.core.kube import chart_source
from gpu_platform.components.dask.operator import DaskOperator
from gpu_platform.components.pools.awaits import skips_await
from gpu_platform.infra.apply.nodes import pool_nodes
from gpu_platform.infra.stack.read import load_stack
from tests.conftest import PROJECT_DIR
from tests.engine.conftest import RealEngine

STACK = "dev-eks"
RELEASE = "kubernetes:helm.sh/v3:Release"


def _local_charts(engine: RealEngine) -> Any:
    """A stack transform: every Helm release takes its chart from the pinned local archive the offline render
    reads (the engine has no network), as the lock pins it."""

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if args.type_ != RELEASE:
            return None
        name, _ = chart_source(args.props)
        props = {**args.props, "chart": str(engine.chart_archive(name, args.props["version"]))}
        props.pop("repositoryOpts", None)
        return pulumi.ResourceTransformResult(props, args.opts)

    return transform


def test_a_stack_whose_gpu_pools_start_at_zero_comes_up_without_waiting_for_gpu_nodes(real_engine: RealEngine) -> None:
    from kubernetes import client

    config = load_stack(PROJECT_DIR, STACK)
    assert config.dask is not None
    shapes = config.pool_shapes()
    gpu_pools = [s for s in shapes if s.gpus_per_node > 0]
    assert gpu_pools and all(s.min_nodes == 0 for s in gpu_pools), "dev-eks's GPU pools start at zero"
    core = client.CoreV1Api(real_engine.api_client())
    # The nodes a new cluster has: every pool at its minimum, so none of a GPU pool.
    for node in pool_nodes([s for s in shapes if s.min_nodes > 0]):
        core.create_node(node)

    def program() -> None:
        pulumi.runtime.register_resource_transform(_local_charts(real_engine))
        DaskOperator(f"{STACK}-dask", config.dask, pools=shapes, opts=pulumi.ResourceOptions(providers=[real_engine.provider()]))

    with real_engine.stack("gpu-at-zero", program) as stack:
        started = time.monotonic()
        stack.up()
        took = time.monotonic() - started
        notebooks = [
            d
            for t in config.dask.tenants
            if t.notebook is not None
            for d in client.AppsV1Api(real_engine.api_client()).list_namespaced_deployment(t.name).items
            if "notebook" in d.metadata.name
        ]
        assert len(notebooks) == sum(1 for t in config.dask.tenants if t.notebook is not None and t.notebook.gpus > 0)
        for deployment in notebooks:
            assert skips_await(deployment.metadata.to_dict()), deployment.metadata.name
            pods = core.list_namespaced_pod(
                deployment.metadata.namespace, label_selector=",".join(f"{k}={v}" for k, v in deployment.spec.selector.match_labels.items())
            )
            assert pods.items and all(p.status.phase == "Pending" for p in pods.items), [p.status.phase for p in pods.items]
        # No GPU node came, and up did not sit out the provider's 10-minute await on them.
        assert not [n for n in core.list_node().items if int((n.status.allocatable or {}).get("nvidia.com/gpu", "0")) > 0]
        assert took < 300, took
        stack.preview_no_changes()
        stack.destroy()
