"""`gpu-platform simulate`: the stack as the model sees it, the guide's run, the command's outputs and
its refusals (infra/simulate/runs.py, infra/simulate/workloads.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpu_platform.components.gke.args import AutoscalingProfile
from gpu_platform.infra.cli import main
from gpu_platform.infra.simulate.cluster import model_inputs
from gpu_platform.infra.simulate.distributions import Dist
from gpu_platform.infra.simulate.inputs import Binding
from gpu_platform.infra.simulate.prices import PriceTable
from gpu_platform.infra.simulate.runs import configurations, run
from gpu_platform.infra.simulate.settings import AutoscalerModel, ModelSettings, NodeModel, SimulationError, SpotModel
from gpu_platform.infra.simulate.workloads import DEEP_DIVE_PHASES, DeepDive, WorkloadFile, deep_dive, from_file, repeat
from gpu_platform.infra.stack.read import load_stack
from tests.conftest import PROJECT_DIR

REPORT_KEYS = {
    "pending_median_s",
    "pending_mean_s",
    "pending_p99_s",
    "pending_max_s",
    "scheduled_within",
    "utilisation_percent",
    "overhead_percent",
    "gpu_hours_available",
    "gpu_hours_utilised",
    "gpu_nodes_max",
    "gpu_nodes_mean",
    "pods_created",
    "pending_by_pod",
    "over_time",
}


@pytest.fixture(scope="module")
def dev_gke():
    return load_stack(PROJECT_DIR, "dev-gke")


GUIDE_IMAGE = "us-central1-docker.pkg.dev/gpu-platform-dev/rapids/base:26.02-cuda12-py3.13"
"""The RAPIDS image mirrored to Artifact Registry in dev-gke's region: the deep-dive's containers started 12 s
after their GPUs (its image streamed), which GKE does only for such an image (infra/simulate/cluster.py)."""


@pytest.fixture(scope="module")
def guide_gke():
    """dev-gke as the deep-dive ran it: its image streamed."""
    return configurations(PROJECT_DIR, "dev-gke", [("dask.rapids_image", GUIDE_IMAGE)], [], 1)[0].stack


def test_model_defaults() -> None:
    settings = ModelSettings()
    assert (settings.seed, settings.binding) == (0, None)
    assert settings.autoscaler == AutoscalerModel()
    a = settings.autoscaler
    assert (a.scan_interval, a.scale_down_utilization_threshold, a.early_abort) == (10.0, 0.5, True)
    # cluster-autoscaler 1.34's flag defaults
    assert (a.scale_down_gpu_utilization_threshold, a.unremovable_node_recheck_timeout, a.backoff_reset_timeout) == (0.5, 300, 10_800)
    assert a.failure_report == Dist("uniform", 30, 90)
    n = settings.node
    assert n == NodeModel()
    assert (n.provision, n.gpu_ready, n.image_pull, n.image_pull_streaming, n.pod_start) == (
        Dist("uniform", 60, 120),
        Dist("uniform", 180, 240),
        Dist("uniform", 180, 420),
        Dist("uniform", 10, 20),
        Dist("uniform", 1, 3),
    )
    # The deep-dive's scale-up: about 5 minutes from the request to a running pod (node, GPUs, container).
    assert 270 <= n.provision.mean + n.gpu_ready.mean + n.image_pull_streaming.mean <= 330
    assert settings.spot == SpotModel() and (settings.spot.shortage, settings.spot.preemption_per_node_hour) == (0, 0)
    deep = DeepDive()
    assert (deep.namespace, deep.workers, deep.work, deep.session, deep.lead) == ("default", 2, Dist("uniform", 20, 50), True, 900)


def test_the_stack_s_autoscaler_settings_fill_the_model(dev_gke) -> None:
    gke = model_inputs(dev_gke, ModelSettings())
    t = gke.timings
    # GKE optimize-utilization: scale-down after 2m (calibrated on the deep-dive's run), packing pods
    # (most-allocated); the upstream autoscaler's other defaults.
    assert (t.scale_down_unneeded, t.scale_down_delay_after_add, t.max_node_provision, t.initial_backoff, t.max_backoff) == (
        120,
        120,
        900,
        300,
        1800,
    )
    balanced = dev_gke.model_copy(update={"gke": dev_gke.gke.model_copy(update={"autoscaling_profile": AutoscalingProfile.BALANCED})})
    b = model_inputs(balanced, ModelSettings())
    assert (b.timings.scale_down_unneeded, b.timings.scale_down_delay_after_add, b.binding) == (600, 600, Binding.LEAST_ALLOCATED)
    assert (gke.binding, t.preemption_notice) == (Binding.MOST_ALLOCATED, 30)
    eks = model_inputs(load_stack(PROJECT_DIR, "dev-eks"), ModelSettings())
    # EKS: the stack's own cluster-autoscaler settings (dev-eks: 7m, 1m, 2m) and the default scheduler.
    assert (eks.timings.max_node_provision, eks.timings.scale_down_unneeded, eks.timings.scale_down_delay_after_add) == (420, 60, 120)
    assert (eks.timings.initial_backoff, eks.timings.max_backoff) == (300, 1800)
    assert (eks.binding, eks.timings.preemption_notice) == (Binding.LEAST_ALLOCATED, 120)
    # A model setting wins over the stack's.
    set_ = model_inputs(dev_gke, ModelSettings(binding="least-allocated", autoscaler={"scale_down_unneeded_time": "5m"}))
    assert (set_.binding, set_.timings.scale_down_unneeded) == (Binding.LEAST_ALLOCATED, 300)
    upstream = model_inputs(
        dev_gke,
        ModelSettings(
            autoscaler={
                "scale_down_utilization_threshold": 0.3,
                "scale_down_gpu_utilization_threshold": 0.2,
                "unremovable_node_recheck_timeout": "2m",
                "backoff_reset_timeout": "1h",
            }
        ),
    )
    u = upstream.timings
    assert (u.scale_down_utilisation_threshold, u.scale_down_gpu_utilisation_threshold, u.unremovable_recheck, u.backoff_reset) == (0.3, 0.2, 120, 3600)


def test_dev_gke_is_the_guide_s_cluster_to_the_model(dev_gke) -> None:
    groups = {g.name: g for g in model_inputs(dev_gke, ModelSettings()).groups}
    t4 = groups["t4"]
    # 1..20 nodes per zone over two zones; allocatable from GKE's reserve formula minus the DaemonSets.
    assert (t4.per_zone, t4.min_nodes, t4.max_nodes, t4.total_min, t4.total_max) == (True, 1, 20, 2, 40)
    assert t4.zones == ("us-central1-b", "us-central1-c")
    # Image streaming on, but the default RAPIDS image is on nvcr.io, which GKE does not stream: pulled whole.
    assert (t4.gpus_per_node, t4.allocatable.gpus, t4.image_streaming, t4.spot) == (2, 2, False, False)
    assert t4.allocatable.cpu < 4000 and t4.allocatable.memory < 15 * 1024
    scheduler = groups["scheduler"]
    assert (scheduler.role, scheduler.per_zone, scheduler.total_max, scheduler.gpus_per_node) == ("scheduler", False, 4, 1)
    assert groups["system"].gpus_per_node == 0


def test_spot_is_tried_before_on_demand() -> None:
    prod_gke = {g.name: g for g in model_inputs(load_stack(PROJECT_DIR, "prod-gke"), ModelSettings()).groups}
    spot = [g for g in prod_gke.values() if g.spot]
    assert spot
    for g in spot:
        twin = prod_gke[g.name.removesuffix("-spot") + "-on-demand"]
        assert g.priority > twin.priority  # the ComputeClass's order
    eks = {g.name: g for g in model_inputs(load_stack(PROJECT_DIR, "dev-eks"), ModelSettings()).groups}
    for g in (g for g in eks.values() if g.spot):
        assert g.priority > eks[g.name.removesuffix("-spot") + "-on-demand"].priority  # the priority tiers


def test_the_guide_s_run_lands_in_its_ballpark(guide_gke) -> None:
    """The deep-dive workload on dev-gke with the defaults (its image streamed, as the deep-dive's): the guide measured a 2 s median, 72% of pods
    within 5 s, 91% within 60 s and 64% GPU utilisation, from ~200 clusters."""
    settings = ModelSettings()
    pattern = deep_dive(DeepDive(), settings.seed)
    assert [(p.stages, p.min_width, p.max_width, p.variation) for p in DEEP_DIVE_PHASES] == [
        (10, 1, 2, 1),
        (5, 3, 5, 5),
        (30, 1, 2, 1),
        (10, 3, 10, 5),
        (5, 3, 5, 5),
        (10, 1, 2, 1),
    ]
    assert pattern.described["stages"] == 77 and 150 <= pattern.described["clusters"] <= 250
    jobs, horizon = repeat(pattern, None)
    assert horizon is None
    outcome = run(model_inputs(guide_gke, settings), jobs, horizon, PriceTable.shipped(), tail=pattern.tail_s)
    r = outcome.report
    assert r.pending_median_s <= 5
    assert 0.60 <= r.scheduled_within["5s"] <= 0.90
    assert r.scheduled_within["60s"] >= 0.85
    assert 55 <= r.utilisation_percent <= 75
    # A pod that waits for a new node waits about the guide's 5 minutes (the first stage's, at least).
    assert 240 <= r.pending_max_s <= 420
    # The work ran to its end, then the 15 minutes the guide measured past it.
    assert outcome.trace.jobs_done == 2 and outcome.trace.horizon == pytest.approx(max(p.finished for p in outcome.trace.pods) + 900)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_ballpark_holds_over_seeds(guide_gke, seed: int) -> None:
    pattern = deep_dive(DeepDive(), seed)
    jobs, horizon = repeat(pattern, None)
    r = run(model_inputs(guide_gke, ModelSettings(seed=seed)), jobs, horizon, PriceTable.shipped(), tail=pattern.tail_s).report
    assert r.pending_median_s <= 5 and 0.60 <= r.scheduled_within["5s"] <= 0.90 and r.scheduled_within["60s"] >= 0.85
    assert 55 <= r.utilisation_percent <= 75


def test_quotas_of_the_stack_s_tenants_refuse_at_admission(dev_gke) -> None:
    workload = WorkloadFile.model_validate({"tenants": [{"namespace": "team-b", "arrivals_per_hour": 30, "duration": "20m"}]})
    jobs, horizon = repeat(from_file(workload, 0, "file"), None)
    outcome = run(model_inputs(dev_gke, ModelSettings()), jobs, horizon, PriceTable.shipped())
    # team-b's quota is 4 GPUs: one 3-GPU cluster at a time; the others are refused whole.
    assert outcome.trace.refused_gangs > 0 and outcome.trace.refused_pods == 3 * outcome.trace.refused_gangs
    assert (
        max(sum(1 for p in outcome.trace.pods if p.running is not None and p.running <= t < (p.finished or horizon)) for t in range(0, int(horizon), 30)) <= 3
    )


def test_a_workload_file_repeats_by_hour() -> None:
    workload = WorkloadFile.model_validate({"tenants": [{"namespace": "a", "arrivals_per_hour": [0, 40], "duration": "uniform(1m, 2m)", "workers": 3}]})
    assert workload.hours is None and workload.pattern_hours == 2
    pattern = from_file(workload, 1, "w")
    assert pattern.pattern_s == 7200
    assert all(3600 <= j.at < 7200 for j in pattern.jobs) and 20 <= len(pattern.jobs) <= 60
    assert all(len(j.stages[0].gangs[0].pods) == 4 for j in pattern.jobs)
    jobs, horizon = repeat(pattern, 5)
    assert horizon == 5 * 3600 and len(jobs) == 2 * len(pattern.jobs) + sum(1 for j in pattern.jobs if j.at + 14400 < horizon)


def test_the_same_seed_the_same_figures(dev_gke) -> None:
    def once(seed: int) -> dict:
        jobs, horizon = repeat(deep_dive(DeepDive(), seed), None)
        return run(model_inputs(dev_gke, ModelSettings(seed=seed)), jobs, horizon, PriceTable.shipped()).summary()

    assert once(4) == once(4)
    assert once(4) != once(5)


def test_cost_is_node_hours_times_the_price_table(dev_gke) -> None:
    jobs, horizon = repeat(deep_dive(DeepDive(), 0), None)
    inputs = model_inputs(dev_gke, ModelSettings())
    prices = PriceTable.shipped()
    outcome = run(inputs, jobs, horizon, prices)
    cost = outcome.cost
    t4 = next(line for line in cost.lines if line.machine_type == "n1-standard-4")
    # GCP charges the N1 machine and its two T4s apart.
    gcp = prices.region("gcp", "us-central1")
    assert t4.usd_per_hour == pytest.approx(gcp.machines["n1-standard-4"].on_demand + 2 * gcp.gpus["nvidia-tesla-t4"].on_demand)
    end = outcome.trace.horizon
    hours = sum(((n.removed or end) - n.requested) / 3600 for n in outcome.trace.nodes if n.group.machine_type == "n1-standard-4")
    assert t4.node_hours == pytest.approx(hours)
    assert cost.total_usd == pytest.approx(sum(line.usd for line in cost.lines) + 0.10 * end / 3600)
    assert cost.usd_per_day == pytest.approx(cost.total_usd / (end / 3600) * 24)
    # Paid from the scale-up request, available from the GPUs' start: paid > available >= used.
    assert cost.gpu_hours_paid > outcome.report.gpu_hours_available >= cost.gpu_hours_used > 0
    assert cost.spot_share == 0


def test_a_missing_price_names_the_type(dev_gke, tmp_path: Path) -> None:
    table = tmp_path / "prices.yaml"
    table.write_text("date: '2026-01-01'\nsources: [mine]\ngcp: [{region: us-central1, machines: {e2-standard-4: {on_demand: 0.1}}}]\n")
    prices = PriceTable.from_data(yaml.safe_load(table.read_text()), str(table))
    jobs, horizon = repeat(deep_dive(DeepDive(), 0), None)
    with pytest.raises(
        SimulationError,
        match=r"^the price table has no machine type n1-standard-2 in gcp us-central1 \(it prices it in no region\); "
        "choose a type offered there or add it with --prices FILE$",
    ):
        run(model_inputs(dev_gke, ModelSettings()), jobs, horizon, prices)


def test_set_and_sweep_reach_stack_and_model_keys() -> None:
    configs = configurations(
        PROJECT_DIR,
        "dev-gke",
        [("model.node.pod_start", "5s")],
        [("gke.gpu_pools[t4].autoscaling.min_nodes", [1, 3]), ("model.autoscaler.scan_interval", ["5s", "20s"])],
        64,
    )
    assert [c.label for c in configs] == [
        "gke.gpu_pools[t4].autoscaling.min_nodes=1 model.autoscaler.scan_interval=5s",
        "gke.gpu_pools[t4].autoscaling.min_nodes=1 model.autoscaler.scan_interval=20s",
        "gke.gpu_pools[t4].autoscaling.min_nodes=3 model.autoscaler.scan_interval=5s",
        "gke.gpu_pools[t4].autoscaling.min_nodes=3 model.autoscaler.scan_interval=20s",
    ]
    t4 = [next(g for g in c.inputs.groups if g.name == "t4") for c in configs]
    assert [g.min_nodes for g in t4] == [1, 1, 3, 3]
    assert [c.inputs.timings.scan_interval for c in configs] == [5, 20, 5, 20]
    assert all(c.inputs.timings.pod_start == Dist("fixed", 5) for c in configs)


def test_null_removes_a_section_a_list_item_or_a_setting() -> None:
    """``KEY=null`` (or ``~``) takes the key out, as if the stack had never set it: prod-eks without its queues (the
    tenants' quotas admit again), without its large class (its two NodePools gone), with a model setting back at
    its default; swept, the stack with and without a section side by side."""
    from gpu_platform.infra.simulate.settings import parse_value

    assert parse_value("null") is None and parse_value("~") is None
    # A time stays text (YAML would make it a datetime, which a sweep's label and JSON cannot print).
    assert parse_value("2026-01-05T19:00:00Z") == "2026-01-05T19:00:00Z" and parse_value("2026-01-05") == "2026-01-05"
    swept = configurations(PROJECT_DIR, "prod-eks", [], [("model.karpenter.start", ["2026-01-05T09:00:00Z", "2026-01-05T19:00:00Z"])], 2)
    assert [c.label for c in swept] == ["model.karpenter.start=2026-01-05T09:00:00Z", "model.karpenter.start=2026-01-05T19:00:00Z"]
    assert [c.inputs.karpenter.start.hour for c in swept] == [9, 19]
    (base,) = configurations(PROJECT_DIR, "prod-eks", [], [], 1)
    (cut,) = configurations(
        PROJECT_DIR,
        "prod-eks",
        [("queues", None), ("eks_node_groups.classes[large]", None), ("model.node.pod_start", "5s"), ("model.node.pod_start", None)],
        [],
        1,
    )
    assert base.stack.queues is not None and base.inputs.queues is not None
    assert cut.stack.queues is None and cut.inputs.queues is None
    assert [c.name for c in cut.stack.eks_node_groups.classes] == ["small", "scheduler"]
    assert {p.name for p in base.inputs.karpenter.pools} - {p.name for p in cut.inputs.karpenter.pools} == {"large-spot", "large-on-demand"}
    assert cut.inputs.timings.pod_start == NodeModel().pod_start
    both = configurations(PROJECT_DIR, "prod-eks", [], [("queues", [None, {}])], 2)
    assert [c.label for c in both] == ["queues=null", "queues={}"]
    assert [c.inputs.queues is None for c in both] == [True, False]
    # Removing what is not there changes nothing; a key under a plain value is still refused.
    (same,) = configurations(PROJECT_DIR, "prod-eks", [("headlamp.viewers", None)], [], 1)
    assert same.stack.headlamp == base.stack.headlamp
    with pytest.raises(SimulationError, match="is a value, not a mapping"):
        configurations(PROJECT_DIR, "prod-eks", [("eks.cluster_name.x", None)], [], 1)


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_command_writes_the_report_s_json_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(["dev-gke", "--json", str(tmp_path / "sim.json"), "--out", str(tmp_path / "out")], capsys)
    assert code == 0, err
    document = json.loads((tmp_path / "sim.json").read_text())
    assert REPORT_KEYS <= document.keys()
    assert {"pending_p90_s", "cost", "failover", "admission", "simulation"} <= document.keys()
    assert document["simulation"]["workload"]["name"] == "deep-dive"
    assert {"usd_per_day", "gpu_hours_paid", "gpu_hours_used", "spot_share", "lines", "prices_date", "region"} <= document["cost"].keys()
    # dev-gke has Dask tenants: the per-tenant figures, as report --stack gives them (tenants.png, the table).
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["gpus.png", "report.json", "tenants.png", "wait_times.png"]
    assert "pending median" in out and "cost total / per day" in out
    assert "Per tenant" in out and "the stack has no queues (gpu-platform:queues)" in out
    assert {"team-a", "team-b", "other", "idle"} <= {row["tenant"] for row in document["tenants"]["rows"]}


def test_a_sweep_prints_a_table_and_names_the_cheapest_meeting_the_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cheapest per workload among the configurations meeting the target, checked on --seeds seeds."""
    code, out, err = _cli(
        [
            "dev-gke",
            "--workload",
            str(PROJECT_DIR / "examples" / "simulate" / "light.yaml"),
            "--sweep",
            "gke.gpu_pools[t4].autoscaling.min_nodes=0,2",
            "--target-p90",
            "10m",
            "--seeds",
            "2",
            "--processes",
            "2",
            "--out",
            str(tmp_path / "out"),
            "--json",
            str(tmp_path / "sweep.json"),
        ],
        capsys,
    )
    assert code == 0, err
    document = json.loads((tmp_path / "sweep.json").read_text())
    rows = document["configurations"]
    assert [r["simulation"]["overrides"] for r in rows] == [
        {"gke.gpu_pools[t4].autoscaling.min_nodes": 0},
        {"gke.gpu_pools[t4].autoscaling.min_nodes": 2},
    ]
    cheapest = min((r for r in rows if r["pending_p90_s"] <= 600), key=lambda r: r["cost"]["usd_per_workload"])
    assert document["cheapest_meeting_target"] == cheapest["simulation"]["label"]
    recommendation = document["recommendation"]
    assert recommendation["seeds"] == [0, 1] and recommendation["label"] == cheapest["simulation"]["label"]
    assert all(p <= 600 for p in recommendation["pending_p90_s_by_seed"])
    assert "cheapest meeting p90 <= 600 s" in out and "meets the target on 2 of 2 seeds 0-1" in out
    assert (tmp_path / "out" / "sweep.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--set", "model.autoscaler.scan_intervl=5s"], "gpu-platform: model.autoscaler.scan_intervl: unknown key"),
        (["--set", "gke.gpu_pools[t4].autoscaling.max_nodes=0"], "gpu-platform: gpu-platform:gke.gpu_pools[0].autoscaling.max_nodes"),
        (
            ["--set", "gke.gpu_pools[a100].autoscaling.max_nodes=3"],
            "gpu-platform: gke.gpu_pools[a100].autoscaling.max_nodes: no item named 'a100' in gke.gpu_pools (items: t4)",
        ),
        (["--set", "model.spot.shortage=1.5"], "gpu-platform: model.spot.shortage"),
        (["--set", "nonsense"], "gpu-platform: --set 'nonsense': expected KEY=VALUE"),
        (["--set", "model.node.provision=uniform(2m, 1m)"], 'gpu-platform: model.node.provision: uniform(a, b) needs a <= b (got "uniform(2m, 1m)")'),
        (["--set", "gke.gpu_pools[9].autoscaling.max_nodes=3"], "gpu-platform: gke.gpu_pools[9].autoscaling.max_nodes: gke.gpu_pools has 1 items, no [9]"),
        (
            ["--target-p90", "soon", "--sweep", "model.seed=1,2"],
            'gpu-platform: --target-p90: a duration is seconds (90) or a Go duration such as 90s, 7m, 1.5h or 1h30m (units ns, us, ms, s, m, h; no d) (got "soon")',
        ),
        (["--processes", "-1"], "gpu-platform: --processes -1: 0 (one per core) or more"),
        (["--sweep", "model.seed=1"], "gpu-platform: --sweep model.seed: give at least two values (V1,V2,...); use --set for one"),
        (["--seeds", "0"], "gpu-platform: --seeds 0: 1 to 64 seeds"),
        (
            ["--sweep", "model.seed=1,2,3", "--sweep", "model.autoscaler.scan_interval=1,2,3", "--max-configs", "8"],
            "gpu-platform: --sweep: 3 x 3 = 9 configurations, more than --max-configs 8; sweep fewer values or raise --max-configs",
        ),
        (["--hours", "0"], "gpu-platform: --hours 0: a number of hours above 0, at most 744 (31 days)"),
        (["--target-p90", "60s", "--out", "sim/"], "gpu-platform: --out: a settings search (--target-p90 without --sweep) writes no plots; use --json"),
        (["--target-p90", "60s", "--pool", "a100"], "gpu-platform: --pool a100: not a GPU pool of the stack (GPU pools: scheduler, t4)"),
        (["--replay", "--prometheus", "http://x"], "gpu-platform: --replay needs --prometheus URL --start T --end T (and takes no --workload)"),
        (["--workload", "kfp"], "gpu-platform: --workload kfp: give the pipelines with --inputs FILE (plan-capacity's inputs: steps, run_duration, runs)"),
        (["--workload", "/nonexistent/w.yaml"], "gpu-platform: --workload /nonexistent/w.yaml: cannot read (No such file or directory)"),
    ],
)
def test_bad_input_is_one_line_exit_2(argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(["dev-gke", *argv], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(line), lines[0]
    assert "Traceback" not in err and not out


def test_an_empty_workload_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("tenants: [{namespace: a, arrivals_per_hour: 0, duration: 10m}]\n")
    code, _, err = _cli(["dev-gke", "--workload", str(path)], capsys)
    assert code == 2
    assert err.strip() == f"gpu-platform: --workload {path}: tenants: every arrival rate is 0: the workload is empty (got 0)"


def test_kfp_pipelines_run_on_the_named_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "kfp.yaml"
    inputs.write_text(
        "steps: [{name: train, cpu: '1', memory: 4Gi, gpus: 1}, {name: eval, cpu: '1', memory: 2Gi, gpus: 1}]\nrun_duration: 20m\nruns: 12\nwindow: 1h\n"
    )
    code, out, err = _cli(["dev-gke", "--workload", "kfp", "--inputs", str(inputs), "--pool", "t4", "--json", str(tmp_path / "k.json")], capsys)
    assert code == 0, err
    document = json.loads((tmp_path / "k.json").read_text())
    assert document["simulation"]["workload"]["runs"] == 12
    assert document["pods_created"] == 24 and document["admission"]["jobs_done"] == 12


@pytest.mark.parametrize("stack", ["dev-gke", "prod-gke", "dev-eks", "prod-eks"])
def test_every_stack_simulates_with_the_shipped_prices(stack: str) -> None:
    """Every machine and instance type of the shipped stacks is in the price table, in both capacity types it uses."""
    inputs = model_inputs(load_stack(PROJECT_DIR, stack), ModelSettings())
    jobs, horizon = repeat(deep_dive(DeepDive(), 0), 0.5)
    outcome = run(inputs, jobs, horizon, PriceTable.shipped())
    assert outcome.cost.total_usd > 0 and outcome.report.pods_created > 0


def test_the_shipped_price_table_says_when_and_where() -> None:
    prices = PriceTable.shipped()
    assert prices.date and prices.currency == "USD" and prices.sources
    # The regions of the shipped stacks: dev-gke and prod-gke us-central1, dev-eks ap-northeast-2, prod-eks us-west-2
    # (every region's: tests/infra/test_prices.py).
    assert {t.region for t in prices.gcp} >= {"us-central1", "europe-west4"}
    assert {t.region for t in prices.aws} >= {"us-east-1", "us-west-2", "ap-northeast-2"}
    assert all(t.cluster_per_hour == 0.10 for t in [*prices.gcp, *prices.aws])


def test_a_region_the_price_table_lacks_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(["dev-eks", "--set", "eks.region=il-central-1", "--set", "eks.zones=[il-central-1a, il-central-1b]"], capsys)
    assert code == 2
    table = PriceTable.shipped()
    have = ", ".join(t.region for t in table.aws)
    assert err.strip() == (
        f"gpu-platform: the price table ({table.date}) has no aws prices for region il-central-1 "
        f"(it has {len(table.aws)} regions: {have}); write them with `gpu-platform prices refresh --cloud aws` "
        "or give --prices FILE"
    )


@pytest.mark.parametrize(("early_abort", "gives_up"), [("false", (420.0, None)), ("true", (30.0, 90.0 + 10.0))])
def test_the_command_reports_how_long_spot_failover_took(
    early_abort: str, gives_up: tuple[float, float | None], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """dev-eks with spot always short: the autoscaler gives up on the spot group after the stack's
    max_node_provision_time (7m) without early abort, after the cloud's failure report with it. Without early
    abort a give-up is counted from the group's newest scale-up (clusterstate.go:220-257), so a spot group grown
    again while a request hangs gives up later than 7m after that request: at least 7m, and 7m when not grown."""
    code, out, err = _cli(
        [
            "dev-eks",
            "--workload",
            str(PROJECT_DIR / "examples/simulate/light.yaml"),
            "--set",
            "model.spot.shortage=1",
            "--set",
            f"model.autoscaler.early_abort={early_abort}",
            "--json",
            str(tmp_path / "f.json"),
        ],
        capsys,
    )
    assert code == 0, err
    failover = json.loads((tmp_path / "f.json").read_text())["failover"]
    assert failover["spot_scale_ups_short"] > 0
    low, high = gives_up
    if high is None:
        assert min(failover["give_up_seconds"]) == low and all(s >= low for s in failover["give_up_seconds"])
    else:
        assert all(low <= s <= high for s in failover["give_up_seconds"])
    assert "gave up after" in out


def test_a_price_table_of_one_s_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped = PriceTable.shipped().model_dump(mode="json")
    gcp = next(t for t in shipped["gcp"] if t["region"] == "us-central1")
    gcp["gpus"]["nvidia-tesla-t4"]["on_demand"] = 0.0
    gcp["machines"] = {k: {"on_demand": 0.0, "spot": 0.0} for k in gcp["machines"]}
    gcp["cluster_per_hour"] = 0.0
    table = tmp_path / "free.yaml"
    table.write_text(json.dumps(shipped))
    code, _, err = _cli(["dev-gke", "--prices", str(table), "--json", str(tmp_path / "c.json")], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "c.json").read_text())["cost"]["total_usd"] == 0
    table.write_text("date: x\n")
    code, _, err = _cli(["dev-gke", "--prices", str(table)], capsys)
    assert code == 2 and err.strip() == f"gpu-platform: --prices {table}: sources: required (got nothing)"


def test_a_workload_the_stack_cannot_run_stalls_with_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "huge.yaml"
    inputs.write_text("steps: [{name: big, cpu: '64', memory: 1Gi, gpus: 1}]\nrun_duration: 10m\nruns: 2\n")
    code, out, err = _cli(["dev-gke", "--workload", "kfp", "--inputs", str(inputs), "--pool", "t4"], capsys)
    assert code == 1
    assert err.strip().splitlines() == [
        "gpu-platform: as configured: the workload stalled at 0.00 h: 2 pods (kubeflow/run-0001, kubeflow/run-0002): "
        "asking for 1 GPU, 64 CPU, 1 GiB; the largest node offers 3.62 CPU (t4: n1-standard-4), after the kubelet's "
        "reserves and DaemonSets; ask for less or give a pool a larger machine type"
    ]
    assert "STALLED" in out


def test_dask_pods_stay_off_tainted_training_pools() -> None:
    inputs = model_inputs(load_stack(PROJECT_DIR, "prod-gke"), ModelSettings())
    jobs, horizon = repeat(deep_dive(DeepDive(), 0), 0.5)
    outcome = run(inputs, jobs, horizon, PriceTable.shipped())
    tainted = {g.name for g in inputs.groups if "gpu-platform.io/workload=training" in g.taints}
    assert tainted
    assert not [n for n in outcome.trace.nodes if n.group.name in tainted and n.gpu_ready is not None and n.requested > 0]


def test_a_sweep_printed_to_a_pipe_keeps_every_swept_value_and_figure_whole(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a terminal (a pipe, a CI log): the table is laid out at the width it was made for, not rich's
    80-column fallback that cut OPTIMIZE_UTILIZATION and every figure to an ellipsis."""
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, err = _cli(
        [
            "dev-gke",
            "--workload",
            str(PROJECT_DIR / "examples" / "simulate" / "light.yaml"),
            "--sweep",
            "gke.autoscaling_profile=BALANCED,OPTIMIZE_UTILIZATION",
            "--processes",
            "1",
        ],
        capsys,
    )
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.strip().startswith(("BALANCED", "OPTIMIZE_UTILIZATION"))]
    assert [row.split()[0] for row in rows] == ["BALANCED", "OPTIMIZE_UTILIZATION"]
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 110
