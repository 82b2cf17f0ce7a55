"""A generated multi-tenant GPU workload whose true wait times and GPU use are known, and a
real Prometheus serving it.

The workload is a one-second simulation of a shared GPU pool: tenants start Dask-style
clusters (bursts of GPU worker pods); a pod binds 1-3 s after creation when a ready node
has free GPUs, otherwise the autoscaler adds nodes that become ready 2.5-5 min later;
idle nodes leave after 5 min, down to the pool's minimum. It writes what kube-state-
metrics would expose at a 1 s scrape (kube_pod_status_phase, kube_pod_container_resource_
requests, kube_node_status_capacity) as OpenMetrics, which ``promtool tsdb create-blocks-
from openmetrics`` turns into TSDB blocks.

The truth uses the report's definitions (infra/report.py): a pod's pending time is the
number of 1 s samples with phase Pending (created .. bound), a GPU is utilised while a
pod in phase Running holds it, available GPUs are the ready nodes' capacity.

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


@dataclass
class Workload:
    start: int
    """Unix seconds of the first sample; the range is [start, start + seconds)."""
    seconds: int
    pods: list[Pod] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    dcgm: dict[tuple[str, int], list[tuple[int, int]]] = field(default_factory=dict)
    """DCGM_FI_DEV_GPU_UTIL samples every DCGM_EVERY s: (node, gpu index) -> [(t, percent)]."""

    # --- the truth, by the report's definitions -----------------------------------------------

    def pending(self) -> dict[str, int]:
        return {f"{p.namespace}/{p.name}": (p.scheduled or 0) - p.created for p in self.pods}

    def gpu_seconds(self) -> tuple[int, int]:
        """(available, utilised) GPU-seconds in the range."""
        end = self.seconds
        available = sum(n.gpus * max(0, min(n.removed if n.removed is not None else end, end) - n.ready) for n in self.nodes)
        utilised = sum(p.gpus * (min(p.finished, end) - p.scheduled) for p in self.pods if p.scheduled is not None)
        return available, utilised

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
        out: list[str] = ["# TYPE kube_pod_status_phase gauge"]
        for p in self.pods:
            assert p.scheduled is not None
            last = min(p.finished, end - 1)
            labels = f'namespace="{p.namespace}",pod="{p.name}"'
            for phase, running_value in (("Pending", 0), ("Running", 1)):
                series = f'kube_pod_status_phase{{{labels},phase="{phase}"}}'
                for t in range(p.created, last + 1):
                    running = p.scheduled <= t < p.finished
                    value = (running_value if running else 1 - running_value) if t < p.finished else 0
                    out.append(f"{series} {value} {self.start + t}")
        out.append("# TYPE kube_pod_container_resource_requests gauge")
        for p in self.pods:
            assert p.scheduled is not None
            series = (
                f'kube_pod_container_resource_requests{{namespace="{p.namespace}",pod="{p.name}",'
                f'container="worker",node="{p.node}",resource="nvidia_com_gpu",unit="integer"}}'
            )
            for t in range(p.created, min(p.finished, end - 1) + 1):
                out.append(f"{series} {p.gpus} {self.start + t}")
        out.append("# TYPE kube_node_status_capacity gauge")
        for n in self.nodes:
            series = f'kube_node_status_capacity{{node="{n.name}",resource="nvidia_com_gpu",unit="integer"}}'
            for t in range(n.ready, min(n.removed if n.removed is not None else end, end)):
                out.append(f"{series} {n.gpus} {self.start + t}")
        out.append("# TYPE DCGM_FI_DEV_GPU_UTIL gauge")
        for (node, gpu), samples in self.dcgm.items():
            series = f'DCGM_FI_DEV_GPU_UTIL{{Hostname="{node}",gpu="{gpu}",modelName="Tesla T4"}}'
            for t, value in samples:
                out.append(f"{series} {value} {self.start + t}")
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
        for _ in range(rng.choice((1, 2, 2, 3, 4, 6))):
            n += 1
            pod = Pod(
                tenant, f"dask-worker-{n:04d}", rng.choice((1, 1, 1, 2)), t, runtime + rng.randint(0, 30),
                rng.randint(1, 3), busy_percent=rng.randint(20, 95),
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
        check=True, capture_output=True, timeout=120,
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
        stdout=log, stderr=subprocess.STDOUT,
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
