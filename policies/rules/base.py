"""What every rule works on: resources as the policy engine shows them, and violations.

Rules are pure functions. The CrossGuard pack (policies/pack.py) wraps them in
ResourceValidationPolicy/StackValidationPolicy; the offline preview and the tests call
them directly on recorded resources. Properties use the engine's (camelCase) names.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from gpu_platform.components.core.labels import GPU_TEMPLATE_TAG
from gpu_platform.components.gke.plan import pool_zones
from gpu_platform.components.pools.shapes import ENVIRONMENT_LABEL, Environment

__all__ = [
    "Enforcement",
    "Resource",
    "ResourceRule",
    "RuleConfig",
    "StackRule",
    "Violation",
    "gpu_pool_gpus",
    "is_gpu_node_pool",
    "environment_of",
    "is_production",
    "stack_of",
]


class Enforcement(StrEnum):
    """Pulumi's enforcement levels."""

    ADVISORY = "advisory"
    MANDATORY = "mandatory"
    DISABLED = "disabled"


class RuleConfig(BaseModel):
    """Settings every rule takes; rules with settings of their own extend it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    enforcementLevel: Enforcement = Enforcement.MANDATORY  # noqa: N815 - Pulumi's own key
    """advisory, mandatory or disabled. Default: mandatory."""


@dataclass(frozen=True)
class Resource:
    """One resource as a policy sees it."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    protect: bool = False

    @property
    def stack(self) -> str:
        return stack_of(self.urn)


@dataclass(frozen=True)
class Violation:
    rule: str
    resource: str
    """The resource's name ("" for a stack-wide finding)."""
    message: str
    fix: str


@dataclass(frozen=True)
class ResourceRule:
    """A rule over one resource at a time."""

    name: str
    description: str
    fix: str
    check: Callable[[Resource, Any], Iterable[str]]
    config: type[RuleConfig] = RuleConfig
    tags: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class StackRule:
    """A rule over every resource of the stack together."""

    name: str
    description: str
    fix: str
    check: Callable[[list[Resource], Any], Iterable[tuple[str, str]]]
    """Yields (resource name, message)."""
    config: type[RuleConfig] = RuleConfig
    tags: tuple[str, ...] = field(default=())


def stack_of(urn: str) -> str:
    """The stack name inside a URN (urn:pulumi:<stack>::<project>::...)."""
    return urn.split("::", 1)[0].removeprefix("urn:pulumi:")


def environment_of(r: Resource) -> str | None:
    """The environment a cluster declares by the components' gpu-platform-environment label (GKE
    resourceLabels) or tag (EKS tags), or None when it declares none."""
    for key in ("resourceLabels", "tags"):
        labels = r.props.get(key)
        if isinstance(labels, Mapping) and isinstance(labels.get(ENVIRONMENT_LABEL), str):
            return str(labels[ENVIRONMENT_LABEL])
    return None


def is_production(r: Resource, patterns: Iterable[str]) -> bool:
    """Production by the typed environment the resource carries; only where it carries none, by
    the stack-name patterns (productionStacks)."""
    declared = environment_of(r)
    if declared is not None:
        return declared == Environment.PROD.value
    return any(fnmatch.fnmatchcase(stack_of(r.urn), p) for p in patterns)


GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
GKE_CLUSTER = "gcp:container/cluster:Cluster"


EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
EKS_CLUSTER = "aws:eks/cluster:Cluster"


def eks_gpus_per_node(props: Mapping[str, Any]) -> int:
    """Physical GPUs per node of an EKS node group: the plan's (NodePoolShape.gpus_per_node), which the components
    write on every node group as its GPU tag (k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu). Only a
    node group without that tag (one the components did not make) is counted from the catalog: the most of its
    instance types' GPUs (0: a CPU group, or types the catalog does not know)."""
    tagged = str((props.get("tags") or {}).get(GPU_TEMPLATE_TAG) or "")
    if tagged.isdigit():
        return int(tagged)
    from gpu_platform.components.catalog.gpus import AWS_INSTANCE_TYPES

    rows = [AWS_INSTANCE_TYPES.get(t) for t in props.get("instanceTypes") or []]
    return max((r.gpu_count for r in rows if r is not None), default=0)


def accelerators(props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    node = props.get("nodeConfig") or {}
    return list(node.get("guestAccelerators") or [])


def is_gpu_node_pool(r: Resource) -> bool:
    """A GKE node pool with accelerators, or an EKS node group of GPU instance types."""
    if r.type == EKS_NODE_GROUP:
        return eks_gpus_per_node(r.props) > 0
    return r.type == GKE_NODE_POOL and bool(accelerators(r.props))


def gpu_pool_gpus(r: Resource, cluster_node_locations: list[str] | None = None) -> int | None:
    """Most physical GPUs a GPU pool (GKE) or node group (EKS) can hold; None when it has no upper bound. The GPUs
    per node are the plan's as the components write them on the resource (a GKE pool's guestAccelerators count, an
    EKS node group's GPU tag: eks_gpus_per_node). A GKE pool's per-zone bounds multiply over its zones by the
    plan's own count (gke_plan.pool_zones: the pool's node locations, else its cluster's, else a zonal cluster's
    one zone, else GKE's three), the one function the component's plan uses."""
    if r.type == EKS_NODE_GROUP:
        maximum = (r.props.get("scalingConfig") or {}).get("maxSize")
        return None if maximum is None else eks_gpus_per_node(r.props) * int(maximum)
    auto = r.props.get("autoscaling") or {}
    per_node = sum(int(a.get("count") or 0) for a in accelerators(r.props))
    if auto.get("totalMaxNodeCount") is not None:
        return per_node * int(auto["totalMaxNodeCount"])
    zones = pool_zones(r.props.get("location"), cluster_node_locations, r.props.get("nodeLocations")).count
    if auto.get("maxNodeCount") is not None:
        return per_node * int(auto["maxNodeCount"]) * zones
    if not auto and r.props.get("nodeCount") is not None:
        return per_node * int(r.props["nodeCount"]) * zones
    return None
