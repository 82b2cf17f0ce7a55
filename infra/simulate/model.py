"""A discrete-event model of a GPU cluster under a workload, on SimPy: node groups, the
scheduler binding pods, the cluster autoscaler's loop (or, on a Karpenter stack, Karpenter's
provisioner and disruption controller: infra/simulate/karpenter.py), node start-up, spot shortage
and preemption, tenant quotas at admission. ``gpu-platform simulate`` builds it from a stack
(infra/simulate/runs.py); this module knows nothing of stacks or files.

Time is in seconds from the start of the run. Every random draw comes from one
``random.Random(seed)`` in the order the events happen, so a run is deterministic for a
given seed.

The model, rule by rule (each rule names what it stands for):

- A workload is jobs (a Dask cluster, a pipeline run, a replayed pod). A job is stages run
  one after the other; a stage creates its pods together, its work starts when every pod
  of it is Running (a Dask cluster computes once its scheduler and workers are up; a
  pipeline step once its pod runs) and lasts the stage's ``work``; then its pods end.
- Admission: a tenant's GPU quota (ResourceQuota requests.nvidia.com/gpu) is checked when a
  gang's pods are created; a gang that would exceed it is refused (its pods are counted as
  refused and never wait); a stage whose every gang is refused ends its job. With queues, Kueue
  admits instead (infra/simulate/queues.py) and the quota stays the ceiling of what it admits.
- The scheduler binds pending pods, in kube-scheduler's queue order with its requeue back-off
  (``_bind``: a pod that failed waits out a back-off doubling from 1 s to 10 s, and a pod no longer
  backing off goes before one still backing off, so a pod that failed often can lose a new node to
  a newer pod), to ready nodes of the roles a pod may use where its CPU, memory and GPUs fit: a
  preferred role first (the Dask scheduler's preferred node affinity for the scheduler pool), then by score: most-allocated (bin
  packing; GKE's optimize-utilization profile) or least-allocated (the default scheduler's
  spreading). A bound pod is Pending until its containers run: the image pull still owed
  on that node, then the container start.
- A node joins ``provision`` after the scale-up; its GPUs become allocatable
  ``gpu_ready`` later (driver installation and device plugin). Until then the autoscaler
  counts it as upcoming capacity, as it does a GPU node whose GPUs are not yet advertised.
  The image is pulled once per node: with the prepuller from the node's join, otherwise
  when the first pod binds. With image streaming the image is fetched lazily by the first
  container that starts on the node (``image_pull_streaming``), prepuller or not.
- The autoscaler runs every ``scan_interval`` (upstream cluster-autoscaler 1.34.5; file:line below
  are of its cluster-autoscaler/ folder). Scale-up: pending pods that fit no upcoming node wait
  while the oldest of them is under 2 s old or the oldest GPU one under 30 s (the loop removes no
  node either: core/static_autoscaler.go:67-71, :537-547, :708-719); then one node group is picked by the
  expanders in chain: the highest priority that can take them (EKS priority tiers, a spot group above
  its on-demand twin; a GKE ComputeClass's priorities, which rank that class's node pools only: its best
  one meets the other node pools on waste alone), then least waste (the idle CPU share plus
  the idle memory share of the new nodes, expander/waste/waste.go:37-65), then at random
  (expander/factory/expander_factory.go:78). It adds the nodes that group needs for them, within its
  bounds (total, or per zone with nodes spread over the zones). A spot scale-up finds no capacity
  with probability ``spot_shortage``; the autoscaler gives up ``max_node_provision`` after the
  group's newest scale-up (clusterstate/clusterstate.go:220-257) or, with early abort, when the
  cloud reports the failure (``failure_report``), then backs the group off as upstream's exponential
  back-off does (``initial_backoff``, doubled at each failure that finds the group no longer backed
  off, to ``max_backoff``, forgotten ``backoff_reset`` after the last failure:
  utils/backoff/exponential_backoff.go:69-118) and the next scan tries the next priority.
  Scale-down: no removal for ``scale_down_delay_after_add`` after a scale-up (unneeded nodes are
  still tracked); a node is a candidate when its utilisation is at or below the threshold (GPU
  nodes: GPU requests over allocatable GPUs against ``scale_down_gpu_utilisation_threshold``; others:
  the larger of CPU and memory against ``scale_down_utilisation_threshold``;
  simulator/utilization/info.go:50-59, core/scaledown/eligibility/eligibility.go:173-192); a
  candidate running a workload pod cannot be emptied (Dask and pipeline pods belong to custom
  controllers, which the autoscaler's skip-nodes-with-custom-controller-pods default never evicts)
  and is not checked again for ``unremovable_recheck`` (core/scaledown/planner/planner.go:269,
  :290-307); an empty candidate is unneeded, and after ``scale_down_unneeded`` it is removed, down
  to the group's minimum. Out of scope (docs/simulator/model.md, "What the model takes from the cluster
  autoscaler, and what it leaves out"): node deletion latency, GPUs held while pods terminate,
  a GPU node registering before its device plugin advertises GPUs (``_provision``), image streaming
  only for Artifact Registry images.
- Warm capacity (``warm``, pool -> GPUs; infra/simulate/warm.py): placeholder pods of one GPU each at a
  negative priority hold GPUs on nodes (the run starts with them placed, on nodes up since its start where
  the pool's minimum has no room); a pod that fits no node preempts placeholders (kube-scheduler's
  defaultpreemption), each evicted placeholder is replaced pending, and the autoscaler scales up for it.
  Warm nodes are paid as any node; placeholders are not counted as waiting or utilising pods.
- Spot nodes are preempted at ``preemption_per_node_hour`` (a Poisson process per node);
  after ``preemption_notice`` the node is gone and its pods are recreated pending (the Dask
  operator replaces a lost worker), the stage's work continuing.
- Capacity ladders' rungs (GKE node pools, EKS node groups): a reservation rung's group holds ``reserved``
  instances (an EKS capacity block's its maximum, named); a named reservation gives no node beyond them
  (the scale-up finds no capacity and fails as a spot shortage does, so the ComputeClass's or the priority
  expander's next rung is tried once the group is backed off), any matching
  reservation gives on-demand nodes beyond them. A flex-start node is deleted ``run_limit`` after it
  joined (GKE's max_run_duration), its pods lost and recreated pending as at a preemption. Flex-start
  nodes take the same node timings as others: how long flex-start waits for capacity is not modelled.

A node is paid from its scale-up request to its removal, a reservation's instances (a capacity block's at
its capacity-block price) for the whole run whether nodes use them or not (infra/simulate/prices.py); its
GPUs count as available (the report's kube_node_status_capacity) from ``gpu_ready`` to removal.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import simpy

from gpu_platform.infra.simulate.inputs import (
    Binding,
    Fallback,
    Gang,
    Job,
    KarpenterInputs,
    NodeGroup,
    NodeRecord,
    PodRecord,
    PodSpec,
    Resources,
    Timings,
    Trace,
)
from gpu_platform.infra.simulate.queues import Cohort, Queues

__all__ = ["ClusterModel"]

SimProcess: TypeAlias = Generator[simpy.Event, Any, None]
"""A simpy process: the events it waits for, one at a time."""

NEW_POD_BUFFER = 2.0
"""No scale-up while the oldest unschedulable pod is younger than this (upstream
core/static_autoscaler.go:67 ``unschedulablePodTimeBuffer``, checked at :537-547 and :1047-1053)."""
NEW_GPU_POD_BUFFER = 30.0
"""No scale-up while the oldest unschedulable GPU pod is younger than this: the autoscaler waits one
more loop for more pods to come (upstream core/static_autoscaler.go:71 ``unschedulablePodWithGpuTimeBuffer``)."""
POD_INITIAL_BACKOFF = 1.0
"""kube-scheduler's back-off after a pod's first failed attempt (Kubernetes v1.34.12, the control plane
tests/kube builds: pkg/scheduler/backend/queue/scheduling_queue.go:79 DefaultPodInitialBackoffDuration)."""
POD_MAX_BACKOFF = 10.0
"""Its longest back-off (scheduling_queue.go:83 DefaultPodMaxBackoffDuration); doubled per failed attempt up
to it (backoff_queue.go:233-244 calculateBackoffDuration)."""


@dataclass(eq=False)
class _Node:
    record: NodeRecord
    group: NodeGroup
    free: Resources
    pods: set[_Pod] = field(default_factory=set)
    image_at: float | None = None
    """When the image is on the node (None: not pulled yet)."""
    unneeded_since: float | None = None
    unremovable_until: float = -math.inf
    """Found unremovable (at or below the utilisation threshold, with pods that cannot move): not
    checked again before this (--unremovable-node-recheck-timeout)."""
    pod_event: float | None = None
    """Karpenter's lastPodEventTime of its NodeClaim (infra/simulate/karpenter.py); None: no pod event yet."""


