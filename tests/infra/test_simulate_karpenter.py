"""Karpenter in the simulator (infra/simulate/karpenter.py): every modelled behaviour checked for its amount, the
expected figure from Karpenter 1.14.1's defaults or a closed form over the model's fixed timings. A NodePool
limit of N GPUs is never exceeded and the (N+1)th pod waits; an empty node goes at the first 10 s poll after
consolidateAfter, plus the 15 s validation, and not before; a budget lets ceil(share x nodes) go per command;
pods arriving within the 1 s idle window are one launch, and a window closes 10 s after it opened; spot first,
on-demand 10 s later (the pods' requeue) when spot is short; and a Karpenter stack's NodePools reach the
model as the component renders them."""

from __future__ import annotations

import datetime
import math
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.components.core.labels import GPU_RESOURCE
from gpu_platform.infra.simulate.distributions import fixed
from gpu_platform.infra.simulate.inputs import UNLIMITED, Budget, Job, KarpenterInputs, NodeGroup, NodePoolInputs, PodSpec, Resources, Stage, Timings, Trace
from gpu_platform.infra.simulate.karpenter import COMMAND_VALIDATION_DELAY, POLLING_PERIOD, allowed_disruptions
from gpu_platform.infra.simulate.model import ClusterModel
from gpu_platform.infra.simulate.runs import configurations
from tests.conftest import PROJECT_DIR

ONE_GPU = PodSpec("worker", Resources(gpus=1))
STARTUP = Timings(provision=fixed(60), gpu_ready=fixed(120), pod_start=fixed(0), image_pull_streaming=fixed(0))
"""A node joins 60 s after its NodeClaim and its GPUs are allocatable 120 s later: 180 s in all."""
MONDAY_9 = datetime.datetime(2026, 1, 5, 9, 0, tzinfo=datetime.UTC)


def group(name: str = "gpu", gpus: int = 1, spot: bool = False, hi: int = 100) -> NodeGroup:
    return NodeGroup(
        name=name,
        pool="gpu",
        role="gpu",
        machine_type="m",
        allocatable=Resources(7000, 28000, gpus),
        gpus_per_node=gpus,
        spot=spot,
        max_nodes=hi,
        image_streaming=True,
    )


NO_LIMITS = Resources(UNLIMITED, UNLIMITED, UNLIMITED)


def pool(name: str = "gpu", weight: int = 1, gpus: int = 1, limits: Resources = NO_LIMITS) -> NodePoolInputs:
    return NodePoolInputs(name, weight, capacity=Resources(8000, 32768, gpus), limits=limits)


def karpenter(*pools: NodePoolInputs, **kw: Any) -> KarpenterInputs:
    return KarpenterInputs(pools=pools or (pool(),), start=kw.pop("start", MONDAY_9), **kw)


def job(at: float, work: float, pods: tuple[PodSpec, ...] = (ONE_GPU,), name: str = "j") -> Job:
    return Job(at, "default", name, (Stage.of(pods, work),))


def run(groups: list[NodeGroup], inputs: KarpenterInputs, jobs: list[Job], until: float, timings: Timings = STARTUP) -> tuple[ClusterModel, Trace]:
    model = ClusterModel(groups, timings=timings, karpenter=inputs)
    model.add_jobs(jobs)
    return model, model.run(until=until)


# --- limits --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "nodes"),
    [
        (Resources(UNLIMITED, UNLIMITED, 3), 3),  # nvidia.com/gpu: 3 of 1-GPU nodes
        (Resources(21_000, UNLIMITED, UNLIMITED), 2),  # cpu: "21" of 8-vCPU nodes (capacity: by the 7 allocatable it would be 3)
        (Resources(UNLIMITED, 3 * 32768, UNLIMITED), 3),  # memory: 3 nodes' capacity exactly
    ],
)
def test_a_node_pool_limit_is_never_exceeded_and_the_next_pod_waits(limits: Resources, nodes: int) -> None:
    """Four one-GPU pods of 600 s at once: the NodePool launches floor(limit / capacity) nodes in its one pass,
    and the fourth pod waits for the first to end on its node (bound at 1 s + 180 s + 600 s)."""
    _, trace = run([group()], karpenter(pool(limits=limits)), [job(0.0, 600.0, name=f"j{i}") for i in range(4)], until=3600)
    assert len(trace.nodes) == nodes
    assert all(n.requested == 1.0 for n in trace.nodes)  # one batch, closed 1 s after the pods
    waited = sorted(trace.pods, key=lambda p: p.bound or math.inf)[nodes:]
    assert [p.bound for p in waited] == [781.0] * (4 - nodes)


