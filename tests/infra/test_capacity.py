"""The capacity planner (infra/capacity.py) and `gpu-platform plan-capacity`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from gpu_platform.components.pools.shapes import CapacityStrategy, NodePoolShape
from gpu_platform.infra.capacity import (
    CapacityInputs,
    DaemonSetOverhead,
    NodeReserves,
    PlanError,
    ReserveFormula,
    StepRequests,
    allocatable,
    gke_reserved_cpu_millicores,
    gke_reserved_memory_mib,
    plan,
    render,
)
from gpu_platform.infra.cli import main
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from gpu_platform.infra.stack.read import load_stack
from tests.conftest import PROJECT_DIR
from tests.factories import gke, t4_pool
from tests.infra.test_cli import cli


def shape(
    vcpus: int = 16,
    memory_mib: int = 61440,
    gpus: int = 0,
    max_nodes: int = 40,
    name: str = "train",
    formula: ReserveFormula = ReserveFormula.GKE,
) -> NodePoolShape:
    return NodePoolShape(
        name=name,
        role="gpu",
        machine_type=f"synthetic-{vcpus}",
        vcpus=vcpus,
        memory_mib=memory_mib,
        gpus_per_node=gpus,
        accelerator="nvidia-tesla-t4" if gpus else None,
        capacity=CapacityStrategy.ON_DEMAND,
        min_nodes=0,
        max_nodes=max_nodes,
        reserve_formula=formula,
    )


def inputs(**overrides: object) -> CapacityInputs:
    data: dict[str, object] = {"steps": [{"name": "train", "cpu": "3", "memory": "8Gi"}], "run_duration": "36m"}
    data.update(overrides)
    return CapacityInputs.model_validate(data)


# --- allocatable ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vcpus", "cpu"),
    # 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% above: 60 + 10 + 2x5 + 0.25% of the rest.
    [(1, 60), (2, 70), (4, 80), (16, 110), (96, 310), (3, 75)],
)
def test_gke_cpu_reserve_follows_the_documented_formula(vcpus: int, cpu: int) -> None:
    assert gke_reserved_cpu_millicores(vcpus) == cpu


@pytest.mark.parametrize(
    ("memory", "reserved"),
    [
        (512, 255),  # under 1 GiB: 255 MiB
        (4096, 1024),  # 25% of the first 4 GiB
        (7680, 1024 + 717),  # n1-standard-2: + 20% of 3.5 GiB = 716.8, rounded up
        (15360, 2560),  # n1-standard-4: 1024 + 819.2 + 716.8
        (16384, 2663),  # e2-standard-4: 1024 + 819.2 + 819.2 = 2662.4, rounded up
        (131072, 1024 + 819.2 + 819.2 + 6881.28),  # 128 GiB: 9543.68 -> 9544
        (139264, 9543.68 + 163.84),  # 136 GiB: + 2% of 8 GiB
    ],
)
def test_gke_memory_reserve_follows_the_documented_formula(memory: int, reserved: float) -> None:
    import math

    assert gke_reserved_memory_mib(memory) == math.ceil(round(reserved, 6))


def test_allocatable_is_capacity_minus_reserves_eviction_and_daemonsets() -> None:
    node = allocatable(shape(vcpus=4, memory_mib=15360, gpus=2), NodeReserves(), DaemonSetOverhead())
    assert (node.cpu, node.memory_mib, node.gpus) == (4000 - 80 - 300, 15360 - 2560 - 100 - 512, 2)
    bare = allocatable(shape(vcpus=4, memory_mib=15360), NodeReserves(formula=ReserveFormula.NONE, eviction_memory=0), DaemonSetOverhead(cpu=0, memory=0))
    assert (bare.cpu, bare.memory_mib) == (4000, 15360)


def test_eks_formula_reserves_memory_per_pod() -> None:
    # The EKS AMIs: CPU by GKE's tiers, memory 255 MiB + 11 MiB x max pods, plus the eviction threshold.
    eks = ReserveFormula.EKS
    node = allocatable(shape(vcpus=8, memory_mib=62464, gpus=1, formula=eks), NodeReserves(max_pods=58), DaemonSetOverhead())
    assert (node.formula, node.reserved_cpu, node.reserved_memory_mib) == ("eks", 90, 255 + 11 * 58 + 100)
    explicit = allocatable(shape(formula=eks), NodeReserves(formula=ReserveFormula.GKE), DaemonSetOverhead())
    assert explicit.formula == "gke", "a formula in the inputs wins over the pool's cloud's"
    assert plan(shape(formula=eks), inputs(runs=1, nodes=1)).node.formula == "eks", "the pool's cloud's by default"
    assert allocatable(shape()) == allocatable(shape(), NodeReserves(), DaemonSetOverhead()), "documented defaults"


@pytest.mark.parametrize(
    ("machine_type", "max_pods"),
    # The EKS AMIs' eni-max-pods: ENIs x (IPv4 per ENI - 1) + 2; the kubelet's 110 for a type the catalog lacks.
    [("g4dn.xlarge", 29), ("p3.8xlarge", 234), ("p3.2xlarge", 58), ("m6i.2xlarge", 58), ("synthetic-16", 110)],
)
def test_eks_formula_counts_the_instance_types_max_pods(machine_type: str, max_pods: int) -> None:
    pool = dataclasses.replace(shape(formula=ReserveFormula.EKS), machine_type=machine_type)
    node = allocatable(pool, NodeReserves(), DaemonSetOverhead())
    assert (node.max_pods, node.reserved_memory_mib) == (max_pods, 255 + 11 * max_pods + 100)
    explicit = allocatable(pool, NodeReserves(max_pods=110), DaemonSetOverhead())
    assert (explicit.max_pods, explicit.reserved_memory_mib) == (110, 255 + 11 * 110 + 100), "max_pods in the inputs wins"
    assert allocatable(dataclasses.replace(pool, reserve_formula=ReserveFormula.GKE)).max_pods is None


def test_the_stack_cloud_picks_the_formula(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan-capacity", "dev-gke", "--pool", "t4", "--cpu", "1", "--memory", "1Gi", "--run-duration", "1m", "--runs", "1", "--nodes", "1"]) == 0
    assert "kubelet reserves (gke) 80m, 2660 MiB" in capsys.readouterr().out


def test_reserve_and_daemonset_defaults() -> None:
    reserves, daemonsets = NodeReserves(), DaemonSetOverhead()
    assert (reserves.formula, reserves.max_pods, reserves.eviction_memory, reserves.extra_cpu, reserves.extra_memory) == (None, None, 100, 0, 0)
    assert (daemonsets.cpu, daemonsets.memory) == (300, 512)
    step = StepRequests(cpu=1, memory=1)
    assert (step.name, step.gpus) == ("step", 0)
    defaults = inputs(runs=1, nodes=1)
    assert (defaults.window, defaults.reserves, defaults.daemonsets) == (None, reserves, daemonsets)


# --- the plan: the seed's worked example and the other questions --------------------------------------


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        # The seed: 500 runs finish on 20 nodes in 3 h; 1000 runs in 3 h take 40 nodes (linear scaling).
        ({"runs": 500, "window": "3h"}, {"nodes_needed": 20, "waves_needed": 5}),
        ({"runs": 1000, "window": "3h"}, {"nodes_needed": 40, "waves_needed": 5}),
        ({"runs": 500, "nodes": 20}, {"time_needed": 3 * 3600}),
        ({"runs": 1000, "nodes": 40}, {"time_needed": 3 * 3600}),
        ({"window": "3h", "nodes": 20}, {"runs_that_fit": 500}),
        ({"window": "3h", "nodes": 40}, {"runs_that_fit": 1000}),
        # Rounding: waves round up (501 runs need a sixth wave), runs per window round down.
        ({"runs": 501, "nodes": 20}, {"time_needed": 6 * 36 * 60}),
        ({"runs": 501, "window": "3h"}, {"nodes_needed": 21, "waves_needed": 5}),
        ({"window": "3h35m", "nodes": 20}, {"runs_that_fit": 500}),
        ({"runs": 10, "window": "3h"}, {"nodes_needed": 1, "waves_needed": 2}),
    ],
)
def test_seed_worked_example(question: dict[str, object], answer: dict[str, int]) -> None:
    # 16 vCPU, 60 GiB: 15590m left for jobs, 5 steps of 3 cores per node (memory would allow 6).
    result = plan(shape(), inputs(**question))
    assert (result.jobs_per_node, result.limited_by) == (5, "cpu of step train")
    for key, value in answer.items():
        assert getattr(result, key) == value, key


def test_recommended_maximum_is_checked_against_the_pool() -> None:
    result = plan(shape(max_nodes=30), inputs(runs=1000, window="3h", nodes=10))
    assert result.recommended_max_nodes == 40 and result.pool_max_too_low
    assert not plan(shape(max_nodes=40), inputs(runs=1000, window="3h")).pool_max_too_low
    assert plan(shape(max_nodes=40), inputs(runs=1, nodes=12)).recommended_max_nodes == 12


def test_the_largest_step_and_resource_sets_jobs_per_node() -> None:
    steps = [
        {"name": "prep", "cpu": "500m", "memory": "1Gi"},
        {"name": "train", "cpu": 1, "memory": "2Gi", "gpus": 1},
        {"name": "eval", "cpu": "1", "memory": "6000Mi"},
    ]
    result = plan(shape(vcpus=4, memory_mib=15360, gpus=2), inputs(steps=steps, runs=4, nodes=1))
    # 12188 MiB left: eval fits twice by memory, train twice by GPUs; the first limit found is reported.
    assert result.jobs_per_node == 2
    assert result.limited_by in {"gpus of step train", "memory of step eval"}
    assert result.time_needed == 2 * 36 * 60


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"name": "train", "cpu": 1, "memory": 1024, "gpus": 3}, "step train requests 3 gpus; a node of pool train (synthetic-4) has 2 allocatable gpus"),
        (
            {"name": "big", "cpu": 1, "memory": "16Gi"},
            "step big requests 16384 MiB memory; a node of pool train (synthetic-4) has 12188 MiB allocatable memory",
        ),
        ({"name": "wide", "cpu": 4, "memory": 1}, "step wide requests 4000m cpu; a node of pool train (synthetic-4) has 3620m allocatable cpu"),
    ],
)
def test_fails_when_a_step_fits_no_node(step: dict[str, object], message: str) -> None:
    with pytest.raises(PlanError) as exc:
        plan(shape(vcpus=4, memory_mib=15360, gpus=2), inputs(steps=[step], runs=1, nodes=1))
    assert str(exc.value).startswith(message)


def test_fails_when_one_run_is_longer_than_the_window() -> None:
    with pytest.raises(PlanError, match="one run takes 36m, longer than the window 30m"):
        plan(shape(), inputs(runs=10, window="30m"))


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (
            {"steps": [{"cpu": "1.5x", "memory": "4Gi", "gpu": 1}], "run_duration": "36m", "runs": 1, "nodes": 1},
            [
                'steps[0].cpu: CPU must be cores ("1.5") or millicores ("1500m") (got "1.5x")',
                "steps[0].gpu: unknown key; did you mean gpus? allowed: cpu, gpus, memory, name (got a value, not shown: an unknown key may hold a secret)",
            ],
        ),
        (
            {"steps": [{"cpu": "1", "memory": "4Gi"}], "run_duration": "36 minutes", "runs": 1, "nodes": 1},
            ['run_duration: a duration is seconds (90) or a Go duration such as 90s, 7m, 1.5h or 1h30m (units ns, us, ms, s, m, h; no d) (got "36 minutes")'],
        ),
        (
            {"steps": [{"cpu": "1", "memory": "4Gi"}], "run_duration": "36m", "runs": 1},
            ["runs: give two of runs (N), window (T) and nodes (K): N and T ask for nodes, N and K for the time, T and K for the runs that fit (got 1)"],
        ),
        ({"steps": [], "run_duration": "36m", "runs": 1, "nodes": 1}, ["steps: List should have at least 1 item after validation, not 0 (got [])"]),
        (
            {"steps": [{"cpu": "0.0001", "memory": "1"}], "run_duration": "1m", "runs": 1, "nodes": 1},
            ['steps[0].cpu: CPU finer than one millicore is not a Kubernetes quantity (got "0.0001")'],
        ),
    ],
)
def test_fails_when_inputs_are_wrong_one_line_per_problem(data: dict[str, object], lines: list[str]) -> None:
    with pytest.raises(ValidationError) as exc:
        CapacityInputs.model_validate(data)
    assert format_validation_error(exc.value, CapacityInputs) == lines


def test_a_bare_cpu_number_is_cores_and_models_round_trip() -> None:
    assert DaemonSetOverhead(cpu=2).cpu == 2000
    assert DaemonSetOverhead().model_dump() == {"cpu": "300m", "memory": 512}
    original = inputs(runs=1, nodes=1, daemonsets={"cpu": "450m", "memory": "1Gi"})
    assert CapacityInputs.model_validate(original.model_dump()) == original


def test_quantities_are_exact() -> None:
    step = StepRequests(cpu="1.5", memory="1.5Gi", gpus=1)
    assert (step.cpu, step.memory) == (1500, 1536)
    assert StepRequests(cpu="250m", memory="1000Ki").memory == 1  # rounded up to a whole MiB
    assert inputs(run_duration="1h30m", runs=1, nodes=1).run_duration == 5400
    assert inputs(run_duration=90, runs=1, nodes=1).run_duration == 90


# --- the stack's pools --------------------------------------------------------------------------------


def test_stack_config_is_read_as_the_program_reads_it() -> None:
    config = load_stack(PROJECT_DIR, "dev-gke")
    assert isinstance(config, StackConfig)
    (t4,) = [s for s in config.pool_shapes() if s.name == "t4"]
    assert (t4.machine_type, t4.gpus_per_node, t4.min_nodes, t4.max_nodes) == ("n1-standard-4", 2, 2, 40)


@pytest.mark.parametrize(("scope", "zones", "per_zone"), [("per_zone", 2, 5), ("per_zone", 3, 4), ("total", None, None)])
def test_per_zone_pools_get_the_per_zone_maximum(scope: str, zones: int | None, per_zone: int | None) -> None:
    locations = ["us-central1-a", "us-central1-b", "us-central1-c"][: zones or 2]
    pool = t4_pool(autoscaling={"scope": scope, "max_nodes": 4})
    config = StackConfig.model_validate({"cloud": "gcp", "gke": gke(node_locations=locations, gpu_pools=[pool])})
    (t4,) = [s for s in config.pool_shapes() if s.name == "t4"]
    assert t4.per_zone_over == zones
    result = plan(t4, inputs(steps=[{"cpu": 1, "memory": "4Gi", "gpus": 1}], runs=100, window="3h"))
    assert result.recommended_max_nodes == 10
    assert result.recommended_max_nodes_per_zone == per_zone
    lines = [line for line in render(result, t4) if line.startswith("per zone:")]
    if per_zone is None:
        assert lines == []
    else:
        assert lines == [
            f"per zone: pool t4's autoscaling bounds are per_zone over {zones} zones: the recommendation is "
            f"max_nodes {per_zone} per zone (ceil(10 / {zones})), not 10"
        ]


def test_eks_node_groups_have_total_bounds() -> None:
    config = load_stack(PROJECT_DIR, "prod-eks")
    assert all(s.per_zone_over is None for s in config.pool_shapes())


def test_synthetic_stack_config_pool() -> None:
    config = StackConfig.model_validate({"cloud": "gcp", "gke": gke(gpu_pools=[t4_pool(autoscaling={"scope": "total", "max_nodes": 8})])})
    (t4,) = [s for s in config.pool_shapes() if s.name == "t4"]
    result = plan(t4, inputs(steps=[{"cpu": 1, "memory": "4Gi", "gpus": 1}], runs=100, window="3h"))
    assert (result.jobs_per_node, result.nodes_needed, result.pool_max_too_low) == (2, 10, True)


# --- the command ---------------------------------------------------------------------------------------


def test_plan_capacity_flags_a_pool_maximum_that_is_too_low(tmp_path: Path) -> None:
    result = cli(
        "plan-capacity",
        "dev-gke",
        "--pool",
        "t4",
        "--cpu",
        "1",
        "--memory",
        "4Gi",
        "--gpus",
        "1",
        "--run-duration",
        "36m",
        "--runs",
        "1000",
        "--window",
        "3h",
        "--json",
        str(tmp_path / "plan.json"),
    )
    assert result.returncode == 1, result.stderr
    assert "jobs per node: 2 (limited by gpus of step step)" in result.stdout
    assert "1000 runs in 3h: 100 nodes (5 waves of up to 200 runs, done in 3h)" in result.stdout
    assert "recommended autoscaling maximum: 100 nodes; too low: pool t4 allows at most 40 nodes" in result.stdout
    # dev-gke's t4 pool counts 1..20 per zone over two zones: the stack file needs 50 there, not 100.
    assert (
        "per zone: pool t4's autoscaling bounds are per_zone over 2 zones: the recommendation is max_nodes 50 per zone (ceil(100 / 2)), not 100"
    ) in result.stdout
    document = json.loads((tmp_path / "plan.json").read_text())
    assert (document["per_zone_over"], document["recommended_max_nodes_per_zone"]) == (2, 50)
    assert document["nodes_needed"] == 100 and document["pool_max_too_low"] is True
    assert document["node"]["allocatable_cpu"] == 3620


def test_plan_capacity_from_a_yaml_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in.yaml").write_text("steps:\n  - {name: train, cpu: 10, memory: 40Gi, gpus: 1}\nrun_duration: 36m\nruns: 40\nwindow: 3h\n")
    code = main(["plan-capacity", "prod-gke", "--pool", "a100", "--inputs", str(tmp_path / "in.yaml")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "40 runs in 3h: 8 nodes (5 waves of up to 8 runs, done in 3h)" in out
    assert "ok: pool a100 allows up to 24" in out


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--pool", "v100", "--cpu", "1", "--memory", "1", "--run-duration", "1m", "--runs", "1", "--nodes", "1"],
            "gpu-platform: --pool v100: stack dev-gke has no such pool (pools: system, scheduler, t4)",
        ),
        (
            ["--pool", "t4", "--cpu", "1", "--memory", "1", "--gpus", "4", "--run-duration", "1m", "--runs", "1", "--nodes", "1"],
            "gpu-platform: step step requests 4 gpus; a node of pool t4 (n1-standard-4) has 2 allocatable gpus: it fits no node of this pool",
        ),
        (
            ["--pool", "t4", "--cpu", "1", "--memory", "1", "--run-duration", "1m", "--runs", "x", "--nodes", "1"],
            'gpu-platform: --runs: Input should be a valid integer, unable to parse string as an integer (got "x")',
        ),
        (["--pool", "t4", "--inputs", "/nonexistent/in.yaml"], "gpu-platform: --inputs /nonexistent/in.yaml: cannot read (No such file or directory)"),
    ],
)
def test_plan_capacity_errors_are_one_line_exit_2(argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan-capacity", "dev-gke", *argv])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.strip().splitlines() == [line]
    assert captured.out == ""


def test_fails_when_the_inputs_file_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_bytes("steps:\n  - {name: \u00e9tape, cpu: 1, memory: 1Gi}\n".encode("latin-1"))
    code = main(["plan-capacity", "dev-gke", "--pool", "t4", "--inputs", str(path)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.strip().splitlines() == [f"gpu-platform: --inputs {path}: not UTF-8 text (byte 0xe9 at offset 18); save it as UTF-8 YAML"]


def test_plan_capacity_unknown_stack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan-capacity", "nope", "--pool", "t4"]) == 2
    assert capsys.readouterr().err.startswith("gpu-platform: stack 'nope': no stacks/Pulumi.nope.yaml (stacks: ")


def test_readme_inputs_example_is_valid() -> None:
    import re

    import yaml

    shown = (PROJECT_DIR / "docs" / "commands" / "plan-capacity.md").read_text()
    m = re.search(r"\(`--inputs FILE`.*?```yaml\n(.+?)\n```", shown, re.S)
    assert m, "docs/commands/plan-capacity.md has no plan-capacity inputs example"
    example = CapacityInputs.model_validate(yaml.safe_load(m.group(1)))
    assert [s.name for s in example.steps] == ["prepare", "train"]
    assert (example.daemonsets.cpu, example.daemonsets.memory) == (400, 768)


def test_the_seeds_example_on_prod_eks(capsys: pytest.CaptureFixture[str]) -> None:
    """500 runs in 3 h take 20 nodes of the large class; 1000 take 40, above its maximum of 15."""
    common = ["--pool", "large", "--cpu", "6", "--memory", "16Gi", "--run-duration", "36m", "--window", "3h", "--project-dir", str(PROJECT_DIR)]
    assert main(["plan-capacity", "prod-eks", *common, "--runs", "500"]) == 1
    out = capsys.readouterr().out
    assert "jobs per node: 5 (limited by cpu" in out and "500 runs in 3h: 20 nodes" in out
    # p3.8xlarge: 8 ENIs x (30 - 1) + 2 = 234 pods; 255 + 11 x 234 + the 100 MiB eviction threshold.
    assert "kubelet reserves (eks, max 234 pods) 150m, 2929 MiB" in out
    assert main(["plan-capacity", "prod-eks", *common, "--runs", "1000"]) == 1
    out = capsys.readouterr().out
    assert "1000 runs in 3h: 40 nodes" in out
    assert "too low: pool large allows at most 15 nodes" in out
