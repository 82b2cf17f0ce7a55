"""The simulator's capacity-ladder rungs on GKE pools (issue 38 item 4): a reservation paid whether used or not, a
named reservation that gives no node beyond its instances, flex-start at its price and deleted at its run limit,
and a sweep over ladders ranked by cost per workload. Amounts from the price table's own fields and closed forms;
each test names the mutant of the model it was checked against."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpu_platform.components.dask.args import RapidsDaskClusterSpec
from gpu_platform.infra.cli import main
from gpu_platform.infra.simulate.distributions import fixed
from gpu_platform.infra.simulate.inputs import NodeGroup, PodSpec, Resources, Timings
from gpu_platform.infra.simulate.model import ClusterModel
from gpu_platform.infra.simulate.prices import PriceTable, cost_of, reserved_hours
from gpu_platform.infra.simulate.runs import configurations, run
from gpu_platform.infra.simulate.settings import SimulationError
from gpu_platform.infra.simulate.workloads import dask_cluster
from tests.conftest import PROJECT_DIR
from tests.infra.test_simulation import group, job

STARTUP = Timings(provision=fixed(60), gpu_ready=fixed(120))
LADDER = "gke.gpu_pools[t4].capacity_ladder"
RESERVED_THEN_ON_DEMAND = [{"kind": "reservation", "reservation": "t4-res"}, {"kind": "on_demand"}]


def _prices(flex: float | None = None) -> PriceTable:
    """Machine m at $2.00 on-demand, $0.50 spot and (given) ``flex`` flex-start per hour."""
    m: dict[str, float] = {"on_demand": 2.0, "spot": 0.5, **({} if flex is None else {"flex_start": flex})}
    return PriceTable.from_data({"date": "2026-01-01", "sources": ["test"], "gcp": [{"region": "r", "machines": {"m": m}}]}, "test")


def _inputs(*groups: Any) -> Any:
    return SimpleNamespace(cloud="gcp", region="r", groups=groups)


def test_reserved_hours_split_at_the_reservation_s_count() -> None:
    """Three nodes over an hour, one of them for its first half, against a reservation of 2: 2 node-hours within it,
    0.5 beyond (closed form)."""
    assert reserved_hours([(0, 3600), (0, 3600), (0, 1800)], 2) == (pytest.approx(2.0), pytest.approx(0.5))
    assert reserved_hours([(0, 3600)], 0) == (0.0, pytest.approx(1.0))


def test_an_idle_reservation_is_billed_for_the_whole_run() -> None:
    """A reservation of 3 instances that no node ever uses, over 2 h: 3 x 2 h at the on-demand $2.00 = $12.00, and 6
    GPU-hours paid with none used (Compute Engine bills a reservation at the on-demand rate until it is deleted).
    Kills the mutant that bills a reservation's nodes instead of its instances (cost 0 here)."""
    reserved = group("res", lo=0, hi=3, reserved=3, reservation_named=True)
    model = ClusterModel([reserved], timings=STARTUP, autoscale=False)
    trace = model.run(until=7200)
    assert trace.nodes == []
    cost = cost_of(trace, _inputs(reserved), _prices(), 0.0)
    assert [(line.capacity, line.node_hours, line.usd) for line in cost.lines] == [("reservation", pytest.approx(6.0), pytest.approx(12.0))]
    assert (cost.total_usd, cost.gpu_hours_paid) == (pytest.approx(12.0), pytest.approx(6.0))


def test_nodes_on_a_reservation_cost_nothing_more_and_any_reservation_pays_on_demand_beyond_it() -> None:
    """Any matching reservation of 2 instances, 3 nodes running for the whole hour: the reservation's 2 node-hours
    plus 1 node-hour on-demand beyond it, $6.00 (not 5 node-hours: a node consuming the reservation adds no charge).
    Kills the mutant that bills each node as well as the reservation."""
    any_reservation = group("res", lo=3, hi=3, reserved=2)
    trace = ClusterModel([any_reservation], timings=STARTUP, autoscale=False).run(until=3600)
    assert len(trace.nodes) == 3
    cost = cost_of(trace, _inputs(any_reservation), _prices(), 0.0)
    assert sorted((line.capacity, line.node_hours) for line in cost.lines) == [("on-demand", pytest.approx(1.0)), ("reservation", pytest.approx(2.0))]
    assert cost.total_usd == pytest.approx(6.0)