def test_a_later_pass_counts_the_nodes_already_there_by_their_capacity() -> None:
    """cpu limit "23" of 8-vCPU nodes (7 allocatable): two pods at 0 s take two nodes (16 of 23); a third pod at 100 s,
    in a later pass, finds 7 left, less than a node's 8, and waits (by allocatable it would see 9 and launch)."""
    jobs = [job(0.0, 600.0, name="a"), job(0.0, 600.0, name="b"), job(100.0, 600.0, name="c")]
    _, trace = run([group()], karpenter(pool(limits=Resources(23_000, UNLIMITED, UNLIMITED))), jobs, until=3600)
    assert [n.requested for n in trace.nodes] == [1.0, 1.0]
    assert sorted(p.bound for p in trace.pods) == [181.0, 181.0, 781.0]  # which pod waits is kube-scheduler's queue order


def test_the_gpu_limit_counts_advertised_gpus_of_a_shared_node() -> None:
    """A NodePool of 1-GPU nodes shared 4 ways (the NodeOverlay says 4) limited to 8 nvidia.com/gpu: 2 nodes,
    8 one-GPU pods running, the ninth waiting."""
    shared = NodeGroup("gpu", "gpu", "gpu", "m", Resources(7000, 28000, 4), gpus_per_node=1, max_nodes=2, image_streaming=True)
    _, trace = run([shared], karpenter(pool(gpus=4, limits=Resources(UNLIMITED, UNLIMITED, 8))), [job(0.0, 600.0, name=f"j{i}") for i in range(9)], 700)
    assert len(trace.nodes) == 2
    assert sum(1 for p in trace.pods if p.running is not None) == 8


# --- consolidation -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("after", [0.0, 60.0, 600.0, 3600.0])
def test_an_empty_node_goes_after_consolidate_after_and_not_before(after: float) -> None:
    """The pod runs from 181 s (batch 1 s, node 180 s) to 481 s: its end is the node's last pod event. The node
    is consolidatable at 481 s + consolidateAfter, taken at the next 10 s poll and removed 15 s later."""
    _, trace = run([group()], karpenter(consolidate_after=after), [job(0.0, 300.0)], until=3 * 3600)
    (node,) = trace.nodes
    (pod,) = trace.pods
    assert (pod.running, pod.finished) == (181.0, 481.0)
    expected = POLLING_PERIOD * math.ceil((481.0 + after) / POLLING_PERIOD) + COMMAND_VALIDATION_DELAY
    assert (POLLING_PERIOD, COMMAND_VALIDATION_DELAY) == (10.0, 15.0)
    assert node.removed == expected
    assert node.removed >= 481.0 + after + 15.0


def test_consolidate_after_never_keeps_the_node() -> None:
    _, trace = run([group()], karpenter(consolidate_after=None), [job(0.0, 300.0)], until=6 * 3600)
    (node,) = trace.nodes
    assert node.removed is None


def test_a_pod_event_within_10s_of_the_last_does_not_move_it() -> None:
    """A pod that ends 5 s after it was bound leaves the node's last pod event at the binding (the 10 s dedupe):
    consolidatable 65 s after 181 s (246 s, taken at the 250 s poll), not after 186 s (251 s, the 260 s poll)."""
    _, trace = run([group()], karpenter(consolidate_after=65.0), [job(0.0, 5.0)], until=3600)
    (node,) = trace.nodes
    assert node.removed == POLLING_PERIOD * math.ceil((181.0 + 65.0) / POLLING_PERIOD) + COMMAND_VALIDATION_DELAY == 265.0


@pytest.mark.parametrize(("nodes", "share", "removed"), [("10%", 10, [865.0, 880.0, 895.0]), ("50%", 50, [865.0, 865.0, 880.0]), ("3", None, [865.0] * 3)])
def test_budgets_let_ceil_share_times_nodes_go_per_command(nodes: str, share: int | None, removed: list[float]) -> None:
    """Three nodes empty at 781 s, consolidatable at 841 s, first taken at the 850 s poll: each command removes as
    many as the budget allows of the nodes left (10% of 3, 2 or 1: 1; 50% of 3: 2, then of 1: 1), 15 s after it is
    decided, and the controller decides the next at once."""
    inputs = karpenter(consolidate_after=60.0, budgets=(Budget(nodes),))
    _, trace = run([group()], inputs, [job(0.0, 600.0, name=f"j{i}") for i in range(3)], until=3600)
    assert sorted(n.removed for n in trace.nodes) == removed
    if share is not None:
        assert [allowed_disruptions((Budget(nodes),), n, "Empty", MONDAY_9) for n in (3, 2, 1)] == [math.ceil(share * n / 100) for n in (3, 2, 1)]


