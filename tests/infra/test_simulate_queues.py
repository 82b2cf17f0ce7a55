"""`gpu-platform simulate` admits through the tenants' queues as Kueue does (infra/simulate/queues.py): a
workload waits in its queue instead of being refused, borrows unused quota from the cohort up to its
borrowing limit, and freed quota goes to the queues by fair sharing; the per-tenant figures are the
report's (same keys)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.infra.report.tenants import IDLE, TenantFigures
from gpu_platform.infra.simulate.distributions import fixed
from gpu_platform.infra.simulate.inputs import Job, NodeGroup, PodSpec, Resources, Stage, Timings
from gpu_platform.infra.simulate.model import ClusterModel
from gpu_platform.infra.simulate.queues import KUEUE_BUCKETS, Cohort, Queues, TenantQueue, cohort_from_objects

ONE_GPU = PodSpec("worker", Resources(gpus=1))
WORK = 600.0
TENANTS = {"analytics": "analytics", "team-nlp": "team-nlp"}


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _queues(*specs: TenantQueue, cohort: int = 0) -> tuple[Queues, Clock, list[str]]:
    clock, admitted = Clock(), []
    return Queues(Cohort(specs, cohort), {s.tenant: s.tenant for s in specs} | {"free": "free"}, clock), clock, admitted


def test_within_nominal_admitted_at_once_above_it_borrowed_up_to_the_limit_then_queued() -> None:
    queues, clock, admitted = _queues(TenantQueue("a", 4, borrowing_limit=2), TenantQueue("b", 4))
    for i in range(8):
        assert queues.submit(f"a{i}", "a", 1, lambda i=i: admitted.append(f"a{i}"))
    assert admitted == [f"a{i}" for i in range(6)], "4 nominal + 2 borrowed from b's unused quota"
    clock.t = 10
    queues.release("a0")
    assert admitted[-1] == "a6"
    figures = queues.figures(20)
    assert figures["a"][0].admitted == 7 and figures["a"][0].admission_wait_mean_s == pytest.approx(10 / 7)
    assert figures["a"][0].pending_workloads_max == 2 and figures["a"][1] == 0


def test_a_lending_limit_keeps_part_of_a_queues_quota_its_own() -> None:
    queues, _, admitted = _queues(TenantQueue("a", 4), TenantQueue("b", 4, lending_limit=1))
    for i in range(8):
        queues.submit(f"a{i}", "a", 1, lambda i=i: admitted.append(f"a{i}"))
    assert len(admitted) == 5, "b lends 1 of its 4"
    for i in range(3):
        queues.submit(f"b{i}", "b", 1, lambda i=i: admitted.append(f"b{i}"))
    assert admitted[5:] == ["b0", "b1", "b2"], "b's 3 unlent GPUs are there for it at once"


def test_freed_quota_goes_to_the_queue_that_borrows_least_by_weight() -> None:
    queues, clock, admitted = _queues(TenantQueue("a", 2), TenantQueue("b", 2), TenantQueue("c", 0, weight=4))
    for i in range(4):
        queues.submit(f"a{i}", "a", 1, lambda i=i: admitted.append(f"a{i}"))
    clock.t = 1
    queues.submit("a4", "a", 1, lambda: admitted.append("a4"))
    queues.submit("b0", "b", 1, lambda: admitted.append("b0"))
    queues.submit("c0", "c", 1, lambda: admitted.append("c0"))
    assert admitted == ["a0", "a1", "a2", "a3"]
    clock.t = 2
    queues.release("a0")
    assert admitted[-1] == "b0", "b is within its nominal quota: it borrows nothing"
    queues.release("a1")
    assert admitted[-1] == "c0", "c borrows 1 / weight 4 = 0.25, less than a's 3 / 1 (the older a4 waits)"


def test_a_workload_that_could_never_fit_is_refused_and_a_namespace_without_a_queue_is_not_queued() -> None:
    queues, _, admitted = _queues(TenantQueue("a", 2, borrowing_limit=1), TenantQueue("b", 2))
    assert not queues.submit("big", "a", 4, lambda: admitted.append("big"))
    assert queues.submit("x", "free", 100, lambda: admitted.append("x")) and admitted == ["x"]
    assert queues.figures(1)["a"][1] == 1


def test_cluster_queue_objects_give_the_gpu_queues() -> None:
    def cq(name: str, gpus: object, **limits: object) -> dict[str, object]:
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "cohort": "platform",
                "fairSharing": {"weight": "2"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "nvidia.com/gpu"],
                        "flavors": [
                            {"name": f, "resources": [{"name": "cpu", "nominalQuota": "96"}, {"name": "nvidia.com/gpu", "nominalQuota": gpus, **limits}]}
                            for f in ("a100", "a100x8")
                        ],
                    }
                ],
            },
        }

    cohort = {
        "kind": "Cohort",
        "metadata": {"name": "platform"},
        "spec": {
            "resourceGroups": [
                {
                    "flavors": [
                        {"name": "a100x8", "resources": [{"name": "cpu", "nominalQuota": "0"}, {"name": "nvidia.com/gpu", "nominalQuota": 8}]},
                    ]
                }
            ]
        },
    }
    objects = [cohort, cq("analytics", 4, borrowingLimit=2), cq("team-nlp", "8", lendingLimit="1"), cq("not-a-tenant", 1)]
    assert cohort_from_objects(objects, TENANTS) == Cohort(
        (
            TenantQueue("analytics", 8, borrowing_limit=4, lending_limit=None, weight=2.0),
            TenantQueue("team-nlp", 16, borrowing_limit=None, lending_limit=2, weight=2.0),
        ),
        gpus=8,
    )


def test_the_cohorts_own_gpus_are_lent_to_any_queue() -> None:
    queues, _, admitted = _queues(TenantQueue("a", 2, lending_limit=0), TenantQueue("b", 2, lending_limit=0), cohort=3)
    for i in range(9):
        queues.submit(f"a{i}", "a", 1, lambda i=i: admitted.append(f"a{i}"))
    assert len(admitted) == 5, "its 2 and the cohort's 3; b's 2 are not lent"


# --- in the cluster model: one tenant bursts, the other's wait stays bounded ---------------------------------


def _burst(jobs: int, queues: tuple[TenantQueue, ...]) -> tuple[ClusterModel, dict[str, list[float]]]:
    """analytics submits ``jobs`` one-GPU jobs at 0; team-nlp 4 at 100 s and 4 at 2000 s; 8 one-GPU nodes."""
    group = NodeGroup(name="gpu", pool="gpu", role="gpu", machine_type="m", allocatable=Resources(4000, 16000, 1), gpus_per_node=1, min_nodes=8, max_nodes=8)
    work = [Job(0.0, "analytics", f"a{i}", (Stage.of((ONE_GPU,), WORK),)) for i in range(jobs)]
    work += [Job(at, "team-nlp", f"n{at:g}-{i}", (Stage.of((ONE_GPU,), WORK),)) for at in (100.0, 2000.0) for i in range(4)]
    model = ClusterModel([group], timings=Timings(pod_start=fixed(0)), autoscale=False, queues=Cohort(queues), tenants=TENANTS)
    model.add_jobs(work)
    trace = model.run()
    waits: dict[str, list[float]] = {}
    for pod in trace.pods:
        waits.setdefault(pod.namespace, []).append(pod.running - pod.created)  # type: ignore[operator]
    assert model.queues is not None
    for tenant, state in model.queues.state.items():
        waits[f"{tenant} queue"] = state.waits
    return model, waits


def test_a_burster_borrows_idle_quota_but_cannot_starve_the_other_tenant() -> None:
    queues = (TenantQueue("analytics", 4), TenantQueue("team-nlp", 4))
    runs = {burst: _burst(burst, queues) for burst in (20, 80)}
    for burst, (model, waits) in runs.items():
        assert model.trace.refused_pods == 0 and len(waits["analytics"]) == burst, "queued, never refused"
        # team-nlp's first four find analytics holding all 8 GPUs (4 borrowed while team-nlp was idle):
        # they wait for analytics' first releases at 600 s, then go before analytics' queue (fair sharing).
        assert sorted(waits["team-nlp queue"])[-4:] == [500.0] * 4
        assert max(waits["team-nlp queue"]) <= WORK
    # Four times the burst: team-nlp's wait is the same, analytics' own grows with its burst.
    assert max(runs[80][1]["team-nlp queue"]) == max(runs[20][1]["team-nlp queue"])
    assert max(runs[20][1]["analytics queue"]) == 2 * WORK
    assert max(runs[80][1]["analytics queue"]) >= (80 // 8 - 1) * WORK, "it borrows the idle GPUs: 8 at a time"


def test_without_lending_the_other_tenants_quota_is_there_at_once() -> None:
    queues = (TenantQueue("analytics", 4), TenantQueue("team-nlp", 4, lending_limit=0))
    _, waits = _burst(40, queues)
    assert max(waits["team-nlp queue"]) == 0.0 and max(waits["team-nlp"]) == 0.0


# --- on a shipped stack: the same figures as the report ------------------------------------------------------


def test_simulate_on_a_shipped_stack_reports_per_tenant_figures_with_queues() -> None:
    from gpu_platform.infra.simulate.prices import PriceTable
    from gpu_platform.infra.simulate.runs import configurations, run
    from tests.conftest import PROJECT_DIR

    (config,) = configurations(PROJECT_DIR, "prod-gke", [], [], 1)
    assert set(TENANTS) <= set(config.inputs.tenants)
    inputs = dataclasses.replace(config.inputs, queues=Cohort((TenantQueue("analytics", 2), TenantQueue("team-nlp", 2))))
    a100 = PodSpec("worker", Resources(cpu=1000, memory=4000, gpus=1), pools=("a100",), tolerations=None)
    jobs = [Job(0.0, "analytics", f"a{i}", (Stage.of((a100,), WORK),)) for i in range(12)]
    jobs += [Job(1200.0, "team-nlp", f"n{i}", (Stage.of((a100,), WORK),)) for i in range(2)]
    jobs += [Job(1200.0, "team-nlp", "too-big", (Stage.of((dataclasses.replace(a100, requests=Resources(gpus=9)),), WORK),))]
    outcome = run(inputs, jobs, None, PriceTable.shipped())
    tenants = outcome.report.tenants
    rows = {r.tenant: r for r in tenants.rows}
    assert [f.name for f in dataclasses.fields(rows["analytics"])] == [f.name for f in dataclasses.fields(TenantFigures)]
    nlp, analytics = rows["team-nlp"], rows["analytics"]
    assert nlp.refused_workloads == 1 and analytics.refused_workloads == 0, "9 GPUs fit no queue of a 4-GPU cohort"
    assert analytics.gpu_hours == pytest.approx(12 * WORK / 3600) and nlp.gpu_hours == pytest.approx(2 * WORK / 3600)
    assert analytics.queue is not None and nlp.queue is not None
    assert analytics.queue.admitted == 12 and nlp.queue.admitted == 2
    # analytics borrows team-nlp's idle 2 (4 at a time: 3 rounds of 4); team-nlp, within its nominal
    # quota, waits at most one of analytics' jobs.
    assert nlp.queue.admission_wait_p99_s is not None and nlp.queue.admission_wait_p99_s <= min(b for b in KUEUE_BUCKETS if b >= WORK)
    assert analytics.queue.admission_wait_p99_s is not None and analytics.queue.admission_wait_p99_s >= 1024
    assert sum(r.cost for r in tenants.rows) == pytest.approx(tenants.cost) and rows[IDLE].gpu_hours > 0
    document = outcome.json_document({"name": "test"}, inputs)
    assert {r["tenant"] for r in document["tenants"]["rows"]} >= {"analytics", "team-nlp", IDLE}


# --- the "done when", on a shipped stack's own queues ------------------------------------------------


def _most_held(trace: Any, namespace: str) -> int:
    """The most GPUs ``namespace``'s pods held at any one time in a simulated run (running to finished)."""
    events = sorted(
        (t, sign * p.requests.gpus)
        for p in trace.pods
        if p.namespace == namespace and p.requests.gpus and p.running is not None
        for t, sign in ((p.running, 1), (p.finished if p.finished is not None else math.inf, -1))
    )
    held = most = 0
    for _, change in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts at the same second
        held += change
        most = max(most, held)
    return most


