"""``gpu-platform simulate --replay``: the GPU pods a real cluster ran, as a workload for this stack.

The pods come from the cluster's Prometheus through the report's own queries and client
(infra/report.py): the GPU pods with a request series in [start, end), their creation time
(kube_pod_created), their GPU request and how many steps they were Running in the range. Each
becomes a job of one pod arriving at its creation time that, once running, holds its GPUs for
as long as it ran for real. Replayed against another configuration this answers "what would
that range have waited and cost with this config?". Not replayed: CPU and memory requests
(GPU only), pods without kube_pod_created (counted), and how long a pod would have run
elsewhere (its own running time is kept).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpu_platform.infra.report import GPU_REQUESTS, Prometheus, ReportInputs, _iso, _pod, creation_times, gpu_pods, redact_url
from gpu_platform.infra.simulation import Job, PodSpec, Resources, Stage

__all__ = ["REPLAY_QUERIES", "Replay", "ReplayError", "replay_jobs"]

REPLAY_QUERIES = {
    "gpus": f"max by (namespace, pod) (sum by (namespace, pod) ({GPU_REQUESTS}))",
    "running": (
        'max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1 '
        f"and on (namespace, pod) (sum by (namespace, pod) ({GPU_REQUESTS}) > 0)"
    ),
}


class ReplayError(Exception):
    """A range that cannot be replayed, in one line."""


@dataclass
class Replay:
    jobs: list[Job]
    horizon: float
    start: int
    pods: int
    without_created: int
    source: str


def replay_jobs(inputs: ReportInputs, progress: Callable[[str], None] = lambda _: None) -> Replay:
    prom = Prometheus(inputs.prometheus, inputs.timeout)
    times = inputs.grid()
    step = inputs.step
    start, end = times[0], times[-1] + step
    progress("GPU pods")
    pods = gpu_pods(prom, inputs)
    created = creation_times(prom, inputs)
    inside = sorted(p for p in pods if p in created and start <= created[p] < end)
    if not inside:
        raise ReplayError(f"--start/--end: no GPU pods created between {_iso(start)} and {_iso(end)}: nothing to replay")
    progress("GPU requests")
    gpus: dict[str, int] = {}
    for labels, values in prom.query_range(REPLAY_QUERIES["gpus"], times, step, inputs.max_points).items():
        gpus[_pod(labels)] = max(gpus.get(_pod(labels), 0), int(max(values.values(), default=0)))
    progress("running time")
    running: dict[str, int] = {}
    for labels, values in prom.query_range(REPLAY_QUERIES["running"], times, step, inputs.max_points).items():
        running[_pod(labels)] = running.get(_pod(labels), 0) + sum(1 for v in values.values() if v == 1) * step
    jobs = []
    for pod in inside:
        namespace, _, name = pod.partition("/")
        spec = PodSpec("pod", Resources(gpus=max(1, gpus.get(pod, 1))), roles=("gpu", "scheduler"))
        jobs.append(Job(created[pod] - start, namespace, name, (Stage.of((spec,), float(max(step, running.get(pod, 0)))),)))
    return Replay(jobs, float(end - start), start, len(jobs), len(pods - created.keys()), redact_url(inputs.prometheus))
