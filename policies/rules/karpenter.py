"""Karpenter's NodePools: every NodePool that launches GPU nodes bounds them and taints them.

A NodePool without ``limits`` lets Karpenter launch instances until the account's quota stops it (the
cluster autoscaler's node groups always have a maximum); a GPU NodePool without the GPU taint lets any
pod take its GPU nodes. KarpenterNodePools always sets both, from the typed classes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpu_platform.components.core.labels import GPU_RESOURCE, PHYSICAL_GPUS_ANNOTATION
from gpu_platform.components.pools.shapes import GPU_TAINT
from gpu_platform.policies.rules.base import Resource, ResourceRule, RuleConfig

__all__ = ["KARPENTER_NODE_POOL", "RULES", "check_node_pool_limited", "check_node_pool_tainted", "launches_gpus", "node_pool_gpus"]

KARPENTER_NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
_BOUNDED = ("cpu", "memory")


def _spec(r: Resource) -> Mapping[str, Any]:
    return r.props.get("spec") or {}


def _taints(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(((spec.get("template") or {}).get("spec") or {}).get("taints") or [])


def launches_gpus(r: Resource) -> bool:
    """A NodePool for GPU nodes: it carries the GPU taint or limits GPUs (as KarpenterNodePools' do)."""
    spec = _spec(r)
    return GPU_RESOURCE in (spec.get("limits") or {}) or any(t.get("key") == GPU_TAINT.key for t in _taints(spec))


def node_pool_gpus(r: Resource) -> int | None:
    """Most physical GPUs a NodePool may launch: the plan's, which the components write on it
    (``gpu-platform.io/physical-gpus``: its maximum nodes times NodePoolShape.gpus_per_node; its nvidia.com/gpu limit
    counts a shared GPU once per client). A NodePool without it (one the components did not make): its nvidia.com/gpu
    limit. None when it has neither."""
    stated = ((r.props.get("metadata") or {}).get("annotations") or {}).get(PHYSICAL_GPUS_ANNOTATION)
    value = stated if stated is not None else (_spec(r).get("limits") or {}).get(GPU_RESOURCE)
    try:
        return None if value is None else int(str(value))
    except ValueError:
        return None


def check_node_pool_limited(r: Resource, config: RuleConfig) -> Iterator[str]:
    if r.type != KARPENTER_NODE_POOL:
        return
    limits = _spec(r).get("limits") or {}
    missing = [k for k in (*_BOUNDED, *([GPU_RESOURCE] if launches_gpus(r) else [])) if k not in limits]
    if missing:
        yield f"NodePool has no limit on {', '.join(missing)}, so Karpenter launches nodes until the account's quota stops it"


def check_node_pool_tainted(r: Resource, config: RuleConfig) -> Iterator[str]:
    if r.type != KARPENTER_NODE_POOL or not launches_gpus(r):
        return
    if not any(t.get("key") == GPU_TAINT.key and t.get("effect") == GPU_TAINT.effect.value for t in _taints(_spec(r))):
        yield f"GPU NodePool lacks the taint {GPU_TAINT}, so any pod can take its GPU nodes"


RULES = [
    ResourceRule(
        "karpenter-node-pool-limited",
        "Every Karpenter NodePool limits the CPU and memory it may launch, and a GPU NodePool its GPUs.",
        "Set spec.limits (KarpenterNodePools derives them from the class's max_nodes x shape).",
        check_node_pool_limited,
    ),
    ResourceRule(
        "karpenter-gpu-node-pool-tainted",
        f"A GPU NodePool taints its nodes {GPU_TAINT} so only GPU pods land there.",
        "Add the taint to spec.template.spec.taints (KarpenterNodePools always does).",
        check_node_pool_tainted,
    ),
]
