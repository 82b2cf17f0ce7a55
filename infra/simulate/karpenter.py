"""Karpenter in the cluster model: the provisioner that launches a Karpenter stack's GPU nodes and the
disruption controller that removes them, in place of the cluster autoscaler's loop (infra/simulate/model.py).

Read from Karpenter 1.14.1 (kubernetes-sigs/karpenter at tag v1.14.1, paths under pkg/; the AWS provider
aws/karpenter-provider-aws at tag v1.14.1 where named), rule by rule:

- **Batching.** Every pending pod triggers the provisioner when it is seen and again every 10 s while it
  stays pending (controllers/provisioning/controller.go:64-78, RequeueAfter 10 s). The first trigger opens a
  batch window; each trigger of a pod not yet in the window extends it to ``batch_idle`` after that trigger,
  and the window closes ``batch_idle`` after the last trigger or ``batch_max`` after it opened, whichever
  is first (controllers/provisioning/batcher.go:52-68 Trigger, :72-109 Wait; the defaults
  --batch-idle-duration 1 s and --batch-max-duration 10 s, operator/options/options.go:129-130). Then
  one scheduling pass decides the NodeClaims for every pending pod (provisioner.go:131-168 Reconcile).
- **The scheduling pass.** Pods by CPU, then memory, descending, then oldest first
  (provisioning/scheduling/queue.go:37-43, :72-107); each goes to a node that has room (ready or still
  coming: scheduler.go:614-656 addToExistingNode), else to a NodeClaim of this pass, the one holding fewest
  pods first (:597-603, :658-693 addToInflightNode), else to a new NodeClaim of the heaviest NodePool that
  can take it (:695-790 addToNewNodeClaim; NodePools ordered by weight, provisioner.go:290-293). A pod's
  preferred node affinity (the Dask scheduler's pool role) is required first and relaxed when nothing
  takes it (scheduler.go:521-552 trySchedule).
- **Limits.** A NodePool's ``limits`` (cpu, memory, nvidia.com/gpu, as the component renders them) are
  counted on nodes' capacity, not their allocatable: what its nodes (ready and coming) hold is taken off
  (scheduler.go:834-843 updateRemainingResources), each new NodeClaim takes off its instance type's capacity
  (:786 subtractMax), and an instance type whose capacity exceeds what remains of any limit is not launched
  (:708-720, :1068-1085 filterByRemainingResources). So a NodePool limited to N GPUs of g-GPU nodes never
  holds more than floor(N/g) nodes, and a pod beyond them waits.
- **Launch and spot failover.** A NodeClaim's node joins and its GPUs become allocatable after the model's
  node timings (``model.node.provision``, ``model.node.gpu_ready``: the same EC2 boot as a managed node
  group's). A spot launch finds no capacity with probability ``model.spot.shortage``: EC2 Fleet answers
  the create call with the error (aws/karpenter-provider-aws pkg/providers/instance/instance.go:812), the
  offerings are cached unavailable for 3 minutes (pkg/cache/cache.go:31 UnavailableOfferingsTTL; marked at
  instance.go:632-641) and the NodeClaim is deleted (controllers/nodeclaim/lifecycle/launch.go:85-91). The
  pods stay pending; their next trigger's pass passes the spot NodePool over for its on-demand twin.
- **Reserved capacity** (a NodePool of capacity type ``reserved``: a named On-Demand Capacity Reservation or a
  capacity block; its group's ``reserved`` instances, cluster.py _eks_groups). A launch past them finds no
  capacity and is modelled as a spot shortage is (EC2's ReservationCapacityExceeded; offerings cached
  unavailable, the next NodePool by weight takes the pods): Karpenter's own count of a reservation's free
  instances, which skips the launch, is not modelled. An open reservation (``reserved`` then ``on-demand``)
  launches on-demand beyond them.
- **Consolidation of empty nodes.** A node is consolidatable ``consolidateAfter`` after its last pod event
  (a pod bound to it or ended on it, recorded at most once per 10 s: controllers/nodeclaim/podevents/
  controller.go:44, :84-91), or after it was initialised (its GPUs registered) when no pod came
  (utils/disruption/disruption.go:79-93; controllers/nodeclaim/disruption/consolidation.go:62-80);
  ``consolidateAfter: Never`` turns it off. The disruption controller polls every 10 s
  (controllers/disruption/controller.go:71, :182) and runs Emptiness first, under both consolidation
  policies (:103-105): the empty consolidatable nodes, as many per NodePool as its budgets allow, are
  checked again after 15 s (disruption/consolidation.go:45 commandValidationDelay; validation.go:134-148)
  and removed if still empty; the controller then looks again at once (controller.go:176-178).
- **Consolidation of used nodes** (``consolidationPolicy: WhenEmptyOrUnderutilized`` only,
  disruption/consolidation.go:100-134). When Emptiness finds nothing, single-node consolidation takes the
  consolidatable node with the fewest pods whose pods all fit on the other ready nodes, none of them within
  its own consolidateAfter (disruption/singlenodeconsolidation.go:55-126; consolidation.go:159-188, a
  delete; provisioning/scheduling/scheduler.go:627-632), checks it again after 15 s and removes it: its pods
  are evicted and replaced pending (the Dask operator replaces a worker; lost, as at a preemption) and bound
  where the command found room.
- **Budgets.** Per NodePool and reason, the fewest nodes any active budget allows: a count, or a percentage
  of the NodePool's initialised nodes rounded up (apis/v1/nodepool.go:363-405); a budget with a schedule is
  active for ``duration`` after each firing (:412-430, cron in UTC: components/core/durations.py
  cron_active), the run's second 0 being ``model.karpenter.start``; nodes already being disrupted count
  against it (controllers/disruption/helpers.go:262-301).
- **Spot interruption.** At a spot node's interruption warning (``model.spot.preemption_per_node_hour``) the
  interruption controller marks its spot offering unavailable for 3 minutes and cordons and drains the node
  at once (aws/karpenter-provider-aws pkg/controllers/interruption/utils.go:114, :125-126, :133-142,
  :207-212), instead of keeping it to the notice's end: its pods are replaced pending then, and launch on
  the next NodePool by weight.

Left out (docs/simulator/model.md): replacing a node by a cheaper one (consolidation that launches a
NodeClaim: the model only deletes, so an on-demand node that spot could replace stays), multi-node
consolidation's batches (taken one node per command here), drift and expiry (expireAfter 720h is longer than a run),
the drain's graceful termination and node deletion latency (pods and node go at once), offerings per zone
(a whole spot NodePool is passed over, where Karpenter passes over the instance type in that zone), and the
NodePools' cost-based choice among instance types (each class has one).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Generator
from typing import Any, TypeAlias

import simpy

from gpu_platform.components.core.durations import cron_active
from gpu_platform.infra.simulate.inputs import Budget, KarpenterInputs, NodeGroup, NodePoolInputs, Resources

_Node: TypeAlias = Any
"""A node of the ClusterModel (model._Node)."""
_Pod: TypeAlias = Any
"""A pod of the ClusterModel (model._Pod)."""

__all__ = [
    "COMMAND_VALIDATION_DELAY",
    "POD_EVENT_DEDUPE",
    "POD_REQUEUE",
    "POLLING_PERIOD",
    "UNAVAILABLE_OFFERINGS_TTL",
    "UNDERUTILIZED_POLICY",
    "Karpenter",
    "allowed_disruptions",
]

SimProcess: TypeAlias = Generator[simpy.Event, Any, None]

POD_REQUEUE = 10.0
"""A pending pod triggers the provisioner again this long after its last trigger (controllers/provisioning/controller.go:77)."""
POLLING_PERIOD = 10.0
"""The disruption controller's poll when it did nothing (controllers/disruption/controller.go:71 pollingPeriod)."""
COMMAND_VALIDATION_DELAY = 15.0
"""An emptiness command is checked again this long after it is decided (controllers/disruption/consolidation.go:45)."""
POD_EVENT_DEDUPE = 10.0
"""A node's last pod event is not moved again within this long (controllers/nodeclaim/podevents/controller.go:44 dedupeTimeout)."""
UNDERUTILIZED_POLICY = "WhenEmptyOrUnderutilized"
"""The consolidation policy under which nodes with pods are consolidated too."""
UNAVAILABLE_OFFERINGS_TTL = 180.0
"""An offering that found no capacity is not tried again for this long (aws/karpenter-provider-aws pkg/cache/cache.go:31)."""


