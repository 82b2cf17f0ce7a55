"""A generated multi-tenant GPU workload whose true wait times and GPU use are known, and a
real Prometheus serving it.

The workload is a one-second simulation of a shared GPU pool: tenants start Dask-style
clusters (bursts of GPU worker pods); a pod binds 1-3 s after creation when a ready node
has free GPUs, otherwise the autoscaler adds nodes that become ready 2.5-5 min later;
idle nodes leave after 5 min, down to the pool's minimum. Each burst also starts a
CPU-only Dask scheduler pod on a system node (a cpu request, no GPU), placed by a fixed
rule outside the random sequence, so the GPU pods are the same with or without them. It
writes what kube-state-metrics would expose at a 1 s scrape (kube_pod_status_phase,
kube_pod_created, kube_pod_container_resource_requests, kube_node_status_capacity) as
OpenMetrics, which ``promtool tsdb create-blocks-from openmetrics`` turns into TSDB blocks.

The truth uses the report's definitions (infra/report/prometheus.py), over the whole hour or any
range [a, b) inside it: the waits are those of the GPU pods created in the range, a pod's
wait being its 1 s samples with phase Pending (created .. bound) inside the range; pods
pending at a but created before it are carried over; a GPU is utilised while a pod in
phase Running holds it, available GPUs are the ready nodes' capacity.

Backfilled blocks carry no staleness markers (a live scrape writes one when a series
disappears), so the server runs with a lookback shorter than the scrape interval: a
series then ends where its samples end, as it does on a live Prometheus.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

GPUS_PER_NODE = 2
LOOKBACK = "500ms"
DCGM_EVERY = 10
"""Seconds between dcgm-exporter samples (it collects less often than kube-state-metrics is scraped)."""
SCHEDULER_PENDING = 4
"""Seconds each CPU-only scheduler pod is Pending (a fixed rule: no draw from the workload's RNG)."""
SYSTEM_NODE = "gke-system-0"


@dataclass
class Pod:
    namespace: str
    name: str
    gpus: int
    created: int
    runtime: int
    ready_after: int
    busy_percent: int = 0
    """What dcgm-exporter reports for each of the pod's GPUs while it runs."""
    scheduled: int | None = None
    node: str | None = None
    resource: str = "nvidia_com_gpu"
    """What the pod's container requests: nvidia_com_gpu (gpus of them) or cpu (one core)."""
    created_series: bool = True
    """Whether kube-state-metrics exported kube_pod_created for the pod."""

    @property
    def finished(self) -> int:
        assert self.scheduled is not None
        return self.scheduled + self.runtime


@dataclass
class Node:
    name: str
    ready: int
    gpus: int = GPUS_PER_NODE
    removed: int | None = None
    free: int = GPUS_PER_NODE
    idle_since: int = 0
    pods: list[Pod] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    """Its kube_node_labels labels, as kube-state-metrics names them (label_node_kubernetes_io_instance_type...)."""


@dataclass
class Workload:
    start: int
    """Unix seconds of the first sample; the range is [start, start + seconds)."""
    seconds: int
    pods: list[Pod] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    dcgm: dict[tuple[str, int], list[tuple[int, int]]] = field(default_factory=dict)
    """DCGM_FI_DEV_GPU_UTIL samples every DCGM_EVERY s: (node, gpu index) -> [(t, percent)]."""
    cpu_pods: list[Pod] = field(default_factory=list)
    """CPU-only pods (a Dask scheduler per burst, on SYSTEM_NODE): never in the report's numbers."""
    extra: list[str] = field(default_factory=list)
    """More OpenMetrics families, written as they are before # EOF (Kueue's metrics in the tenant workload)."""

    # --- the truth, by the report's definitions -----------------------------------------------

    def _range(self, a: int | None, b: int | None) -> tuple[int, int]:
        return (0 if a is None else a), (self.seconds if b is None else b)

    def pending(self, a: int | None = None, b: int | None = None) -> dict[str, int]:
        """Seconds pending inside [a, b) (seconds after start) of the GPU pods created in it."""
        a, b = self._range(a, b)
        return {f"{p.namespace}/{p.name}": min(p.scheduled or 0, b) - p.created for p in self.pods if a <= p.created < b and p.created_series}

    def carried_over(self, a: int, b: int | None = None) -> dict[str, int]:
        """GPU pods created before a and still pending at a: seconds pending inside [a, b)."""
        a, b = self._range(a, b)
        return {f"{p.namespace}/{p.name}": min(p.scheduled or 0, b) - a for p in self.pods if p.created < a < (p.scheduled or 0)}

    def pending_at_end(self, a: int | None = None, b: int | None = None) -> list[str]:
        """GPU pods created in [a, b) and still pending at its last second (bound at b or later)."""
        a, b = self._range(a, b)
        return sorted(f"{p.namespace}/{p.name}" for p in self.pods if a <= p.created < b and (p.scheduled or 0) >= b and p.created_series)

    def _nodes_at(self, t: int) -> list[Node]:
        return [n for n in self.nodes if n.ready <= t < (n.removed if n.removed is not None else self.seconds)]

    def available_at(self, t: int) -> int:
        return sum(n.gpus for n in self._nodes_at(t))

    def utilised_at(self, t: int) -> int:
        return sum(p.gpus for p in self.pods if p.scheduled is not None and p.scheduled <= t < p.finished)

    def nodes_at(self, t: int) -> int:
        return len(self._nodes_at(t))

    def gpu_seconds(self, a: int | None = None, b: int | None = None) -> tuple[int, int]:
        """(available, utilised) GPU-seconds in [a, b)."""
        a, b = self._range(a, b)

        def overlap(lo: int, hi: int) -> int:
            return max(0, min(hi, b) - max(lo, a))

        available = sum(n.gpus * overlap(n.ready, n.removed if n.removed is not None else self.seconds) for n in self.nodes)
        utilised = sum(p.gpus * overlap(p.scheduled, p.finished) for p in self.pods if p.scheduled is not None)
        return available, utilised

    def straddled_range(self, length: int = 600) -> tuple[int, int]:
        """The first range [a, a + length) starting at a whole minute that starts and ends mid-workload:
        some GPU pod is pending across a (carried over) and some pod created inside is still pending
        at its end."""
        for a in range(60, self.seconds - length, 60):
            if self.carried_over(a, a + length) and self.pending_at_end(a, a + length):
                return a, a + length
        raise AssertionError("no range of that length straddles pending pods at both ends")

    def dcgm_mean(self) -> float:
        """The mean over sample times of the mean over the GPUs sampled then (what avg() over time gives)."""
        by_time: dict[int, list[int]] = {}
        for samples in self.dcgm.values():
            for t, value in samples:
                by_time.setdefault(t, []).append(value)
        return sum(sum(v) / len(v) for v in by_time.values()) / len(by_time)

    # --- OpenMetrics ---------------------------------------------------------------------------

    def openmetrics(self) -> str:
        """The kube-state-metrics series at a 1 s scrape, one metric family after another."""
        end = self.seconds
        everyone = self.pods + self.cpu_pods
        out: list[str] = ["# TYPE kube_pod_status_phase gauge"]
        for p in everyone:
            assert p.scheduled is not None
            last = min(p.finished, end - 1)
            labels = f'namespace="{p.namespace}",pod="{p.name}"'
            for phase, running_value in (("Pending", 0), ("Running", 1)):
                series = f'kube_pod_status_phase{{{labels},phase="{phase}"}}'
                for t in range(p.created, last + 1):
                    running = p.scheduled <= t < p.finished
                    value = (running_value if running else 1 - running_value) if t < p.finished else 0
                    out.append(f"{series} {value} {self.start + t}")
        out.append("# TYPE kube_pod_created gauge")
        for p in everyone:
            # The pod's creation time, Unix seconds, for as long as the pod exists.
            if not p.created_series:
                continue
            series = f'kube_pod_created{{namespace="{p.namespace}",pod="{p.name}"}}'
            for t in range(p.created, min(p.finished, end - 1) + 1):
                out.append(f"{series} {self.start + p.created} {self.start + t}")
        out.append("# TYPE kube_pod_container_resource_requests gauge")
        for p in everyone:
            assert p.scheduled is not None
            container, unit, value = ("worker", "integer", p.gpus) if p.resource == "nvidia_com_gpu" else ("scheduler", "core", 1)
            series = (
                f'kube_pod_container_resource_requests{{namespace="{p.namespace}",pod="{p.name}",'
                f'container="{container}",node="{p.node}",resource="{p.resource}",unit="{unit}"}}'
            )
            for t in range(p.created, min(p.finished, end - 1) + 1):
                out.append(f"{series} {value} {self.start + t}")
        out.append("# TYPE kube_node_status_capacity gauge")
        if self.cpu_pods:
            # The system node the schedulers run on: CPU capacity only, never a GPU.
            series = f'kube_node_status_capacity{{node="{SYSTEM_NODE}",resource="cpu",unit="core"}}'
            out.extend(f"{series} 4 {self.start + t}" for t in range(end))
        for n in self.nodes:
            series = f'kube_node_status_capacity{{node="{n.name}",resource="nvidia_com_gpu",unit="integer"}}'
            for t in range(n.ready, min(n.removed if n.removed is not None else end, end)):
                out.append(f"{series} {n.gpus} {self.start + t}")
        if any(n.labels for n in self.nodes):
            out.append("# TYPE kube_node_labels gauge")
            for n in self.nodes:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(n.labels.items()))
                series = f'kube_node_labels{{node="{n.name}",{labels}}}'
                for t in range(n.ready, min(n.removed if n.removed is not None else end, end)):
                    out.append(f"{series} 1 {self.start + t}")
        out.append("# TYPE DCGM_FI_DEV_GPU_UTIL gauge")
        for (node, gpu), samples in self.dcgm.items():
            series = f'DCGM_FI_DEV_GPU_UTIL{{Hostname="{node}",gpu="{gpu}",modelName="Tesla T4"}}'
            for t, value in samples:
                out.append(f"{series} {value} {self.start + t}")
        out.extend(self.extra)
        out.append("# EOF")
        return "\n".join(out) + "\n"


