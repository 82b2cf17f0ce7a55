"""Warm capacity in the cluster model: placeholder pods (components/warm/args.py) hold GPUs on
nodes at a negative priority; a pod that fits no node preempts them.

What is modelled, from the upstream sources:

- A placeholder requests one GPU and next to no CPU and memory (PLACEHOLDER_CPU_MILLI,
  PLACEHOLDER_MEMORY_MIB) and carries its pool's node selector and tolerations (``pools`` and
  ``tolerations=None`` in its PodSpec).
- Its priority is at or above the cluster autoscaler's --expendable-pods-priority-cutoff (-10,
  cluster-autoscaler 1.34.5 config/flags/flags.go:161, core/utils/expendable.go:66-67), so the
  autoscaler scales up for a pending placeholder as for any pod, and counts its GPU request in the
  node's utilisation at scale-down.
- The scheduler's queue takes higher priorities first (PrioritySort), so placeholders bind after every
  real pod; a placeholder never preempts (its PriorityClass has preemptionPolicy Never).
- A real pod that fits no node preempts (kube-scheduler 1.34 pkg/scheduler/framework/plugins/
  defaultpreemption/default_preemption.go: only pods of a lower priority are victims, :360-363;
  SelectVictimsOnNode :218 removes them all and reprieves the more important ones while the pod still
  fits, so the victims are the fewest placeholders, the latest started; pkg/scheduler/framework/
  preemption/preemption.go:592 pickOneNodeForPreemption prefers the node with the fewest victims, ties to
  the first node). The model binds the pod at once (a pause container ends as soon as it is told);
  the real scheduler nominates the node and binds on its next attempt, a second or so later.
- The evicted placeholder's ReplicaSet makes a new one, pending: the autoscaler scales up for it.
- The run starts in the steady state an operator sees: the placeholders on the pool's minimum nodes,
  the rest on nodes up (and paid) since the start, in the group the autoscaler would pick first.

Left out: the scale-down of a node whose only pods are placeholders at or below the utilisation
threshold (upstream could move them to another node; the model keeps such a node).
"""

from __future__ import annotations

from typing import Any

from gpu_platform.components.warm.args import PLACEHOLDER_CPU_MILLI, PLACEHOLDER_MEMORY_MIB
from gpu_platform.infra.simulate.inputs import PodRecord, PodSpec, Resources

__all__ = ["PLACEHOLDER_NAMESPACE", "Placeholders", "placeholder_spec"]

PLACEHOLDER_NAMESPACE = "gpu-warm-capacity"
"""The namespace placeholder records carry (never counted: they are not in the trace's pods)."""


def placeholder_spec(pool: str, roles: tuple[str, ...]) -> PodSpec:
    """A placeholder of ``pool``: one GPU, its pool's placement (``roles``: the roles of the pool's groups)."""
    return PodSpec(
        role="placeholder",
        requests=Resources(PLACEHOLDER_CPU_MILLI, PLACEHOLDER_MEMORY_MIB, 1),
        roles=roles,
        pools=(pool,),
        tolerations=None,
    )


class Placeholders:
    """The placeholder pods of a ClusterModel: placed at the start, preempted, replaced."""

    def __init__(self, model: Any, warm: dict[str, int]) -> None:
        """``model``: the ClusterModel (infra/simulate/model.py) whose pods these are."""
        self.model = model
        self.specs: dict[str, PodSpec] = {}
        for pool, gpus in sorted(warm.items()):
            groups = [g for g in model.groups if g.pool == pool and g.gpus_per_node > 0]
            if not gpus or not groups:
                continue
            spec = self.specs[pool] = placeholder_spec(pool, tuple(sorted({g.role for g in groups})))
            for _ in range(gpus):
                self._new(spec)
        self._warm_start()

    def _new(self, spec: PodSpec) -> Any:
        model = self.model
        assert spec.pools is not None, "a placeholder is pinned to its pool (placeholder_spec)"
        record = PodRecord(PLACEHOLDER_NAMESPACE, f"warm-{spec.pools[0]}-{model.next_number():06d}", spec.requests, model.env.now)
        return model.add_placeholder(spec, record)

    def _warm_start(self) -> None:
        """Place the placeholders as the run starts: on the pool's minimum nodes, then on nodes of the group
        the autoscaler tries first (highest priority) that are up since the start."""
        model = self.model
        model.schedule()
        while model.pending:
            spec = model.pending[0].spec
            room = [g for g in model.groups if spec.may_use(g) and g.allocatable.fits(spec.requests) and model.size(g) < g.total_max]
            if not room or not model.add_ready_node(max(room, key=lambda g: g.priority)):
                break
            model.schedule()

    def preempt(self, spec: PodSpec) -> Any:
        """Evict the fewest placeholders from one node so a pod of ``spec`` fits there; the node, or None
        when no node would fit it without its placeholders."""
        model = self.model
        best: tuple[Any, list[Any]] | None = None
        for node in model.nodes:
            if not spec.may_use(node.group):
                continue
            free, victims = node.free, []
            # Reprieved first: the earliest started (the more important, default_preemption.go MoreImportantPod).
            for pod in sorted((p for p in node.pods if p.placeholder), key=lambda p: (p.record.bound or 0.0, p.record.name), reverse=True):
                if free.fits(spec.requests):
                    break
                free = free + pod.spec.requests
                victims.append(pod)
            if victims and free.fits(spec.requests) and (best is None or len(victims) < len(best[1])):
                best = (node, victims)
        if best is None:
            return None
        node, victims = best
        for pod in victims:
            node.free = node.free + pod.spec.requests
            node.pods.discard(pod)
            pod.record.finished = model.env.now
            model.trace.placeholders_preempted += 1
            self.replace(pod)
        return node

    def replace(self, pod: Any) -> None:
        """The placeholder's ReplicaSet makes a new one, pending (the old one was evicted or lost with its node)."""
        self._new(pod.spec)
