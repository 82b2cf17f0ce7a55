"""The cluster model of `gpu-platform simulate` (infra/simulate/model.py), checked against queueing
theory and the autoscaler's documented behaviour: failover, scale-down, binding, quotas, preemption."""

from __future__ import annotations

import math
import random
import re
import statistics

import pytest

from gpu_platform.infra.simulate.distributions import Dist, fixed
from gpu_platform.infra.simulate.inputs import Binding, Job, NodeGroup, PodSpec, Resources, Stage, Timings, Trace
from gpu_platform.infra.simulate.model import ClusterModel

ONE_GPU = PodSpec("worker", Resources(gpus=1))


def group(name: str = "gpu", gpus: int = 1, lo: int = 0, hi: int = 4, **kw: object) -> NodeGroup:
    return NodeGroup(
        name=name,
        pool=kw.pop("pool", name),
        role="gpu",
        machine_type="m",
        allocatable=Resources(4000, 16000, gpus),  # type: ignore[arg-type]
        gpus_per_node=gpus,
        min_nodes=lo,
        max_nodes=hi,
        **kw,
    )  # type: ignore[arg-type]


def job(at: float, work: float, pods: tuple[PodSpec, ...] = (ONE_GPU,), namespace: str = "default", name: str = "j") -> Job:
    return Job(at, namespace, name, (Stage.of(pods, work),))


def erlang_c_mean_wait(servers: int, arrival_rate: float, service_rate: float) -> float:
    """Mean wait in queue of an M/M/c queue (Erlang C)."""
    load = arrival_rate / service_rate
    rho = load / servers
    below = sum(load**k / math.factorial(k) for k in range(servers))
    top = load**servers / math.factorial(servers) / (1 - rho)
    return top / (below + top) / (servers * service_rate - arrival_rate)


def erlang_c_waits(servers: int, rho: float, seed: int, arrivals: int = 5_000) -> tuple[list[float], float, float]:
    """The waits of ``arrivals`` one-GPU pods arriving as a Poisson process, exponential run times (mean
    60 s), on a pool of ``servers`` one-GPU nodes that never scales, pods starting the instant they bind
    (an M/M/c queue); with the queue's Erlang C probability of waiting and its rate theta = c mu - lambda."""
    mu = 1 / 60
    lam = rho * servers * mu
    rng = random.Random(seed)
    t, jobs = 0.0, []
    for i in range(arrivals):
        t += rng.expovariate(lam)
        jobs.append(job(t, rng.expovariate(mu), name=f"j{i}"))
    model = ClusterModel([group(lo=servers, hi=servers)], timings=Timings(pod_start=fixed(0)), autoscale=False, seed=7)
    model.add_jobs(jobs)
    trace = model.run(until=t + 10 * 3600)
    waits = [p.running - p.created for p in trace.pods]  # type: ignore[operator]
    assert len(waits) == arrivals
    theta = servers * mu - lam
    return waits, erlang_c_mean_wait(servers, lam, mu) * theta, theta


ERLANG_SEEDS = (0, 1, 2, 3)
"""Four independent runs of 5,000 arrivals, pooled. tests/benchmarks/erlang_c_seeds.py runs the check on 16 other
pools: a FIFO queue passes on each, a LIFO queue fails on each."""


def test_a_fixed_pool_with_poisson_arrivals_waits_as_erlang_c() -> None:
    """M/M/2 at 60% load. A FIFO queue's wait is 0 with probability 1 - C (Erlang C) and otherwise
    exponential with rate theta = c mu - lambda, so P(W > t) = C exp(-theta t). The order of the queue does
    not change P(W > 0) nor, much, the mean, so the check also compares the shape of the wait: P(W > 1/theta
    | W > 0) is exp(-1) for FIFO and about 0.66 exp(-1) for LIFO (a waiting pod there waits a busy period),
    and LIFO's tail at 4/theta is 2-4x FIFO's. Pooled over 20,000 arrivals, the FIFO figures stay within
    the tolerances below on every pool tried (see ERLANG_SEEDS); the busy periods correlate the waits, so
    a 20,000-arrival mean is only good to about 15%."""
    waits: list[float] = []
    for seed in ERLANG_SEEDS:
        w, c, theta = erlang_c_waits(2, 0.6, seed)
        waits += w
    assert erlang_c_misfits(waits, c, theta) == []