def test_a_scheduled_zero_budget_blocks_empty_nodes_until_it_ends() -> None:
    """prod-eks's working-hours budget, shortened: nodes "0" from 08:00 on weekdays for 2h, the run starting Monday
    09:00. The empty nodes (consolidatable at 841 s) stay until 10:00 (3600 s), then all go at the 3600 s poll, 15 s
    later; the budget names reason Empty, so a Drifted budget would not block them."""
    blocking = Budget("0", schedule="0 8 * * mon-fri", duration=7200.0, reasons=("Empty",))
    _, trace = run([group()], karpenter(consolidate_after=60.0, budgets=(blocking,)), [job(0.0, 600.0, name=f"j{i}") for i in range(3)], until=7200)
    assert [n.removed for n in trace.nodes] == [3615.0] * 3
    drifted = Budget("0", schedule="0 8 * * mon-fri", duration=7200.0, reasons=("Drifted",))
    _, trace = run([group()], karpenter(consolidate_after=60.0, budgets=(drifted,)), [job(0.0, 600.0, name=f"j{i}") for i in range(3)], until=7200)
    assert [n.removed for n in trace.nodes] == [865.0] * 3
    # On a Sunday the weekday schedule never fires.
    sunday = MONDAY_9 - datetime.timedelta(days=1)
    _, trace = run([group()], karpenter(consolidate_after=60.0, budgets=(blocking,), start=sunday), [job(0.0, 600.0, name=f"j{i}") for i in range(3)], 7200)
    assert [n.removed for n in trace.nodes] == [865.0] * 3


# --- batching ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arrivals", "launches"),
    [
        ([0.0, 0.5, 1.2, 1.9], [(2.9, "gpu", 4)]),  # each within 1 s of the last: one window, closed 1 s after the last
        ([0.0, 1.5], [(1.0, "gpu", 1), (2.5, "gpu", 1)]),  # 1.5 s apart: two windows
        ([0.8 * i for i in range(20)], [(10.0, "gpu", 13), (20.4, "gpu", 7)]),  # a window closes 10 s after it opened
    ],
)
def test_pods_arriving_within_the_idle_window_are_one_launch(arrivals: list[float], launches: list[tuple[float, str, int]]) -> None:
    """Karpenter's defaults: --batch-idle-duration 1 s, --batch-max-duration 10 s. The third case: pods every 0.8 s
    from 0 s; the first window closes at 10 s with the 13 pods of 0-9.6 s. The next opens at 10.4 s (the pod of
    0 s requeueing at 10 s is in the closing window) and never idles for 1 s: new pods come every 0.8 s to 15.2 s,
    then the first window's pods requeue every 0.8 s (10.8 s, 11.6 s, ...), still pending on coming nodes. So it
    closes at its maximum, 20.4 s, with the 7 new pods."""
    model, _ = run([group()], karpenter(), [job(at, 600.0, name=f"j{i}") for i, at in enumerate(arrivals)], until=60)
    assert [(round(t, 6), name, n) for t, name, n in model.karpenter.launches] == launches


def test_batch_settings_come_from_the_model() -> None:
    model, _ = run([group()], karpenter(batch_idle=3.0, batch_max=5.0), [job(at, 600.0, name=f"j{i}") for i, at in enumerate([0.0, 2.0, 4.5])], 60)
    assert model.karpenter.launches == [(5.0, "gpu", 3)]


# --- spot first, then on-demand ------------------------------------------------------------------------------


def test_spot_is_launched_first_by_weight() -> None:
    groups = [group("gpu-on-demand"), group("gpu-spot", spot=True)]
    _, trace = run(groups, karpenter(pool("gpu-spot", 2), pool("gpu-on-demand", 1)), [job(0.0, 60.0)], 600)
    assert [n.group.name for n in trace.nodes] == ["gpu-spot"]


