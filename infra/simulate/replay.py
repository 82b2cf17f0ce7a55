"""``gpu-platform simulate --replay``: the GPU pods a real cluster ran, as a workload for this stack.

The pods come from the cluster's Prometheus through the report's own client and queries
(infra/report/prometheus.py), over the same grid [start, end) at the same step:

- which pods: the GPU pods (a ``kube_pod_container_resource_requests{resource="nvidia_com_gpu"}``
  series in the range) whose ``kube_pod_created`` falls in [start, end), the pods the report's
  wait statistics cover;
- when: each arrives at its ``kube_pod_created``, as seconds after the start;
- how many GPUs: the sum of its containers' GPU requests (the most at any step);
- for how long: the steps it was Running in the range, times the step (at least one step), as
  the work of a job of that one pod, which holds its GPUs that long once it runs.

Replayed against another configuration this answers "what would that range have waited and
cost with this config?". Not replayed:

- CPU and memory requests: the pods request GPUs only;
- how long a pod would have run elsewhere: its own running time is kept, and a pod still
  pending at the end (or never Running in the range) works one step;
- which pods belonged together: a Dask cluster's scheduler and workers are separate jobs of
  one pod each, not a gang;
- GPU pods created before the start (running or pending at it): start the range when the
  cluster was quiet, or the replay misses their GPUs;
- GPU pods without kube_pod_created: they cannot be placed in or out of the range; they are
  counted (``Replay.without_created``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpu_platform.infra.report.prometheus import (
    CREATED,
    GPU_REQUESTS,
    Prometheus,
    ReportError,
    ReportInputs,
    _iso,
    _pod,
    creation_times,
    gpu_pods,
    redact_url,
)
from gpu_platform.infra.simulate.inputs import Job, PodSpec, Resources, Stage
from gpu_platform.infra.simulate.workloads import DASK_TOLERATIONS

__all__ = ["REPLAY_QUERIES", "Replay", "ReplayError", "replay_jobs"]

REPLAY_QUERIES = {
    # The GPUs of each GPU pod: the sum over its containers (the report's own per-pod sum).
    "gpus": f"sum by (namespace, pod) ({GPU_REQUESTS})",
    # The steps each GPU pod was Running (the report's "pending" for the Running phase).
    "running": (
        f'max by (namespace, pod) (kube_pod_status_phase{{phase="Running"}}) == 1 and on (namespace, pod) (sum by (namespace, pod) ({GPU_REQUESTS}) > 0)'
    ),
}


class ReplayError(Exception):
    """A range that cannot be replayed, in one line."""


@dataclass
class Replay:
    """The replayed workload and where it came from."""

    jobs: list[Job]
    """One job per GPU pod created in the range, named namespace/pod, in pod-name order."""
    horizon: float
    """Seconds: the range's length (end - start)."""
    start: int
    """Unix seconds of the range's first step: the jobs' arrival offsets count from it."""
    pods: int
    """GPU pods replayed (len(jobs))."""
    without_created: int
    """GPU pods with a request series in the range but no kube_pod_created: not replayed."""
    source: str
    """The Prometheus URL, its password redacted."""


def replay_jobs(inputs: ReportInputs, progress: Callable[[str], None] = lambda _: None) -> Replay:
    """The GPU pods created in [inputs.start, inputs.end) as jobs; ReplayError when there are none,
    ReportError (unchanged) when Prometheus cannot answer."""
    prom = Prometheus(inputs.prometheus, inputs.timeout)
    times = inputs.grid()
    step = inputs.step
    start, end = times[0], times[-1] + step
    progress("GPU pods (series)")
    pods = gpu_pods(prom, inputs)
    progress("pod creation times")
    created = creation_times(prom, inputs)
    if pods and not created.keys() & pods:
        raise ReportError(
            f"no {CREATED} series for the {len(pods)} GPU pod{'' if len(pods) == 1 else 's'} between {_iso(start)} and "
            f"{_iso(times[-1])}: kube-state-metrics exports it by default; is it dropped by a denylist or relabelling?"
        )
    inside = sorted(p for p in pods if p in created and start <= created[p] < end)
    if not inside:
        raise ReplayError(f"--start/--end: no GPU pods created between {_iso(start)} and {_iso(end)}: nothing to replay")
    progress("GPU requests")
    gpus: dict[str, int] = {}
    for labels, values in prom.query_range(REPLAY_QUERIES["gpus"], times, step, inputs.max_points).items():
        pod = _pod(labels)
        gpus[pod] = max(gpus.get(pod, 0), round(max(values.values(), default=0)))
    progress("running time")
    running: dict[str, int] = {}
    for labels, values in prom.query_range(REPLAY_QUERIES["running"], times, step, inputs.max_points).items():
        pod = _pod(labels)
        running[pod] = running.get(pod, 0) + sum(1 for v in values.values() if v == 1) * step
    jobs = []
    for pod in inside:
        namespace, _, name = pod.partition("/")
        # A pod created in the range has a request > 0 within it (creation_times requires one); it is
        # missing here only when it lived between two steps: count one GPU.
        spec = PodSpec("pod", Resources(gpus=max(1, gpus.get(pod, 1))), roles=("gpu", "scheduler"), tolerations=DASK_TOLERATIONS)
        work = float(max(step, running.get(pod, 0)))
        jobs.append(Job(created[pod] - start, namespace, name, (Stage.of((spec,), work),)))
    return Replay(jobs, float(end - start), start, len(jobs), len(pods - created.keys()), redact_url(inputs.prometheus))
