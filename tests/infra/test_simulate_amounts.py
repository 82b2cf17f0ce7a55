"""Amounts, not occurrences (issue 39): each test here expects a figure taken from the upstream default or a
closed form, so a model that does the right thing by the wrong amount fails. Each names, in its docstring,
the mutant of the model it was checked against (applied by hand, the test failing on it, the rest passing)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from gpu_platform.infra.simulate.inputs import NodeGroup, PodSpec, Resources, Timings
from gpu_platform.infra.simulate.model import ClusterModel
from gpu_platform.infra.simulate.prices import Cost, PriceTable, cost_of
from gpu_platform.infra.simulate.runs import Outcome, cheapest_meeting, cost_key
from tests.infra.test_simulation import STARTUP, group, job

CPU_POD = PodSpec("cpu", Resources(cpu=100, memory=100))


def test_spot_preemptions_follow_the_rate_per_node_hour() -> None:
    """Timings.preemption_per_node_hour is a rate per node-hour: each of N spot nodes that never get replaced
    is reclaimed within H hours with probability p = 1 - exp(-r H), so the count is Binomial(N, p). With
    N = 100, r = 0.5/h, H = 2 h: mean 63.2, sd 4.8; the test allows 4 sd either way. The rate read per minute
    (60x) reclaims every node within minutes: 100. Kills the mutant ``rate / 3600`` -> ``rate / 60``."""
    n, rate, hours = 100, 0.5, 2.0
    t = Timings(**{**STARTUP.__dict__, "preemption_per_node_hour": rate, "preemption_notice": 0.0})
    model = ClusterModel([group(spot=True, lo=n, hi=n)], timings=t, autoscale=False, seed=11)
    trace = model.run(until=hours * 3600)
    p = 1 - math.exp(-rate * hours)
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    assert abs(trace.preemptions - mean) <= 4 * sd, f"{trace.preemptions} preemptions, Binomial mean {mean:.1f} sd {sd:.1f}"
    # The same count from the node records: each preempted node went after its exposure, not before.
    preempted = [node for node in trace.nodes if node.preempted]
    assert len(preempted) == trace.preemptions


def _lost_work(notice: float) -> float:
    """One spot node running one 1-GPU pod from 0 s; the cloud sends the node's reclaim notice at 100 s. The
    seconds of work the pod had done when it was killed (lost: its replacement starts the work again)."""
    t = Timings(**{**STARTUP.__dict__, "preemption_notice": notice})
    model = ClusterModel([group(spot=True, lo=1, hi=1, image_streaming=True)], timings=t, autoscale=False)
    model.add_jobs([job(0.0, 1000.0)])
    (node,) = model.nodes
    model.env.process(model._preemption(node, 100.0))
    trace = model.run(until=2000)
    (lost,) = [p for p in trace.pods if p.lost]
    assert lost.running is not None and lost.finished is not None
    return lost.finished - lost.running


@pytest.mark.parametrize("notice", [30.0, 120.0])
def test_the_preemption_notice_adds_exactly_its_length_to_the_work_done_before_the_kill(notice: float) -> None:
    """The node goes at the end of its notice (GCE's 30 s for spot VMs, EC2's 120 s), its pods running until
    then: the work done before the kill is the notice longer than with no notice, to the second. Kills the
    mutant that skips the notice (``yield self.env.timeout(self.timings.preemption_notice)`` removed)."""
    assert _lost_work(0.0) == 100.0
    assert _lost_work(notice) - _lost_work(0.0) == notice


def test_kube_scheduler_s_pod_back_off_doubles_from_1_s_to_its_10_s_maximum() -> None:
    """kube-scheduler's pod back-off (Kubernetes v1.34.12 pkg/scheduler/backend/queue/scheduling_queue.go:79
    DefaultPodInitialBackoffDuration = 1 * time.Second, :83 DefaultPodMaxBackoffDuration = 10 * time.Second;
    doubled per failed attempt, backoff_queue.go:233-244): after n failures, 1, 2, 4, 8, then 10 s for
    good, counted from the pod's last requeue and truncated to the whole second (backoff_queue.go:139-144).
    Kills the mutant POD_MAX_BACKOFF = 5.0 (the maximum halved)."""
    model = ClusterModel([group(gpus=1, lo=0, hi=0)], timings=STARTUP, autoscale=False)
    model.add_jobs([job(0.0, 60)])
    model.run(until=1)
    (pod,) = model.pending
    pod.queued_at = 100.5
    expiries = []
    for failures in range(1, 9):
        pod.failures = failures
        expiries.append(model._backoff_expiry(pod) - 100.0)
    assert expiries == [1, 2, 4, 8, 10, 10, 10, 10]


def _cpu_group() -> NodeGroup:
    return NodeGroup(name="cpu", pool="cpu", role="gpu", machine_type="m", allocatable=Resources(4000, 16000, 0), gpus_per_node=0, max_nodes=2)


@pytest.mark.parametrize(("created", "requested"), [(7.5, 10.0), (8.5, 20.0), (9.0, 20.0)])
def test_a_non_gpu_pod_waits_2_s_before_a_scan_scales_up_for_it(created: float, requested: float) -> None:
    """upstream core/static_autoscaler.go:67 unschedulablePodTimeBuffer = 2 * time.Second: a scan (every 10 s)
    scales up only for pods at least 2 s old. A CPU pod created at 7.5 s is 2.5 s old at the 10 s scan and
    gets its node then; one created at 8.5 or 9 s is younger than 2 s then and waits for the 20 s scan. Kills
    the mutant that removes the 2 s wait for non-GPU pods (NEW_POD_BUFFER dropped from _all_new)."""
    model = ClusterModel([_cpu_group()], timings=STARTUP)
    model.add_jobs([job(created, 60, (CPU_POD,))])
    trace = model.run(until=600)
    assert [n.requested for n in trace.nodes] == [requested]


def _prices() -> PriceTable:
    return PriceTable.from_data(
        {
            "date": "2026-01-01",
            "sources": ["test"],
            "gcp": [{"region": "us-central1", "machines": {"m": {"on_demand": 2.0, "spot": 0.5}}, "cluster_per_hour": 0.0}],
        },
        "test",
    )


def test_a_failed_spot_scale_up_costs_nothing() -> None:
    """A spot scale-up the cloud cannot fill gives no VM: nothing is billed for it, however long the
    autoscaler waited. Spot always short (early abort, the failure reported 45 s after the request), one GPU
    pod of 3600 s: the bill is the on-demand node's hours (from its request to its removal) at $2.00 and
    not a cent for the 45 s of the failed spot request at $0.50. Kills the mutant that bills failed nodes
    (``if node.failed: continue`` removed from cost_of)."""
    t = Timings(**{**STARTUP.__dict__, "spot_shortage": 1.0, "early_abort": True})
    groups = [group("spot", spot=True, priority=2, image_streaming=True), group("od", priority=1, image_streaming=True)]
    model = ClusterModel(groups, timings=t)
    model.add_jobs([job(0.0, 3600)])
    trace = model.run(until=3 * 3600)
    failed = [n for n in trace.nodes if n.failed]
    paid = [n for n in trace.nodes if not n.failed]
    assert len(failed) == 1 and failed[0].removed is not None and failed[0].removed - failed[0].requested == 45.0
    hours = sum(((n.removed if n.removed is not None else trace.horizon) - n.requested) / 3600 for n in paid)
    cost = cost_of(trace, SimpleNamespace(cloud="gcp", region="us-central1", groups=groups), _prices(), 1.0)  # type: ignore[arg-type]
    assert [(line.capacity, line.node_hours) for line in cost.lines] == [("on-demand", pytest.approx(hours))]
    assert cost.total_usd == pytest.approx(2.0 * hours)
    assert cost.spot_share == 0.0


def _outcome(label: str, usd: float, workloads: int, utilisation: float) -> Outcome:
    """A day-long run costing ``usd`` that finished ``workloads`` passes of a one-gang workload, p90 30 s."""
    cost = Cost("USD", "2026-01-01", "us-central1", 24.0, [], 0.0, usd, usd, 0.0, 0.0, 0.0)
    report = SimpleNamespace(pending_by_pod={"p": 30.0}, utilisation_percent=utilisation)
    trace = SimpleNamespace(gangs_done=workloads)
    return Outcome(label, {}, report, cost, trace, gangs_per_workload=1)  # type: ignore[arg-type]


def test_a_sweep_ranks_by_cost_per_workload_where_cost_per_day_ranks_the_other_way() -> None:
    """Two configurations meeting the target over a day: "fast" costs $100 a day and finishes 4 workloads
    ($25 each); "slow" costs $60 a day and finishes 1 ($60). Per day "slow" is cheaper, per workload "fast"
    is, and the work is what a user pays for; "slow" keeps its GPUs busier, which only breaks ties of cost.
    Kills the mutant that ranks by cost per day (cost_key returning usd_per_day first) and one that ranks by
    utilisation before cost."""
    fast, slow = _outcome("fast", 100.0, 4, 40.0), _outcome("slow", 60.0, 1, 90.0)
    assert (fast.usd_per_workload, slow.usd_per_workload) == (25.0, 60.0)
    assert (fast.cost.usd_per_day, slow.cost.usd_per_day) == (100.0, 60.0)
    assert cheapest_meeting([slow, fast], target_p90=60) is fast
    assert sorted([slow, fast], key=cost_key) == [fast, slow]
