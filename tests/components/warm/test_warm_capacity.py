"""WarmCapacity under the recording mock engine (components/warm/warm_capacity.py): a PriorityClass below every
workload that never preempts, and per pool a Deployment of pause pods holding one GPU each on that pool; a pool
it cannot keep warm is refused before anything is registered."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.components.core.cluster import ClusterPools
from gpu_platform.components.warm.warm_capacity import PRIORITY_CLASS, WarmCapacity, WarmCapacityArgs
from tests.components.pools.test_awaits import gpu_pool
from tests.conftest import Engine, settled_tree

POOLS = (gpu_pool("t4", 0), gpu_pool("a100", 0))


@pulumi.runtime.test
def test_a_priority_class_and_a_deployment_per_warm_pool(engine: Engine) -> pulumi.Output[Any]:
    from gpu_platform.components import GpuGkeCluster, GpuGkeClusterArgs
    from tests.factories import gke

    cluster = GpuGkeCluster("g", GpuGkeClusterArgs.model_validate(gke()))
    warm = WarmCapacity("w", WarmCapacityArgs(pools={"t4": 3}), cluster=cluster)

    def check(_: Any) -> None:
        priority = engine.resource("w-priority-class").inputs
        assert (priority["metadata"]["name"], priority["value"], priority["globalDefault"], priority["preemptionPolicy"]) == (
            PRIORITY_CLASS,
            -5,
            False,
            "Never",
        )
        deployment = engine.resource("w-t4").inputs
        assert deployment["metadata"]["namespace"] == "gpu-warm-capacity" and deployment["spec"]["replicas"] == 3
        pod = deployment["spec"]["template"]["spec"]
        assert pod["priorityClassName"] == PRIORITY_CLASS
        (container,) = pod["containers"]
        assert container["image"] == "registry.k8s.io/pause:3.10"
        assert container["resources"]["requests"] == {"cpu": "10m", "memory": "16Mi", "nvidia.com/gpu": "1"}
        (shape,) = [s for s in cluster.pool_shapes() if s.name == "t4"]
        assert pod["nodeSelector"] == dict(shape.placement.node_selector)
        assert {t["key"] for t in pod["tolerations"]} == {t.key for t in shape.placement.tolerations}
        assert sorted(warm.deployments) == ["t4"]

    return settled_tree(warm).apply(check)


@pulumi.runtime.test
def test_a_pool_at_zero_gets_no_deployment(engine: Engine) -> pulumi.Output[Any]:
    from gpu_platform.components import GpuGkeCluster, GpuGkeClusterArgs
    from tests.factories import gke

    cluster = GpuGkeCluster("g", GpuGkeClusterArgs.model_validate(gke()))
    warm = WarmCapacity("w", WarmCapacityArgs(pools={"t4": 0}), cluster=cluster)
    return settled_tree(warm).apply(lambda _: None if warm.deployments == {} and "w-t4" not in engine.names() else pytest.fail("deployed"))


def test_fails_when_a_pool_is_not_there_before_registering(engine: Engine) -> None:
    from gpu_platform.components import GpuGkeCluster, GpuGkeClusterArgs
    from tests.factories import gke

    cluster = GpuGkeCluster("g", GpuGkeClusterArgs.model_validate(gke()))
    before = len(engine.recorded)
    with pytest.raises(pulumi.InputPropertyError) as info:
        WarmCapacity("w", WarmCapacityArgs(pools={"h100": 1}), cluster=cluster)
    assert info.value.property_path == "args.pools.h100"
    assert info.value.reason.startswith("no GPU pool 'h100'; warm capacity names one of: t4")
    assert not [r for r in engine.recorded[before:] if r.name.startswith("w-")]


def test_fails_without_a_cluster_component(engine: Engine) -> None:
    with pytest.raises(pulumi.InputPropertyError) as info:
        WarmCapacity("w", WarmCapacityArgs(), cluster=ClusterPools(kind=ClusterKind.GKE, pools=POOLS))  # type: ignore[arg-type]
    assert info.value.property_path == "cluster"