def test_with_spot_always_short_the_on_demand_pool_launches_at_the_pods_next_trigger() -> None:
    """The spot launch at 1 s fails at once (EC2 Fleet's error); the pod's requeue at 10 s opens a window closing at
    11 s, which passes the spot NodePool over (its offerings unavailable for 3 minutes): on-demand at 11 s, the pod
    running 180 s later."""
    t = Timings(**{**STARTUP.__dict__, "spot_shortage": 1.0})
    groups = [group("gpu-spot", spot=True), group("gpu-on-demand")]
    _, trace = run(groups, karpenter(pool("gpu-spot", 2), pool("gpu-on-demand", 1)), [job(0.0, 60.0)], 600, timings=t)
    (fallback,) = trace.fallbacks
    assert (fallback.requested, fallback.next_scale_up, fallback.seconds) == (1.0, 11.0, 10.0)
    assert [(n.group.name, n.requested, n.failed) for n in trace.nodes] == [("gpu-spot", 1.0, True), ("gpu-on-demand", 11.0, False)]
    (pod,) = trace.pods
    assert pod.running == 191.0


def test_a_spot_pool_at_its_limit_passes_the_rest_to_on_demand_in_the_same_pass() -> None:
    groups = [group("gpu-spot", spot=True), group("gpu-on-demand")]
    pools = (pool("gpu-spot", 2, limits=Resources(UNLIMITED, UNLIMITED, 2)), pool("gpu-on-demand", 1))
    _, trace = run(groups, karpenter(*pools), [job(0.0, 600.0, name=f"j{i}") for i in range(3)], 600)
    assert sorted((n.group.name, n.requested) for n in trace.nodes) == [("gpu-on-demand", 1.0), ("gpu-spot", 1.0), ("gpu-spot", 1.0)]


# --- the stack's NodePools reach the model as rendered -------------------------------------------------------


def _prod_eks(*sets: tuple[str, Any]) -> Any:
    (config,) = configurations(PROJECT_DIR, "prod-eks", list(sets), [], 1)
    return config