def simulate(start: int, seconds: int = 3600, seed: int = 8, min_nodes: int = 6, max_nodes: int = 40) -> Workload:
    """The workload: arrivals stop 10 minutes before the end, so every pod is scheduled in range."""
    rng = random.Random(seed)
    w = Workload(start=start, seconds=seconds)
    w.nodes = [Node(f"gke-t4-{i}", ready=0) for i in range(min_nodes)]
    tenants = ["team-a", "team-b", "team-c", "team-d"]
    arrivals: dict[int, list[Pod]] = {}
    t = 0
    n = 0
    while True:
        t += rng.randint(20, 90)
        if t >= seconds - 600:
            break
        tenant = rng.choice(tenants)
        runtime = rng.randint(90, 420)
        # The burst's Dask scheduler: CPU only, by a fixed rule (no RNG draw), bound SCHEDULER_PENDING s later.
        scheduler = Pod(tenant, f"dask-scheduler-{len(w.cpu_pods) + 1:03d}", 0, t, runtime + 30, 0, resource="cpu")
        scheduler.scheduled, scheduler.node = t + SCHEDULER_PENDING, SYSTEM_NODE
        w.cpu_pods.append(scheduler)
        for _ in range(rng.choice((1, 2, 2, 3, 4, 6))):
            n += 1
            pod = Pod(
                tenant,
                f"dask-worker-{n:04d}",
                rng.choice((1, 1, 1, 2)),
                t,
                runtime + rng.randint(0, 30),
                rng.randint(1, 3),
                busy_percent=rng.randint(20, 95),
            )
            arrivals.setdefault(t, []).append(pod)
            w.pods.append(pod)
    queue: list[Pod] = []
    running: list[Pod] = []
    provisioning = 0
    next_node = min_nodes
    for t in range(seconds):
        for pod in [p for p in running if p.finished == t]:
            running.remove(pod)
            node = next(x for x in w.nodes if x.name == pod.node)
            node.free += pod.gpus
            node.pods.remove(pod)
            if node.free == node.gpus:
                node.idle_since = t
        queue.extend(arrivals.get(t, []))
        ready = [x for x in w.nodes if x.ready <= t and x.removed is None]
        provisioning = sum(1 for x in w.nodes if x.ready > t)
        for pod in list(queue):
            if t < pod.created + pod.ready_after:
                continue
            node = next((x for x in ready if x.free >= pod.gpus), None)
            if node is not None:
                node.free -= pod.gpus
                node.pods.append(pod)
                pod.scheduled, pod.node = t, node.name
                queue.remove(pod)
                running.append(pod)
        # Scale up for the GPUs the queue cannot get from ready or provisioning nodes.
        waiting = sum(p.gpus for p in queue if t >= p.created + p.ready_after)
        wanted = -(-waiting // GPUS_PER_NODE) - provisioning
        live = sum(1 for x in w.nodes if x.removed is None)
        for _ in range(max(0, min(wanted, max_nodes - live))):
            w.nodes.append(Node(f"gke-t4-{next_node}", ready=t + rng.randint(150, 300)))
            next_node += 1
        if t % DCGM_EVERY == 0:
            for node in ready:
                held = [p.busy_percent for p in node.pods for _ in range(p.gpus)]
                for gpu in range(node.gpus):
                    w.dcgm.setdefault((node.name, gpu), []).append((t, held[gpu] if gpu < len(held) else 0))
        # Scale down idle nodes after 5 minutes, keeping the minimum.
        for node in ready:
            live = sum(1 for x in w.nodes if x.removed is None)
            if node.free == node.gpus and t - max(node.idle_since, node.ready) >= 300 and live > min_nodes:
                node.removed = t
    assert not queue, "every pod is scheduled inside the range"
    return w


# --- a real Prometheus over the backfilled workload ----------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve(workload: Workload, workdir: Path, timeout: float = 20.0) -> Iterator[str]:
    """Backfill ``workload`` with promtool and run prometheus on a loopback port; yields its URL."""
    promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
    assert promtool and prometheus
    data = workdir / "metrics.om"
    data.write_text(workload.openmetrics())
    tsdb = workdir / "tsdb"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(data), str(tsdb)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    config = workdir / "prometheus.yml"
    config.write_text("global: {scrape_interval: 1s}\nscrape_configs: []\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (workdir / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={tsdb}",
            # Blocks older than the retention are deleted at start and never queried.
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
            f"--query.lookback-delta={LOOKBACK}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {process.returncode}: {(workdir / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"prometheus was not ready within {timeout}s")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
