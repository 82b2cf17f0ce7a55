"""Headlamp: the cluster UI, on the system pool, with per-tenant read-only access and no cluster-admin token.

Both guides the platform comes from install the Kubernetes Dashboard; upstream archived it in January
2026 and points to Headlamp (kubernetes-sigs/headlamp, SIG UI). Headlamp holds no permissions of its
own: a user signs in with their own token or OIDC, and sees what RBAC lets them see. The chart's
default ClusterRoleBinding of ``cluster-admin`` to its service account is turned off, no token Secret
is created, and each tenant's group gets the ``view`` ClusterRole in its own namespace (a RoleBinding
``headlamp-viewers`` there).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import ClusterComponent, on_cluster
from gpu_platform.components.core.kube import component_namespace, helm_release
from gpu_platform.components.core.labels import PART_OF_LABEL, PoolRole
from gpu_platform.components.headlamp.args import (
    HEADLAMP_CHART,
    HEADLAMP_REPOSITORY,
    RELEASE_NAME,
    VIEW_CLUSTER_ROLE,
    HeadlampArgs,
    HeadlampTenantAccess,
    headlamp_values,
)

__all__ = ["VIEWERS_BINDING", "Headlamp", "HeadlampArgs", "HeadlampTenantAccess"]

VIEWERS_BINDING = "headlamp-viewers"
"""The RoleBinding in each tenant namespace that gives the tenant's group ``view`` there."""


class Headlamp(pulumi.ComponentResource):
    """Headlamp from its pinned chart, without cluster-admin, and each tenant's group bound to ``view`` in its namespace."""

    namespace: pulumi.Output[str]
    """Headlamp's namespace."""
    release: k8s.helm.v3.Release
    """The headlamp Helm release."""
    viewer_bindings: dict[str, k8s.rbac.v1.RoleBinding]
    """The RoleBinding giving each tenant's group ``view``, by tenant namespace."""

    def __init__(
        self,
        name: str,
        args: HeadlampArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterComponent | None = None,
    ) -> None:
        """``cluster``: the cluster component it runs on (its provider; Headlamp's pod is placed on its system
        pool). Default: none (``opts`` carries the provider; no placement)."""
        placed = on_cluster(cluster, opts)
        super().__init__("gpu-platform:headlamp:Headlamp", name, None, placed.opts)
        child = pulumi.ResourceOptions(parent=self)
        system = None
        if placed.component is not None:
            system = next((p.placement for p in placed.component.pool_shapes() if p.role is PoolRole.SYSTEM), None)
        namespace = component_namespace(name, args.namespace, child)
        ns = namespace.metadata.name
        self.release = helm_release(
            f"{name}-release",
            chart=HEADLAMP_CHART,
            version=args.chart_version,
            repository=HEADLAMP_REPOSITORY,
            namespace=ns,
            release_name=RELEASE_NAME,
            values=headlamp_values(system),
            opts=child,
        )
        self.viewer_bindings = {t.namespace: self._viewers(name, t, child) for t in args.tenants}
        self.namespace = ns
        self.register_outputs({"namespace": self.namespace})

    @staticmethod
    def _viewers(name: str, tenant: HeadlampTenantAccess, opts: pulumi.ResourceOptions) -> k8s.rbac.v1.RoleBinding:
        return k8s.rbac.v1.RoleBinding(
            f"{name}-{tenant.namespace}-viewers",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=VIEWERS_BINDING, namespace=tenant.namespace, labels=dict(PART_OF_LABEL)),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=VIEW_CLUSTER_ROLE),
            subjects=[k8s.rbac.v1.SubjectArgs(api_group="rbac.authorization.k8s.io", kind="Group", name=tenant.group)],
            opts=opts,
        )