def _prod_gke_burst(burst: int, sets: Sequence[tuple[str, Any]] = ()) -> tuple[dict[str, TenantFigures], Any]:
    """prod-gke as shipped (its ClusterQueues: analytics 16, research 8, team-vision 16, team-nlp 16 nominal
    GPUs, the Cohort the pools' other 38), with ``sets``: analytics bursts ``burst`` ten-minute one-GPU jobs at 0,
    research submits its nominal quota's worth (8) at 1200 s; pods may use any GPU node, as many as the queues
    (and the tenants' quotas) hold. The per-tenant rows and the run's trace."""
    from gpu_platform.infra.simulate.prices import PriceTable
    from gpu_platform.infra.simulate.runs import configurations, run
    from tests.conftest import PROJECT_DIR

    (config,) = configurations(PROJECT_DIR, "prod-gke", list(sets), [], 1)
    cohort = config.inputs.queues
    assert cohort is not None and {q.tenant: q.nominal for q in cohort.queues}["research"] == 8
    any_gpu = PodSpec("worker", Resources(cpu=1000, memory=4000, gpus=1), roles=("gpu", "scheduler"), tolerations=None)
    jobs = [Job(0.0, "analytics", f"a{i}", (Stage.of((any_gpu,), WORK),)) for i in range(burst)]
    jobs += [Job(1200.0, "research", f"r{i}", (Stage.of((any_gpu,), WORK),)) for i in range(8)]
    outcome = run(config.inputs, jobs, None, PriceTable.shipped())
    assert outcome.trace.refused_pods == 0 and outcome.trace.stalled_at is None
    return {r.tenant: r for r in outcome.report.tenants.rows}, outcome.trace


