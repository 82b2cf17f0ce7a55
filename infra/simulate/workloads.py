"""The workloads `gpu-platform simulate` runs: the RAPIDS deep-dive's generator, N parallel
Kubeflow pipelines (plan-capacity's inputs), a workload file, and (infra/simulate/replay.py) the pods a
real cluster ran.

A workload is a pattern of jobs over ``pattern_s`` seconds; ``--hours H`` repeats it back to
back. Jobs are drawn from their own ``random.Random(seed)``, apart from the model's, so every
configuration of a sweep sees the same jobs.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field, model_validator

from gpu_platform.components.core.labels import COMPUTE_CLASS_LABEL
from gpu_platform.components.core.models import ARGS_CONFIG, field_error
from gpu_platform.components.core.numbers import Float, Int
from gpu_platform.components.pools.shapes import GPU_TAINT
from gpu_platform.infra.simulate.distributions import Dist
from gpu_platform.infra.simulate.inputs import Gang, Job, PodSpec, Resources, Stage
from gpu_platform.infra.simulate.settings import DistField

__all__ = ["DeepDive", "Pattern", "TenantLoad", "WorkloadFile", "deep_dive", "deep_dive_namespace", "kfp_pipelines", "repeat"]

HOUR = 3600.0


@dataclass(frozen=True)
class Pattern:
    """A workload: its jobs, and how it repeats."""

    name: str
    jobs: tuple[Job, ...]
    pattern_s: float | None
    """The pattern's length: --hours lays copies this far apart. None: the pattern is one chain that ends
    when its work is done (the deep-dive); --hours chains copies back to back, and once it runs until
    done plus ``tail_s``."""
    described: dict[str, Any]
    """What the JSON says about the workload."""
    tail_s: float = 0.0
    """A chain's run goes on this long after its work is done (the deep-dive measured 15 min past the end)."""


def repeat(pattern: Pattern, hours: float | None) -> tuple[list[Job], float | None]:
    """The pattern back to back over ``hours`` (default: once), and the horizon (None: until the work is
    done plus the pattern's tail)."""
    if pattern.pattern_s is None:
        if hours is None:
            return list(pattern.jobs), None
        # One chain: its stages again and again; the run stops at the horizon wherever the chain is.
        copies = math.ceil(hours) + 1
        return [job if _session(job) else Job(job.at, job.namespace, job.name, job.stages * copies) for job in pattern.jobs], hours * HOUR
    if hours is None:
        copies, horizon = 1, pattern.pattern_s
    else:
        copies, horizon = max(1, math.ceil(hours * HOUR / pattern.pattern_s)), hours * HOUR
    jobs: list[Job] = []
    for k in range(copies):
        offset = k * pattern.pattern_s
        for job in pattern.jobs:
            if job.at + offset < horizon:
                jobs.append(Job(job.at + offset, job.namespace, f"{job.name}-r{k}" if copies > 1 else job.name, job.stages))
    return jobs, horizon


def _session(job: Job) -> bool:
    return all(g.work is None for stage in job.stages for g in stage.gangs)


# --- Dask clusters ------------------------------------------------------------------------------

DASK_TOLERATIONS = (GPU_TAINT.key, COMPUTE_CLASS_LABEL)
"""The taints pods of unknown placement tolerate (a replayed pod, a Dask pod on a cluster with no pool of its roles):
the GPU taint and any ComputeClass's, whatever their values."""
SCHEDULER = PodSpec("scheduler", Resources(gpus=1), roles=("scheduler", "gpu"), prefers="scheduler", tolerations=DASK_TOLERATIONS, home=("scheduler", "gpu"))
"""The deep-dive's Dask scheduler: one GPU (its KubeCluster gives every pod nvidia.com/gpu: 1), on the
scheduler pool when there is room (the stack's preferred node affinity), else on a GPU pool whose taints it
tolerates. It tolerates the scheduler pool's taints exactly (RapidsDaskClusterSpec.for_pools; the first GPU pool's
without a scheduler pool), so it never lands on a pool with a taint of its own, such as a capacity ladder's
ComputeClass taint (cloud.google.com/compute-class=<pool>), which only the class's pods tolerate."""
WORKER = PodSpec("worker", Resources(gpus=1), roles=("gpu",), tolerations=DASK_TOLERATIONS, home=("gpu",), pinned=True)
"""A dask-cuda-worker with one GPU, on the stack's first GPU pool (its node selector and tolerations:
RapidsDaskClusterSpec.for_pools)."""


