"""A readable what-if (issue 29): the sweep table fits 100 columns with every swept value whole, the
p99 and fallback columns appear when they differ, the plot's axes do not exaggerate and its labels
stay inside the figure without overlapping; cost per workload beside cost per day; a recommendation
never names a setting the stack's cloud keeps from its users."""

from __future__ import annotations

import dataclasses
import io
import itertools
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.infra.simulate.prices import PriceTable
from gpu_platform.infra.simulate.runs import (
    Outcome,
    Work,
    configurations,
    run_all,
    sweep_columns,
    sweep_figure,
    sweep_table,
    unsettable,
)
from gpu_platform.infra.simulate.workloads import WorkloadFile, from_file, repeat
from tests.conftest import PROJECT_DIR

KEYS = ["gke.gpu_pools[t4].autoscaling.min_nodes", "gke.autoscaling_profile"]
LIGHT = PROJECT_DIR / "examples" / "simulate" / "light.yaml"


def _light_work() -> list[Work]:
    configs = configurations(PROJECT_DIR, "dev-gke", [], [(KEYS[0], [0, 1]), (KEYS[1], ["BALANCED", "OPTIMIZE_UTILIZATION"])], 64)
    workload = WorkloadFile.model_validate(yaml.safe_load(LIGHT.read_text()))
    work = []
    for c in configs:
        pattern = from_file(workload, 0, LIGHT.name)
        jobs, horizon = repeat(pattern, None)
        gangs = sum(1 for j in pattern.jobs for st in j.stages for g in st.gangs if g.work is not None)
        work.append(Work(c.inputs, jobs, horizon, pattern.tail_s, PriceTable.shipped(), c.label, c.overrides, gangs))
    return work


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    """dev-gke under the light workload file: GPU-pool minimum 0 or 1 per zone, both GKE profiles."""
    return run_all(_light_work(), 1)


def test_runs_in_worker_processes_give_what_runs_in_this_one_in_the_same_order(outcomes: list[Outcome]) -> None:
    """run_all's pool (process_pool: workers forked from a fork server that imported the simulator once) gives
    the same outcomes, in the order of the work, as running each configuration here."""

    def figures(o: Outcome) -> tuple[object, ...]:  # the trace is compared by identity: its figures instead
        return (o.label, o.overrides, o.report, o.cost, o.workloads, len(o.trace.pods), len(o.trace.nodes))

    assert [figures(o) for o in run_all(_light_work(), 2)] == [figures(o) for o in outcomes]


def _text(table: object, width: int = 100) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text().splitlines()


def test_the_sweep_table_fits_100_columns_with_every_swept_value_whole(outcomes: list[Outcome]) -> None:
    lines = _text(sweep_table(outcomes, KEYS, outcomes[0], "simulate dev-gke"))
    assert max(len(line) for line in lines) <= 100
    rows = [line for line in lines if line.lstrip()[:1].isdigit()]
    assert len(rows) == 4
    for row, o in zip(rows, outcomes, strict=True):
        cells = row.split()
        assert cells[:2] == [str(o.overrides[KEYS[0]]), o.overrides[KEYS[1]]]
        assert f"{o.usd_per_workload:,.2f}" in cells and f"{o.cost.usd_per_day:,.0f}" in cells
    heading = " ".join(lines[: lines.index(next(line for line in lines if "───" in line))])
    assert "min" in heading and "nodes" in heading and "autoscaling profile" in heading


def _same(o: Outcome, label: str) -> Outcome:
    return dataclasses.replace(o, label=label, overrides={KEYS[0]: label})


def test_p99_and_fallback_columns_appear_only_when_they_differ(outcomes: list[Outcome]) -> None:
    headings = [h for h, _ in sweep_columns(outcomes, KEYS)]
    p99s = {o.report.pending_p99_s for o in outcomes}
    assert ("p99 s" in headings) == (len(p99s) > 1)
    twins = [_same(outcomes[0], "a"), _same(outcomes[0], "b")]
    assert "p99 s" not in [h for h, _ in sweep_columns(twins, KEYS[:1])]
    assert "fallback s" not in headings  # no spot group in dev-gke: no fallback anywhere
    other = dataclasses.replace(outcomes[1], report=dataclasses.replace(outcomes[1].report, pending_p99_s=(outcomes[0].report.pending_p99_s or 0) + 100))
    assert "p99 s" in [h for h, _ in sweep_columns([outcomes[0], other], KEYS)]