@dataclass(eq=False)
class _Pod:
    spec: PodSpec
    record: PodRecord
    gang: _GangRun
    node: _Node | None = None
    placeholder: bool = False
    """A warm-capacity placeholder (infra/simulate/warm.py): no gang, lowest priority, preempted by any pod."""
    failures: int = 0
    """Failed scheduling attempts (kube-scheduler's UnschedulableCount: its back-off grows with it)."""
    queued: int = 0
    """When it was last (re)queued, as a sequence number of attempts (the queue's Timestamp, refreshed at
    each failure: scheduling_queue.go:881): the queue's order."""
    queued_at: float = 0.0
    """The same, in seconds (the back-off counts from it)."""


@dataclass(eq=False)
class _GangRun:
    stage: _StageRun
    gang: Gang
    pods: list[_Pod] = field(default_factory=list)
    working_since: float | None = None
    done: bool = False


@dataclass(eq=False)
class _StageRun:
    job: Job
    index: int
    open: int = 0
    """Gangs of the stage not done yet."""


class ClusterModel:
    """Node groups, nodes, pending pods, the scheduler and the autoscaler, on a SimPy environment."""

    def __init__(
        self,
        groups: Sequence[NodeGroup],
        *,
        timings: Timings = Timings(),
        binding: Binding = Binding.MOST_ALLOCATED,
        seed: int = 0,
        autoscale: bool = True,
        quotas: dict[str, int] | None = None,
        queues: Cohort | None = None,
        tenants: dict[str, str] | None = None,
        warm: dict[str, int] | None = None,
        karpenter: KarpenterInputs | None = None,
    ) -> None:
        self.env = simpy.Environment()
        self.random = random.Random(seed)
        self.timings = timings
        self.binding = binding
        self.autoscale = autoscale
        self.groups = list(groups)
        self.quotas = dict(quotas or {})
        self.quota_used: dict[str, int] = {}
        self.queues = None if queues is None else Queues(queues, tenants or {}, lambda: self.env.now, self.quotas)
        """Kueue's admission (infra/simulate/queues.py), the tenants' quotas still its ceiling; None without queues."""
        self.nodes: list[_Node] = []
        self.upcoming: list[_Node] = []
        """Nodes asked for whose GPUs are not allocatable yet (provisioning, or joined without GPUs)."""
        self.pending: list[_Pod] = []
        """Pending unbound pods, oldest first (the scheduler's queue)."""
        self.trace = Trace(horizon=0.0)
        self._placed: dict[PodSpec, PodSpec] = {}
        """Each pod spec as the stack places it on these groups (PodSpec.placed)."""
        self.backoff_until: dict[str, float] = {g.name: 0.0 for g in self.groups}
        self.failures: dict[str, int] = {g.name: 0 for g in self.groups}
        """Failed scale-ups per group over the run (never reset)."""
        self.backoff_duration: dict[str, float] = {}
        """Each backed-off group's current back-off and the time of its last failure, forgotten after backoff_reset."""
        self._last_failure: dict[str, float] = {}
        self.expected_add: dict[str, float] = {}
        """Per group: its newest scale-up plus max_node_provision (the scale-up request's ExpectedAddTime)."""
        self.last_scale_up = -math.inf
        self._open_fallbacks: list[Fallback] = []
        self._counter = 0
        self._attempts = 0
        self._last_pass = -math.inf
        self._sessions: list[_GangRun] = []
        self._expected = self._session_jobs = self._settled = 0
        self.done = self.env.event()
        """Fires when every job added is over (done or refused), sessions aside."""
        for group in self.groups:
            for zone in group.zones if group.per_zone else (None,):
                for _ in range(group.min_nodes):
                    node = self._new_node(group, zone)
                    node.record.joined = node.record.gpu_ready = 0.0
                    if timings.prepuller:
                        node.image_at = 0.0
                    self.nodes.append(node)
                    self._watch_preemption(node)
                    self._watch_run_limit(node)
        self.karpenter: Any = None
        """Karpenter's provisioner and disruption controller (infra/simulate/karpenter.py) in place of the cluster
        autoscaler, for a stack whose GPU groups are NodePools; None otherwise."""
        if autoscale and karpenter is not None:
            from gpu_platform.infra.simulate.karpenter import Karpenter

            self.karpenter = Karpenter(self, karpenter)
        self.placeholders = None
        """Warm capacity's placeholder pods (infra/simulate/warm.py); None without warm capacity."""
        if warm and any(warm.values()):
            from gpu_platform.infra.simulate.warm import Placeholders

            self.placeholders = Placeholders(self, warm)
        if autoscale and self.karpenter is None:
            self.env.process(self._autoscaler())

    # --- nodes ---------------------------------------------------------------------------

    def _zone_for(self, group: NodeGroup) -> str | None:
        """The zone a new node of ``group`` goes to: the one with fewest nodes below its per-zone maximum."""
        counts = {z: 0 for z in group.zones}
        for node in self.nodes + self.upcoming:
            if node.group is group:
                counts[node.record.zone] += 1
        candidates = [z for z in group.zones if not group.per_zone or counts[z] < group.max_nodes]
        return min(candidates, key=lambda z: counts[z]) if candidates else None

    def _new_node(self, group: NodeGroup, zone: str | None) -> _Node:
        self._counter += 1
        zone = zone or group.zones[self._counter % len(group.zones)]
        record = NodeRecord(f"{group.name}-{self._counter:05d}", group, zone, requested=self.env.now)
        self.trace.nodes.append(record)
        return _Node(record, group, group.allocatable)

    def size(self, group: NodeGroup) -> int:
        """The group's nodes, ready or upcoming."""
        return sum(1 for n in self.nodes if n.group is group) + sum(1 for n in self.upcoming if n.group is group)

    def _failed_scale_up(self, group: NodeGroup, nodes: list[_Node], fallback: Fallback | None) -> SimProcess:
        """A scale-up that finds no capacity: one give-up for all its nodes, one back-off step.

        With early abort, when the cloud reports it. Without, at the group's scale-up request's
        ExpectedAddTime, which every later scale-up of the same group moves to its own time plus
        max_node_provision (upstream clusterstate/clusterstate.go:220-257 registerOrUpdateScaleUpNoLock,
        timed out at :290-310): a group grown again while a request hangs gives up later."""
        t = self.timings
        if t.early_abort:
            yield self.env.timeout(t.failure_report.draw(self.random))
        else:
            while self.env.now < self.expected_add[group.name]:
                yield self.env.timeout(self.expected_add[group.name] - self.env.now)
        for node in nodes:
            self.upcoming.remove(node)
            node.record.removed = self.env.now
            node.record.failed = True
        self._back_off(group)
        if fallback is not None:
            fallback.gave_up = self.env.now
            self._open_fallbacks.append(fallback)

    def _back_off(self, group: NodeGroup) -> None:
        """Back ``group`` off after a failed scale-up as upstream's exponential back-off does
        (utils/backoff/exponential_backoff.go:69-93): ``initial_backoff`` the first time; doubled, to
        ``max_backoff``, when the group was no longer backed off at this failure; kept when it still was
        (failures of concurrent scale-ups do not compound). A successful scale-up does not reset it
        (RemoveBackoff has no caller outside tests in 1.34); it is forgotten ``backoff_reset``
        (--node-group-backoff-reset-timeout, 3h) after the group's last failure (:113-118, run at every
        loop by clusterstate/clusterstate.go:276)."""
        now, t = self.env.now, self.timings
        self.failures[group.name] += 1
        duration = t.initial_backoff
        if group.name in self.backoff_duration:
            duration = self.backoff_duration[group.name]
            if self.backoff_until[group.name] < now:
                duration = min(t.max_backoff, 2 * duration)
        self.backoff_duration[group.name] = duration
        self._last_failure[group.name] = now
        self.backoff_until[group.name] = now + duration

    def _forget_stale_backoff(self) -> None:
        """Forget the back-off of groups whose last failure is older than backoff_reset (see _back_off)."""
        for name, last in list(self._last_failure.items()):
            if last + self.timings.backoff_reset < self.env.now:
                del self._last_failure[name], self.backoff_duration[name]

    def _provision(self, node: _Node) -> SimProcess:
        t, rng = self.timings, self.random
        yield self.env.timeout(t.provision.draw(rng))
        node.record.joined = self.env.now
        if t.prepuller and not node.group.image_streaming:
            # The prepuller pulls the whole image as the node joins. With image streaming it does not:
            # the image is fetched lazily when the first container starts (the deep-dive's 12 s).
            node.image_at = self.env.now + self._pull_time(node.group)
        ready_after = t.gpu_ready.draw(rng)
        if ready_after > 0:
            # The node registers (a Node add): kube-scheduler's NodeResourcesFit queueing hint requeues the pods
            # its allocatable fits (plugins/noderesources/fit.go:419-432), and each fails on it while it is not
            # usable, its back-off one step longer. The model takes the node's allocatable as advertised at
            # registration (as kwok's nodes are); a cloud GPU node advertises its GPUs only once the device
            # plugin runs, so there the model counts one failed attempt per new node too many for GPU pods.
            self._bind(only=[p for p in self.pending if p.spec.may_use(node.group) and node.group.allocatable.fits(p.spec.requests)])
        yield self.env.timeout(ready_after)
        node.record.gpu_ready = self.env.now
        self.upcoming.remove(node)
        self.nodes.append(node)
        self._watch_preemption(node)
        self._watch_run_limit(node)
        self._bind()

    def _watch_run_limit(self, node: _Node) -> None:
        """A flex-start node (NodeGroup.run_limit) is deleted run_limit after it joined: GKE stops a flex-start VM at
        its max_run_duration (node_config.max_run_duration), whatever runs on it."""
        limit = node.group.run_limit
        if limit is not None and node.record.joined is not None:
            self.env.process(self._run_limit(node, max(0.0, node.record.joined + limit - self.env.now)))

    def _run_limit(self, node: _Node, after: float) -> SimProcess:
        yield self.env.timeout(after)
        if node.record.removed is not None:
            return
        self.trace.run_limit_ends += 1
        self._remove_with_pods(node)

    def _pull_time(self, group: NodeGroup) -> float:
        dist = self.timings.image_pull_streaming if group.image_streaming else self.timings.image_pull
        return dist.draw(self.random)

    def _watch_preemption(self, node: _Node) -> None:
        rate = self.timings.preemption_per_node_hour
        if node.group.spot and rate > 0:
            self.env.process(self._preemption(node, self.random.expovariate(rate / 3600)))

    def _preemption(self, node: _Node, after: float) -> SimProcess:
        """The node is reclaimed ``after`` seconds from now: it goes at the end of the notice, or at the notice
        itself on a Karpenter NodePool, whose interruption controller drains it then (infra/simulate/karpenter.py)."""
        yield self.env.timeout(after)
        if node.record.removed is not None:
            return
        if self.karpenter is None or not self.karpenter.interrupted(node):
            yield self.env.timeout(self.timings.preemption_notice)
        if node.record.removed is not None:
            return
        self.trace.preemptions += 1
        node.record.preempted = True
        self._remove_with_pods(node)

    def _remove_with_pods(self, node: _Node) -> None:
        """The node goes now with its pods: each is lost and replaced pending (the Dask operator replaces a lost
        worker; a placeholder's ReplicaSet its pod), the stage's work continuing; then a scheduling pass."""
        self._remove(node)
        if not node.pods:
            return
        for pod in list(node.pods):
            pod.record.finished = self.env.now
            pod.record.lost = True
            node.pods.discard(pod)
            if pod.placeholder:
                assert self.placeholders is not None, "placeholder pods exist only with warm capacity"
                self.placeholders.replace(pod)
                continue
            gang = pod.gang
            gang.pods.remove(pod)
            gang.pods.append(self._create(gang, pod.spec, replacing=True))
        self._bind()

    def _remove(self, node: _Node) -> None:
        node.record.removed = self.env.now
        self.nodes.remove(node)

    # --- for warm capacity's placeholders (infra/simulate/warm.py) ------------------------------

    def next_number(self) -> int:
        """A new number for a node's or pod's name."""
        self._counter += 1
        return self._counter

    def add_placeholder(self, spec: PodSpec, record: PodRecord) -> _Pod:
        """A pending placeholder pod (no gang: a Deployment's pod)."""
        pod = _Pod(spec, record, None, placeholder=True)  # type: ignore[arg-type]
        self.pending.append(pod)  # the scheduler's queue puts it behind every real pod (_bind)
        if self.karpenter is not None:
            self.karpenter.pod_created(pod)
        return pod

    def schedule(self) -> None:
        """One pass of the scheduler over the pending pods."""
        self._bind()

    def add_ready_node(self, group: NodeGroup) -> bool:
        """A node of ``group`` up now with its GPUs ready (the steady state a run starts in); False when the
        group has no room (its maximum, or every zone's)."""
        zone = self._zone_for(group)
        if self.size(group) >= group.total_max or (zone is None and group.per_zone):
            return False
        node = self._new_node(group, zone)
        node.record.joined = node.record.gpu_ready = self.env.now
        if self.timings.prepuller:
            node.image_at = self.env.now
        self.nodes.append(node)
        self._watch_preemption(node)
        self._watch_run_limit(node)
        return True

    # --- for Karpenter's provisioner and disruption (infra/simulate/karpenter.py) -------------------

    def launch(self, group: NodeGroup, *, short: bool = False) -> None:
        """A node of ``group`` asked for now: it joins and its GPUs become ready after the node timings. ``short``:
        the launch found no capacity (recorded failed, never paid), a fallback open until another group of its
        role launches. Either way, a fallback of another group of the role is closed by this launch."""
        now = self.env.now
        node = self._new_node(group, self._zone_for(group))
        for other in self._open_fallbacks:
            if other.group != group.name and other.role == group.role:
                other.next_scale_up = now
        self._open_fallbacks = [f for f in self._open_fallbacks if f.next_scale_up is None]
        if short:
            node.record.removed = now
            node.record.failed = True
            fallback = Fallback(group.name, now, now, role=group.role)
            self.trace.fallbacks.append(fallback)
            self._open_fallbacks.append(fallback)
            return
        self.upcoming.append(node)
        self.env.process(self._provision(node))

    def remove(self, node: _Node) -> None:
        """The node is gone now; its pods, if any, are evicted and replaced pending (see _remove_with_pods)."""
        self._remove_with_pods(node)

    # --- pods and the scheduler ------------------------------------------------------------

    def _create(self, gang: _GangRun, spec: PodSpec, replacing: bool = False) -> _Pod:
        spec = self._placed.setdefault(spec, spec.placed(self.groups))
        self._counter += 1
        job = gang.stage.job
        # A job of one pod (a replayed pod) keeps its name, so simulated and measured waits compare by pod.
        alone = len(job.stages) == 1 and len(job.stages[0].gangs) == 1 and len(gang.gang.pods) == 1 and not replacing
        name = job.name if alone else f"{job.name}-{spec.role}-{self._counter:06d}"
        record = PodRecord(job.namespace, name, spec.requests, self.env.now)
        self.trace.pods.append(record)
        self._attempts += 1
        pod = _Pod(spec, record, gang, queued=self._attempts, queued_at=self.env.now)
        self.pending.append(pod)
        if self.karpenter is not None:
            self.karpenter.pod_created(pod)
        return pod

    def _backoff_expiry(self, pod: _Pod) -> float:
        """When the pod's back-off ends, as kube-scheduler computes it (Kubernetes v1.34.12
        pkg/scheduler/backend/queue/backoff_queue.go:221-244): none before its first failure; then
        POD_INITIAL_BACKOFF doubled per failure to POD_MAX_BACKOFF, from its last requeue, truncated to the
        whole second (:139-144, the 1 s ordering window of SchedulerPopFromBackoffQ, on by default in 1.34)."""
        if pod.failures == 0:
            return -math.inf
        return math.floor(pod.queued_at + min(POD_MAX_BACKOFF, POD_INITIAL_BACKOFF * 2.0 ** (pod.failures - 1)))

    def _bind(self, only: list[_Pod] | None = None) -> None:
        """A scheduling pass: the pods an event requeues are tried in kube-scheduler's queue order and bound
        where they fit, the others failing once more. ``only``: the pods the event concerns (new pods: only
        they are tried; a registering node: the pods it fits); otherwise every pending pod (a node usable, a
        pod gone: the events NodeResourcesFit's queueing hints requeue pods on).

        The queue as Kubernetes v1.34.12 keeps it (pkg/scheduler/backend/queue): a requeued pod goes to the
        active queue if its back-off is over, else to the back-off queue (scheduling_queue.go:1169-1190); the
        active queue is ordered by priority and then by when the pod was last queued
        (plugins/queuesort/priority_sort.go:45-49: warm-capacity placeholders, the one lower priority the
        model has, go after every workload pod), a time refreshed at every
        failure (scheduling_queue.go:881); when the active queue is empty the scheduler pops the back-off
        queue in back-off order (active_queue.go:256-282, SchedulerPopFromBackoffQ), so no room is left idle
        and the back-off decides only who goes first: a pod that failed often, backing off, loses a node to a
        newer pod that is not. The 5-minute flush of unschedulable pods (scheduling_queue.go:66, :930-945)
        changes nothing here: the model requeues every pending pod at every event that frees room. A kind of
        pod that fits no node fails for the rest of the pass without being tried (binding only takes room).

        A burst of events (passes at one instant: the nodes of one scale-up registering) reorders the pods it
        fails at random. Upstream, a pod whose attempt is in flight when an event comes is requeued at once
        (scheduling_queue.go:771-801, :897) and, the active queue being empty, tried again, its timestamp
        refreshed: which pods an event catches in flight is a race of milliseconds, so after a burst the
        queue's order among pods of equal back-off is no longer their age. The model cannot time that race
        and draws the order (the differential check's steady arrivals: the real runs' oldest pods lose the
        nodes of the first scale-up to younger ones, different pods in each run). Spaced events keep the
        order: a queue of pods that fail one event at a time is first come, first served."""
        now = math.floor(self.env.now)
        tried = self.pending if only is None else only
        expiry = {id(p): self._backoff_expiry(p) for p in tried}
        order = sorted(tried, key=lambda p: (p.placeholder, expiry[id(p)] >= now, expiry[id(p)] if expiry[id(p)] >= now else 0.0, p.queued))
        blocked: set[PodSpec] = set()
        placed: set[int] = set()
        failed: list[_Pod] = []
        for pod in order:
            node = None if pod.spec in blocked else self._best_node(pod.spec)
            if node is None and self.placeholders is not None and not pod.placeholder and pod.spec not in blocked:
                node = self.placeholders.preempt(pod.spec)
            if node is None:
                blocked.add(pod.spec)
                failed.append(pod)
            else:
                self._start(pod, node)
                placed.add(id(pod))
        if self._last_pass == self.env.now and len(failed) > 1:
            self.random.shuffle(failed)
        self._last_pass = self.env.now
        for pod in failed:
            self._attempts += 1
            pod.failures += 1
            pod.queued, pod.queued_at = self._attempts, self.env.now
        if placed:
            self.pending = [p for p in self.pending if id(p) not in placed]

    def _best_node(self, spec: PodSpec) -> _Node | None:
        best, best_key = None, None
        for node in self.nodes:
            if not spec.may_use(node.group) or not node.free.fits(spec.requests):
                continue
            alloc = node.group.allocatable
            used = (alloc.gpus - node.free.gpus) / alloc.gpus if alloc.gpus else (alloc.cpu - node.free.cpu) / max(1, alloc.cpu)
            score = used if self.binding is Binding.MOST_ALLOCATED else -used
            key = (spec.prefers is not None and node.group.role == spec.prefers, score)
            if best_key is None or key > best_key:
                best, best_key = node, key
        return best

    def _start(self, pod: _Pod, node: _Node) -> None:
        now = self.env.now
        node.free = node.free - pod.spec.requests
        node.pods.add(pod)
        node.unneeded_since = None
        pod.node = node
        pod.record.bound, pod.record.node = now, node.record.name
        if self.karpenter is not None:
            self.karpenter.pod_event(node)
        if pod.placeholder:
            pod.record.running = now  # a pause container: no image of the workload's to pull
            return
        if node.image_at is None:
            node.image_at = now + self._pull_time(node.group)
        delay = max(0.0, node.image_at - now) + self.timings.pod_start.draw(self.random)
        self.env.process(self._containers(pod, delay))

    def _containers(self, pod: _Pod, delay: float) -> SimProcess:
        yield self.env.timeout(delay)
        if pod.record.lost or pod.record.finished is not None:
            return
        pod.record.running = self.env.now
        gang = pod.gang
        if gang.working_since is None and all(p.record.running is not None for p in gang.pods):
            gang.working_since = self.env.now
            if gang.gang.work is not None:
                self.env.process(self._work(gang, gang.gang.work))

    def _work(self, gang: _GangRun, work: float) -> SimProcess:
        """The gang's ``work`` seconds (its Gang's), then its end."""
        yield self.env.timeout(work)
        self._finish(gang)
        self._bind()

    def _finish(self, gang: _GangRun) -> None:
        """The gang's work is done: its pods end (replacements of preempted pods still pending too)."""
        now = self.env.now
        job = gang.stage.job
        for pod in gang.pods:
            pod.record.finished = now
            if pod.node is not None:
                pod.node.free = pod.node.free + pod.spec.requests
                pod.node.pods.discard(pod)
                if self.karpenter is not None:
                    self.karpenter.pod_event(pod.node)
            else:
                self.pending.remove(pod)
        if self.queues is not None:
            self.queues.release(gang)
        else:
            self.quota_used[job.namespace] -= sum(p.requests.gpus for p in gang.gang.pods)
        gang.done = True
        if gang.gang.work is not None:
            self.trace.gangs_done += 1
        stage = gang.stage
        stage.open -= 1
        if stage.open == 0:
            self._next_stage(job, stage.index + 1)

    def _next_stage(self, job: Job, index: int) -> None:
        if index >= len(job.stages):
            self._job_done(job)
            return
        stage = _StageRun(job, index)
        quota = self.quotas.get(job.namespace)
        for gang in job.stages[index].gangs:
            gpus = sum(p.requests.gpus for p in gang.pods)
            if self.queues is not None:
                # The gang waits in its tenant's queue; its pods are created when it is admitted.
                run = _GangRun(stage, gang)
                if not self.queues.submit(run, job.namespace, gpus, functools.partial(self._admitted, run)):
                    self.trace.refused_gangs += 1
                    self.trace.refused_pods += len(gang.pods)
                    continue
                stage.open += 1
                self.trace.gangs += 1
                continue
            used = self.quota_used.get(job.namespace, 0)
            if quota is not None and used + gpus > quota:
                self.trace.refused_gangs += 1
                self.trace.refused_pods += len(gang.pods)
                continue
            self.quota_used[job.namespace] = used + gpus
            run = _GangRun(stage, gang)
            run.pods = [self._create(run, spec) for spec in gang.pods]
            stage.open += 1
            self.trace.gangs += 1
            if gang.work is None:
                self._sessions.append(run)
        if stage.open == 0:
            # Every gang refused: the job cannot go on.
            self.trace.refused_jobs += 1
            self._job_done(job, refused=True)

    def _admitted(self, run: _GangRun) -> None:
        """A queued gang is admitted: its pods are created (bound by the next pass)."""
        run.pods = [self._create(run, spec) for spec in run.gang.pods]
        if run.gang.work is None:
            self._sessions.append(run)

    def _job_done(self, job: Job, refused: bool = False) -> None:
        if not refused:
            self.trace.jobs_done += 1
        self._settled += 1
        if self._settled == self._expected - self._session_jobs and not self.done.triggered:
            # Every job but the sessions is over: the sessions end and the workload is done.
            for session in list(self._sessions):
                if not session.done:
                    self._finish(session)
            self._sessions.clear()
            self.done.succeed(self.env.now)

    def submit(self, job: Job) -> None:
        """A job arrives now: its new pods are tried (a new pod requeues no other)."""
        self.trace.jobs += 1
        before = len(self.pending)
        self._next_stage(job, 0)
        self._bind(only=self.pending[before:])

    def add_jobs(self, jobs: Iterable[Job]) -> None:
        """Jobs arriving at their ``at`` (sorted by it). A job whose every gang is a session (work None)
        holds its pods until the other jobs are done; ``done`` fires then."""
        ordered = sorted(jobs, key=lambda j: j.at)
        self._expected += len(ordered)
        self._session_jobs += sum(1 for j in ordered if all(g.work is None for st in j.stages for g in st.gangs))

        def arrivals() -> SimProcess:
            for job in ordered:
                if job.at > self.env.now:
                    yield self.env.timeout(job.at - self.env.now)
                self.submit(job)

        self.env.process(arrivals())

    # --- the autoscaler ----------------------------------------------------------------------

    def _autoscaler(self) -> SimProcess:
        while True:
            yield self.env.timeout(self.timings.scan_interval)
            self._forget_stale_backoff()
            unplaced = self._unplaced()
            # Pods all new: upstream waits a loop for more and removes no node in it, still tracking the
            # unneeded ones (static_autoscaler.go:537-547; the loop's cooldown, :708-719).
            wait = bool(unplaced) and self._all_new(unplaced)
            if not wait:
                self._scale_up(unplaced)
            self._scale_down(hold=wait)
            self.check_stalled()

    def check_stalled(self) -> None:
        """End the run when pending pods can never be placed (see _stalled)."""
        if self._stalled() and not self.done.triggered:
            self.trace.stalled_at = self.env.now
            self.trace.stalled_pods = sum(1 for p in self.pending if not p.placeholder)
            self.trace.stall_causes = self.stall_causes()
            self.done.succeed(self.env.now)

    def _stalled(self) -> bool:
        """Pending pods that nothing will ever place: no node coming, no group that may grow for them
        (back-off aside), no pod starting and no gang at work that will free room."""
        pending = [p for p in self.pending if not p.placeholder]
        if not pending or self.upcoming:
            return False
        for node in self.nodes:
            for pod in node.pods:
                if pod.placeholder:
                    continue
                if pod.record.running is None:
                    return False  # containers starting: a gang may begin its work
                gang = pod.gang
                if gang.working_since is not None and gang.gang.work is not None:
                    return False  # work that will end and free room
        for pod in pending:
            for group in self.groups:
                if pod.spec.may_use(group) and group.allocatable.fits(pod.spec.requests) and self.size(group) < group.total_max:
                    return False
        return True

    def stall_causes(self) -> list[str]:
        """Why each kind of pending pod is never placed (see Trace.stall_causes; infra/simulate/stalls.py)."""
        from gpu_platform.infra.simulate.stalls import stall_causes

        return stall_causes(self)

    def _unplaced(self) -> list[tuple[PodSpec, int]]:
        """Pending pods no upcoming node will take, by spec: (spec, count)."""
        room = {id(n): n.group.allocatable for n in self.upcoming}
        out: list[tuple[PodSpec, int]] = []
        counts: dict[PodSpec, int] = {}
        for pod in self.pending:
            counts[pod.spec] = counts.get(pod.spec, 0) + 1
        for spec, left in counts.items():
            for node in self.upcoming:
                if left == 0:
                    break
                if not spec.may_use(node.group):
                    continue
                fit = min(left, room[id(node)].count(spec.requests))
                if fit:
                    room[id(node)] = Resources(
                        *(
                            have - fit * need
                            for have, need in zip(
                                (room[id(node)].cpu, room[id(node)].memory, room[id(node)].gpus),
                                (spec.requests.cpu, spec.requests.memory, spec.requests.gpus),
                                strict=True,
                            )
                        )
                    )
                    left -= fit
            if left:
                out.append((spec, left))
        return out

    def _all_new(self, unplaced: list[tuple[PodSpec, int]]) -> bool:
        """The pods no upcoming node takes are all new (upstream static_autoscaler.go:1047-1053): the
        oldest is younger than NEW_POD_BUFFER, or the oldest GPU pod younger than NEW_GPU_POD_BUFFER.
        Which pods of a kind the upcoming nodes take is not their age order: upstream packs them in the
        order of the pod lister (the informer cache's map, no order) sorted by priority alone
        (core/podlistprocessor/filter_out_schedulable.go:97-101, sort.Slice, not stable), so the pods
        left over are any of them: a random choice here, and an old pod among them ends the wait
        (the differential check, tests/differential, showed the age-ordered choice scaling up later)."""
        now = self.env.now
        pods: list[_Pod] = []
        for spec, count in unplaced:
            of_spec = [p for p in self.pending if p.spec == spec]
            pods += self.random.sample(of_spec, count)
        oldest = min(p.record.created for p in pods)
        gpu = [p.record.created for p in pods if p.spec.requests.gpus]
        return oldest + NEW_POD_BUFFER > now or (bool(gpu) and min(gpu) + NEW_GPU_POD_BUFFER > now)

    def _scale_up(self, unplaced: list[tuple[PodSpec, int]]) -> None:
        """Grow one group for the pods no upcoming node takes. The expanders as upstream chains them
        (expander/factory/expander_factory.go:78, chain.go:36-44): the highest priority (EKS's priority
        expander over every group; a ComputeClass's order over that class's node pools only, its best pool then
        ranked with the others by waste), then least waste (expander/waste/waste.go:37-65: the CPU share
        plus the memory share the new nodes would leave idle; GPUs are not scored; upstream divides by the
        node's capacity, the model by its allocatable), then a random pick among the options left."""
        if not unplaced:
            return
        now = self.env.now
        options: list[tuple[tuple[float, ...], NodeGroup, int]] = []
        for group in self.groups:
            if self.backoff_until[group.name] > now:
                continue
            room = group.total_max - self.size(group)
            if room <= 0:
                continue
            need = 0
            pods = 0
            for spec, count in unplaced:
                if not spec.may_use(group):
                    continue
                per_node = group.allocatable.count(spec.requests)
                if per_node == 0:
                    continue
                need += math.ceil(count / per_node)
                pods += count
            if not pods:
                continue
            nodes = min(need, room)
            options.append(((group.priority, -self._waste(group, nodes, unplaced)), group, nodes))
        if not options:
            return
        # A ComputeClass's priorities rank its own node pools only: the class's best option stands, and it meets the
        # other options on waste alone (GKE's other node pools have no priority; a class outranks none of them).
        top: dict[str, int] = {}
        for _, group, _ in options:
            if group.compute_class is not None:
                top[group.compute_class] = max(top.get(group.compute_class, group.priority), group.priority)
        options = [
            ((0, key[1]) if group.compute_class is not None else key, group, nodes)
            for key, group, nodes in options
            if group.compute_class is None or group.priority == top[group.compute_class]
        ]
        best = max(key for key, _, _ in options)
        leaders = [o for o in options if o[0] == best]
        _, group, nodes = leaders[0] if len(leaders) == 1 else self.random.choice(leaders)
        self.last_scale_up = now
        self.expected_add[group.name] = now + self.timings.max_node_provision
        for other in self._open_fallbacks:
            if other.group != group.name and other.role == group.role:
                other.next_scale_up = now
        self._open_fallbacks = [f for f in self._open_fallbacks if f.next_scale_up is None]
        failed = group.spot and self.timings.spot_shortage > 0 and self.random.random() < self.timings.spot_shortage
        if group.reserved is not None and group.reservation_named:
            # A named reservation gives no instance beyond those it holds: the scale-up finds no capacity (as a
            # spot shortage does) and the ladder's next rung is tried once the group is backed off.
            free = group.reserved - self.size(group)
            failed = failed or free <= 0
            nodes = nodes if free <= 0 else min(nodes, free)
        fallback = Fallback(group.name, now, now, role=group.role) if failed else None
        if fallback is not None:
            self.trace.fallbacks.append(fallback)
        added = []
        for _ in range(nodes):
            zone = self._zone_for(group)
            if zone is None and group.per_zone:
                break
            node = self._new_node(group, zone)
            self.upcoming.append(node)
            added.append(node)
            if not failed:
                self.env.process(self._provision(node))
        if failed:
            self.env.process(self._failed_scale_up(group, added, fallback))

    @staticmethod
    def _waste(group: NodeGroup, nodes: int, unplaced: list[tuple[PodSpec, int]]) -> float:
        """Least-waste's score of growing ``group`` by ``nodes`` for the pods it can take: the idle share
        of their CPU plus the idle share of their memory (expander/waste/waste.go:48-54)."""
        alloc = group.allocatable
        helped = [(spec, min(count, nodes * alloc.count(spec.requests))) for spec, count in unplaced if spec.may_use(group)]
        cpu = sum(n * spec.requests.cpu for spec, n in helped)
        memory = sum(n * spec.requests.memory for spec, n in helped)
        avail_cpu, avail_memory = max(1, nodes * alloc.cpu), max(1, nodes * alloc.memory)
        return (avail_cpu - cpu) / avail_cpu + (avail_memory - memory) / avail_memory

    def _utilisation(self, node: _Node) -> tuple[float, float]:
        """The node's utilisation and the threshold it is held to (upstream simulator/utilization/info.go:50-59
        and core/scaledown/eligibility/eligibility.go:173-192): on a GPU node its GPU requests over its
        allocatable GPUs, against scale_down_gpu_utilization_threshold; otherwise the larger of its CPU and
        memory shares, against scale_down_utilization_threshold."""
        alloc, t = node.group.allocatable, self.timings
        if alloc.gpus:
            return (alloc.gpus - node.free.gpus) / alloc.gpus, t.scale_down_gpu_utilisation_threshold
        used = max((alloc.cpu - node.free.cpu) / max(1, alloc.cpu), (alloc.memory - node.free.memory) / max(1, alloc.memory))
        return used, t.scale_down_utilisation_threshold

    def _scale_down(self, hold: bool = False) -> None:
        now, t = self.env.now, self.timings
        # The autoscaler keeps tracking unneeded nodes during the cooldown after a scale-up (or a loop that
        # waits for new pods: ``hold``); it only removes none.
        cooldown = hold or now - self.last_scale_up < t.scale_down_delay_after_add
        for node in list(self.nodes):
            if node.unremovable_until > now:
                # Found unremovable lately: not checked again before the recheck timeout
                # (core/scaledown/eligibility/eligibility.go:84-88).
                node.unneeded_since = None
                continue
            load, threshold = self._utilisation(node)
            if load > threshold:
                # Not underutilised (eligibility.go:188): checked again at the next loop.
                node.unneeded_since = None
                continue
            if node.pods:
                # At or below the threshold, but its pods belong to custom controllers the autoscaler never
                # evicts: the removal simulation fails and the node is unremovable until the recheck
                # (core/scaledown/planner/planner.go:269 and :290-307, unremovable-node-recheck-timeout 5m).
                node.unremovable_until = now + t.unremovable_recheck
                node.unneeded_since = None
                continue
            if node.unneeded_since is None:
                node.unneeded_since = now
                continue
            if cooldown or now - node.unneeded_since < t.scale_down_unneeded:
                continue
            group = node.group
            if group.per_zone:
                in_zone = sum(1 for n in self.nodes if n.group is group and n.record.zone == node.record.zone)
                if in_zone <= group.min_nodes:
                    continue
            elif sum(1 for n in self.nodes if n.group is group) <= group.min_nodes:
                continue
            self._remove(node)

    # --- running --------------------------------------------------------------------------------

    def run(self, until: float | None = None, progress: Callable[[float], None] | None = None, *, tail: float = 0.0, limit: float = 31 * 86_400.0) -> Trace:
        """Run to ``until`` seconds or, without it, until the workload is done (``done``) plus ``tail``
        seconds, at most ``limit``; ``progress`` is told the simulated time every simulated hour."""
        hour = 3600.0
        if until is None:
            # Hour by hour until the work is done (a stuck workload stops at the limit).
            while not self.done.processed and self.env.now < limit:
                self.env.run(until=self.env.any_of([self.done, self.env.timeout(min(hour, limit - self.env.now))]))
                if progress is not None:
                    progress(self.env.now)
            until = min(limit, self.env.now + tail)
        at = (self.env.now // hour + 1) * hour
        while at < until:
            self.env.run(until=at)
            if progress is not None:
                progress(at)
            at += hour
        if until > self.env.now:
            self.env.run(until=until)
        if progress is not None:
            progress(until)
        self.trace.horizon = until
        for fallback in self._open_fallbacks:
            fallback.next_scale_up = None
        return self.trace
