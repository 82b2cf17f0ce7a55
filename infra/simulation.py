"""A discrete-event model of a GPU cluster under a workload (SimPy): pools of nodes, the
cluster autoscaler's loop, node start-up, spot shortage and the scheduler binding pods.

Work in progress for issue 17 (``gpu-platform simulate``): this module is the core model; the
workloads, the cost, the command and the report's figures build on it.

Time is in seconds. Every random draw comes from one ``random.Random(seed)``, so a run is
deterministic for a given seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import simpy

__all__ = ["Binding", "ClusterModel", "Node", "Pod", "PoolSpec", "RunResult", "Timings"]


class Binding(StrEnum):
    """How the scheduler scores nodes for a pod."""

    LEAST_ALLOCATED = "least-allocated"
    """Kubernetes' default: spread pods over the emptiest nodes (fewer nodes can be removed)."""
    MOST_ALLOCATED = "most-allocated"
    """Bin-packing: fill the fullest node first (idle nodes empty out and scale down)."""


@dataclass(frozen=True)
class Timings:
    """The autoscaler's and the nodes' timings, seconds. Defaults: the cluster autoscaler's own
    (scan-interval 10 s, scale-down-unneeded-time 10 min, scale-down-delay-after-add 10 min,
    max-node-provision-time 15 min) and the RAPIDS deep-dive's ~5 min from scale-up to a running
    GPU pod (provisioning, driver install, image pull)."""

    scan_interval: float = 10.0
    node_provision: float = 150.0
    gpu_ready: float = 90.0
    image_pull: float = 60.0
    scale_down_unneeded: float = 600.0
    scale_down_delay_after_add: float = 600.0
    max_node_provision: float = 900.0
    initial_backoff: float = 300.0
    """How long the autoscaler leaves a node group alone after a failed scale-up (--initial-node-group-backoff-duration, 5 min)."""
    failure_report: float = 60.0
    """With early abort: how soon the cloud reports that spot capacity is short (the ASG's failed activity)."""


@dataclass(frozen=True)
class PoolSpec:
    """One pool as the model sees it."""

    name: str
    gpus_per_node: int
    min_nodes: int
    max_nodes: int
    spot: bool = False
    priority: int = 0
    """Higher is tried first (a spot pool above its on-demand twin)."""
    spot_shortage: float = 0.0
    """Probability that a spot scale-up finds no capacity (then the autoscaler waits max_node_provision)."""


@dataclass
class Node:
    pool: PoolSpec
    ready_at: float
    gpus_used: int = 0
    idle_since: float | None = None
    added_at: float = 0.0


@dataclass
class Pod:
    gpus: int
    run_time: float
    arrived: float
    started: float | None = None
    node: Node | None = None


@dataclass
class RunResult:
    waits: list[float] = field(default_factory=list)
    """Seconds each pod waited from arrival to start, in start order."""
    gpu_seconds_used: float = 0.0
    gpu_seconds_paid: float = 0.0

    @property
    def utilisation(self) -> float:
        return self.gpu_seconds_used / self.gpu_seconds_paid if self.gpu_seconds_paid else 0.0


