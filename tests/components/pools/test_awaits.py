"""What `pulumi up` waits for: a workload whose GPUs the pool's minimum nodes cannot hold skips the provider's
readiness await (its Deployment and the Service whose endpoints are its pods); warm-capacity placeholders always
do; everything else carries no such annotation and is awaited as before."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from gpu_platform.components import DaskOperator, DaskOperatorArgs
from gpu_platform.components.core.cluster import ClusterPools
from gpu_platform.components.inference.service import GpuInferenceService, GpuInferenceServiceArgs
from gpu_platform.components.monitoring.prometheus_args import ClusterKind
from gpu_platform.components.pools.awaits import SKIP_AWAIT, await_annotations, skips_await, waits_on_autoscaler
from gpu_platform.components.pools.reserves import ReserveFormula
from gpu_platform.components.pools.shapes import GPU_TAINT, CapacityStrategy, NodePoolShape, PoolPlacement
from gpu_platform.components.warm.warm_capacity import WarmCapacity, WarmCapacityArgs
from tests.conftest import Engine, settled_tree


def gpu_pool(name: str, min_nodes: int, gpus_per_node: int = 2) -> NodePoolShape:
    return NodePoolShape(
        name,
        "gpu",
        "n1-standard-8",
        8,
        30720,
        gpus_per_node,
        "nvidia-tesla-t4",
        CapacityStrategy.ON_DEMAND,
        min_nodes,
        8,
        {},
        (GPU_TAINT,),
        PoolPlacement({"cloud.google.com/gke-nodepool": name}, (GPU_TAINT,)),
        reserve_formula=ReserveFormula.GKE,
    )


@pytest.mark.parametrize(
    ("min_nodes", "gpus", "waits"),
    [
        (0, 1, True),  # a pool that starts at zero: every GPU pod waits for a scale-up
        (1, 2, False),  # one node of 2 GPUs holds it
        (1, 3, True),  # but not 3
        (2, 4, False),
        (0, 0, False),  # no GPUs: not this rule's
    ],
)
def test_a_workload_waits_on_the_autoscaler_when_the_minimum_cannot_hold_its_gpus(min_nodes: int, gpus: int, waits: bool) -> None:
    pool = gpu_pool("t4", min_nodes)
    assert waits_on_autoscaler(pool, gpus) is waits
    assert await_annotations(pool, gpus) == (SKIP_AWAIT if waits else {})
    assert skips_await({"annotations": await_annotations(pool, gpus)}) is waits


def test_without_a_known_pool_a_workload_is_awaited_as_before() -> None:
    assert waits_on_autoscaler(None, 4) is False


def test_the_annotation_is_the_providers() -> None:
    # pulumi-kubernetes reads exactly this key and value (provider/pkg/metadata: AnnotationSkipAwait, IsAnnotationTrue).
    assert SKIP_AWAIT == {"pulumi.com/skipAwait": "true"}


@pytest.mark.parametrize(("min_nodes", "skipped"), [(0, True), (1, False)])
@pulumi.runtime.test
def test_a_gpu_notebook_on_a_pool_at_zero_does_not_hold_up(engine: Engine, min_nodes: int, skipped: bool) -> pulumi.Output[Any]:
    args = DaskOperatorArgs.model_validate(
        {
            "tenants": [
                {"name": "team-a", "gpu_quota": 8, "notebook": {"gpus": 1}},
                {"name": "team-b", "gpu_quota": 8, "notebook": {"gpus": 0, "cpu": "1", "memory": "2Gi"}},
            ]
        }
    )
    operator = DaskOperator("d", args, pools=[gpu_pool("t4", min_nodes)])

    def check(_: Any) -> None:
        for name in ("d-team-a-notebook", "d-team-a-notebook-service"):
            assert skips_await(engine.resource(name).inputs["metadata"]) is skipped, name
        for name in ("d-team-b-notebook", "d-team-b-notebook-service", "d-team-a-proxy-config"):
            assert not skips_await(engine.resource(name).inputs["metadata"]), name  # a CPU notebook is awaited as before

    return settled_tree(operator).apply(check)


@pulumi.runtime.test
def test_warm_capacity_placeholders_never_hold_up(engine: Engine) -> pulumi.Output[Any]:
    from gpu_platform.components.gke.args import GpuGkeClusterArgs
    from gpu_platform.components.gke.cluster import GpuGkeCluster
    from tests.factories import gke

    cluster = GpuGkeCluster("g", GpuGkeClusterArgs.model_validate(gke()))
    warm = WarmCapacity("w", WarmCapacityArgs.model_validate({"pools": {"t4": 1}}), cluster=cluster)

    def check(_: Any) -> None:
        (deployment,) = [r for r in engine.of_type("kubernetes:apps/v1:Deployment") if r.name.startswith("w-")]
        assert skips_await(deployment.inputs["metadata"])
        assert not skips_await(engine.resource("w-priority-class").inputs["metadata"])

    return settled_tree(warm).apply(check)


@pytest.mark.parametrize(("min_nodes", "min_replicas", "skipped"), [(0, 1, True), (1, 2, False), (1, 3, True)])
@pulumi.runtime.test
def test_inference_replicas_the_pools_minimum_cannot_hold_do_not_hold_up(
    engine: Engine,
    min_nodes: int,
    min_replicas: int,
    skipped: bool,
) -> pulumi.Output[Any]:
    pool = gpu_pool("t4", min_nodes)
    args = GpuInferenceServiceArgs(
        image="nvcr.io/nvidia/tritonserver:25.01-py3", pool="t4", gpus=1, min_replicas=min_replicas, max_replicas=max(4, min_replicas), cpu="1", memory="4Gi"
    )
    service = GpuInferenceService("i", args, cluster=ClusterPools(kind=ClusterKind.GKE, pools=(pool,)))

    def check(_: Any) -> None:
        assert skips_await(engine.resource("i-deployment").inputs["metadata"]) is skipped
        assert skips_await(engine.resource("i-service").inputs["metadata"]) is skipped  # its endpoints are those pods
        assert not skips_await(engine.resource("i-namespace").inputs["metadata"])

    return settled_tree(service).apply(check)