def dask_cluster(at: float, namespace: str, name: str, workers: int, work: float, worker_gpus: int = 1, scheduler_gpus: int = 1) -> Job:
    scheduler = (
        SCHEDULER
        if scheduler_gpus == 1
        else PodSpec(
            "scheduler",
            Resources(gpus=scheduler_gpus),
            roles=("scheduler", "gpu") if scheduler_gpus else ("system",),
            prefers="scheduler" if scheduler_gpus else None,
            tolerations=DASK_TOLERATIONS,
            home=("scheduler", "gpu") if scheduler_gpus else None,
        )
    )
    worker = WORKER if worker_gpus == 1 else dataclasses.replace(WORKER, requests=Resources(gpus=worker_gpus))
    return Job(at, namespace, name, (Stage.of((scheduler, *([worker] * workers)), work),))


@dataclass(frozen=True)
class Phase:
    """One call of the deep-dive's ``generate_workload``: ``stages`` stages whose width (concurrent Dask
    clusters) walks between ``min_width`` and ``max_width`` by at most ``variation`` a step."""

    stages: int
    min_width: int
    max_width: int
    variation: int
    what: str


DEEP_DIVE_PHASES = (
    Phase(10, 1, 2, 1, "a couple of concurrent workloads"),
    Phase(5, 3, 5, 5, "demand increases as more users appear"),
    Phase(30, 1, 2, 1, "a lull over lunch"),
    Phase(10, 3, 10, 5, "back from lunch, hitting the cluster hard"),
    Phase(5, 3, 5, 5, "the after-lunch rush easing"),
    Phase(10, 1, 2, 1, "demand slowing towards the end of the day"),
)
"""The deep-dive's six calls of generate_workload, chained (notebook.ipynb, rapidsai/deployment)."""


class DeepDive(BaseModel):
    """The RAPIDS multi-tenant deep-dive's workload generator (see ``deep_dive``)."""

    model_config = ARGS_CONFIG

    namespace: str = "default"
    """Where the Dask clusters run (the deep-dive used the default namespace: no quota). `simulate` on a stack with tenant queues runs them in its first Dask tenant instead (deep_dive_namespace). Default: default."""
    workers: Int = Field(default=2, ge=1, le=100)
    """Workers per Dask cluster (the deep-dive's n_workers). Default: 2."""
    work: DistField = Dist("uniform", 20.0, 50.0)
    """How long each cluster holds its pods once they all run: install gcsfs, connect, read the NYC taxi data, close. The deep-dive's run_haversine took 23.6 s end to end alone on warm nodes; in its run the pods held 15.2 GPU-hours, less the mock Jupyter cluster's 4 GPUs over the 1.8 h range, over ~560 pods: ~50 s each. The default, shorter (35 s on average), was chosen by its fit to the guide's run length, p99 wait and utilisation (docs/simulator/validation.md says what was fitted). Default: uniform(20s, 50s)."""
    session: bool = True
    """The deep-dive's mock Jupyter cluster that submits the work: a scheduler and three workers, one GPU each, held for the whole run. Default: true."""
    lead: Annotated[Float, Field(ge=0, le=86_400)] = 900.0
    """Seconds from the start of the range to the first cluster (the deep-dive queried from 15 min before the run; the session runs from the start). Default: 900."""