class ClusterModel:
    """Pools, nodes, pending pods, the scheduler and the autoscaler, on a SimPy environment."""

    def __init__(self, pools: Sequence[PoolSpec], *, timings: Timings = Timings(), binding: Binding = Binding.MOST_ALLOCATED,
                 seed: int = 0, autoscale: bool = True, early_abort: bool = False) -> None:
        self.env = simpy.Environment()
        self.random = random.Random(seed)
        self.timings = timings
        self.binding = binding
        self.autoscale = autoscale
        self.pools = sorted(pools, key=lambda p: -p.priority)
        self.nodes: list[Node] = []
        self.provisioning: dict[str, int] = {p.name: 0 for p in pools}
        self.backoff_until: dict[str, float] = {p.name: 0.0 for p in pools}
        self.early_abort = early_abort
        self.fallbacks: list[float] = []
        """Seconds from a failed spot scale-up's start to the moment the autoscaler gave up on it."""
        self.pending: list[Pod] = []
        self.result = RunResult()
        self._last_paid = 0.0
        for pool in self.pools:
            for _ in range(pool.min_nodes):
                self.nodes.append(Node(pool, ready_at=0.0, idle_since=0.0))
        if autoscale:
            self.env.process(self._autoscaler())

    # --- accounting -----------------------------------------------------------------------

    def _pay(self) -> None:
        """GPU-seconds of every ready node since the last call."""
        now = self.env.now
        ready = sum(n.pool.gpus_per_node for n in self.nodes if n.ready_at <= now)
        self.result.gpu_seconds_paid += ready * (now - self._last_paid)
        self._last_paid = now

    # --- the scheduler --------------------------------------------------------------------

    def _fits(self, node: Node, pod: Pod) -> bool:
        return node.ready_at <= self.env.now and node.pool.gpus_per_node - node.gpus_used >= pod.gpus

    def _bind(self) -> None:
        for pod in list(self.pending):
            candidates = [n for n in self.nodes if self._fits(n, pod)]
            if not candidates:
                continue
            if self.binding is Binding.MOST_ALLOCATED:
                node = max(candidates, key=lambda n: n.gpus_used / n.pool.gpus_per_node)
            else:
                node = min(candidates, key=lambda n: n.gpus_used / n.pool.gpus_per_node)
            self.pending.remove(pod)
            self._start(pod, node)

    def _start(self, pod: Pod, node: Node) -> None:
        self._pay()
        node.gpus_used += pod.gpus
        node.idle_since = None
        pod.node, pod.started = node, self.env.now
        self.result.waits.append(pod.started - pod.arrived)
        self.env.process(self._run(pod))

    def _run(self, pod: Pod):  # noqa: ANN202 - a SimPy process
        yield self.env.timeout(pod.run_time)
        self._pay()
        node = pod.node
        assert node is not None
        node.gpus_used -= pod.gpus
        self.result.gpu_seconds_used += pod.gpus * pod.run_time
        if node.gpus_used == 0:
            node.idle_since = self.env.now
        self._bind()

    def submit(self, pod: Pod) -> None:
        """A pod arrives now."""
        pod.arrived = self.env.now
        self.pending.append(pod)
        self._bind()

    # --- the autoscaler -------------------------------------------------------------------

    def _autoscaler(self):  # noqa: ANN202 - a SimPy process
        while True:
            yield self.env.timeout(self.timings.scan_interval)
            self._scale_up()
            self._scale_down()

    def _scale_up(self) -> None:
        unplaced = [p for p in self.pending]
        coming = {name: count for name, count in self.provisioning.items()}
        for pod in unplaced:
            for pool in self.pools:
                if pool.gpus_per_node < pod.gpus:
                    continue
                size = sum(1 for n in self.nodes if n.pool is pool) + self.provisioning[pool.name]
                if coming.get(pool.name, 0) > 0:
                    coming[pool.name] -= 1  # a node already on its way takes this pod
                    break
                if size >= pool.max_nodes or self.backoff_until[pool.name] > self.env.now:
                    continue
                self.provisioning[pool.name] += 1
                self.env.process(self._provision(pool))
                break

    def _provision(self, pool: PoolSpec):  # noqa: ANN202 - a SimPy process
        t = self.timings
        if pool.spot and self.random.random() < pool.spot_shortage:
            waited = t.failure_report if self.early_abort else t.max_node_provision
            yield self.env.timeout(waited)
            self.provisioning[pool.name] -= 1
            self.backoff_until[pool.name] = self.env.now + t.initial_backoff
            self.fallbacks.append(waited)
            return
        yield self.env.timeout(t.node_provision + t.gpu_ready + t.image_pull)
        self._pay()
        self.provisioning[pool.name] -= 1
        self.nodes.append(Node(pool, ready_at=self.env.now, idle_since=self.env.now, added_at=self.env.now))
        self._bind()

    def _scale_down(self) -> None:
        now, t = self.env.now, self.timings
        for node in list(self.nodes):
            count = sum(1 for n in self.nodes if n.pool is node.pool)
            if (
                node.gpus_used == 0 and node.idle_since is not None and count > node.pool.min_nodes
                and now - node.idle_since >= t.scale_down_unneeded and now - node.added_at >= t.scale_down_delay_after_add
            ):
                self._pay()
                self.nodes.remove(node)

    # --- running ----------------------------------------------------------------------------

    def poisson_arrivals(self, rate: float, count: int, run_time: Callable[[random.Random], float], gpus: int = 1) -> None:
        """``count`` pods arriving as a Poisson process of ``rate`` per second."""

        def arrivals():  # noqa: ANN202 - a SimPy process
            for _ in range(count):
                yield self.env.timeout(self.random.expovariate(rate))
                self.submit(Pod(gpus=gpus, run_time=run_time(self.random), arrived=self.env.now))

        self.env.process(arrivals())

    def run(self, until: float | None = None) -> RunResult:
        self.env.run(until=until)
        self._pay()
        return self.result