def erlang_c_misfits(waits: list[float], c: float, theta: float) -> list[str]:
    """What of ``waits`` departs from Erlang C beyond the check's tolerances (see the test above)."""
    n = len(waits)
    waited = [w for w in waits if w > 0]
    checks = [
        ("P(W > 0)", len(waited) / n, c, 0.10),
        ("mean wait", statistics.fmean(waits), c / theta, 0.20),
        ("P(W > 1/theta | W > 0)", sum(w > 1 / theta for w in waited) / max(1, len(waited)), math.exp(-1), 0.12),
    ]
    out = [f"{what} {got:.4g}, Erlang C {want:.4g} (within {rel:.0%})" for what, got, want, rel in checks if abs(got - want) > rel * want]
    tail = sum(w > 4 / theta for w in waits) / n
    if tail >= 1.8 * c * math.exp(-4):
        out.append(f"P(W > 4/theta) {tail:.4g}, at least 1.8x Erlang C's {c * math.exp(-4):.4g}")
    return out


STARTUP = Timings(provision=fixed(60), gpu_ready=fixed(120), pod_start=fixed(0), image_pull_streaming=fixed(0), failure_report=fixed(45))


@pytest.mark.parametrize(("early_abort", "gives_up_after"), [(False, 900.0), (True, 45.0)])
def test_with_spot_always_short_a_pod_waits_for_its_on_demand_node(early_abort: bool, gives_up_after: float) -> None:
    """Spot capacity is never there: without early abort the autoscaler gives up on the spot group
    after max_node_provision_time, with it when the cloud reports the failure; the next scan grows the
    on-demand twin, whose node takes the usual start-up."""
    t = Timings(**{**STARTUP.__dict__, "early_abort": early_abort, "spot_shortage": 1.0, "max_node_provision": 900.0})
    groups = [group("t4-spot", spot=True, priority=2, image_streaming=True), group("t4-on-demand", priority=1, image_streaming=True)]
    model = ClusterModel(groups, timings=t)
    model.add_jobs([job(1.0, 60)])
    trace = model.run(until=3600)
    (pod,) = trace.pods
    (fallback,) = trace.fallbacks
    assert fallback.gave_up - fallback.requested == gives_up_after
    # The spot scale-up happens at the first scan once the GPU pod is 30 s old (40 s: the autoscaler waits a
    # loop for more pods, static_autoscaler.go:71); the on-demand one at the first scan after the give-up.
    assert fallback.requested == 40.0
    assert gives_up_after <= fallback.seconds <= gives_up_after + t.scan_interval  # type: ignore[operator]
    startup = 60 + 120
    assert pod.running - pod.created == pytest.approx(fallback.next_scale_up + startup - 1.0)  # type: ignore[operator]
    assert [n.group.name for n in trace.nodes] == ["t4-spot", "t4-on-demand"]


@pytest.mark.parametrize(("unneeded", "delay", "removed"), [(300.0, 600.0, 630.0), (600.0, 120.0, 840.0)])
def test_an_empty_node_leaves_after_the_unneeded_time_not_before_the_delay_after_add(unneeded: float, delay: float, removed: float) -> None:
    """The autoscaler tracks unneeded nodes through the cooldown after a scale-up and removes none in it:
    a node goes at the later of its unneeded time and the cooldown's end."""
    t = Timings(**{**STARTUP.__dict__, "scale_down_unneeded": unneeded, "scale_down_delay_after_add": delay})
    model = ClusterModel([group(image_streaming=True)], timings=t)
    model.add_jobs([job(0.0, 30)])
    trace = model.run(until=3600)
    (node,) = trace.nodes
    # Scale-up at 30 s (the pod is 30 s old), GPUs at 210 s, the pod ends at 240 s and the scan then sees the
    # node unneeded; the cooldown ends at 30 s + delay.
    assert node.requested == 30.0 and node.gpu_ready == 210.0
    assert node.removed == removed