def test_a_named_reservation_gives_no_node_beyond_its_instances_and_the_next_rung_takes_the_rest() -> None:
    """A named reservation of 1 instance above an on-demand rung, two one-GPU pods: the first scale-up takes the
    reservation's one node and no more; the second pod's scale-up of the reservation finds no capacity (a failure,
    reported 45 s later as a spot shortage's is) and the on-demand rung grows. Kills the mutant that ignores the
    reservation's count (two reservation nodes, no on-demand one)."""
    t = Timings(provision=fixed(60), gpu_ready=fixed(120), failure_report=fixed(45), early_abort=True)
    groups = [group("res", priority=2, reserved=1, reservation_named=True, image_streaming=True), group("od", priority=1, image_streaming=True)]
    model = ClusterModel(groups, timings=t)
    model.add_jobs([job(0.0, 1800, name="a"), job(400.0, 1800, name="b")])
    trace = model.run(until=3600)
    paid = [(n.group.name, n.failed) for n in trace.nodes]
    assert paid == [("res", False), ("res", True), ("od", False)]
    (fallback,) = trace.fallbacks
    assert fallback.gave_up - fallback.requested == 45.0
    assert all(p.running is not None for p in trace.pods)


def test_a_flex_start_node_is_deleted_at_its_run_limit_and_its_pod_starts_again() -> None:
    """A flex-start rung with a 10-minute max_run_duration, one pod working 30 minutes: its node goes exactly 600 s
    after it joined, the pod is lost and replaced; the flex-start node-hours are billed at the flex-start price
    ($1.00). Kills the mutant without the run limit (no node ends, no pod lost)."""
    flex = group("flex", priority=2, flex_start=True, run_limit=600.0, image_streaming=True)
    model = ClusterModel([flex, group("od", priority=1, image_streaming=True)], timings=STARTUP)
    model.add_jobs([job(0.0, 1800)])
    trace = model.run(until=4 * 3600)
    first = trace.nodes[0]
    assert first.group.name == "flex" and first.joined is not None and first.removed is not None
    assert first.removed - first.joined == 600.0
    assert trace.run_limit_ends >= 1 and any(p.lost for p in trace.pods)
    ended = [n for n in trace.nodes if n.group.name == "flex" and n.removed is not None and n.joined is not None and n.removed - n.joined == 600.0]
    assert len(ended) == trace.run_limit_ends
    cost = cost_of(trace, _inputs(*model.groups), _prices(flex=1.0), 0.0)
    hours = sum(((n.removed or trace.horizon) - n.requested) / 3600 for n in trace.nodes if n.group.name == "flex")
    (line,) = [line for line in cost.lines if line.capacity == "flex-start"]
    assert (line.usd_per_hour, line.usd) == (1.0, pytest.approx(hours))


def test_a_flex_start_rung_without_a_price_is_refused_in_one_line() -> None:
    """The shipped table's sources publish no flex-start price: a flex-start rung is refused before the run, the line
    naming the machine type, the region and where to give a price."""
    (config,) = configurations(PROJECT_DIR, "dev-gke", [(LADDER, [{"kind": "flex_start"}, {"kind": "on_demand"}])], [], 1)
    with pytest.raises(SimulationError) as caught:
        run(config.inputs, [], 60.0, PriceTable.shipped())
    (line,) = caught.value.lines
    assert "no flex-start price for machine type n1-standard-4 (gcp us-central1)" in line and "--prices FILE" in line


def test_the_stack_s_reservation_rung_holds_the_pool_s_minimum_unless_the_model_says_otherwise() -> None:
    """dev-gke's T4 pool keeps 1 node per zone over 2 zones: its reservation rung's reservation holds 2 instances, and
    4 with model.reservation.instances=4; named (SPECIFIC) or any as the rung says; the on-demand rung holds none."""
    pairs: list[tuple[str, Any]] = [(LADDER, RESERVED_THEN_ON_DEMAND)]
    (config,) = configurations(PROJECT_DIR, "dev-gke", pairs, [], 1)
    groups = {g.name: g for g in config.inputs.groups}
    assert (groups["t4-reserved"].reserved, groups["t4-reserved"].reservation_named, groups["t4-on-demand"].reserved) == (2, True, None)
    (more,) = configurations(PROJECT_DIR, "dev-gke", [*pairs, ("model.reservation.instances", 4)], [], 1)
    assert {g.name: g.reserved for g in more.inputs.groups}["t4-reserved"] == 4
    (any_,) = configurations(PROJECT_DIR, "dev-gke", [(LADDER, [{"kind": "reservation"}])], [], 1)
    assert {g.name: (g.reserved, g.reservation_named) for g in any_.inputs.groups}["t4"] == (2, False)