def allowed_disruptions(budgets: tuple[Budget, ...], nodes: int, reason: str, at: datetime.datetime) -> int:
    """The nodes of a NodePool of ``nodes`` initialised nodes that may be disrupted for ``reason`` at ``at``: the
    smallest figure of the active budgets that name the reason or no reason (apis/v1/nodepool.go:363-377); a
    percentage rounded up (:382-405, GetScaledValueFromIntOrPercent with roundUp); an inactive budget allows
    any number."""
    allowed = 2**31 - 1
    for budget in budgets:
        if budget.reasons and reason not in budget.reasons:
            continue
        if budget.schedule is not None and not cron_active(budget.schedule, budget.duration or 0.0, at):
            continue
        if budget.nodes.endswith("%"):
            value = math.ceil(int(budget.nodes[:-1]) * nodes / 100)
        else:
            value = int(budget.nodes)
        allowed = min(allowed, value)
    return allowed


class Karpenter:
    """The provisioner and the disruption controller of a ClusterModel whose GPU groups are NodePools."""

    def __init__(self, model: Any, inputs: KarpenterInputs) -> None:
        """``model``: the ClusterModel (infra/simulate/model.py) whose GPU groups are these NodePools."""
        self.model = model
        self.inputs = inputs
        self.pools: dict[str, NodePoolInputs] = {p.name: p for p in inputs.pools}
        self.groups: dict[str, NodeGroup] = {g.name: g for g in model.groups if g.name in self.pools}
        self.ordered = sorted(self.groups.values(), key=lambda g: -self.pools[g.name].weight)
        """The NodePools' groups, heaviest first (stable: the plan's order among equal weights)."""
        self.unavailable_until: dict[str, float] = {}
        """NodePool -> when its offerings may be tried again after a launch found no capacity."""
        self.batches = 0
        """Scheduling passes run (one per closed batch window)."""
        self.launches: list[tuple[float, str, int]] = []
        """(time, NodePool, NodeClaims) of every pass that launched."""
        self._window: set[int] = set()
        self._armed = False
        self._wake: simpy.Event | None = None
        env = model.env
        env.process(self._provisioner())
        env.process(self._disruption())

    # --- triggers -------------------------------------------------------------------------------------

    def pod_created(self, pod: _Pod) -> None:
        """A new pending pod: it triggers now and every POD_REQUEUE while pending."""
        self.trigger(pod)
        self.model.env.process(self._requeue(pod))

    def _requeue(self, pod: _Pod) -> SimProcess:
        while True:
            yield self.model.env.timeout(POD_REQUEUE)
            if pod.node is not None or pod.record.finished is not None or pod not in self.model.pending:
                return
            self.trigger(pod)

    def trigger(self, pod: _Pod) -> None:
        """Batcher.Trigger (batcher.go:52-68): a pod already in the window does nothing; another arms the batcher
        and extends the window."""
        if id(pod) in self._window:
            return
        self._window.add(id(pod))
        self._armed = True
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def _provisioner(self) -> SimProcess:
        """Batcher.Wait then one scheduling pass, for ever (provisioner.go:131-168)."""
        env, t = self.model.env, self.inputs
        while True:
            if not self._armed:
                self._wake = env.event()
                yield self._wake
            self._armed = False
            opened = env.now
            idle_end = env.now + t.batch_idle
            while True:
                end = min(idle_end, opened + t.batch_max)
                if end <= env.now:
                    break
                self._wake = env.event()
                fired = yield self._wake | env.timeout(end - env.now)
                if self._wake in fired:
                    self._armed = False
                    idle_end = env.now + t.batch_idle
                    continue
                break
            self._wake = None
            self._window.clear()
            self.batches += 1
            self._schedule()

    # --- the scheduling pass --------------------------------------------------------------------------

    def _used(self, pool: str) -> Resources:
        """What the NodePool's nodes, ready and coming, take off its limits (their capacity)."""
        m = self.model
        count = sum(1 for n in m.nodes if n.group.name == pool) + sum(1 for n in m.upcoming if n.group.name == pool)
        cap = self.pools[pool].capacity
        return Resources(cap.cpu * count, cap.memory * count, cap.gpus * count)

    def _schedule(self) -> None:
        m = self.model
        now = m.env.now
        pending = sorted(m.pending, key=lambda p: (-p.spec.requests.cpu, -p.spec.requests.memory, p.record.created))
        if not pending:
            return
        room: dict[int, Resources] = {id(n): n.free for n in m.nodes}
        room |= {id(n): n.group.allocatable for n in m.upcoming}
        existing = [*m.nodes, *m.upcoming]
        # What the upcoming nodes already promise to pods a former pass counted on them: the model keeps no
        # nomination, so this pass packs every pending pod again, ready nodes' room first, then the upcoming ones.
        remaining = {name: self.pools[name].limits - self._used(name) for name in self.pools}
        claims: list[tuple[NodeGroup, list[_Pod], Resources]] = []
        for pod in pending:
            spec = pod.spec
            placed = False
            for preferred in (True, False) if spec.prefers is not None else (False,):

                def usable(group: NodeGroup, preferred: bool = preferred, spec: Any = spec) -> bool:
                    return bool(spec.may_use(group)) and (not preferred or group.role == spec.prefers)

                for node in existing:
                    if usable(node.group) and room[id(node)].fits(spec.requests):
                        room[id(node)] = room[id(node)] - spec.requests
                        placed = True
                        break
                if placed:
                    break
                claims.sort(key=lambda c: len(c[1]))
                for i, (group, pods, free) in enumerate(claims):
                    if usable(group) and free.fits(spec.requests):
                        pods.append(pod)
                        claims[i] = (group, pods, free - spec.requests)
                        placed = True
                        break
                if placed:
                    break
                for group in self.ordered:
                    if not usable(group) or not group.allocatable.fits(spec.requests):
                        continue
                    if self.unavailable_until.get(group.name, -math.inf) > now:
                        continue
                    cap = self.pools[group.name].capacity
                    if not remaining[group.name].fits(cap):
                        continue  # the instance type would breach a limit (scheduler.go:708-720)
                    remaining[group.name] = remaining[group.name] - cap
                    claims.append((group, [pod], group.allocatable - spec.requests))
                    placed = True
                    break
                if placed:
                    break
        launched: dict[str, int] = {}
        for group, _, _ in claims:
            if self._launch(group):
                launched[group.name] = launched.get(group.name, 0) + 1
        for name, count in launched.items():
            self.launches.append((now, name, count))

    def _launch(self, group: NodeGroup) -> bool:
        """Create one NodeClaim of ``group``: a node coming, or (spot, no capacity; a named reservation or capacity
        block whose instances are all taken) the NodePool's offerings cached unavailable and no node."""
        m = self.model
        short = group.spot and m.timings.spot_shortage > 0 and m.random.random() < m.timings.spot_shortage
        if group.reserved is not None and group.reservation_named and m.size(group) >= group.reserved:
            # A reserved offering whose reservation is used up fails the launch as a spot shortage does (EC2 answers
            # ReservationCapacityExceeded) and the next NodePool by weight takes the pods.
            short = True
        if short:
            self.unavailable_until[group.name] = m.env.now + UNAVAILABLE_OFFERINGS_TTL
        m.launch(group, short=short)
        return not short

    def interrupted(self, node: _Node) -> bool:
        """A spot interruption warning for ``node``: True when it is a NodePool's, which Karpenter's interruption
        controller (the stack's interruption queue) cordons and drains at once, deleting its NodeClaim, after
        marking its spot offering unavailable (aws/karpenter-provider-aws pkg/controllers/interruption/utils.go:
        114, :125-126, :133-142, :207-212); the replacement pods then launch on the next NodePool by weight."""
        if node.group.name not in self.pools:
            return False
        self.unavailable_until[node.group.name] = self.model.env.now + UNAVAILABLE_OFFERINGS_TTL
        return True

    # --- pod events and the disruption controller ------------------------------------------------------

    def pod_event(self, node: _Node) -> None:
        """A pod bound to ``node`` or ended on it: its NodeClaim's lastPodEventTime, at most once per
        POD_EVENT_DEDUPE (podevents/controller.go:84-91)."""
        now = self.model.env.now
        if node.pod_event is None or now - node.pod_event >= POD_EVENT_DEDUPE:
            node.pod_event = now

    def _disruption(self) -> SimProcess:
        """The disruption controller's loop (controllers/disruption/controller.go:128-182): Emptiness, then, under
        WhenEmptyOrUnderutilized, single-node consolidation; a command that still holds after its 15 s check is
        carried out and the loop goes again at once, otherwise it polls 10 s later."""
        m, env = self.model, self.model.env
        while True:
            yield env.timeout(POLLING_PERIOD)
            m.check_stalled()
            while True:
                chosen = self._empty_candidates()
                if chosen:
                    yield env.timeout(COMMAND_VALIDATION_DELAY)
                    valid = [n for n in chosen if n in m.nodes and self.consolidatable(n)]
                    for node in valid:
                        m.remove(node)
                    if valid:
                        continue
                    break
                node = self._underutilized_candidate() if self.inputs.consolidation_policy == UNDERUTILIZED_POLICY else None
                if node is None:
                    break
                yield env.timeout(COMMAND_VALIDATION_DELAY)
                if node not in m.nodes or not self.consolidatable(node, empty=False) or not self._fits_elsewhere(node):
                    break
                m.remove(node)  # its pods evicted, replaced pending, bound where the command found room

    def consolidatable(self, node: _Node, *, empty: bool = True) -> bool:
        """Past consolidateAfter since its last pod event, or since it was initialised (its GPUs registered) when
        none came (utils/disruption/disruption.go:79-93), and (``empty``) without pods, or (not ``empty``) with
        some: Emptiness's candidates, or single-node consolidation's (disruption/consolidation.go:100-134)."""
        after = self.inputs.consolidate_after
        if after is None or node.group.name not in self.pools or bool(node.pods) == empty:
            return False
        since = node.pod_event if node.pod_event is not None else node.record.gpu_ready
        assert since is not None, "a ready node is initialised"
        return bool(self.model.env.now - since >= after)

    def _under_consolidate_after(self, node: _Node) -> bool:
        """A NodePool's node with a pod event within consolidateAfter: consolidation moves no pod onto it
        (provisioning/scheduling/scheduler.go:627-632; utils/disruption/disruption.go:79-93)."""
        after = self.inputs.consolidate_after
        if after is None or node.group.name not in self.pools:
            return False
        since = node.pod_event if node.pod_event is not None else node.record.gpu_ready
        return bool(self.model.env.now - since < after)

    def _fits_elsewhere(self, candidate: _Node) -> bool:
        """Whether every pod of ``candidate`` fits on the other ready nodes, first fit, none of them under
        consolidateAfter (the scheduling simulation of disruption/helpers.go:53-110 with no new NodeClaim:
        consolidation.go:159-188, a delete)."""
        room = {id(n): n.free for n in self.model.nodes if n is not candidate and not self._under_consolidate_after(n)}
        targets = [n for n in self.model.nodes if id(n) in room]
        for pod in sorted(candidate.pods, key=lambda p: (-p.spec.requests.cpu, -p.spec.requests.memory)):
            target = next((n for n in targets if pod.spec.may_use(n.group) and room[id(n)].fits(pod.spec.requests)), None)
            if target is None:
                return False
            room[id(target)] = room[id(target)] - pod.spec.requests
        return True

    def _underutilized_candidate(self) -> _Node | None:
        """SingleNodeConsolidation.ComputeCommands (disruption/singlenodeconsolidation.go:55-126): the first
        candidate, fewest pods first (its SavingsRatio, price over 1 + the pods' eviction costs, types.go:131-145,
        with the prices of one class's nodes equal), whose NodePool's budgets allow an Underutilized disruption
        and whose pods all fit elsewhere."""
        m = self.model
        at = self.inputs.start + datetime.timedelta(seconds=m.env.now)
        budget: dict[str, int] = {}
        for node in sorted((n for n in m.nodes if self.consolidatable(n, empty=False)), key=lambda n: (len(n.pods), n.record.requested)):
            name = node.group.name
            if name not in budget:
                nodes = sum(1 for n in m.nodes if n.group.name == name)
                budget[name] = allowed_disruptions(self.inputs.budgets, nodes, "Underutilized", at)
            if budget[name] > 0 and self._fits_elsewhere(node):
                return node
        return None

    def _empty_candidates(self) -> list[_Node]:
        """Emptiness.ComputeCommands (controllers/disruption/emptiness.go:64-95): the consolidatable empty
        nodes, oldest first, as many per NodePool as its budgets allow for reason Empty."""
        m = self.model
        at = self.inputs.start + datetime.timedelta(seconds=m.env.now)
        candidates = [n for n in m.nodes if self.consolidatable(n)]
        if not candidates:
            return []
        budget: dict[str, int] = {}
        for name in {n.group.name for n in candidates}:
            nodes = sum(1 for n in m.nodes if n.group.name == name)
            budget[name] = max(0, allowed_disruptions(self.inputs.budgets, nodes, "Empty", at))
        chosen = []
        for node in sorted(candidates, key=lambda n: n.record.requested):
            if budget[node.group.name] > 0:
                chosen.append(node)
                budget[node.group.name] -= 1
        return chosen