def test_a_group_keeps_its_minimum_per_zone() -> None:
    t = Timings(**{**STARTUP.__dict__, "scale_down_unneeded": 60.0, "scale_down_delay_after_add": 0.0})
    g = group(lo=1, hi=3, zones=("a", "b"), per_zone=True, image_streaming=True)
    model = ClusterModel([g], timings=t)
    model.add_jobs([job(0.0, 600, (ONE_GPU,) * 5)])
    trace = model.run(until=4 * 3600)
    assert len(trace.nodes) == 5  # 2 at the minimum, 3 added
    assert sorted(n.zone for n in trace.nodes) == ["a", "a", "a", "b", "b"] or sorted(n.zone for n in trace.nodes) == ["a", "a", "b", "b", "b"]
    left = [n for n in trace.nodes if n.removed is None]
    assert sorted(n.zone for n in left) == ["a", "b"]


def test_a_group_never_grows_past_its_maximum() -> None:
    model = ClusterModel([group(hi=3, image_streaming=True)], timings=STARTUP)
    model.add_jobs([job(0.0, 600, (ONE_GPU,) * 5)])
    trace = model.run(until=1200)
    assert len(trace.nodes) == 3
    # Three pods run, two wait for ever: the stage's work never starts.
    assert sorted(p.running is None for p in trace.pods) == [False] * 3 + [True] * 2
    assert trace.jobs_done == 0


@pytest.mark.parametrize(("binding", "emptied"), [(Binding.MOST_ALLOCATED, 1), (Binding.LEAST_ALLOCATED, 0)])
def test_binding_decides_what_can_scale_down(binding: Binding, emptied: int) -> None:
    """Two 2-GPU nodes, two long one-GPU pods arriving one after the other: bin packing puts both on one
    node and the other empties; spreading keeps both nodes busy."""
    t = Timings(**{**STARTUP.__dict__, "scale_down_unneeded": 60.0, "scale_down_delay_after_add": 0.0})
    model = ClusterModel([group(gpus=2, lo=0, hi=2)], timings=t, binding=binding, autoscale=True)
    model.nodes.clear()
    # Two ready nodes at the start: bring them in through the minimum of a second model would hide the order.
    for _ in range(2):
        node = model._new_node(model.groups[0], None)
        node.record.joined = node.record.gpu_ready = 0.0
        node.image_at = 0.0
        model.nodes.append(node)
    model.add_jobs([job(1.0, 3000, name="a"), job(2.0, 3000, name="b")])
    trace = model.run(until=1800)
    assert sum(1 for n in trace.nodes if n.removed is not None) == emptied


def test_a_stage_beyond_its_tenants_quota_is_refused_at_admission() -> None:
    model = ClusterModel([group(gpus=2, lo=2, hi=2)], timings=STARTUP, quotas={"team-a": 3})
    three = (ONE_GPU,) * 3
    model.add_jobs(
        [
            job(0.0, 600, three, "team-a", "first"),
            job(5.0, 600, three, "team-a", "second"),
            job(6.0, 600, three, "team-b", "other"),
            job(700.0, 60, three, "team-a", "later"),
        ]
    )
    trace = model.run(until=3600)
    assert (trace.refused_gangs, trace.refused_jobs, trace.refused_pods) == (1, 1, 3)
    assert {p.name.split("-")[0] for p in trace.pods} == {"first", "other", "later"}
    assert trace.jobs_done == 3


def test_a_preempted_spot_node_s_pods_are_recreated_and_the_work_finishes() -> None:
    t = Timings(**{**STARTUP.__dict__, "preemption_per_node_hour": 6.0, "preemption_notice": 30.0})
    model = ClusterModel([group(spot=True, hi=8, image_streaming=True)], timings=t, seed=3)
    model.add_jobs([job(0.0, 3600, (ONE_GPU,) * 2)])
    trace = model.run(until=6 * 3600)
    assert trace.preemptions >= 1
    lost = [p for p in trace.pods if p.lost]
    assert lost and len(trace.pods) == 2 + len(lost)
    assert trace.jobs_done == 1


def test_the_same_seed_gives_the_same_run() -> None:
    def once(seed: int) -> list[float]:
        t = Timings(provision=Dist("uniform", 60, 120), gpu_ready=Dist("uniform", 180, 240))
        model = ClusterModel([group(hi=10)], timings=t, seed=seed)
        rng = random.Random(1)
        model.add_jobs([job(rng.uniform(0, 3000), rng.uniform(60, 600), name=f"j{i}") for i in range(60)])
        return [p.running for p in model.run(until=7200).pods]  # type: ignore[misc]

    assert once(5) == once(5)
    assert once(5) != once(6)


