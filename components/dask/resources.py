"""The Dask operator's mapping to Kubernetes objects: the operator chart's values, tolerations and placement of tenant pods, the labels every object carries."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pulumi_kubernetes as k8s

from gpu_platform.components.core.labels import MANAGED_LABELS
from gpu_platform.components.dask.args import OPERATOR_REQUESTS, DaskOperatorArgs, notebook_pool
from gpu_platform.components.pools.shapes import GPU_TAINT, NodePoolShape, PoolPlacement, Taint, tolerations

__all__ = ["gpu_placement", "managed_labels", "operator_values", "toleration_args"]


def toleration_args(taints: Iterable[Taint]) -> list[k8s.core.v1.TolerationArgs]:
    return [k8s.core.v1.TolerationArgs(**t) for t in tolerations(taints)]


def operator_values(args: DaskOperatorArgs, watch: str | None) -> dict[str, Any]:
    """Values of the dask-kubernetes-operator chart; ``watch`` limits the operator to one namespace."""
    return {
        # The published chart sets the image tag to its own version (chartpress); pin it anyway.
        "image": {"name": "ghcr.io/dask/dask-kubernetes-operator", "tag": args.chart_version},
        "rbac": {"create": True, "cluster": watch is None},
        "kopfArgs": ["--all-namespaces"] if watch is None else ["--namespace", watch],
        "resources": {"requests": dict(OPERATOR_REQUESTS), "limits": {"memory": "512Mi"}},
    }


def gpu_placement(gpu_pools: Sequence[NodePoolShape]) -> PoolPlacement:
    """Where a GPU pod of a tenant runs: the first GPU pool of role gpu (else any GPU pool)."""
    pool = notebook_pool(gpu_pools, 1)
    return pool.placement if pool is not None else PoolPlacement({}, (GPU_TAINT,))


def managed_labels() -> dict[str, str]:
    return dict(MANAGED_LABELS)