def test_on_prod_gke_a_burster_cannot_push_the_other_tenants_wait_past_one_job() -> None:
    runs = {burst: _prod_gke_burst(burst)[0] for burst in (200, 400)}
    bound = min(b for b in KUEUE_BUCKETS if b >= WORK)  # one borrower's job: no preemption, so an upper bound
    for burst, rows in runs.items():
        research, analytics = rows["research"].queue, rows["analytics"].queue
        assert research is not None and analytics is not None
        assert (analytics.admitted, research.admitted) == (burst, 8)
        # research asks within its nominal quota: it waits at most until a borrowed GPU comes back (here not at
        # all: analytics' ResourceQuota of 16 keeps it from borrowing what research is owed).
        assert research.admission_wait_p99_s is not None and research.admission_wait_p99_s <= bound
        assert research.admission_wait_mean_s is not None and 0 <= research.admission_wait_mean_s <= WORK
        assert rows["research"].gpu_hours == pytest.approx(8 * WORK / 3600)
    # Twice the burst: research's wait is the same to the second, analytics' own grows with its burst.
    assert runs[400]["analytics"].gpu_hours == pytest.approx(400 * WORK / 3600)
    assert runs[400]["research"].queue.admission_wait_mean_s == runs[200]["research"].queue.admission_wait_mean_s  # type: ignore[union-attr]
    assert runs[400]["analytics"].queue.admission_wait_p99_s > runs[200]["analytics"].queue.admission_wait_p99_s  # type: ignore[union-attr,operator]


