"""The simulator against a real Prometheus (the report test's backfill, tests/infra/report_workload.py):

- the simulator and the report agree: a simulated run exported as kube-state-metrics would have
  scraped it gives, through `gpu-platform report`, the figures the simulator computes itself;
- --replay reads back the GPU pods Prometheus saw (infra/simulate/replay.py), and they run again on dev-gke.
"""

from __future__ import annotations

import math
import random
import shutil
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields

import pytest

from gpu_platform.infra.report.prometheus import ReportError, ReportInputs, _iso, collect
from gpu_platform.infra.simulate.cluster import ModelInputs, model_inputs
from gpu_platform.infra.simulate.inputs import Job, Stage, Trace
from gpu_platform.infra.simulate.model import ClusterModel
from gpu_platform.infra.simulate.replay import ReplayError, replay_jobs
from gpu_platform.infra.simulate.runs import trace_report
from gpu_platform.infra.simulate.settings import ModelSettings
from gpu_platform.infra.simulate.workloads import SCHEDULER, WORKER
from gpu_platform.infra.stack.read import load_stack
from tests.conftest import PROJECT_DIR
from tests.infra.report_workload import Node, Pod, Workload, serve, simulate

HOUR = 3600


def _need_prometheus() -> None:
    missing = [tool for tool in ("promtool", "prometheus") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (Debian's prometheus package; .ci/run installs it)")


def _two_hours_back() -> int:
    # Whole minutes, two hours back: inside the server's retention, clear of its head block.
    return (int(time.time()) // 60) * 60 - 2 * HOUR


@pytest.fixture(scope="module")
def dev_gke() -> ModelInputs:
    return model_inputs(load_stack(PROJECT_DIR, "dev-gke"), ModelSettings(seed=3))


# --- the report and the simulator agree ----------------------------------------------------------


@pytest.fixture(scope="module")
def simulated(dev_gke: ModelInputs) -> Trace:
    """About 60 Dask clusters (a GPU scheduler, two workers) arriving on dev-gke over 40 minutes,
    3-10 minutes of work each; the hour lets every pod start before its end."""
    rng = random.Random(5)
    jobs, t = [], 0.0
    while True:
        t += rng.expovariate(90 / HOUR)
        if t >= 40 * 60:
            break
        jobs.append(Job(t, "default", f"c{len(jobs):03d}", (Stage.of((SCHEDULER, WORKER, WORKER), rng.uniform(180, 600)),)))
    model = ClusterModel(dev_gke.groups, timings=dev_gke.timings, binding=dev_gke.binding, seed=1, quotas=dev_gke.quotas)
    model.add_jobs(jobs)
    trace = model.run(HOUR)
    # Preconditions: every pod ran (the export needs a bind time), some waited for a new node, the pool shrank.
    assert 50 <= len(jobs) <= 70 and all(p.running is not None for p in trace.pods)
    assert max(p.running - p.created for p in trace.pods if p.running is not None) > 120
    assert any(n.removed is not None for n in trace.nodes)
    return trace


def exported(trace: Trace, start: int) -> Workload:
    """The run as kube-state-metrics would have exported it at a 1 s scrape: a time is seen at the first
    whole second at or after it (a pod created at 10.3 s is first scraped at 11 s), and a pod is Pending
    until it runs. GPU pods and nodes only."""
    seconds = math.ceil(trace.horizon)
    w = Workload(start=start, seconds=seconds)
    for p in trace.pods:
        if p.requests.gpus == 0:
            continue
        assert p.running is not None
        created, running = math.ceil(p.created), math.ceil(p.running)
        finished = seconds if p.finished is None else math.ceil(p.finished)
        w.pods.append(Pod(p.namespace, p.name, p.requests.gpus, created, finished - running, 0, scheduled=running, node=p.node))
    for n in trace.nodes:
        if n.gpu_ready is None or n.group.gpus_per_node == 0:
            continue
        w.nodes.append(Node(n.name, ready=math.ceil(n.gpu_ready), gpus=n.group.gpus_per_node, removed=None if n.removed is None else math.ceil(n.removed)))
    return w


@pytest.fixture(scope="module")
def served(simulated: Trace, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workload, str]]:
    _need_prometheus()
    workload = exported(simulated, _two_hours_back())
    with serve(workload, tmp_path_factory.mktemp("simulated")) as url:
        yield workload, url


def test_the_report_and_the_simulator_agree(simulated: Trace, served: tuple[Workload, str]) -> None:
    workload, url = served
    measured = collect(ReportInputs(prometheus=url, start=workload.start, end=workload.start + workload.seconds))
    expected = trace_report(simulated)
    assert measured.pods_created == expected.pods_created == len(simulated.pods) > 100
    assert measured.pending_by_pod == expected.pending_by_pod
    for key in (
        "pending_median_s",
        "pending_mean_s",
        "pending_p99_s",
        "pending_max_s",
        "scheduled_within",
        "gpu_nodes_max",
        "pending_at_end",
        "carried_over",
        "without_created",
        "gpu_pods",
    ):
        assert getattr(measured, key) == getattr(expected, key), key
    for key in ("gpu_hours_available", "gpu_hours_utilised", "utilisation_percent", "gpu_nodes_mean"):
        assert getattr(measured, key) == pytest.approx(getattr(expected, key), rel=1e-9), key
    # Step by step, too (the simulator's steps count from 0, the report's from the range's start).
    assert (measured.available, measured.utilised, measured.nodes) == (expected.available, expected.utilised, expected.nodes)
    assert measured.per_minute() == expected.per_minute() | {"t": measured.per_minute()["t"]}


def test_replay_reads_back_the_simulated_pods(served: tuple[Workload, str]) -> None:
    workload, url = served
    replay = replay_jobs(ReportInputs(prometheus=url, start=workload.start, end=workload.start + workload.seconds))
    pods = {f"{p.namespace}/{p.name}": p for p in workload.pods}
    assert replay.pods == len(replay.jobs) == len(pods) and replay.horizon == workload.seconds
    for job in replay.jobs:
        pod = pods[f"{job.namespace}/{job.name}"]
        assert job.at == pod.created
        (stage,) = job.stages
        (gang,) = stage.gangs
        assert gang.pods[0].requests.gpus == pod.gpus
        assert gang.work == min(pod.runtime, workload.seconds - pod.scheduled)


# --- replay: report_workload's multi-tenant hour -------------------------------------------------


@dataclass
class WithSidecars(Workload):
    """A Workload whose ``sidecars`` (pod names) have a second container requesting one GPU."""

    sidecars: set[str] = field(default_factory=set)

    def openmetrics(self) -> str:
        extra = []
        for p in self.pods:
            if p.name in self.sidecars:
                series = (
                    f'kube_pod_container_resource_requests{{namespace="{p.namespace}",pod="{p.name}",container="sidecar",'
                    f'node="{p.node}",resource="nvidia_com_gpu",unit="integer"}}'
                )
                extra += [f"{series} 1 {self.start + t}\n" for t in range(p.created, min(p.finished, self.seconds - 1) + 1)]
        # Inside the requests' metric family: it ends where the nodes' begins.
        family_after = "# TYPE kube_node_status_capacity gauge\n"
        text = super().openmetrics()
        assert text.count(family_after) == 1
        return text.replace(family_after, "".join(extra) + family_after)

    def gpus(self, pod: Pod) -> int:
        return pod.gpus + (pod.name in self.sidecars)


@pytest.fixture(scope="module")
def real() -> WithSidecars:
    """report_workload's hour of Dask bursts (GPU workers of 1 or 2 GPUs, CPU-only schedulers), and what
    a replay must also handle: three 1-GPU workers with a GPU sidecar container; two workers whose
    kube_pod_created kube-state-metrics lost; and, once every pod is done, a GPU pod alone that lost it too."""
    base = simulate(start=_two_hours_back(), seconds=HOUR)
    w = WithSidecars(**{f.name: getattr(base, f.name) for f in fields(Workload)})
    ones = [p for p in w.pods if p.gpus == 1]
    w.sidecars = {p.name for p in ones[:3]}
    for p in ones[3:5]:
        p.created_series = False
    quiet = max(p.finished for p in w.pods + w.cpu_pods)
    w.seconds = quiet + 300
    w.pods.append(Pod("team-x", "alone", 1, quiet + 60, 60, 0, scheduled=quiet + 62, node="gke-t4-0", created_series=False))
    return w


@pytest.fixture(scope="module")
def real_url(real: WithSidecars, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _need_prometheus()
    with serve(real, tmp_path_factory.mktemp("real")) as url:
        yield url


def _expected(w: WithSidecars, a: int, b: int) -> dict[str, tuple[int, int, int]]:
    """namespace/pod -> (arrival after a, GPUs, seconds Running in [a, b), at least 1) of the GPU pods created
    in [a, b) with kube_pod_created."""
    out = {}
    for p in w.pods:
        if p.created_series and a <= p.created < b:
            assert p.scheduled is not None
            out[f"{p.namespace}/{p.name}"] = (p.created - a, w.gpus(p), max(1, min(p.finished, b) - max(p.scheduled, a)))
    return out


def _replayed(jobs: list[Job]) -> dict[str, tuple[float, int, float | None]]:
    out = {}
    for job in jobs:
        ((gang,),) = [stage.gangs for stage in job.stages]
        (spec,) = gang.pods
        assert (spec.requests.cpu, spec.requests.memory, spec.roles) == (0, 0, ("gpu", "scheduler"))
        out[f"{job.namespace}/{job.name}"] = (job.at, spec.requests.gpus, gang.work)
    return out


def test_replay_gives_one_job_per_gpu_pod_created(real: WithSidecars, real_url: str) -> None:
    replay = replay_jobs(ReportInputs(prometheus=real_url, start=real.start, end=real.start + real.seconds))
    expected = _expected(real, 0, real.seconds)
    # CPU-only schedulers are not replayed, nor the pods without kube_pod_created (counted).
    assert len(expected) == len(real.pods) - 3 and len(real.cpu_pods) > 20
    assert _replayed(replay.jobs) == expected
    assert [f"{j.namespace}/{j.name}" for j in replay.jobs] == sorted(expected)
    assert (replay.pods, replay.without_created, replay.start, replay.horizon, replay.source) == (len(expected), 3, real.start, real.seconds, real_url)
    assert {gpus for _, gpus, _ in expected.values()} == {1, 2}, "1-GPU workers, 2-GPU workers and sidecars"


def test_replay_of_a_range_that_starts_and_ends_mid_workload(real: WithSidecars, real_url: str) -> None:
    a, b = real.straddled_range(600)
    replay = replay_jobs(ReportInputs(prometheus=real_url, start=real.start + a, end=real.start + b))
    expected = _expected(real, a, b)
    assert _replayed(replay.jobs) == expected
    # Pods running or pending at the start were created before it: not replayed; pods still pending at the
    # end work one step.
    before = {f"{p.namespace}/{p.name}" for p in real.pods if p.created < a and p.scheduled is not None and a < p.finished}
    assert before and not before & expected.keys()
    at_end = set(real.pending_at_end(a, b))
    assert at_end and all(expected[pod][2] == 1 for pod in at_end)


def test_the_replayed_pods_run_again_on_dev_gke(real: WithSidecars, real_url: str, dev_gke: ModelInputs) -> None:
    replay = replay_jobs(ReportInputs(prometheus=real_url, start=real.start, end=real.start + real.seconds))
    # Without dev-gke's tenant quotas: report_workload's tenants hold more GPUs than team-a's 8 and team-b's 4.
    model = ClusterModel(dev_gke.groups, timings=dev_gke.timings, binding=dev_gke.binding, seed=2)
    model.add_jobs(replay.jobs)
    trace = model.run(replay.horizon + HOUR)
    assert len(trace.pods) == len(replay.jobs) and all(p.running is not None and p.finished is not None for p in trace.pods)
    # The simulator names a job's pod <job>-<role>-<counter>: the replayed pod's name, "-pod-" and a number.
    works = {f"{j.namespace}/{j.name}": j.stages[0].gangs[0].work for j in replay.jobs}
    for p in trace.pods:
        assert p.finished is not None and p.running is not None
        assert p.finished - p.running == pytest.approx(works[f"{p.namespace}/{p.name.rsplit('-pod-', 1)[0]}"])
    again = trace_report(trace)
    assert again.pods_created == replay.pods
    assert sum(p.requests.gpus for p in trace.pods) == sum(j.stages[0].gangs[0].pods[0].requests.gpus for j in replay.jobs)


def test_a_range_without_pods_cannot_be_replayed(real: WithSidecars, real_url: str) -> None:
    start, end = real.start - 2 * HOUR, real.start - HOUR
    with pytest.raises(ReplayError) as caught:
        replay_jobs(ReportInputs(prometheus=real_url, start=start, end=end))
    assert str(caught.value) == f"--start/--end: no GPU pods created between {_iso(start)} and {_iso(end)}: nothing to replay"


def test_a_range_whose_pods_lost_kube_pod_created_is_a_prometheus_error(real: WithSidecars, real_url: str) -> None:
    a = real.seconds - 270
    with pytest.raises(ReportError) as caught:
        replay_jobs(ReportInputs(prometheus=real_url, start=real.start + a, end=real.start + real.seconds))
    assert str(caught.value) == (
        f"no kube_pod_created series for the 1 GPU pod between {_iso(real.start + a)} and {_iso(real.start + real.seconds - 1)}: "
        "kube-state-metrics exports it by default; is it dropped by a denylist or relabelling?"
    )


def test_prometheus_errors_pass_through_unchanged() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ReportError) as caught:
        replay_jobs(ReportInputs(prometheus=f"http://u:secret@127.0.0.1:{port}", start=0, end=3600))
    assert str(caught.value) == f"cannot connect to Prometheus at http://u:***@127.0.0.1:{port}: is the URL right and the server up?"
