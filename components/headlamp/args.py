"""HeadlampArgs: the cluster UI (Headlamp, SIG UI's successor to the retired Kubernetes Dashboard),
who may look at which tenant namespace, and the chart version.

Headlamp runs in-cluster with no permissions of its own: every user signs in with their own
token (or OIDC) and Headlamp acts as that user, so what a user sees is what Kubernetes RBAC lets
them see. The chart's default ClusterRoleBinding of ``cluster-admin`` to Headlamp's service account
is turned off (headlamp_values), and each tenant's group gets Kubernetes' aggregated ``view``
ClusterRole in its own namespace only, through a RoleBinding.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, StringConstraints, field_validator

from gpu_platform.components.core.kube import ChartVersion, ComponentNamespace, DnsLabel, kubernetes_owns
from gpu_platform.components.core.models import ARGS_CONFIG, check_unique
from gpu_platform.components.pools.shapes import PoolPlacement

__all__ = [
    "HEADLAMP_CHART",
    "HEADLAMP_REPOSITORY",
    "VIEW_CLUSTER_ROLE",
    "GroupName",
    "HeadlampArgs",
    "HeadlampTenantAccess",
    "headlamp_values",
]

HEADLAMP_CHART = "headlamp"
HEADLAMP_REPOSITORY = "https://kubernetes-sigs.github.io/headlamp/"
"""The chart repository kubernetes-sigs/headlamp publishes (charts/headlamp in the repository)."""
VIEW_CLUSTER_ROLE = "view"
"""Kubernetes' default user-facing role for read-only access (no Secrets, no RBAC objects), bound per namespace."""
RELEASE_NAME = "headlamp"


def _not_a_system_group(value: str) -> str:
    if value.startswith("system:"):
        raise ValueError(
            f"group {value} is one Kubernetes itself fills (system:authenticated is every user and service account "
            "that can log in): a tenant's namespace is shown to that tenant's group only; name a group of the tenant's people"
        )
    return value


GroupName = Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=r"^\S+$"), AfterValidator(_not_a_system_group)]
"""A Kubernetes group name as the cluster's authenticator reports it (an EKS access entry's
kubernetes group, a Google Group on GKE): no whitespace, and none of Kubernetes' own ``system:`` groups
(``system:authenticated`` would show every tenant's namespace to everyone who can log in; refused, by decision:
docs/features/headlamp.md)."""


class HeadlampTenantAccess(BaseModel):
    """One tenant namespace and the group that may look at it (read-only) in Headlamp."""

    model_config = ARGS_CONFIG

    namespace: DnsLabel
    """The tenant's namespace (it must exist: the Dask tenant's or the Kubeflow tenant's). Required."""
    group: GroupName
    """The Kubernetes group bound to the ``view`` ClusterRole in that namespace only. Required."""

    @field_validator("namespace")
    @classmethod
    def _not_kubernetes(cls, value: str) -> str:
        if kubernetes_owns(value):
            raise ValueError(f"namespace {value} belongs to Kubernetes, not a tenant; name a tenant namespace")
        return value


class HeadlampArgs(BaseModel):
    """Inputs of Headlamp."""

    model_config = ARGS_CONFIG

    namespace: ComponentNamespace = "headlamp"
    """Namespace Headlamp runs in (created). Default: headlamp."""
    chart_version: ChartVersion = "0.45.0"
    """headlamp chart release (kubernetes-sigs/headlamp). Default: 0.45.0."""
    tenants: list[HeadlampTenantAccess] = Field(default_factory=list)
    """Per tenant namespace, the group given read-only access (``view``) there. Default: [] (nobody but cluster admins sees anything)."""

    @field_validator("tenants")
    @classmethod
    def _one_binding_per_namespace(cls, value: list[HeadlampTenantAccess]) -> list[HeadlampTenantAccess]:
        check_unique([t.namespace for t in value], "tenants", "a namespace", "one group per tenant namespace")
        return value


def headlamp_values(placement: PoolPlacement | None) -> dict[str, Any]:
    """The chart's values: no ClusterRoleBinding (the chart binds ``cluster-admin`` to its service account
    by default), no OIDC Secret, per-user authentication kept (never the pod's token), on ``placement``."""
    values: dict[str, Any] = {
        "clusterRoleBinding": {"create": False},
        "serviceAccount": {"create": True},
        "config": {
            "unsafeUseServiceAccountToken": False,
            "oidc": {"secret": {"create": False}},
        },
    }
    if placement is not None:
        values |= placement.pod_spec_fields()
    return values
