"""ExistingCluster: the platform's Kubernetes layer onto a cluster it did not create.

A cluster component like GpuGkeCluster or the EKS node groups, for a cluster made elsewhere (a team's own
Terraform, the console, another Pulumi stack): it registers only a Kubernetes provider on the cluster's
kubeconfig, and gives the add-ons (``cluster=``) the pools the stack describes (ExistingClusterArgs). It creates
nothing on the cloud and changes nothing of the cluster's own: node pools, autoscaler, IAM, storage classes and
CSI drivers stay the cluster owner's.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.components.core.cluster import ClusterComponent
from gpu_platform.components.core.models import input_error
from gpu_platform.components.existing.args import ExistingClusterArgs, ExistingPoolArgs
from gpu_platform.components.pools.shapes import NodePoolShape

__all__ = ["ExistingCluster", "ExistingClusterArgs", "ExistingPoolArgs"]


class ExistingCluster(pulumi.ComponentResource, ClusterComponent):
    """A cluster the platform did not create, reached by a kubeconfig, its pools as the stack describes them.

    Pass it as ``cluster=`` to the add-ons: they take its provider and place pods on ``pool_shapes()``. Nothing
    is waited for (the cluster and its nodes exist before the program runs)."""

    provider: k8s.Provider
    """The Kubernetes provider on the cluster (the kubeconfig given, else the ambient one, at ``context``)."""
    kind: str
    """gke or eks."""
    pool_names: list[str]
    """Every described pool, by name, in the order listed."""

    def __init__(
        self,
        name: str,
        args: ExistingClusterArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        kubeconfig: pulumi.Input[str] | None = None,
    ) -> None:
        """``kubeconfig``: the cluster's kubeconfig (its contents; kept secret); None uses the ambient one
        (KUBECONFIG, else ~/.kube/config), as kubectl and the Kubernetes provider read it."""
        if not isinstance(args, ExistingClusterArgs):
            raise input_error("args", f"args: expected ExistingClusterArgs (got {type(args).__name__})")
        super().__init__("gpu-platform:existing_cluster:ExistingCluster", name, None, opts)
        self._args = args
        self._shapes = args.pool_shapes()
        self.kind = args.kind.value
        self.pool_names = [p.name for p in args.pools]
        self.provider = k8s.Provider(
            f"{name}-k8s",
            k8s.ProviderArgs(
                kubeconfig=None if kubeconfig is None else pulumi.Output.secret(kubeconfig),
                context=args.context,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"kind": self.kind, "poolNames": self.pool_names})

    @property
    def cloud(self) -> ClusterKind:
        """gke or eks, as described."""
        return self._args.kind

    def pool_shapes(self) -> list[NodePoolShape]:
        """Every described pool as workloads see it (ExistingClusterArgs.pool_shapes)."""
        return list(self._shapes)

    def ready(self) -> list[pulumi.Resource]:
        """Nothing: the cluster and its nodes exist before the program runs."""
        return []

    @property
    def has_own_ingress_controllers(self) -> bool:
        """True: the cluster's owner installed its ingress controllers (on EKS the AWS Load Balancer Controller, whose
        IAM role trusts the cluster's OIDC provider), which act on the add-ons' ALB Ingresses."""
        return True