def _drawn_texts(fig: object) -> list[object]:
    """The texts the figure draws: titles, axis labels, tick labels inside the view, legend and annotations."""
    texts: list[object] = []
    for ax in fig.axes:  # type: ignore[attr-defined]
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            texts += [t.label1 for t in axis.get_major_ticks() if low <= t.get_loc() <= high]
        if ax.get_legend() is not None:
            texts += list(ax.get_legend().get_texts())
    return texts


def _texts_inside_and_apart(fig: object) -> None:
    fig.canvas.draw()  # type: ignore[attr-defined]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    width, height = fig.bbox.width, fig.bbox.height  # type: ignore[attr-defined]
    boxes = []
    for text in _drawn_texts(fig):
        if not text.get_visible() or not text.get_text().strip():  # type: ignore[attr-defined]
            continue
        box = text.get_window_extent(renderer)  # type: ignore[attr-defined]
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, f"{text.get_text()!r} runs off the figure"  # type: ignore[attr-defined]
        boxes.append((text.get_text(), box))  # type: ignore[attr-defined]
    assert len(boxes) > 10
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"{a!r} overlaps {b!r}"


def test_the_sweep_plot_labels_stay_inside_and_apart(outcomes: list[Outcome]) -> None:
    fig = sweep_figure(outcomes, outcomes[1], 300.0, KEYS)
    _texts_inside_and_apart(fig)
    ax = fig.axes[0]
    assert ax.get_ylim()[0] == 0


def test_two_close_configurations_do_not_look_far_apart(outcomes: list[Outcome]) -> None:
    """Two configurations 0.3 points of utilisation apart: the axis spans at least 20 points, within 0-100,
    and the wait axis starts at 0."""
    a = outcomes[0]
    b = dataclasses.replace(_same(a, "b"), report=dataclasses.replace(a.report, utilisation_percent=a.report.utilisation_percent + 0.3))
    fig = sweep_figure([a, b], None, None, KEYS[:1])
    low, high = fig.axes[0].get_xlim()
    assert high - low >= 20 and 0 <= low and high <= 100
    assert fig.axes[0].get_ylim()[0] == 0
    _texts_inside_and_apart(fig)


def test_cost_per_workload_is_the_run_s_cost_over_the_workloads_it_finished(outcomes: list[Outcome]) -> None:
    for o in outcomes:
        # The light workload's 4 hours once: clusters still computing at the end are not done.
        assert o.workloads == pytest.approx(o.trace.gangs_done / o.gangs_per_workload)
        assert 0.5 < o.workloads <= 1  # type: ignore[operator]
        assert o.usd_per_workload == pytest.approx(o.cost.total_usd / o.workloads)  # type: ignore[operator]
    half = dataclasses.replace(outcomes[0], gangs_per_workload=outcomes[0].trace.gangs_done * 2)
    # twice the clusters to a workload: half a workload done, twice the cost per workload
    assert half.workloads == pytest.approx(0.5) and half.usd_per_workload == pytest.approx(2 * outcomes[0].cost.total_usd)
    assert dataclasses.replace(outcomes[0], gangs_per_workload=0).usd_per_workload is None


@pytest.mark.parametrize(
    ("cloud", "key", "refused"),
    [
        (Cloud.GCP, "model.autoscaler.scale_down_unneeded_time", True),
        (Cloud.GCP, "model.binding", True),
        (Cloud.GCP, "gke.autoscaling_profile", False),
        (Cloud.GCP, "model.node.prepuller", False),
        (Cloud.AWS, "model.autoscaler.scale_down_unneeded_time", False),
    ],
)
def test_gke_keeps_the_autoscaler_s_flags_from_its_users(cloud: Cloud, key: str, refused: bool) -> None:
    why = unsettable(cloud, key)
    assert (why is not None) == refused
    if refused:
        assert key in why and "gke.autoscaling_profile" in why  # type: ignore[operator]


