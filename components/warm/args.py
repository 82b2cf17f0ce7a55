"""Warm GPU capacity: the one home of the per-pool setting, read by GKE and EKS stacks alike
(StackConfig.warm_capacity), the deployment (components/warm/warm_capacity.py) and the simulator
(infra/simulate/warm.py).

Warm capacity is placeholder pods: pause containers that request a pool's GPUs at a negative
priority. The cluster autoscaler scales up for them as for any pod (they are above its
expendable-pods cutoff), so the pool keeps that many GPUs on running nodes; a real pod that finds
no free GPU preempts a placeholder (the scheduler's default preemption: a pod may evict pods of a
lower priority) and starts at once on a node already up; the evicted placeholder goes pending
and the autoscaler brings up a node for it in the background.

Why not the autoscaler's CapacityBuffer (autoscaling.x-k8s.io/v1alpha1) at the pinned
cluster-autoscaler 1.34.5: it exists there (apis/capacitybuffer/autoscaling.x-k8s.io/v1alpha1/
register.go:26, its CRD apis/config/crd/autoscaling.x-k8s.io_capacitybuffers.yaml), but as an alpha
API behind two flags that are off by default (config/flags/flags.go:231-232
--capacity-buffer-controller-enabled, --capacity-buffer-pod-injection-enabled; read in main.go:183
and :192), with its CRD installed by hand. GKE runs its own autoscaler, whose flags a user cannot
set; on EKS the stack's autoscaler could take them, but an alpha API whose pods only the autoscaler
sees (injected fake pods) keeps no GPU for the scheduler to preempt into. Placeholder pods work on
both clouds with stable APIs (scheduling.k8s.io/v1 PriorityClass, apps/v1 Deployment).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator

from gpu_platform.components.core.kube import ComponentNamespace, PinnedImage
from gpu_platform.components.core.models import ARGS_CONFIG
from gpu_platform.components.core.numbers import Int

__all__ = [
    "EXPENDABLE_PODS_PRIORITY_CUTOFF",
    "PLACEHOLDER_CPU_MILLI",
    "PLACEHOLDER_MEMORY_MIB",
    "WarmCapacityArgs",
    "warm_capacity_problems",
]

EXPENDABLE_PODS_PRIORITY_CUTOFF = -10
"""The cluster autoscaler's --expendable-pods-priority-cutoff default (cluster-autoscaler 1.34.5
config/flags/flags.go:161): a pod whose priority is below it is expendable (core/utils/expendable.go:66-67
``priority < cutoff``), causes no scale-up and is killed without a thought at scale-down. A placeholder
must be at or above it, or it keeps nothing warm."""

PLACEHOLDER_CPU_MILLI = 10
"""CPU a placeholder requests (millicores): a pause container needs next to none, so a real pod that
preempts one placeholder finds the node's CPU and memory free for it."""
PLACEHOLDER_MEMORY_MIB = 16
"""Memory a placeholder requests (MiB); see PLACEHOLDER_CPU_MILLI."""


class WarmCapacityArgs(BaseModel):
    """GPUs kept warm per pool by placeholder pods at a negative priority (see the module docstring)."""

    model_config = ARGS_CONFIG

    pools: dict[str, Annotated[Int, Field(ge=0, le=1024)]] = Field(default_factory=dict)
    """GPUs kept warm, by pool (GKE GPU pool or EKS GPU class name): one placeholder pod per GPU, each requesting one GPU of the pool; 0 turns a pool's warm capacity off. Default: {} (none)."""
    namespace: ComponentNamespace = "gpu-warm-capacity"
    """The platform namespace the placeholder Deployments run in. Default: gpu-warm-capacity."""
    priority: Int = -5
    """The placeholders' PriorityClass value: negative, so every real pod (priority 0 without a class) preempts them, and at or above the autoscaler's expendable cutoff (-10), so it scales up for them. Default: -5."""
    image: PinnedImage = "registry.k8s.io/pause:3.10"
    """The placeholder container (it does nothing). Default: registry.k8s.io/pause:3.10."""

    @field_validator("priority")
    @classmethod
    def _between_cutoff_and_zero(cls, value: int) -> int:
        if not EXPENDABLE_PODS_PRIORITY_CUTOFF <= value <= -1:
            raise ValueError(
                f"priority {value}: a placeholder priority must be from {EXPENDABLE_PODS_PRIORITY_CUTOFF} to -1: below 0 so "
                f"real pods preempt it, not below the autoscaler's --expendable-pods-priority-cutoff "
                f"({EXPENDABLE_PODS_PRIORITY_CUTOFF}) or the autoscaler ignores it"
            )
        return value

    def enabled(self) -> dict[str, int]:
        """The pools with warm GPUs (0 left out)."""
        return {pool: gpus for pool, gpus in sorted(self.pools.items()) if gpus > 0}


def warm_capacity_problems(args: WarmCapacityArgs, shapes: Sequence[Any]) -> list[tuple[tuple[str | int, ...], str, Any]]:
    """(key path, message, value) for each pool of ``args`` the stack does not have as a GPU pool, or
    whose warm GPUs exceed what its largest size holds in schedulable GPUs (``shapes``: the stack's NodePoolShapes;
    one placeholder holds one nvidia.com/gpu, a client's share on a shared pool)."""
    by_name = {s.name: s for s in shapes if s.gpus_per_node > 0}
    problems: list[tuple[tuple[str | int, ...], str, Any]] = []
    for pool, gpus in args.pools.items():
        shape = by_name.get(pool)
        if shape is None:
            problems.append(
                (("pools", pool), f"no GPU pool {pool!r}; warm capacity names one of: {', '.join(sorted(by_name)) or 'none (the stack has no GPU pool)'}", gpus)
            )
            continue
        if shape.queued_provisioning:
            problems.append(
                (
                    ("pools", pool),
                    f"pool {pool} has queued_provisioning: its nodes come only for a ProvisioningRequest, so placeholder pods "
                    "can never land there; remove the pool from warm capacity or turn queued_provisioning off",
                    gpus,
                )
            )
            continue
        most = shape.max_schedulable_gpus
        if gpus > most:
            problems.append(
                (
                    ("pools", pool),
                    f"{gpus} warm GPUs exceed the pool's {most} at its maximum ({shape.max_nodes} nodes x {shape.schedulable_gpus_per_node}); use at most {most}",
                    gpus,
                )
            )
    return problems
