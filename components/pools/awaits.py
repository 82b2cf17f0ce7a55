"""What ``pulumi up`` waits for, workload by workload, on a cluster whose GPU pools the autoscaler grows.

pulumi-kubernetes awaits readiness on every create and update: a Deployment until it is available (its
pods ready), a Service with a selector until it has ready endpoints (the same pods), for up to 10 minutes,
after which the update fails. A workload whose pods need a node the autoscaler has yet to add waits on
that scale-up: a GPU node takes minutes cold (about 5 in the deep-dive guide), longer when spot runs out
and the autoscaler fails over to the next tier, and for ever where no node can come (a pool at its
maximum, an exhausted quota, a cluster without an autoscaler). So ``pulumi up`` would wait on capacity.

Such a workload carries ``pulumi.com/skipAwait: "true"`` on its Deployment and on the Service whose
endpoints are its pods: the provider creates or updates them and moves on, and the pods start when their
node does. It is decided from the stack's plan: the GPUs the workload's pods request at rest against what
the minimum nodes of the pool it lands on hold (``waits_on_autoscaler``), so every GPU pool that starts at
zero nodes skips, and a pool kept warm enough is awaited as before; the warm-capacity placeholders always
skip (they run at the lowest priority, so the minimum nodes' GPUs go to every other pod first). Everything
else is awaited as it was.

The provider's semantics (pulumi-kubernetes 4.x, ``provider/pkg/metadata``): ``skipAwait`` skips the
readiness wait of creates and updates, and for Deployments (with Pods, DaemonSets, StatefulSets, Jobs,
Namespaces) also the wait for deletion, so ``pulumi destroy`` does not wait for those pods to terminate
(the Namespace that holds them still does). ``pulumi.com/timeoutSeconds`` (or ``customTimeouts``, which
wins) only moves the deadline: a workload whose node never comes still fails ``up``, after longer, and a
bound from the autoscaler's settings (``max_node_provision_time`` per tier, GKE's 15 minutes) is not the
whole wait (image pulls, a model's start-up probe), so no workload here uses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_platform.components.pools.shapes import NodePoolShape

__all__ = ["SKIP_AWAIT", "await_annotations", "skips_await", "waits_on_autoscaler"]

SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
"""The annotation that tells pulumi-kubernetes not to wait for the object's readiness."""


def waits_on_autoscaler(pool: NodePoolShape | None, gpus: int) -> bool:
    """Whether pods requesting ``gpus`` GPUs in all on ``pool`` need nodes the autoscaler adds: more GPUs than
    the pool's minimum nodes hold (whole GPUs, the workload counted alone). False without GPUs or without a
    known pool (awaited as before)."""
    return pool is not None and gpus > 0 and gpus > pool.min_nodes * pool.gpus_per_node


def await_annotations(pool: NodePoolShape | None, gpus: int) -> dict[str, str]:
    """SKIP_AWAIT for a workload that waits on the autoscaler (``waits_on_autoscaler``), else nothing."""
    return dict(SKIP_AWAIT) if waits_on_autoscaler(pool, gpus) else {}


def skips_await(metadata: Mapping[str, Any] | None) -> bool:
    """Whether an object's metadata (as a plan or a manifest holds it) tells the provider not to await it."""
    annotations = (metadata or {}).get("annotations") or {}
    return all(annotations.get(k) == v for k, v in SKIP_AWAIT.items())