@pytest.mark.parametrize(
    ("text", "expected", "mean"),
    [
        ("90s", Dist("fixed", 90), 90),
        ("2m", Dist("fixed", 120), 120),
        (45, Dist("fixed", 45), 45),
        ("uniform(1m, 2m)", Dist("uniform", 60, 120), 90),
        ("exponential(30s)", Dist("exponential", 30), 30),
        ("normal(200s, 20s)", Dist("normal", 200, 20), 200),
        ("lognormal(150s, 0.3)", Dist("lognormal", 150, 0.3), 150 * math.exp(0.045)),
    ],
)
def test_distributions_parse_and_print_back(text: object, expected: Dist, mean: float) -> None:
    dist = Dist.parse(text)
    assert dist == expected
    assert dist.mean == pytest.approx(mean)
    assert Dist.parse(str(dist)) == dist


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("soon", "a duration is seconds"),
        ("uniform(2m, 1m)", "needs a <= b"),
        ("uniform(1m)", "takes 2 arguments"),
        ("exponential(0s)", "mean > 0"),
        ("lognormal(0s, 1)", "median > 0"),
        ("-5", "a duration is seconds"),
    ],
)
def test_bad_distributions_say_what_is_allowed(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Dist.parse(text)


def test_pods_bind_oldest_first_across_kinds() -> None:
    """The scheduler's queue is one queue: an older worker binds before a younger scheduler."""
    scheduler = PodSpec("scheduler", Resources(gpus=1))
    model = ClusterModel([group(gpus=1, lo=1, hi=1)], timings=STARTUP, autoscale=False)
    model.add_jobs([job(0.0, 100, name="holder"), job(1.0, 50, (ONE_GPU,), name="older"), job(2.0, 50, (scheduler,), name="younger")])
    trace = model.run(until=1000)
    running = {p.name.split("-")[0]: p.running for p in trace.pods}
    assert running["older"] < running["younger"]


def _backoff_race() -> dict[str, float]:
    """One 1-GPU node held until 30 s; an "older" GPU pod from 1 s fails at every pod end of a CPU pod stream
    (5, 10, ..., 25 and 29.5 s: 7 failures, a 10 s back-off), a "newer" one from 28 s fails twice: when the GPU
    node frees at 30 s both are backing off, the newer until 31 s, the older until 39 s. When each was bound."""
    cpu = PodSpec("cpu", Resources(cpu=100, memory=100))
    model = ClusterModel([group(gpus=1, lo=1, hi=1), group("cpu", gpus=0, lo=1, hi=1)], timings=STARTUP, autoscale=False)
    stream = [job(0.0, end, (cpu,), name=f"cpu{i}") for i, end in enumerate((5.0, 10.0, 15.0, 20.0, 25.0, 29.5))]
    model.add_jobs([job(0.0, 30.0, name="holder"), *stream, job(1.0, 50, name="older"), job(28.0, 50, name="newer")])
    trace = model.run(until=200)
    return {p.name: p.bound for p in trace.pods if p.name in ("older", "newer")}  # type: ignore[misc]


def test_a_pod_backing_off_longer_loses_the_node_to_a_newer_one() -> None:
    """kube-scheduler's requeue back-off (model._bind): a pod's back-off doubles with each failed attempt, 1 s to
    10 s, and among pods still backing off the one whose back-off ends first is tried first, so the newer pod,
    with 2 failures, takes the node the older one, with 7, waited 29 s for. (Oldest first would bind the older.)"""
    bound = _backoff_race()
    assert bound["newer"] == 30.0
    assert bound["older"] > 30.0


def test_a_taint_keeps_pods_that_do_not_tolerate_it_off_the_pool() -> None:
    training = group("training", hi=4, taints=("gpu-platform.io/workload", "nvidia.com/gpu"), image_streaming=True)
    shared = group("shared", hi=4, taints=("nvidia.com/gpu",), image_streaming=True)
    model = ClusterModel([training, shared], timings=STARTUP)
    model.add_jobs([job(0.0, 60, (ONE_GPU,) * 3)])
    trace = model.run(until=3600)
    assert {n.group.name for n in trace.nodes} == {"shared"}


def test_one_failed_scale_up_is_one_back_off_step() -> None:
    t = Timings(**{**STARTUP.__dict__, "spot_shortage": 1.0, "early_abort": True})
    model = ClusterModel([group("spot", spot=True, priority=2, hi=8), group("od", priority=1, hi=8)], timings=t)
    model.add_jobs([job(0.0, 60, (ONE_GPU,) * 5)])
    trace = model.run(until=120)
    assert model.failures["spot"] == 1 and len(trace.fallbacks) == 1
    assert model.backoff_until["spot"] == pytest.approx(trace.fallbacks[0].gave_up + t.initial_backoff)
    failed = [n for n in trace.nodes if n.failed]
    assert len(failed) == 5 and len({n.removed for n in failed}) == 1


def test_a_workload_no_node_can_take_stalls_and_stops() -> None:
    big = PodSpec("worker", Resources(gpus=1))
    model = ClusterModel([group(hi=2, image_streaming=True)], timings=STARTUP)
    model.add_jobs([job(0.0, 60, (big,) * 3)])  # a gang of three on at most two one-GPU nodes
    trace = model.run(None, tail=0.0, limit=86_400.0)
    assert trace.stalled_at is not None and trace.stalled_pods == 1
    assert trace.horizon < 3600


# --- a stall names its pods and why none can be placed (issue 25) --------------------------------


def _stall(groups: list[NodeGroup], pods: tuple[PodSpec, ...], namespace: str = "team-a", name: str = "train") -> Trace:
    model = ClusterModel(groups, timings=STARTUP)
    model.add_jobs([job(0.0, 60, pods, namespace=namespace, name=name)])
    trace = model.run(None, tail=0.0, limit=86_400.0)
    assert trace.stalled_at is not None
    return trace


def test_a_stall_on_pods_larger_than_any_node_names_them_and_the_largest_node() -> None:
    """As a replay of 2-GPU pods on a stack of 1-GPU nodes."""
    two = PodSpec("worker", Resources(gpus=2))
    trace = _stall([group("t4", gpus=1)], (two, two))
    (cause,) = trace.stall_causes
    assert cause.startswith("2 pods (team-a/train-")
    assert "asking for 2 GPUs" in cause and "the largest node offers 1 GPU (t4: m)" in cause
    assert cause.endswith("ask for less or give a pool a larger machine type")


def test_a_stall_on_cpu_names_the_cpu_the_largest_node_offers() -> None:
    big = PodSpec("worker", Resources(cpu=64000, gpus=1))
    (cause,) = _stall([group("small"), group("other")], (big,)).stall_causes
    assert "asking for 1 GPU, 64 CPU" in cause and "the largest node offers 4 CPU (small: m)" in cause
    assert "GPU (" not in cause.split(";")[1], "the GPUs were not short"


def test_a_stall_on_taints_names_the_taint() -> None:
    tainted = group("training", taints=("gpu-platform.io/workload", "nvidia.com/gpu"))
    (cause,) = _stall([tainted], (ONE_GPU,)).stall_causes
    assert "every pool they may use (training) carries a taint they do not tolerate (gpu-platform.io/workload)" in cause
    assert cause.endswith("add the toleration or a pool without the taint")


def test_a_stall_on_a_missing_pool_names_the_pools_there_are() -> None:
    pinned = PodSpec("worker", Resources(gpus=1), pools=("a100",))
    (cause,) = _stall([group("t4")], (pinned,)).stall_causes
    assert "on pools a100; the stack has no such pool (pools: t4 (gpu))" in cause


def test_a_stall_at_the_pool_maximum_names_the_maximum() -> None:
    # a gang of three one-GPU pods on at most two one-GPU nodes
    trace = _stall([group("t4", hi=2, image_streaming=True)], (ONE_GPU,) * 3)
    (cause,) = trace.stall_causes
    assert cause.startswith("1 pod (team-a/train-")
    assert "the pools that fit them are at their maximum (t4: 2 nodes of m, 1 such pod a node)" in cause
    assert cause.endswith("raise the pool's max_nodes or make the gang smaller")


def test_each_kind_of_stuck_pod_is_its_own_cause() -> None:
    two = PodSpec("worker", Resources(gpus=2))
    pinned = PodSpec("scheduler", Resources(gpus=1), pools=("none",))
    causes = _stall([group("t4")], (two, pinned)).stall_causes
    assert len(causes) == 2 and "2 GPUs" in causes[0] and "no such pool" in causes[1]


# --- the autoscaler as upstream behaves (cluster-autoscaler 1.34; issue 29) --------------------------

FAST = Timings(**{**STARTUP.__dict__, "scale_down_unneeded": 60.0, "scale_down_delay_after_add": 0.0})


def shaped(name: str, cpu: int, memory: int, gpus: int = 1, **kw: object) -> NodeGroup:
    return NodeGroup(
        name=name,
        pool=name,
        role="gpu",
        machine_type=name,
        allocatable=Resources(cpu, memory, gpus),
        gpus_per_node=gpus,
        max_nodes=4,
        image_streaming=True,
        **kw,
    )  # type: ignore[arg-type]


def grown(groups: list[NodeGroup], pods: tuple[PodSpec, ...], seed: int = 0) -> list[str]:
    """The groups the autoscaler grew for one gang of ``pods`` arriving at 0, in order."""
    model = ClusterModel(groups, timings=STARTUP, seed=seed)
    model.add_jobs([job(0.0, 60, pods)])
    return [n.group.name for n in model.run(until=600).nodes]


POD = PodSpec("worker", Resources(cpu=3000, memory=12_000, gpus=1))


def test_the_highest_priority_group_grows_even_when_another_wastes_less() -> None:
    """The priority expander comes first: a group of priority 2 whose nodes would idle most of their CPU
    and memory is grown before a priority-1 group the pod fits exactly."""
    roomy = shaped("roomy", 32_000, 128_000, priority=2)
    snug = shaped("snug", 3_000, 12_000, priority=1)
    assert set(grown([snug, roomy], (POD,))) == {"roomy"}


@pytest.mark.parametrize("seed", range(8))
def test_least_waste_picks_the_group_that_idles_the_least_cpu_and_memory(seed: int) -> None:
    """Equal priorities: least-waste scores the idle CPU share plus the idle memory share of the new nodes
    (GPUs are not scored), whatever the groups' names or the random draw."""
    roomy = shaped("a-roomy", 32_000, 128_000)
    snug = shaped("b-snug", 4_000, 16_000)
    assert set(grown([roomy, snug], (POD,), seed)) == {"b-snug"}


def test_ties_left_after_the_expanders_are_broken_at_random() -> None:
    """Two groups of one shape and priority: each seed picks one at random, not the first name."""
    picks = {grown([shaped("a", 4_000, 16_000), shaped("b", 4_000, 16_000)], (POD,), seed)[0] for seed in range(12)}
    assert picks == {"a", "b"}


def _spot_retries(**timings: float) -> tuple[list[float], ClusterModel]:
    """Spot always short, early abort after 45 s, no other group: the pauses between a give-up and the
    next scale-up of the same group."""
    t = Timings(**{**STARTUP.__dict__, "spot_shortage": 1.0, "early_abort": True, **timings})
    model = ClusterModel([group("spot", spot=True, hi=4)], timings=t)
    model.add_jobs([job(0.0, 60)])
    trace = model.run(until=4 * 3600)
    f = trace.fallbacks
    return [b.requested - a.gave_up for a, b in zip(f, f[1:], strict=False)], model


def test_backoff_doubles_after_each_failure_up_to_the_maximum() -> None:
    """exponential_backoff.go:69-93: 5m, then doubled at each failure that finds the group no longer
    backed off, to the 30m maximum; a success does not reset it (nothing here succeeds)."""
    pauses, model = _spot_retries()
    expected = [300, 600, 1200, 1800, 1800]
    assert len(pauses) >= len(expected)
    for pause, backoff in zip(pauses, expected, strict=False):
        # the next scan after the back-off ends
        assert backoff <= pause < backoff + 10
    assert model.backoff_duration["spot"] == 1800


def test_backoff_is_forgotten_after_the_reset_timeout() -> None:
    """With a reset timeout shorter than the back-off, each failure starts again from the initial back-off."""
    pauses, _ = _spot_retries(backoff_reset=200.0)
    assert len(pauses) >= 5 and all(300 <= p < 310 for p in pauses)


def test_max_node_provision_time_counts_from_the_group_s_newest_scale_up() -> None:
    """clusterstate.go:220-257: growing a group again while its scale-up hangs moves the request's
    deadline; both hanging scale-ups give up then, and count as one back-off step (the second failure finds
    the group backed off: concurrent failures do not compound)."""
    t = Timings(**{**STARTUP.__dict__, "spot_shortage": 1.0, "early_abort": False, "max_node_provision": 900.0})
    model = ClusterModel([group("spot", spot=True, hi=4)], timings=t)
    model.add_jobs([job(0.0, 60, name="first"), job(300.0, 60, name="second")])
    trace = model.run(until=1500)
    first, second = trace.fallbacks
    assert (first.requested, second.requested) == (30.0, 330.0)
    assert first.gave_up == second.gave_up == 330.0 + 900.0
    assert model.backoff_duration["spot"] == 300


def test_no_scale_up_until_the_oldest_gpu_pod_is_30_s_old() -> None:
    """static_autoscaler.go:71 and :1047-1053: the autoscaler waits a loop for more GPU pods; pods arriving
    at 0, 12 and 25 s share one scale-up at 30 s."""
    model = ClusterModel([group(gpus=4, hi=4, image_streaming=True)], timings=STARTUP)
    model.add_jobs([job(0.0, 60, name="a"), job(12.0, 60, name="b"), job(25.0, 60, name="c")])
    trace = model.run(until=600)
    assert [n.requested for n in trace.nodes] == [30.0]


@pytest.mark.parametrize(("gpu_threshold", "removed"), [(0.5, 570.0), (0.2, 370.0)])
def test_a_node_at_or_below_the_threshold_with_pods_it_cannot_move_is_rechecked_after_5_minutes(
    gpu_threshold: float,
    removed: float,
) -> None:
    """A 4-GPU node running one 1-GPU Dask pod is 25% utilised. At or below the GPU threshold (0.5) it is
    a candidate whose pod cannot move (a custom controller's): unremovable, not checked again for 5 minutes
    (planner.go:290-307), so after the pod ends (310 s) it waits for the recheck (510 s: marked at 210 s) before its unneeded
    time (60 s) starts. Above the threshold (0.2) it is no candidate, checked every loop: unneeded as soon
    as the pod ends. CPU and memory do not count on a GPU node."""
    t = Timings(**{**FAST.__dict__, "scale_down_gpu_utilisation_threshold": gpu_threshold, "scale_down_utilisation_threshold": 0.01})
    model = ClusterModel([group(gpus=4, hi=1, image_streaming=True)], timings=t)
    model.add_jobs([job(0.0, 100, (PodSpec("worker", Resources(cpu=3_900, gpus=1)),))])
    trace = model.run(until=1200)
    (node,) = trace.nodes
    assert (node.requested, node.gpu_ready) == (30.0, 210.0)
    assert node.removed == removed


def test_a_node_without_gpus_is_held_to_the_cpu_and_memory_threshold() -> None:
    cpu_node = NodeGroup(name="cpu", pool="cpu", role="gpu", machine_type="m", allocatable=Resources(4000, 16000, 0), gpus_per_node=0, max_nodes=1)
    model = ClusterModel([cpu_node], timings=Timings(**{**FAST.__dict__, "scale_down_utilisation_threshold": 0.2}))
    node = model._new_node(cpu_node, None)
    node.free = Resources(3000, 16000, 0)  # 25% of its CPU requested
    assert model._utilisation(node) == (0.25, 0.2)


def test_a_loop_that_waits_for_new_gpu_pods_removes_no_node_but_keeps_counting_unneeded_time() -> None:
    """static_autoscaler.go:537-547 and :708-719: while new GPU pods wait for the loop after the next, no
    node is removed, but an empty node's unneeded time still runs: it goes at the first loop that does
    not wait."""
    t = Timings(**{**FAST.__dict__, "scale_down_unneeded": 20.0})
    model = ClusterModel([group(hi=4, image_streaming=True)], timings=t)
    model.nodes.clear()
    node = model._new_node(model.groups[0], None)
    node.record.joined = node.record.gpu_ready = 0.0
    model.nodes.append(node)
    # The pod asks for more than a node has: it stays pending, new, for 30 s, and no node can take it.
    model.add_jobs([job(0.5, 60, (PodSpec("worker", Resources(gpus=2)),))])
    model.run(until=100)
    # Unneeded from the scan at 10 s; 20 s later (30 s) the loop still waits (the pod is 29.5 s old);
    # removed at the next scan, 40 s.
    assert node.record.removed == 40.0
