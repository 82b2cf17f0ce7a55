"""The simulator's capacity-ladder rungs on EKS classes (issue 38 item 4), on the GKE rungs' one mechanism
(NodeGroup.reserved, reservation_named; prices.cost_of): an On-Demand Capacity Reservation paid whether used or not,
a named one that gives no node beyond its instances (cluster autoscaler and Karpenter alike), a capacity block paid
for the run at its capacity-block price and refused without one, and a sweep over two EKS ladders. Amounts from the
price table's own fields and closed forms; each test names the mutant of the model it was checked against."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.infra.cli import main
from gpu_platform.infra.simulate.distributions import fixed
from gpu_platform.infra.simulate.inputs import Timings
from gpu_platform.infra.simulate.prices import PriceTable
from gpu_platform.infra.simulate.runs import configurations, run
from gpu_platform.infra.simulate.settings import SimulationError
from tests.conftest import PROJECT_DIR
from tests.infra import test_simulate_karpenter as k

LADDER = "eks_node_groups.classes[t4].capacity_ladder"
NO_CAPACITY = ("eks_node_groups.classes[t4].capacity", None)
ODCR = {"kind": "reservation", "reservation": "cr-0123456789abcdef0"}
BLOCK = {"kind": "capacity_block", "reservation": "cr-0a1b2c3d4e5f60718"}
T4 = "g4dn.xlarge"


def _config(ladder: list[dict[str, str]], *sets: tuple[str, Any], stack: str = "dev-eks") -> Any:
    (config,) = configurations(PROJECT_DIR, stack, [NO_CAPACITY, (LADDER, ladder), *sets], [], 1)
    return config


def _groups(config: Any) -> dict[str, Any]:
    return {g.name: g for g in config.inputs.groups}


def _with_block_price(region: str, price: float) -> PriceTable:
    """The shipped table with a capacity-block price for g4dn.xlarge in ``region`` (a test figure, not AWS's)."""
    data = PriceTable.shipped().model_dump(mode="json")
    (table,) = [t for t in data["aws"] if t["region"] == region]
    table["machines"][T4]["capacity_block"] = price
    return PriceTable.model_validate(data)


def test_each_eks_rung_reaches_the_model_as_its_node_group_buys_it() -> None:
    """dev-eks's T4 class (0..4 nodes) on capacity block -> named reservation -> spot -> on-demand: the block holds its
    group's maximum (4), named, at its capacity-block price; the named reservation its group's minimum (0: a later rung
    keeps none), or model.reservation.instances; an open reservation (no id) its minimum, with on-demand beyond.
    Kills the mutant that models the block as on-demand (reserved None) and the one that takes its minimum."""
    config = _config([BLOCK, ODCR, {"kind": "spot"}, {"kind": "on_demand"}])
    g = _groups(config)
    assert (g["t4-block"].reserved, g["t4-block"].reservation_named, g["t4-block"].capacity_block, g["t4-block"].spot) == (4, True, True, False)
    assert (g["t4-reserved"].reserved, g["t4-reserved"].reservation_named, g["t4-reserved"].capacity_block) == (0, True, False)
    assert (g["t4-spot"].reserved, g["t4-on-demand"].reserved, g["t4-spot"].spot) == (None, None, True)
    more = _config([BLOCK, ODCR, {"kind": "on_demand"}], ("model.reservation.instances", 3))
    assert {n: gr.reserved for n, gr in _groups(more).items()}["t4-reserved"] == 3
    assert {n: gr.reserved for n, gr in _groups(more).items()}["t4-block"] == 4  # a block is not a reservation rung's setting
    opened = _config([{"kind": "reservation"}], ("eks_node_groups.classes[t4].min_nodes", 2))
    assert [(gr.reserved, gr.reservation_named) for gr in opened.inputs.groups if gr.pool == "t4"] == [(2, False)]


def test_an_idle_odcr_costs_its_instances_times_the_run_at_on_demand() -> None:
    """dev-eks's T4 class on its named reservation of 3 instances (model.reservation.instances) then on-demand, no
    workload, over 2 h: the reservation's line is 3 x 2 h = 6 node-hours at g4dn.xlarge's on-demand price, whatever
    ran (EC2 bills a Capacity Reservation at the On-Demand rate whether instances run in it or not). Kills the mutant
    that bills a reservation's nodes instead of its instances (no line: no node ran)."""
    config = _config([ODCR, {"kind": "on_demand"}], ("model.reservation.instances", 3))
    prices = PriceTable.shipped()
    outcome = run(config.inputs, [], 7200.0, prices)
    rate = prices.region("aws", config.inputs.region).machines[T4].on_demand
    (line,) = [line for line in outcome.cost.lines if line.capacity == "reservation"]
    assert (line.machine_type, line.node_hours, line.usd_per_hour, line.usd) == (T4, pytest.approx(6.0), rate, pytest.approx(6.0 * rate))
    assert not [n for n in outcome.trace.nodes if n.group.name == "t4-reserved"]


def test_a_capacity_block_is_billed_for_the_run_at_its_price() -> None:
    """dev-eks's T4 class on a capacity block (its group's 4 instances) then on-demand, a test price of $0.25 per
    instance-hour, no workload, over 3 h: the block's line is 4 x 3 h = 12 node-hours at $0.25, $3.00, not the
    on-demand price. Kills the mutant that bills the block at on-demand and the one that bills only its nodes."""
    config = _config([BLOCK, {"kind": "on_demand"}])
    prices = _with_block_price(config.inputs.region, 0.25)
    outcome = run(config.inputs, [], 3 * 3600.0, prices)
    (line,) = [line for line in outcome.cost.lines if line.capacity == "capacity-block"]
    assert (line.machine_type, line.node_hours, line.usd_per_hour, line.usd) == (T4, pytest.approx(12.0), 0.25, pytest.approx(3.0))


def test_a_capacity_block_without_a_price_is_refused_in_one_line() -> None:
    """The shipped table's sources publish no capacity-block price: the rung is refused before the run, one line naming
    the instance type, the region and --prices FILE."""
    config = _config([BLOCK, {"kind": "on_demand"}])
    with pytest.raises(SimulationError) as caught:
        run(config.inputs, [], 60.0, PriceTable.shipped())
    (line,) = caught.value.lines
    assert f"no capacity-block price for machine type {T4} (aws {config.inputs.region})" in line and "--prices FILE" in line


def test_a_full_named_reservation_fails_the_launch_and_the_next_tier_grows_on_a_node_group() -> None:
    """The cluster autoscaler over dev-eks's T4 class on its named reservation of 1 instance then on-demand, two
    one-GPU pods 400 s apart: the first scale-up takes the reservation's node; the second's finds it full (a failed
    scale-up, given up early as a spot shortage is) and the on-demand tier grows. Kills the mutant without the
    named reservation's limit on EKS (two reservation nodes, no on-demand one)."""
    from gpu_platform.infra.simulate.model import ClusterModel
    from tests.infra.test_simulation import job

    config = _config([ODCR, {"kind": "on_demand"}], ("model.reservation.instances", 1))
    g = _groups(config)
    t = Timings(provision=fixed(60), gpu_ready=fixed(120), failure_report=fixed(45), early_abort=True)
    gpu = [g["t4-reserved"], g["t4-on-demand"]]
    tolerant = dataclasses.replace(k.ONE_GPU, tolerations=None)
    model = ClusterModel(gpu, timings=t)
    model.add_jobs([job(0.0, 1800, pods=(tolerant,), name="a"), job(400.0, 1800, pods=(tolerant,), name="b")])
    trace = model.run(until=3600)
    assert [(n.group.name, n.failed) for n in trace.nodes] == [("t4-reserved", False), ("t4-reserved", True), ("t4-on-demand", False)]
    assert all(p.running is not None for p in trace.pods)


def test_a_full_named_reservation_passes_karpenter_s_pods_to_the_next_node_pool() -> None:
    """Karpenter: a reserved NodePool on a named reservation of 1 instance weighing more than an on-demand one, two
    pods at once: one NodeClaim on the reservation, the next finds it full (failed, offerings cached unavailable) and
    the pod launches on-demand at its next trigger. Kills the mutant without the limit in karpenter.py (two
    reservation nodes)."""
    groups = [dataclasses.replace(k.group("gpu-reserved"), reserved=1, reservation_named=True), k.group("gpu-on-demand")]
    inputs = k.karpenter(k.pool("gpu-reserved", 2), k.pool("gpu-on-demand", 1))
    _, trace = k.run(groups, inputs, [k.job(0.0, 600.0, name="a"), k.job(0.0, 600.0, name="b")], 900)
    assert [(n.group.name, n.failed) for n in trace.nodes] == [("gpu-reserved", False), ("gpu-reserved", True), ("gpu-on-demand", False)]
    assert all(p.running is not None for p in trace.pods)


def test_karpenter_node_pools_take_their_rung_s_reservation() -> None:
    """dev-eks switched to Karpenter on capacity block -> named reservation -> on-demand: the NodePools' groups keep
    the block's 4 instances and the reservation's model.reservation.instances, and start empty."""
    config = _config(
        [BLOCK, ODCR, {"kind": "on_demand"}],
        ("eks_node_groups.provisioner", "karpenter"),
        ("eks_node_groups.autoscaler", None),
        ("model.reservation.instances", 2),
    )
    g = _groups(config)
    assert config.inputs.karpenter is not None
    assert [(n, g[n].reserved, g[n].reservation_named, g[n].capacity_block, g[n].min_nodes) for n in ("t4-block", "t4-reserved")] == [
        ("t4-block", 4, True, True, 0),
        ("t4-reserved", 2, True, False, 0),
    ]


def test_a_sweep_over_two_eks_ladders_prints_cost_per_workload_and_p90(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """dev-eks's T4 class keeping 2 nodes, on its named reservation (2 instances: its minimum) then spot then on-demand, or
    spot then on-demand, seed 0 of the deep-dive: each row's cost per workload is its cost over its workloads done, the
    reservation's line bills its 2 instances for the whole run at g4dn.xlarge's on-demand price, and the table prints
    each ladder with its p90 and cost per workload."""
    out = tmp_path / "sweep.json"
    ladders = "[{kind: reservation, reservation: cr-0123456789abcdef0}, {kind: spot}, {kind: on_demand}],[{kind: spot}, {kind: on_demand}]"
    argv = ["simulate", "dev-eks", "--set", "eks_node_groups.classes[t4].capacity=null", "--set", "eks_node_groups.classes[t4].min_nodes=2"]
    argv += ["--sweep", f"{LADDER}={ladders}", "--target-p90", "10m", "--seeds", "1", "--processes", "1", "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "reservation(cr-0123456789abcdef0)" in printed and "spot -> on_demand" in printed
    document = json.loads(out.read_text())
    runs = {c["simulation"]["label"]: c for c in document["configurations"]}
    assert len(runs) == 2
    for c in runs.values():
        assert c["pending_p90_s"] is not None
        assert c["cost"]["usd_per_workload"] == pytest.approx(c["cost"]["total_usd"] / c["cost"]["workloads_done"])
    reserved = next(c for label, c in runs.items() if "reservation" in label)
    hours = reserved["cost"]["hours"]
    (line,) = [line for line in reserved["cost"]["lines"] if line["capacity"] == "reservation"]
    rate = PriceTable.shipped().region("aws", reserved["cost"]["region"]).machines[T4].on_demand
    assert (line["node_hours"], line["usd"]) == (pytest.approx(2 * hours), pytest.approx(2 * hours * rate, rel=1e-9))