def deep_dive_namespace(stack: Any) -> str:
    """Where ``stack``'s deep-dive runs: with tenant queues (``queues``) and Dask tenants, the first Dask tenant's
    namespace, so its clusters are admitted through that tenant's queue (borrowing from the cohort above its
    nominal quota, as Kueue admits them) and the per-tenant figures have them under that tenant; else
    ``default``, as the guide ran it (without queues a tenant's quota would refuse most of its clusters)."""
    dask = getattr(stack, "dask", None)
    if getattr(stack, "queues", None) is not None and dask is not None and dask.tenants:
        return str(dask.tenants[0].name)
    return DeepDive().namespace


def deep_dive(settings: DeepDive, seed: int) -> Pattern:
    """The RAPIDS multi-tenant deep-dive's workload: its ``generate_workload`` graph of ``run_haversine``
    calls, each a Dask cluster (a scheduler and two one-GPU workers that compute once both workers are
    up, then close), in six chained phases (DEEP_DIVE_PHASES). A stage's clusters start together and the
    next stage starts when all of them are done; each phase opens with one cluster (the previous phase's
    closing one) and closes with one. About 200 clusters; the guide's run took 1 h 18 min. Widths come from
    ``seed`` by the guide's ``randrange`` walk."""
    rng = random.Random(seed)
    widths = [1]
    for phase in DEEP_DIVE_PHASES:
        last = phase.min_width
        for _ in range(phase.stages):
            width = rng.randrange(max(phase.min_width, last - phase.variation), min(phase.max_width, last + phase.variation) + 1)
            widths.append(width)
            last = width
        widths.append(1)
    cluster = (SCHEDULER, *([WORKER] * settings.workers))
    stages = tuple(Stage(tuple(Gang(cluster, max(1.0, settings.work.draw(rng))) for _ in range(width))) for width in widths)
    jobs = [Job(settings.lead, settings.namespace, "rapids-dask", stages)]
    if settings.session:
        jobs.append(Job(0.0, settings.namespace, "mock-jupyter", (Stage.of((SCHEDULER, WORKER, WORKER, WORKER), None),)))
    return Pattern(
        "deep-dive",
        tuple(jobs),
        None,
        {
            "name": "deep-dive",
            "phases": [{"stages": ph.stages, "min_width": ph.min_width, "max_width": ph.max_width, "variation": ph.variation} for ph in DEEP_DIVE_PHASES],
            "stages": len(widths),
            "clusters": sum(widths),
            "workers_per_cluster": settings.workers,
            "work": str(settings.work),
            "session": settings.session,
        },
        tail_s=900.0,
    )


# --- Kubeflow pipelines --------------------------------------------------------------------------


def kfp_pipelines(inputs: Any, pool: Any, seed: int) -> Pattern:
    """N parallel pipeline runs (plan-capacity's inputs: ``runs`` of ``steps``, each run taking
    ``run_duration``), started together on ``pool`` every ``window`` (default: the run's duration), as the
    Kubeflow Pipelines scalability guide's method assumes: the runs go through the steps in lockstep, each
    step taking an equal share of the run. A step pod requests its CPU, memory and GPUs; it runs only on
    the pool named (a node selector on it)."""
    steps = inputs.steps
    share = inputs.run_duration / len(steps)
    roles = (pool.role.value,)
    specs = [
        PodSpec(step.name, Resources(cpu=step.cpu, memory=step.memory, gpus=step.gpus), roles=roles, pools=(pool.name,), tolerations=None) for step in steps
    ]
    runs = inputs.runs
    jobs = tuple(Job(0.0, "kubeflow", f"run-{i + 1:04d}", tuple(Stage.of((spec,), share) for spec in specs)) for i in range(runs))
    window = float(inputs.window) if inputs.window is not None else float(inputs.run_duration)
    return Pattern(
        "kfp",
        jobs,
        max(window, float(inputs.run_duration)),
        {"name": "kfp", "runs": runs, "steps": len(steps), "run_duration_s": inputs.run_duration, "pool": pool.name, "every_s": window},
    )


# --- a workload file -----------------------------------------------------------------------------


