"""What an EKS GPU provisioner is to the add-ons given it as ``cluster=`` (components/eks/gpu_pools.py): the
cluster check before anything is registered, the EksCluster's provider, and the pools of the one plan."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from gpu_platform.components import EksCluster, EksClusterArgs, SpotFailoverEksNodeGroups, SpotFailoverEksNodeGroupsArgs
from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.components.eks.gpu_pools import join_eks_cluster
from tests.components.eks.test_node_groups import done
from tests.conftest import Engine, settled_tree
from tests.factories import eks, eks_node_groups


def test_fails_when_the_cluster_is_not_an_eks_cluster(engine: Engine) -> None:
    with pytest.raises(pulumi.InputPropertyError) as info:
        join_eks_cluster("c", None)
    assert info.value.property_path == "cluster"
    assert info.value.reason == "cluster: expected an EksCluster or an EksClusterRef (EksCluster.ref) (got a str)"
    assert engine.recorded == []


@pulumi.runtime.test
def test_an_eks_cluster_gives_its_ref_and_provider_a_ref_only_itself(engine: Engine) -> pulumi.Output[Any]:
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks()), gpu_instance_types=["p3.2xlarge", "p3.8xlarge"])
    given, ref, opts = join_eks_cluster(cluster, pulumi.ResourceOptions(protect=True))
    assert given is cluster and ref is cluster.ref
    assert opts is not None and opts.protect is True
    providers = opts.providers.values() if isinstance(opts.providers, dict) else opts.providers
    assert list(providers or []) == [cluster.provider]
    mine = pulumi.ResourceOptions()
    assert join_eks_cluster(cluster.ref, mine) == (None, cluster.ref, mine)
    return settled_tree(cluster).apply(lambda _: None)


@pulumi.runtime.test
def test_the_node_groups_stand_for_the_cluster(engine: Engine) -> pulumi.Output[Any]:
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks()), gpu_instance_types=["p3.2xlarge", "p3.8xlarge"])
    gpu = SpotFailoverEksNodeGroups("c-gpu", SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups()), cluster=cluster)

    def check() -> None:
        assert gpu.cloud is ClusterKind.EKS and gpu.eks_cluster is cluster and gpu.provider is cluster.provider
        shapes = gpu.pool_shapes()
        assert [s.name for s in shapes] == [s.name for s in cluster.pool_shapes()] + ["small", "large"]
        # total bounds over each class's spot and on-demand tiers: max_nodes 4 and 2 in each tier
        assert {s.name: s.max_nodes for s in shapes if s.gpus_per_node} == {"small": 8, "large": 4}

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_built_with_the_ref_there_is_no_provider_and_only_the_gpu_pools(engine: Engine) -> pulumi.Output[Any]:
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks()), gpu_instance_types=["p3.2xlarge", "p3.8xlarge"])
    gpu = SpotFailoverEksNodeGroups(
        "c-gpu",
        SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups()),
        opts=pulumi.ResourceOptions(providers=[cluster.provider]),
        cluster=cluster.ref,
    )
    assert gpu.eks_cluster is None and gpu.provider is None
    assert [s.name for s in gpu.pool_shapes()] == ["small", "large"]
    return settled_tree(cluster, gpu).apply(lambda _: None)
