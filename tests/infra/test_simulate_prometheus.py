"""The simulator and the report agree: a simulated run exported to a real Prometheus (the report
test's backfill, tests/infra/report_workload.py) gives the same figures through `gpu-platform report`
as the simulator computes itself; and --replay reads back the pods a real Prometheus saw."""

from __future__ import annotations

import math
import random
import shutil
import time
from collections.abc import Iterator

import pytest

from gpu_platform.infra.preview import load_stack
from gpu_platform.infra.replay import ReplayError, replay_jobs
from gpu_platform.infra.report import ReportInputs, collect
from gpu_platform.infra.simulate import ModelSettings, model_inputs, trace_report
from gpu_platform.infra.simulation import ClusterModel, Job, Stage, Trace
from gpu_platform.infra.workloads import SCHEDULER, WORKER
from tests.conftest import PROJECT_DIR
from tests.infra.report_workload import Node, Pod, Workload, serve

HOUR = 3600


def _need_prometheus() -> None:
    missing = [tool for tool in ("promtool", "prometheus") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (Debian's prometheus package; .ci/run installs it)")


@pytest.fixture(scope="module")
def simulated() -> Trace:
    """Dask clusters on dev-gke for 40 minutes; the hour lets every pod start before its end."""
    inputs = model_inputs(load_stack(PROJECT_DIR, "dev-gke"), ModelSettings(seed=3))
    rng = random.Random(5)
    jobs, t = [], 0.0
    while True:
        t += rng.expovariate(90 / HOUR)
        if t >= 40 * 60:
            break
        jobs.append(Job(t, "default", f"c{len(jobs):03d}", (Stage.of((SCHEDULER, WORKER, WORKER), rng.uniform(180, 600)),)))
    model = ClusterModel(inputs.groups, timings=inputs.timings, binding=inputs.binding, seed=1, quotas=inputs.quotas)
    model.add_jobs(jobs)
    trace = model.run(HOUR)
    assert all(p.running is not None for p in trace.pods)
    return trace


def exported(trace: Trace, start: int) -> Workload:
    """The run as kube-state-metrics would have exported it, at the 1 s scrape (times rounded up to the sample)."""
    seconds = math.ceil(trace.horizon)
    w = Workload(start=start, seconds=seconds)
    for p in trace.pods:
        created, running = math.ceil(p.created), math.ceil(p.running)  # type: ignore[arg-type]
        finished = seconds if p.finished is None else math.ceil(p.finished)
        pod = Pod(p.namespace, p.name, p.requests.gpus, created, finished - running, 0)
        pod.scheduled, pod.node = running, p.node
        w.pods.append(pod)
    for n in trace.nodes:
        if n.gpu_ready is None or n.group.gpus_per_node == 0:
            continue
        w.nodes.append(Node(n.name, ready=math.ceil(n.gpu_ready), gpus=n.group.gpus_per_node,
                            removed=None if n.removed is None else math.ceil(n.removed)))
    return w


@pytest.fixture(scope="module")
def served(simulated: Trace, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workload, str]]:
    _need_prometheus()
    workload = exported(simulated, (int(time.time()) // 60) * 60 - 2 * HOUR)
    with serve(workload, tmp_path_factory.mktemp("prometheus")) as url:
        yield workload, url


def test_the_report_and_the_simulator_agree(simulated: Trace, served: tuple[Workload, str]) -> None:
    workload, url = served
    measured = collect(ReportInputs(prometheus=url, start=workload.start, end=workload.start + workload.seconds))
    expected = trace_report(simulated)
    assert measured.pods_created == expected.pods_created > 100
    assert measured.pending_by_pod == expected.pending_by_pod
    for key in ("pending_median_s", "pending_mean_s", "pending_p99_s", "pending_max_s", "scheduled_within",
                "gpu_nodes_max", "pending_at_end"):
        assert getattr(measured, key) == getattr(expected, key), key
    for key in ("gpu_hours_available", "gpu_hours_utilised", "utilisation_percent", "gpu_nodes_mean"):
        assert getattr(measured, key) == pytest.approx(getattr(expected, key), rel=1e-9), key
    assert measured.per_minute() == expected.per_minute() | {"t": measured.per_minute()["t"]}


def test_replay_reads_back_the_pods_prometheus_saw(simulated: Trace, served: tuple[Workload, str]) -> None:
    workload, url = served
    replay = replay_jobs(ReportInputs(prometheus=url, start=workload.start, end=workload.start + workload.seconds))
    pods = {f"{p.namespace}/{p.name}": p for p in workload.pods}
    assert replay.pods == len(pods) and replay.horizon == workload.seconds
    for job in replay.jobs:
        pod = pods[f"{job.namespace}/{job.name}"]
        assert job.at == pod.created
        (stage,) = job.stages
        assert stage.gangs[0].pods[0].requests.gpus == pod.gpus
        assert stage.gangs[0].work == min(pod.runtime, workload.seconds - pod.scheduled)
    # Replayed on the same stack: every pod runs again.
    inputs = model_inputs(load_stack(PROJECT_DIR, "dev-gke"), ModelSettings())
    model = ClusterModel(inputs.groups, timings=inputs.timings, binding=inputs.binding, seed=2)
    model.add_jobs(replay.jobs)
    again = trace_report(model.run(replay.horizon + HOUR))
    assert again.pods_created == replay.pods


def test_a_range_without_pods_cannot_be_replayed(served: tuple[Workload, str]) -> None:
    workload, url = served
    with pytest.raises(ReplayError, match=r"^--start/--end: no GPU pods created between .* nothing to replay$"):
        replay_jobs(ReportInputs(prometheus=url, start=workload.start - 2 * HOUR, end=workload.start - HOUR))