def test_model_reservation_is_refused_on_a_stack_without_a_reservation_rung() -> None:
    with pytest.raises(SimulationError) as caught:
        configurations(PROJECT_DIR, "dev-gke", [("model.reservation.instances", 4)], [], 1)
    assert caught.value.lines == [
        "model.reservation.instances: applies to GKE pools and EKS classes whose capacity_ladder has a reservation rung "
        "(gke.gpu_pools[].capacity_ladder, eks_node_groups.classes[].capacity_ladder), and this stack has none"
    ]


def test_a_sweep_over_two_ladders_ranks_them_by_cost_per_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """dev-gke's T4 pool on on-demand alone or on its named reservation (2 instances, its minimum) first, seed 0 of the
    deep-dive: each row's cost per workload is its cost over its workloads done; the reservation's line bills its 2
    instances for the whole run at the on-demand rate, whatever they ran; the pick at p90 <= 10 min is the cheaper
    per workload. The table prints each ladder in one line with its p90 and cost per workload."""
    out = tmp_path / "sweep.json"
    ladders = "[{kind: reservation, reservation: t4-res}, {kind: on_demand}],[{kind: on_demand}]"
    code = main(["simulate", "dev-gke", "--sweep", f"{LADDER}={ladders}", "--target-p90", "10m", "--seeds", "1", "--processes", "1", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "reservation(t4-res) ->" in printed and "on_demand" in printed
    document = json.loads(out.read_text())
    runs = {c["simulation"]["label"]: c for c in document["configurations"]}
    per_workload = {label: c["cost"]["usd_per_workload"] for label, c in runs.items()}
    for c in runs.values():
        assert c["cost"]["usd_per_workload"] == pytest.approx(c["cost"]["total_usd"] / c["cost"]["workloads_done"])
    reserved = next(c for label, c in runs.items() if "reservation" in label)
    hours = reserved["cost"]["hours"]
    (line,) = [line for line in reserved["cost"]["lines"] if line["capacity"] == "reservation"]
    table = PriceTable.shipped().region("gcp", "us-central1")
    rate = table.machines["n1-standard-4"].on_demand + 2 * table.gpus["nvidia-tesla-t4"].on_demand
    assert (line["node_hours"], line["usd"]) == (pytest.approx(2 * hours), pytest.approx(2 * hours * rate, rel=1e-9))
    meeting = [label for label, c in runs.items() if c["pending_p90_s"] <= 600]
    assert document["cheapest_meeting_target"] == min(meeting, key=lambda label: per_workload[label])
    assert len({round(v, 2) for v in per_workload.values()}) == 2


# --- A ComputeClass orders its own node pools only ------------------------------------------------------------------

CPU_POD = PodSpec("cpu", Resources(cpu=2000, memory=8000), roles=("system", "gpu"), tolerations=("nvidia.com/gpu", "cloud.google.com/compute-class"))
"""A CPU-only pod that would fit both pools (it tolerates every GPU and class taint): only the expander decides."""


def _two_rung_stack() -> list[NodeGroup]:
    """A CPU pool of 2-CPU/8 GiB nodes beside a GPU pool whose two-rung ladder (spot, then on-demand) is a ComputeClass
    t4: n1-standard-4 nodes (3.92 CPUs, 12000 MiB allocatable) with 2 GPUs, the spot rung holding at most one node."""
    taints = ("cloud.google.com/compute-class=t4", "nvidia.com/gpu=present")
    cpu = NodeGroup("cpu", "cpu", "system", "e2-standard-2", Resources(2000, 8000, 0), 0, max_nodes=10)
    spot = NodeGroup(
        "t4-spot", "t4", "gpu", "n1-standard-4", Resources(3920, 12000, 2), 2, spot=True, priority=2, compute_class="t4", max_nodes=1, taints=taints
    )
    od = NodeGroup("t4-on-demand", "t4", "gpu", "n1-standard-4", Resources(3920, 12000, 2), 2, priority=1, compute_class="t4", max_nodes=10, taints=taints)
    return [cpu, spot, od]


def _nodes_by_group(trace: Any) -> dict[str, int]:
    return {name: sum(1 for n in trace.nodes if n.group.name == name and not n.failed) for name in ("cpu", "t4-spot", "t4-on-demand")}


def test_a_compute_class_s_order_does_not_outrank_another_pool_for_a_cpu_only_pod() -> None:
    """Three CPU-only pods that fill one node of the CPU pool each and leave half a class node idle: least waste
    grows the CPU pool by exactly 3 nodes and the class by none (the class's priorities rank its node pools only, GKE's
    custom ComputeClasses). Kills the mutant that compares the class's priority 2 with the CPU pool's 0 (it grows
    t4-spot by its one node and then t4-on-demand for the pod left over)."""
    model = ClusterModel(_two_rung_stack(), timings=STARTUP)
    model.add_jobs([job(0.0, 1800, pods=(CPU_POD,), name=f"cpu{i}") for i in range(3)])
    trace = model.run(until=1200)
    assert _nodes_by_group(trace) == {"cpu": 3, "t4-spot": 0, "t4-on-demand": 0}
    assert all(p.node is not None and p.node.startswith("cpu") for p in trace.pods)


def test_the_class_s_pods_still_take_its_first_rung_then_the_next() -> None:
    """Two pods of 2 GPUs that select the class (its pool, its taints): the first scale-up takes the spot rung's one
    node, the next the on-demand rung's (exact counts), and the CPU pool grows for the CPU pod beside them."""
    gpu_pod = PodSpec(
        "worker", Resources(cpu=3000, memory=10000, gpus=2), pools=("t4",), tolerations=("cloud.google.com/compute-class=t4", "nvidia.com/gpu=present")
    )
    model = ClusterModel(_two_rung_stack(), timings=STARTUP)
    model.add_jobs([job(0.0, 1800, pods=(gpu_pod,), name="g0"), job(0.0, 1800, pods=(gpu_pod,), name="g1"), job(600.0, 1800, pods=(CPU_POD,), name="c")])
    trace = model.run(until=1500)
    assert _nodes_by_group(trace) == {"cpu": 1, "t4-spot": 1, "t4-on-demand": 1}
    first = min((n for n in trace.nodes if n.group.pool == "t4"), key=lambda n: n.requested)
    assert first.group.name == "t4-spot"


def test_a_toleration_of_one_class_does_not_fit_another_class_s_nodes() -> None:
    """The ComputeClass taint's value is the class's name: a pod tolerating cloud.google.com/compute-class=a (as the
    stack renders it, operator Equal) fits class a's node pools and not class b's; a bare key tolerates every class."""
    a, b = (NodeGroup(c, c, "gpu", "m", Resources(4000, 16000, 1), 1, compute_class=c, taints=(f"cloud.google.com/compute-class={c}",)) for c in "ab")
    of_a = PodSpec("worker", Resources(gpus=1), tolerations=("cloud.google.com/compute-class=a",))
    any_class = PodSpec("worker", Resources(gpus=1), tolerations=("cloud.google.com/compute-class",))
    assert (of_a.may_use(a), of_a.may_use(b), any_class.may_use(b)) == (True, False, True)


def test_dev_gke_s_dask_scheduler_grows_the_scheduler_pool_not_the_t4_ladder() -> None:
    """dev-gke with its T4 pool on a two-rung ladder: the stack renders the Dask scheduler with the scheduler pool's
    tolerations only (nvidia.com/gpu=present, no node selector) and the workers with the class's selector and taint, so
    one Dask cluster of a scheduler and 6 workers grows the scheduler pool by exactly 1 node and the spot rung by 1 (its
    2 minimum nodes hold 4 workers), and nothing lands elsewhere. Kills the mutant whose scheduler tolerates the
    ComputeClass taint by its key alone, whatever the class (it binds to a T4 node, the scheduler pool stays empty and
    the spot rung grows by 2)."""
    (config,) = configurations(PROJECT_DIR, "dev-gke", [(LADDER, [{"kind": "spot"}, {"kind": "on_demand"}])], [], 1)
    groups = {g.name: g for g in config.inputs.groups}
    assert (groups["t4-spot"].compute_class, groups["scheduler"].compute_class) == ("t4", None)
    spec = RapidsDaskClusterSpec.for_pools("rapids", config.stack.pool_shapes(), image=config.stack.dask.rapids_image).to_dict()["spec"]
    assert spec["scheduler"]["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
    model = ClusterModel(config.inputs.groups, timings=STARTUP)
    model.add_jobs([dask_cluster(0.0, "default", "d", workers=6, work=1800)])
    trace = model.run(until=1500)
    grown = {name: sum(1 for n in trace.nodes if n.group.name == name) for name in groups}
    assert grown == {"system": 2, "scheduler": 1, "t4-spot": 3, "t4-on-demand": 0}
    nodes = {n.name: n.group.name for n in trace.nodes}
    placed = sorted((p.name.split("-")[1], nodes[p.node]) for p in trace.pods if p.node is not None)
    assert placed == [("scheduler", "scheduler"), *[("worker", "t4-spot")] * 6]
