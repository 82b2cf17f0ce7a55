"""Multi-tenancy guardrails: a tenant namespace cannot take the whole GPU pool."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpu_platform.components.core.labels import GPU_QUOTA_KEY, GPU_RESOURCE, TENANT_LABEL
from gpu_platform.policies.rules.base import Resource, RuleConfig, StackRule

NAMESPACE = "kubernetes:core/v1:Namespace"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"


def _meta(r: Resource) -> dict[str, Any]:
    return r.props.get("metadata") or {}


def check_tenant_gpu_quota(resources: list[Resource], config: RuleConfig) -> Iterator[tuple[str, str]]:
    """Every namespace labelled as a tenant's has a ResourceQuota that bounds its GPUs."""
    bounded = {_meta(r).get("namespace") for r in resources if r.type == RESOURCE_QUOTA and GPU_QUOTA_KEY in ((r.props.get("spec") or {}).get("hard") or {})}
    for r in resources:
        meta = _meta(r)
        if r.type == NAMESPACE and TENANT_LABEL in (meta.get("labels") or {}) and meta.get("name") not in bounded:
            yield r.name, f"tenant namespace {meta.get('name')} has no ResourceQuota on {GPU_QUOTA_KEY}: one tenant can take every GPU"


RULES = [
    StackRule(
        "tenant-gpu-quota",
        f"Every tenant namespace (label {TENANT_LABEL}) has a ResourceQuota on {GPU_RESOURCE}.",
        f"Give the tenant a gpu_quota (DaskOperator, KubeflowInstall tenants), or a ResourceQuota with {GPU_QUOTA_KEY}.",
        check_tenant_gpu_quota,
    ),
]