class TenantLoad(BaseModel):
    """One tenant's Dask clusters: how often they start, their size and how long they compute."""

    model_config = ARGS_CONFIG

    namespace: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    """The tenant's namespace (its GPU quota applies when the stack's Dask operator has the tenant). Required."""
    arrivals_per_hour: Annotated[Float, Field(ge=0, le=100_000)] | list[Annotated[Float, Field(ge=0, le=100_000)]]
    """Clusters started per hour (a Poisson process): one rate, or one per hour of the pattern (24 for a day). Required."""
    workers: Int = Field(default=2, ge=0, le=1000)
    """Workers per cluster. Default: 2."""
    worker_gpus: Int = Field(default=1, ge=0, le=16)
    """GPUs per worker. Default: 1."""
    scheduler_gpus: Int = Field(default=1, ge=0, le=16)
    """GPUs of the scheduler (0: a CPU scheduler on the system pool). Default: 1."""
    duration: DistField
    """How long a cluster computes once its pods run: "20m", "uniform(5m, 30m)", "exponential(15m)". Required."""


class WorkloadFile(BaseModel):
    """--workload FILE: tenants and their arrival rates by hour."""

    model_config = ARGS_CONFIG

    hours: Int | None = Field(default=None, ge=1, le=24 * 31)
    """The pattern's length in hours. Default: none (the longest list of hourly rates, else 1)."""
    tenants: list[TenantLoad] = Field(min_length=1)
    """Required (at least one)."""

    @model_validator(mode="after")
    def _rates(self) -> WorkloadFile:
        hours = self.pattern_hours
        for i, tenant in enumerate(self.tenants):
            rates = tenant.arrivals_per_hour
            if isinstance(rates, list) and len(rates) != hours:
                raise field_error(
                    "WorkloadFile",
                    ("tenants", i, "arrivals_per_hour"),
                    f"{len(rates)} hourly rates for a pattern of {hours} hours: give one rate or {hours}",
                    len(rates),
                )
        if not any(sum(t.arrivals_per_hour) if isinstance(t.arrivals_per_hour, list) else t.arrivals_per_hour for t in self.tenants):
            raise field_error("WorkloadFile", "tenants", "every arrival rate is 0: the workload is empty", 0)
        if not any(t.workers * t.worker_gpus + t.scheduler_gpus for t in self.tenants):
            raise field_error("WorkloadFile", "tenants", "no tenant's cluster requests a GPU: nothing to simulate", 0)
        return self

    @property
    def pattern_hours(self) -> int:
        if self.hours is not None:
            return self.hours
        lengths = [len(t.arrivals_per_hour) for t in self.tenants if isinstance(t.arrivals_per_hour, list)]
        return max(lengths, default=1)


def from_file(workload: WorkloadFile, seed: int, name: str) -> Pattern:
    """Poisson arrivals per tenant at each hour's rate; cluster durations drawn from the tenant's distribution."""
    rng = random.Random(seed)
    hours = workload.pattern_hours
    jobs: list[Job] = []
    for tenant in workload.tenants:
        rates = tenant.arrivals_per_hour if isinstance(tenant.arrivals_per_hour, list) else [tenant.arrivals_per_hour] * hours
        for hour, rate in enumerate(rates):
            t = hour * HOUR
            while rate > 0:
                t += rng.expovariate(rate / HOUR)
                if t >= (hour + 1) * HOUR:
                    break
                jobs.append(
                    dask_cluster(
                        t,
                        tenant.namespace,
                        f"{tenant.namespace}-{len(jobs) + 1:05d}",
                        tenant.workers,
                        max(1.0, tenant.duration.draw(rng)),
                        tenant.worker_gpus,
                        tenant.scheduler_gpus,
                    )
                )
    jobs.sort(key=lambda j: j.at)
    return Pattern(name, tuple(jobs), hours * HOUR, {"name": name, "tenants": len(workload.tenants), "hours": hours, "clusters": len(jobs)})