def test_a_gke_sweep_of_an_autoscaler_flag_recommends_nothing_it_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.cli import main

    code = main(
        [
            "simulate",
            "dev-gke",
            "--workload",
            str(LIGHT),
            "--sweep",
            "model.autoscaler.scale_down_unneeded_time=1m,10m",
            "--target-p90",
            "1h",
            "--processes",
            "1",
            "--json",
            str(tmp_path / "s.json"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "not recommended: GKE does not let a user set model.autoscaler.scale_down_unneeded_time" in out
    assert "no configuration meets p90 <= 3600 s" in out


def test_a_configuration_that_meets_the_target_on_too_few_seeds_is_not_recommended(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The light workload on dev-gke, with no warm node or two per zone. The case is built from the model's own
    p90s, not from numbers written here: a first sweep (any target met) gives no warm node's p90 on seeds 0-5;
    the target is then its p90 on seed 0, and the seeds the fewest with which it meets that target on fewer
    than 3 in 4 of them. Run again with that target and those seeds, no warm node meets the target on seed 0
    but is not recommended, and two warm nodes per zone (a p90 of a few seconds) are, though they cost more."""
    from gpu_platform.infra.cli import main
    from gpu_platform.infra.simulate.runs import HOLDS

    # The image streamed (mirrored to Artifact Registry in the region), as when this case was built.
    image = "dask.rapids_image=us-central1-docker.pkg.dev/gpu-platform-dev/rapids/base:26.02-cuda12-py3.13"
    sweep = ["simulate", "dev-gke", "--workload", str(LIGHT), "--set", image, "--sweep", "gke.gpu_pools[t4].autoscaling.min_nodes=0,2", "--processes", "1"]
    assert main([*sweep, "--target-p90", "1h", "--seeds", "6", "--json", str(tmp_path / "probe.json")]) == 0
    probe = yaml.safe_load((tmp_path / "probe.json").read_text())["recommendation"]
    assert probe["label"] == "gke.gpu_pools[t4].autoscaling.min_nodes=0"
    p90s = probe["pending_p90_s_by_seed"]
    target = p90s[0]
    counts = [n for n in range(2, len(p90s) + 1) if sum(1 for p in p90s[:n] if p <= target) * HOLDS[1] < HOLDS[0] * n]
    assert counts, f"no warm node meets its seed-0 p90 on 3 in 4 of every seed count (p90s {p90s}): build another case"
    seeds = counts[0]
    met = sum(1 for p in p90s[:seeds] if p <= target)
    capsys.readouterr()
    code = main([*sweep, "--target-p90", f"{target}s", "--seeds", str(seeds), "--json", str(tmp_path / "s.json")])
    out = capsys.readouterr().out
    assert code == 0
    document = yaml.safe_load((tmp_path / "s.json").read_text())
    recommendation = document["recommendation"]
    assert recommendation["label"] == "gke.gpu_pools[t4].autoscaling.min_nodes=2"
    (note,) = recommendation["not_recommended"]
    assert note.startswith(f"gke.gpu_pools[t4].autoscaling.min_nodes=0: meets p90 <= {target} s on seed 0 but on {met} of {seeds} seeds only")
    assert f"meets the target on {seeds} of {seeds} seeds 0-{seeds - 1}" in out


def test_the_fallback_column_appears_when_the_fallback_times_differ(outcomes: list[Outcome]) -> None:
    from gpu_platform.infra.simulate.inputs import Fallback

    short = dataclasses.replace(outcomes[0], trace=dataclasses.replace(outcomes[0].trace, fallbacks=[Fallback("t4-spot", 30.0, 75.0, 90.0)]))
    headings = [h for h, _ in sweep_columns([short, outcomes[1]], KEYS)]
    assert "fallback s" in headings
    (cell,) = [c for h, c in sweep_columns([short, outcomes[1]], KEYS) if h == "fallback s"]
    assert (cell(short), cell(outcomes[1])) == ("60", "-")