def test_the_deep_dive_runs_in_the_first_dask_tenant_of_a_stack_with_queues(tmp_path: Path) -> None:
    import json

    from gpu_platform.infra.cli import main
    from gpu_platform.infra.simulate.workloads import deep_dive_namespace
    from gpu_platform.infra.stack.read import load_stack
    from tests.conftest import PROJECT_DIR

    prod, dev = load_stack(PROJECT_DIR, "prod-gke"), load_stack(PROJECT_DIR, "dev-gke")
    assert prod.queues is not None and prod.dask is not None
    assert deep_dive_namespace(prod) == prod.dask.tenants[0].name == "analytics"
    assert dev.queues is None and dev.dask is not None and dev.dask.tenants
    assert deep_dive_namespace(dev) == "default"  # without queues its quota would refuse the guide's clusters
    out = tmp_path / "sim.json"
    assert main(["simulate", "prod-gke", "--hours", "0.5", "--json", str(out), "--project-dir", str(PROJECT_DIR)]) == 0
    rows = {r["tenant"]: r for r in json.loads(out.read_text())["tenants"]["rows"]}
    assert rows["analytics"]["gpu_hours"] > 0 and rows["analytics"]["queue"]["admitted"] > 0
    assert all(rows[t]["gpu_hours"] == 0 for t in ("research", "team-vision", "team-nlp"))
    assert "other" not in rows  # nothing ran outside the stack's tenants