def test_prod_eks_node_pools_reach_the_model_as_the_component_renders_them() -> None:
    """prod-eks: small (p3.2xlarge, 1 V100, 8 vCPUs) 20 spot then 10 on-demand; large (p3.8xlarge, 4 V100, 32 vCPUs)
    10 then 5; scheduler (g4dn.xlarge, 1 T4, 4 vCPUs) 4 on-demand. Weights: the scheduler class first, then small,
    then large, spot above on-demand. WhenEmpty after 10m; budgets 10% and 0 in working hours for Empty."""
    config = _prod_eks()
    k = config.inputs.karpenter
    assert k is not None
    got = {p.name: (p.weight, p.limits.gpus, p.limits.cpu // 1000, p.capacity.gpus) for p in k.pools}
    assert got == {
        "scheduler-on-demand": (5, 4, 16, 1),
        "small-spot": (4, 20, 160, 1),
        "small-on-demand": (3, 10, 80, 1),
        "large-spot": (2, 40, 320, 4),
        "large-on-demand": (1, 20, 160, 4),
    }
    rendered = {p.name: p.limits for p in config.stack.karpenter_plan}
    assert {p.name: str(p.limits.gpus) for p in k.pools} == {n: limits[GPU_RESOURCE] for n, limits in rendered.items()}
    assert k.consolidation_policy == "WhenEmpty" and k.consolidate_after == 600.0
    assert k.budgets == (Budget("10%"), Budget("0", "0 8 * * mon-fri", 36000.0, ("Empty",)))
    assert (k.batch_idle, k.batch_max) == (1.0, 10.0)
    groups = {g.name: g for g in config.inputs.groups}
    assert all(groups[p.name].min_nodes == 0 for p in k.pools)
    assert groups["small-spot"].spot and not groups["small-on-demand"].spot


def test_the_disruption_settings_follow_the_stack() -> None:
    config = _prod_eks(("eks_node_groups.karpenter.disruption.consolidate_after", "Never"), ("model.karpenter.batch_idle_duration", "2s"))
    k = config.inputs.karpenter
    assert k.consolidate_after is None and k.batch_idle == 2.0


def test_a_cluster_autoscaler_setting_is_refused_on_a_karpenter_stack_and_the_reverse() -> None:
    from gpu_platform.infra.simulate.settings import SimulationError

    with pytest.raises(SimulationError) as exc:
        _prod_eks(("model.autoscaler.scan_interval", "5s"))
    assert exc.value.lines[0].startswith("model.autoscaler.scan_interval: the stack's GPU nodes are provisioned by Karpenter")
    with pytest.raises(SimulationError) as exc:
        configurations(PROJECT_DIR, "dev-eks", [("model.karpenter.batch_idle_duration", "2s")], [], 1)
    assert exc.value.lines[0].startswith("model.karpenter.batch_idle_duration: applies to Karpenter stacks")


def test_prod_eks_simulates_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Kubeflow pipeline workload on prod-eks's small class through the command: 12 runs of two one-GPU steps,
    every node launched by Karpenter on small-spot (spot is never short by default). Starting Monday 09:00 the
    working-hours budget ("0" for Empty from 08:00 for 10h) keeps every emptied node to the end; starting 19:00
    the nodes go 10m after they empty, so fewer GPU-hours are paid for the same work."""
    import json

    from gpu_platform.infra.cli import main

    inputs = tmp_path / "kfp.yaml"
    inputs.write_text(
        "steps: [{name: train, cpu: '1', memory: 4Gi, gpus: 1}, {name: eval, cpu: '1', memory: 2Gi, gpus: 1}]\nrun_duration: 20m\nruns: 12\nwindow: 1h\n"
    )
    paid = {}
    for start in ("2026-01-05T09:00:00Z", "2026-01-05T19:00:00Z"):
        out = tmp_path / f"{start[11:13]}.json"
        argv = ["simulate", "prod-eks", "--workload", "kfp", "--inputs", str(inputs), "--pool", "small", "--json", str(out)]
        code = main([*argv, "--set", f"model.karpenter.start={start}"])
        assert code == 0, capsys.readouterr().err
        document = json.loads(out.read_text())
        assert document["admission"]["jobs_done"] == 12 and document["pods_created"] == 24
        assert {line["machine_type"] for line in document["cost"]["lines"] if "p3" in line["machine_type"]} == {"p3.2xlarge"}
        assert document["cost"]["spot_share"] == 1.0
        karpenter = document["simulation"]["karpenter"]
        small_spot = next(p for p in karpenter["node_pools"] if p["name"] == "small-spot")
        assert small_spot == {
            "name": "small-spot",
            "weight": 4,
            "capacity": {"cpu": 8000, "memory": 62464, "gpus": 1},
            "limits": {"cpu": 160_000, "memory": 20 * 62464, "gpus": 20},
        }
        assert (karpenter["consolidate_after_s"], karpenter["start"]) == (600.0, start)
        paid[start[11:13]] = document["cost"]["gpu_hours_paid"]
    assert paid["19"] < paid["09"]


def test_budget_schedules_read_as_robfig_cron_reads_them() -> None:
    """Active for ``duration`` after each firing, the firing itself included and its end excluded (nodepool.go
    Budget.IsActive); day of month and day of week both restricted fire on either, one a star on both."""
    from gpu_platform.components.core.durations import cron_active, cron_matches

    at = MONDAY_9.replace(hour=8)
    assert [cron_active("0 8 * * mon-fri", 36000, at + datetime.timedelta(seconds=s)) for s in (-1, 0, 35999, 36000)] == [False, True, True, False]
    thursday_1st = datetime.datetime(2026, 1, 1, 0, 0, tzinfo=datetime.UTC)
    assert cron_matches("0 0 1 * mon", thursday_1st) and cron_matches("0 0 1 * mon", MONDAY_9.replace(hour=0))
    assert not cron_matches("0 0 1 * *", MONDAY_9.replace(hour=0)) and not cron_matches("0 0 * * mon", thursday_1st)
    assert cron_matches("@weekly", datetime.datetime(2026, 1, 4, 0, 0, tzinfo=datetime.UTC))  # a Sunday
    assert cron_matches("*/15 9 * * *", MONDAY_9.replace(minute=45)) and not cron_matches("*/15 9 * * *", MONDAY_9.replace(minute=50))


def test_a_spot_interruption_drains_the_node_at_the_warning_and_its_pod_launches_on_demand() -> None:
    """Karpenter's interruption controller acts at the warning, not the notice's end: the spot node (ready at 181 s,
    warned 600 s later: the draw fixed here) goes at 781 s, not 781 + 120 s, its pod lost then; the spot offering is
    skipped for 3 minutes, so the replacement pod's batch closes 1 s later on the on-demand NodePool."""
    t = Timings(**{**STARTUP.__dict__, "preemption_per_node_hour": 1.0, "preemption_notice": 120.0})
    groups = [group("gpu-spot", spot=True), group("gpu-on-demand")]
    model = ClusterModel(groups, timings=t, karpenter=karpenter(pool("gpu-spot", 2), pool("gpu-on-demand", 1)))
    model.random.expovariate = lambda rate: 600.0  # type: ignore[method-assign]
    model.add_jobs([job(0.0, 3600.0)])
    trace = model.run(until=2 * 3600)
    spot, replacement, *_ = trace.nodes
    assert (spot.group.name, spot.gpu_ready, spot.removed, spot.preempted) == ("gpu-spot", 181.0, 781.0, True)
    (lost,) = [p for p in trace.pods if p.lost]
    assert lost.finished == 781.0
    assert (replacement.group.name, replacement.requested, replacement.gpu_ready) == ("gpu-on-demand", 782.0, 962.0)


@pytest.mark.parametrize(
    ("policy", "budgets", "removed"),
    [
        ("WhenEmptyOrUnderutilized", (Budget("10%"),), 865.0),
        ("WhenEmpty", (Budget("10%"),), None),
        ("WhenEmptyOrUnderutilized", (Budget("0", reasons=("Underutilized",)),), None),
    ],
)
def test_under_when_empty_or_underutilized_a_node_whose_pods_fit_elsewhere_goes(policy: str, budgets: tuple[Budget, ...], removed: float | None) -> None:
    """Nodes of 2 GPUs; three one-GPU pods at 0 s: one pass packs two on the first NodeClaim, one on the second (both
    ready at 181 s). One pod of the full node ends at 781 s: each node then has one pod and room for one. The first
    node is under consolidateAfter (60 s) until 841 s, so no pod may move onto it before; at the 850 s poll the
    node of fewest pods, oldest first, goes 15 s later with its pod evicted and bound on the other at once. Not
    under WhenEmpty, nor with a budget of 0 for Underutilized."""
    pods = [job(0.0, 600.0, name="short"), job(0.0, 7200.0, name="long-a"), job(0.0, 7200.0, name="long-b")]
    inputs = karpenter(consolidate_after=60.0, consolidation_policy=policy, budgets=budgets)
    _, trace = run([group(gpus=2)], inputs, pods, until=3600)
    assert [n.requested for n in trace.nodes] == [1.0, 1.0]
    gone = [n.removed for n in trace.nodes if n.removed is not None]
    assert gone == ([] if removed is None else [removed])
    lost = [p for p in trace.pods if p.lost]
    if removed is None:
        assert lost == []
        return
    (evicted,) = lost
    assert evicted.finished == removed
    (replacement,) = [p for p in trace.pods if p.created == removed]
    assert (replacement.bound, replacement.running) == (removed, removed)


def test_a_cluster_autoscaler_stack_switched_to_karpenter_simulates_its_classes_as_node_pools() -> None:
    """docs/commands/simulate.md's switch: dev-eks with provisioner karpenter and its autoscaler section removed
    (refused otherwise) runs on NodePools of the same classes, each limited to its group's maximum nodes."""
    from gpu_platform.infra.simulate.settings import SimulationError

    switch = [("eks_node_groups.provisioner", "karpenter")]
    with pytest.raises(SimulationError, match=r"eks_node_groups\.autoscaler\.[a-z_]+: autoscaler\.[a-z_]+ is a cluster autoscaler setting"):
        configurations(PROJECT_DIR, "dev-eks", switch, [], 1)
    (base,) = configurations(PROJECT_DIR, "dev-eks", [], [], 1)
    (config,) = configurations(PROJECT_DIR, "dev-eks", [*switch, ("eks_node_groups.autoscaler", None)], [], 1)
    assert base.inputs.karpenter is None and config.inputs.karpenter is not None
    groups = {g.name: g for g in base.inputs.groups}
    assert {p.name: p.limits.gpus for p in config.inputs.karpenter.pools} == {
        name: groups[name].allocatable.gpus * groups[name].max_nodes for name in (p.name for p in config.inputs.karpenter.pools)
    }


def test_model_settings_default_to_karpenters_own_batching_and_a_monday_morning_start() -> None:
    """ModelSettings.karpenter's documented default: KarpenterModel's, 1 s idle and 10 s maximum batches
    (options.go:129-130), starting Monday 2026-01-05 09:00 UTC."""
    import datetime

    from gpu_platform.infra.simulate.settings import KarpenterModel, ModelSettings

    assert ModelSettings().karpenter == KarpenterModel()
    default = KarpenterModel()
    assert (default.batch_idle_duration, default.batch_max_duration) == (1.0, 10.0)
    assert default.start == datetime.datetime(2026, 1, 5, 9, 0, tzinfo=datetime.UTC)
