"""Warm GPU capacity on the cluster: a PriorityClass at a negative priority and, per pool, a Deployment
of pause pods (placeholders) that request the pool's GPUs with its node selector and tolerations
(components/warm/args.py says why placeholders, not the autoscaler's CapacityBuffer).

The autoscaler scales up for the placeholders, so the pool keeps their GPUs on running nodes; a real
pod (priority 0 without a class, or any class above the placeholders') that finds no free GPU preempts
one (kube-scheduler's default preemption evicts pods of a lower priority only) and starts at once; the
Deployment replaces the evicted placeholder, which stays pending until the autoscaler's new node is up.
The placeholders never preempt anything (preemptionPolicy Never) and the class is never the default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import ClusterComponent, on_cluster
from gpu_platform.components.core.kube import component_namespace
from gpu_platform.components.core.labels import GPU_RESOURCE, MANAGED_LABELS
from gpu_platform.components.core.models import input_errors
from gpu_platform.components.dask.resources import toleration_args
from gpu_platform.components.pools.awaits import SKIP_AWAIT
from gpu_platform.components.pools.shapes import NodePoolShape
from gpu_platform.components.warm.args import PLACEHOLDER_CPU_MILLI, PLACEHOLDER_MEMORY_MIB, WarmCapacityArgs, warm_capacity_problems

__all__ = ["PRIORITY_CLASS", "WarmCapacity", "WarmCapacityArgs"]

PRIORITY_CLASS = "gpu-warm-capacity"
"""The placeholders' PriorityClass (cluster-scoped)."""


class WarmCapacity(pulumi.ComponentResource):
    """Placeholder pods keeping each configured pool's GPUs warm, at a negative priority."""

    priority_class: k8s.scheduling.v1.PriorityClass
    """The placeholders' PriorityClass."""
    deployments: dict[str, k8s.apps.v1.Deployment]
    """The placeholder Deployment of each pool with warm GPUs, by pool."""

    def __init__(
        self,
        name: str,
        args: WarmCapacityArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterComponent,
        pools: Sequence[NodePoolShape] = (),
    ) -> None:
        """``cluster``: the cluster component the placeholders run on (its provider; its ``pool_shapes()``
        unless ``pools`` is given)."""
        placed = on_cluster(cluster, opts, required=True)
        given = list(pools or cluster.pool_shapes())
        # Refused before anything is registered, as in the stack: a pool that is not a GPU pool, or more warm GPUs
        # than the pool's schedulable GPUs at its maximum (the shapes' one count: x clients on a shared pool).
        if problems := warm_capacity_problems(args, given):
            raise input_errors([(("args", *loc), message) for loc, message, _ in problems])
        super().__init__("gpu-platform:warm_capacity:WarmCapacity", name, None, placed.opts)
        shapes = {s.name: s for s in given}
        child = pulumi.ResourceOptions(parent=self)
        namespace = component_namespace(name, args.namespace, child)
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[namespace])
        self.priority_class = k8s.scheduling.v1.PriorityClass(
            f"{name}-priority-class",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=PRIORITY_CLASS, labels=dict(MANAGED_LABELS)),
            value=args.priority,
            global_default=False,
            preemption_policy="Never",
            description="Warm-capacity placeholders: below every workload, above the cluster autoscaler's expendable cutoff.",
            opts=child,
        )
        self.deployments = {pool: self._deployment(name, pool, gpus, shapes[pool], args, in_namespace) for pool, gpus in args.enabled().items()}
        self.register_outputs({"priorityClass": PRIORITY_CLASS, "pools": sorted(self.deployments)})

    def _deployment(
        self, name: str, pool: str, gpus: int, shape: NodePoolShape, args: WarmCapacityArgs, opts: pulumi.ResourceOptions
    ) -> k8s.apps.v1.Deployment:
        labels = {**MANAGED_LABELS, "app.kubernetes.io/name": "warm-capacity", "app.kubernetes.io/instance": pool}
        return k8s.apps.v1.Deployment(
            f"{name}-{pool}",
            # `pulumi up` never waits for placeholders (awaits.py): at the lowest priority every other pod takes the
            # pool's GPUs first, so they start only when the autoscaler's nodes do, by design.
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"warm-{pool}", namespace=args.namespace, labels=labels, annotations=dict(SKIP_AWAIT)),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=gpus,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"app.kubernetes.io/name": "warm-capacity", "app.kubernetes.io/instance": pool}),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                    spec=k8s.core.v1.PodSpecArgs(
                        priority_class_name=PRIORITY_CLASS,
                        termination_grace_period_seconds=0,
                        node_selector=dict(shape.placement.node_selector),
                        tolerations=toleration_args(shape.placement.tolerations),
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="pause",
                                image=args.image,
                                resources=k8s.core.v1.ResourceRequirementsArgs(
                                    requests=_requests(),
                                    limits={"memory": f"{PLACEHOLDER_MEMORY_MIB}Mi", GPU_RESOURCE: "1"},
                                ),
                            )
                        ],
                    ),
                ),
            ),
            opts=opts,
        )


def _requests() -> dict[str, Any]:
    """One GPU and next to no CPU and memory, so a real pod that preempts it finds the node's CPU free."""
    return {"cpu": f"{PLACEHOLDER_CPU_MILLI}m", "memory": f"{PLACEHOLDER_MEMORY_MIB}Mi", GPU_RESOURCE: "1"}