@pytest.mark.parametrize("quota", [3, 16])
def test_under_queues_the_tenants_resource_quota_stays_the_ceiling(quota: int) -> None:
    """The README: under queues the tenant's ResourceQuota "stays the ceiling". analytics, whose queue may borrow
    the Cohort's 38 idle GPUs, bursts 40 one-GPU jobs: it never holds more than its quota at any time, runs every
    job (they wait in its queue, none is refused), and research is admitted beside it."""
    # (The shared Dask cluster shrunk to one worker, so the stack admits the quota of 3.)
    rows, trace = _prod_gke_burst(40, [("dask.tenants[0].gpu_quota", quota), ("dask.tenants[0].shared_cluster.max_workers", 1)])
    assert _most_held(trace, "analytics") == quota
    assert rows["analytics"].queue is not None and rows["analytics"].queue.admitted == 40
    assert rows["analytics"].gpu_hours == pytest.approx(40 * WORK / 3600)
    assert _most_held(trace, "research") <= 8


def test_a_workload_above_the_tenants_quota_is_refused_by_its_queue() -> None:
    admitted: list[str] = []
    ceiling = Queues(Cohort((TenantQueue("a", 2),), 10), {"a": "a"}, Clock(), quotas={"a": 3})
    assert ceiling.submit("big", "a", 4, lambda: admitted.append("big")) is False  # 4 > its quota of 3: never admitted
    for i in range(4):
        assert ceiling.submit(f"a{i}", "a", 1, lambda i=i: admitted.append(f"a{i}"))
    assert admitted == ["a0", "a1", "a2"]  # the 4th waits: 3 in use is the quota, though the cohort has 10 free
    ceiling.release("a0")
    assert admitted == ["a0", "a1", "a2", "a3"]


@pytest.mark.parametrize("seed", range(4))
def test_a_queues_runs_are_its_values_second_by_second(seed: int) -> None:
    """The pending workloads and GPUs in use are read as runs of equal value (not a list of every second): a random
    series of changes (fractional times, several in the same second, some past the horizon) gives, run by run, the
    value of each second: the last change at or before it (0 before the first)."""
    import random

    from gpu_platform.infra.simulate.queues import _runs

    rng = random.Random(seed)
    horizon = 200
    changes = [(rng.choice((rng.uniform(0, horizon + 20), float(rng.randrange(horizon)))), rng.randrange(6)) for _ in range(40)]
    changes += [(changes[3][0], 9), (0.0, 7)]
    per_second = []
    for second in range(horizon):
        before = [(t, i, value) for i, (t, value) in enumerate(changes) if t <= second]
        per_second.append(max(before)[2] if before else 0)
    runs = _runs(changes, horizon)
    assert [value for seconds, value in runs for _ in range(seconds)] == per_second
    assert all(seconds > 0 for seconds, _ in runs) and len(runs) <= len(changes) + 1
    assert _runs(changes, 0) == [] and _runs([], 3) == [(3, 0)]
