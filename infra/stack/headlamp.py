"""The stack's cluster UI setting, ``gpu-platform:headlamp``: Headlamp one setting away.

``{enabled: true}`` installs Headlamp (components.headlamp.headlamp) on the system pool and gives every tenant
of the stack (each Dask tenant and each Kubeflow tenant: one namespace each) read-only access to its
own namespace: the group named by ``viewer_group`` (``{tenant}`` replaced by the tenant's name), or the
tenant's entry in ``groups``, is bound to the ``view`` ClusterRole there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from gpu_platform.components.core.kube import ChartVersion, ComponentNamespace, DnsLabel
from gpu_platform.components.core.models import ARGS_CONFIG
from gpu_platform.components.headlamp.args import GroupName, HeadlampArgs, HeadlampTenantAccess

__all__ = ["TENANT_PLACEHOLDER", "HeadlampConfig"]

TENANT_PLACEHOLDER = "{tenant}"
_DEFAULTS = HeadlampArgs.model_fields


class HeadlampConfig(BaseModel):
    """Headlamp on the stack's cluster and who may look at which tenant namespace."""

    model_config = ARGS_CONFIG

    enabled: bool = False
    """Install Headlamp. Default: false."""
    namespace: ComponentNamespace = _DEFAULTS["namespace"].default
    """Namespace Headlamp runs in (created). Default: headlamp."""
    chart_version: ChartVersion = _DEFAULTS["chart_version"].default
    """headlamp chart release. Default: 0.45.0."""
    viewer_group: GroupName = "{tenant}-viewers"
    """The group given read-only access to each tenant's namespace, ``{tenant}`` standing for the tenant's name. Default: {tenant}-viewers."""
    groups: dict[DnsLabel, GroupName] = Field(default_factory=dict)
    """Per tenant name, its group instead of viewer_group's (e.g. a Google Group on GKE). Default: {}."""

    @field_validator("viewer_group")
    @classmethod
    def _names_the_tenant(cls, value: str) -> str:
        if value.count(TENANT_PLACEHOLDER) != 1:
            raise ValueError(
                f"viewer_group must hold {TENANT_PLACEHOLDER} exactly once, so each tenant gets its own group "
                "(e.g. {tenant}-viewers); name one group for a tenant in groups"
            )
        return value

    def group_of(self, tenant: str) -> str:
        """The group that may view ``tenant``'s namespace."""
        return self.groups.get(tenant, self.viewer_group.replace(TENANT_PLACEHOLDER, tenant))

    def problems(self, tenants: Sequence[str]) -> list[tuple[tuple[str | int, ...], str, Any]]:
        """A ``groups`` entry for a tenant the stack does not have: (key path, message, value)."""
        known = ", ".join(tenants) or "none"
        return [
            (("headlamp", "groups", name), f"the stack has no tenant {name} (tenants: {known}); remove it or fix the name", name)
            for name in self.groups
            if name not in tenants
        ]

    def args(self, tenants: Sequence[str]) -> HeadlampArgs:
        """The component's Args: every tenant namespace bound to its group."""
        return HeadlampArgs(
            namespace=self.namespace,
            chart_version=self.chart_version,
            tenants=[HeadlampTenantAccess(namespace=t, group=self.group_of(t)) for t in tenants],
        )
