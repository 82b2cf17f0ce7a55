"""What every component that brings an EKS cluster's GPU pools (SpotFailoverEksNodeGroups with the cluster
autoscaler, KarpenterNodePools with Karpenter) is to the add-ons it is given to as ``cluster=``: one home for
the cluster check, the provider and the pools, so the two provisioners stand for the cluster alike."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.components.core.cluster import ClusterComponent, a_type
from gpu_platform.components.core.models import input_error
from gpu_platform.components.eks.cluster import EksCluster, EksClusterRef
from gpu_platform.components.pools.shapes import NodePoolShape

__all__ = ["EksGpuPools", "join_eks_cluster"]


def join_eks_cluster(cluster: Any, opts: pulumi.ResourceOptions | None) -> tuple[EksCluster | None, EksClusterRef, pulumi.ResourceOptions | None]:
    """``cluster`` checked (before anything is registered): the EksCluster (when given), its ref, and ``opts``
    with its provider."""
    if not isinstance(cluster, (EksCluster, EksClusterRef)):
        raise input_error("cluster", f"cluster: expected an EksCluster or an EksClusterRef (EksCluster.ref) (got {a_type(cluster)})")
    if isinstance(cluster, EksClusterRef):
        return None, cluster, opts
    return cluster, cluster.ref, pulumi.ResourceOptions.merge(pulumi.ResourceOptions(providers=[cluster.provider]), opts)


class EksGpuPools(ClusterComponent):
    """The cluster-facing half of an EKS GPU provisioner: the EksCluster it was built with (``_cluster``,
    None with its ref) and its GPU classes' shapes (``_pool_shapes``, from the one plan)."""

    _cluster: EksCluster | None
    _pool_shapes: list[NodePoolShape]

    @property
    def eks_cluster(self) -> EksCluster | None:
        """The EksCluster these pools were built with (None when built with its ref)."""
        return self._cluster

    @property
    def cloud(self) -> ClusterKind:
        """eks."""
        return ClusterKind.EKS

    @property
    def provider(self) -> k8s.Provider | None:
        """The cluster's Kubernetes provider: the EksCluster's when built with one, else None."""
        return None if self._cluster is None else self._cluster.provider

    def pool_shapes(self) -> list[NodePoolShape]:
        """The cluster's pools as workloads see them: its system node group (when built with the EksCluster)
        and the GPU classes (total node bounds over each class's spot and on-demand tiers: one plan)."""
        return [*(self._cluster.pool_shapes() if self._cluster is not None else []), *self._pool_shapes]
