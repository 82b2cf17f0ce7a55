"""`gpu-platform report --stack`: cost per tenant and Kueue's queues, against a real Prometheus serving a
hand-made half hour whose per-tenant truth the test computes itself (tests/infra/tenant_workload.py)."""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.infra.cli import main
from gpu_platform.infra.report.prometheus import ReportInputs, collect
from gpu_platform.infra.report.tenants import IDLE, OTHER, TenantReport, collect_tenants, ksm_label, sample_runs, tenant_namespaces
from gpu_platform.infra.simulate.prices import PriceTable
from tests.conftest import PROJECT_DIR
from tests.infra.report_workload import Workload, serve
from tests.infra.tenant_workload import BUCKETS, NOMINAL, SECONDS, STACK, TENANTS, UNPRICED, hourly_prices, tenant_workload, truth

HOUR = 3600
STACK_TENANTS = ["analytics", "research", "team-vision", "team-nlp"]
"""prod-gke's tenants: its Dask tenants, then its Kubeflow tenants."""


@pytest.fixture(scope="module")
def workload() -> Workload:
    return tenant_workload(start=(int(time.time()) // 60) * 60 - 2 * HOUR)


@pytest.fixture(scope="module")
def prometheus(workload: Workload, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    missing = [tool for tool in ("promtool", "prometheus") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (Debian's prometheus package; .ci/run installs it)")
    with serve(workload, tmp_path_factory.mktemp("tenants")) as url:
        yield url


def _tenants(workload: Workload, url: str, a: int = 0, b: int = SECONDS) -> TenantReport:
    inputs = ReportInputs(prometheus=url, start=workload.start + a, end=workload.start + b)
    report = collect(inputs)
    mapping = {name: name for name in STACK_TENANTS}
    return collect_tenants(inputs, report.pending_by_pod, mapping, PriceTable.shipped(), "gcp", "us-central1")


@pytest.fixture(scope="module")
def tenants(workload: Workload, prometheus: str) -> TenantReport:
    return _tenants(workload, prometheus)


def _rank(values: list[int], percent: int) -> int:
    ordered = sorted(values)
    return ordered[math.ceil(percent * len(ordered) / 100) - 1]


def test_the_workload_has_two_tenants_spot_and_on_demand_and_an_idle_gap(workload: Workload) -> None:
    assert {p.namespace for p in workload.pods} == {*TENANTS, "sandbox"}
    assert {"label_cloud_google_com_gke_spot" in n.labels for n in workload.nodes} == {True, False}
    od = next(n for n in workload.nodes if n.name == "gke-a100x8-od-0")
    assert not [p for p in workload.pods if p.node == od.name and (p.scheduled or 0) < 750 < p.finished], "idle gap"


def test_the_stack_names_the_tenants() -> None:
    from gpu_platform.infra.stack.read import load_stack

    assert list(tenant_namespaces(load_stack(PROJECT_DIR, STACK))) == STACK_TENANTS


@pytest.mark.parametrize(("a", "b"), [(0, SECONDS), (600, SECONDS), (120, 1320)])
def test_gpu_hours_cost_and_spot_share_per_tenant(workload: Workload, prometheus: str, a: int, b: int) -> None:
    report = _tenants(workload, prometheus, a, b)
    expected = truth(workload, hourly_prices(PROJECT_DIR), a, b)
    assert [r.tenant for r in report.rows] == [*STACK_TENANTS, OTHER, IDLE]
    for row in report.rows:
        who = {OTHER: "sandbox", IDLE: "idle"}.get(row.tenant, row.tenant)
        want = expected.get(who, {"gpu_seconds": 0.0, "cost": 0.0, "spot_gpu_seconds": 0.0})
        assert row.gpu_hours == pytest.approx(want["gpu_seconds"] / HOUR, abs=1e-9), row.tenant
        assert row.cost == pytest.approx(want["cost"], rel=1e-9, abs=1e-12), row.tenant
        if who != "idle":
            share = want["spot_gpu_seconds"] / want["gpu_seconds"] if want["gpu_seconds"] else None
            assert row.spot_share == pytest.approx(share), row.tenant
    assert report.gpu_hours_paid == pytest.approx(expected["total"]["gpu_seconds"] / HOUR)
    assert report.cost == pytest.approx(expected["total"]["cost"], rel=1e-9)
    # Every GPU-hour and every dollar lands in exactly one row, idle included.
    assert sum(r.gpu_hours for r in report.rows) == pytest.approx(report.gpu_hours_paid)
    assert sum(r.cost for r in report.rows) == pytest.approx(report.cost)
    assert sum(r.cost_share for r in report.rows) == pytest.approx(1.0)


def test_idle_capacity_is_its_own_row_and_an_unpriced_node_is_named(tenants: TenantReport, workload: Workload) -> None:
    idle = tenants.row(IDLE)
    assert idle.gpu_hours > 0 and idle.cost > 0 and idle.queue is None
    assert tenants.unpriced_nodes == [UNPRICED]
    # The spot share of the idle GPUs: the idle spot GPU-seconds over the idle ones (second by second here).
    spot = next(n for n in workload.nodes if "label_cloud_google_com_gke_spot" in n.labels)
    idle_spot = sum(spot.gpus - sum(p.gpus for p in workload.pods if p.node == spot.name and (p.scheduled or 0) <= t < p.finished) for t in range(SECONDS))
    assert idle.spot_share == pytest.approx(idle_spot / HOUR / idle.gpu_hours)
    assert tenants.row("research").gpu_hours == 0 and tenants.row("research").spot_share is None


def test_pod_wait_percentiles_per_tenant(tenants: TenantReport, workload: Workload) -> None:
    for tenant in TENANTS:
        waits = [(p.scheduled or 0) - p.created for p in workload.pods if p.namespace == tenant]
        row = tenants.row(tenant)
        assert row.pods_created == len(waits)
        assert (row.wait_p50_s, row.wait_p90_s, row.wait_p99_s) == tuple(_rank(waits, q) for q in (50, 90, 99))
    assert tenants.row(OTHER).wait_p50_s == 2
    assert tenants.row("team-vision").wait_p50_s is None


def _bucket(seconds: float) -> float:
    return next(le for le in BUCKETS if seconds <= le)


@pytest.mark.parametrize(("a", "b"), [(0, SECONDS), (600, SECONDS)])
def test_queue_figures_from_kueues_metrics(workload: Workload, prometheus: str, a: int, b: int) -> None:
    report = _tenants(workload, prometheus, a, b)
    assert report.kueue_metrics
    for tenant in TENANTS:
        pods = [p for p in workload.pods if p.namespace == tenant]
        queue = report.row(tenant).queue
        assert queue is not None and queue.cluster_queue == tenant
        pending = [sum(1 for p in pods if p.created <= t < (p.scheduled or 0)) for t in range(a, b)]
        assert queue.pending_workloads_mean == pytest.approx(sum(pending) / len(pending))
        assert queue.pending_workloads_max == max(pending)
        # Admitted in the range: the histogram's count at the last step minus at the first.
        admitted = [(p.scheduled or 0) - p.created for p in pods if a < (p.scheduled or 0) <= b - 1]
        assert queue.admitted == len(admitted)
        if admitted:
            assert queue.admission_wait_mean_s == pytest.approx(sum(admitted) / len(admitted))
            assert (queue.admission_wait_p50_s, queue.admission_wait_p90_s, queue.admission_wait_p99_s) == tuple(
                _bucket(_rank(admitted, q)) for q in (50, 90, 99)
            )
        else:
            assert queue.admission_wait_mean_s is None and queue.admission_wait_p50_s is None
        used = [sum(p.gpus for p in pods if (p.scheduled or 0) <= t < p.finished) for t in range(a, b)]
        assert queue.gpu_quota_used_mean == pytest.approx(sum(used) / len(used))
        assert queue.gpu_quota_nominal == NOMINAL[tenant]
    assert report.row("research").queue is not None and report.row("research").queue.admitted == 0
    assert report.row(OTHER).queue is None


def test_the_command_prints_the_tenant_table_and_writes_json_and_plot(
    workload: Workload, prometheus: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    code = main(
        [
            "report",
            "--prometheus",
            prometheus,
            "--start",
            str(workload.start),
            "--end",
            str(workload.start + SECONDS),
            "--stack",
            STACK,
            "--project-dir",
            str(PROJECT_DIR),
            "--out",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    expected = truth(workload, hourly_prices(PROJECT_DIR))
    rows = _rows(captured.out)
    for tenant in TENANTS:
        assert rows[tenant][:2] == [f"{expected[tenant]['gpu_seconds'] / HOUR:.2f}", f"{expected[tenant]['cost']:.2f}"]
    assert rows["idle"][:2] == [f"{expected['idle']['gpu_seconds'] / HOUR:.2f}", f"{expected['idle']['cost']:.2f}"]
    assert rows["total"][:2] == [f"{expected['total']['gpu_seconds'] / HOUR:.2f}", f"{expected['total']['cost']:.2f}"]
    assert f"no price for 1 GPU node(s) (cost 0; add their type with --prices FILE): {UNPRICED}" in captured.out
    # The sample docs/commands/report.md shows is what the command prints, line for line.
    from tests.test_readme_blocks import block

    sample = block("docs/commands/report.md", "│ analytics   │ 1.62  │ 4.78     │ 25.5%  │ 41%  │ 20 / 30 / 30       │ ≤20 / ≤40 / ≤40   │ 0.03 / 1         │")
    printed = captured.out.splitlines()
    assert all(line in printed for line in sample.splitlines())
    summary = json.loads((out / "report.json").read_text())
    rows_json = {r["tenant"]: r for r in summary["tenants"]["rows"]}
    assert rows_json["analytics"]["cost"] == pytest.approx(expected["analytics"]["cost"])
    assert rows_json["team-nlp"]["queue"]["cluster_queue"] == "team-nlp"
    assert summary["tenants"]["currency"] == "USD" and summary["tenants"]["region"] == "us-central1"
    assert (out / "tenants.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _rows(out: str) -> dict[str, list[str]]:
    """The rows of the printed per-tenant table: tenant -> its other cells."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 8 and cells[0]:
            rows[cells[0]] = cells[1:]
    return rows


def test_a_stack_without_tenants_or_an_unknown_stack_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "report",
            "--prometheus",
            "http://127.0.0.1:9",
            "--start",
            "0",
            "--end",
            "60",
            "--stack",
            "nope",
            "--project-dir",
            str(PROJECT_DIR),
            "--out",
            str(tmp_path / "r"),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "nope" in err[0]


def test_ksm_label_names_node_labels_as_kube_state_metrics_does() -> None:
    # The names the platform dashboard (components/monitoring/dashboards/gpu-platform.json) queries.
    assert ksm_label("eks.amazonaws.com/capacityType") == "label_eks_amazonaws_com_capacity_type"
    assert ksm_label("cloud.google.com/gke-spot") == "label_cloud_google_com_gke_spot"
    assert ksm_label("node.kubernetes.io/instance-type") == "label_node_kubernetes_io_instance_type"


def test_requests_above_a_nodes_capacity_share_its_cost_by_request_and_no_queue_metrics_leave_queues_empty() -> None:
    from gpu_platform.infra.report.tenants import NodePrice, tenant_figures, tenant_rows

    # One 2-GPU node at 7.2/h for 10 s; a and b request 2 GPUs each on it for the first 5 s.
    held = [("a", "n", [(0, 5, 2.0)]), ("b", "n", [(0, 5, 2.0)])]
    report = tenant_figures(
        tenants={"a": "a", "b": "b"},
        held=held,
        capacity={"n": [(0, 10, 2.0)]},
        prices={"n": NodePrice(7.2, spot=False)},
        waits={"a/p": 3},
        queues=None,
        currency="USD",
        prices_date="d",
        region="r",
    )
    assert report.cost == pytest.approx(0.02)
    assert report.row("a").cost == report.row("b").cost == pytest.approx(0.005), "half of 5 s each"
    assert report.row(IDLE).cost == pytest.approx(0.01) and report.row(IDLE).gpu_hours == pytest.approx(10 / HOUR)
    assert report.row("a").gpu_hours == pytest.approx(10 / HOUR) and report.row("a").spot_share == 0.0
    assert not report.kueue_metrics and all(r.queue is None for r in report.rows)
    assert [r[0] for r in tenant_rows(report)] == ["a", "b", IDLE, "total"]
    assert tenant_rows(report)[0][6:] == ("-", "-")


# --- the sharing rule, on segments --------------------------------------------------------------------------


def test_two_tenants_sharing_a_nodes_gpus_over_overlapping_stretches_split_its_cost_by_hand() -> None:
    from gpu_platform.infra.report.tenants import NodePrice, tenant_figures

    # n: 4 GPUs at 36/h (0.01 a second) over [0, 100). a holds 2 GPUs over [0, 60) (given as two runs: the
    # cut changes nothing), b 3 over [40, 100):
    #   [0, 40):   a 2 of 4                  -> a 2/4 x 0.4 = 0.2,   idle 2/4 x 0.4 = 0.2
    #   [40, 60):  a 2 + b 3 = 5 > 4 GPUs    -> a 2/5 x 0.2 = 0.08,  b 3/5 x 0.2 = 0.12, idle 0
    #   [60, 100): b 3 of 4                  -> b 3/4 x 0.4 = 0.3,   idle 1/4 x 0.4 = 0.1
    # m: a spot node, 2 GPUs at 7.2/h (0.002 a second) over [0, 50); a holds 1 GPU on it over [25, 75): its last
    # 25 s count as used, on spot, but cost nothing (m has no capacity then).
    #   [0, 25):   idle 2 of 2 -> 0.05;  [25, 50): a 1/2 x 0.05 = 0.025, idle 0.025
    # u: 1 GPU of no price over [0, 10): idle, its GPU-seconds paid, its cost 0, and named.
    report = tenant_figures(
        tenants={"a": "a", "b": "b"},
        held=[("a", "n", [(0, 30, 2), (30, 60, 2)]), ("b", "n", [(40, 100, 3)]), ("a", "m", [(25, 75, 1)])],
        capacity={"n": [(0, 100, 4)], "m": [(0, 50, 2)], "u": [(0, 10, 1)]},
        prices={"n": NodePrice(36.0, spot=False), "m": NodePrice(7.2, spot=True), "u": NodePrice(None, spot=False)},
        waits={},
        queues=None,
        currency="USD",
        prices_date="d",
        region="r",
    )
    a, b, idle = report.row("a"), report.row("b"), report.row(IDLE)
    assert report.cost == pytest.approx(1.1)
    assert (a.cost, b.cost, idle.cost) == (pytest.approx(0.2 + 0.08 + 0.025), pytest.approx(0.12 + 0.3), pytest.approx(0.2 + 0.1 + 0.075))
    assert (a.cost_share, b.cost_share, idle.cost_share) == (pytest.approx(0.305 / 1.1), pytest.approx(0.42 / 1.1), pytest.approx(0.375 / 1.1))
    # GPU-seconds: a 2 x 60 on n + 1 x 50 on m; b 3 x 60; idle 2 x 40 + 1 x 40 on n, 2 x 25 + 1 x 25 on m, 10 on u.
    assert (a.gpu_hours, b.gpu_hours, idle.gpu_hours) == (170 / HOUR, 180 / HOUR, 205 / HOUR)
    assert report.gpu_hours_paid == (400 + 100 + 10) / HOUR
    assert (a.spot_share, b.spot_share, idle.spot_share) == (50 / 170, 0.0, 75 / 205)
    assert report.unpriced_nodes == ["u"]


def test_sample_runs_are_the_runs_of_equal_value_a_missing_sample_ends_one() -> None:
    samples = {20: 2.0, 0: 1.0, 5: 1.0, 10: 2.0, 15: 3.0, 30: 2.0, 35: 2.0}
    assert sample_runs(samples, 5) == [(0, 10, 1.0), (10, 15, 2.0), (15, 20, 3.0), (20, 25, 2.0), (30, 40, 2.0)]
    assert sample_runs({}, 5) == []


def _per_sample(
    tenants: dict[str, str], held: list[tuple[str, str, dict[int, float]]], capacity: dict[str, dict[int, float]], prices: dict[str, Any], times: range
) -> dict[str, dict[str, float]]:
    """The figures the plain way: at every sample (each standing for ``times.step`` s), every GPU node's cost
    shared out to the pods on it by their GPUs over max(its GPUs, their requests), the rest idle."""
    step = times.step
    out: dict[str, dict[str, float]] = {}

    def add(row: str, key: str, value: float) -> None:
        out.setdefault(row, {"gpu_s": 0.0, "spot_gpu_s": 0.0, "cost": 0.0})
        out[row][key] += value

    for t in times:
        for namespace, node, values in held:
            gpus = values.get(t, 0.0)
            if gpus > 0:
                add(tenants.get(namespace, OTHER), "gpu_s", gpus * step)
                add(tenants.get(namespace, OTHER), "spot_gpu_s", gpus * step if prices[node].spot else 0.0)
        for node, values in capacity.items():
            gpus = values.get(t, 0.0)
            if gpus <= 0:
                continue
            on_it = [(tenants.get(namespace, OTHER), v[t]) for namespace, n, v in held if n == node and v.get(t, 0.0) > 0]
            requested = sum(g for _, g in on_it)
            dollars = (prices[node].per_hour or 0.0) * step / HOUR
            for tenant, g in on_it:
                add(tenant, "cost", dollars * g / max(gpus, requested))
            idle = max(0.0, gpus - requested)
            add(IDLE, "cost", dollars * idle / max(gpus, requested))
            add(IDLE, "gpu_s", idle * step)
            add(IDLE, "spot_gpu_s", idle * step if prices[node].spot else 0.0)
            add("total", "cost", dollars)
            add("total", "gpu_s", gpus * step)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_figures_from_segments_are_the_sums_sample_by_sample(seed: int) -> None:
    """A random small trace (pods asking more GPUs than a node has, a node whose capacity changes, a spot node,
    an unpriced one, a pod on a node of no capacity, a pod held in two runs): the figures from its segments, and
    from its samples every 1 s and every 5 s through sample_runs, are those summed sample by sample."""
    import random

    from gpu_platform.infra.report.tenants import NodePrice, tenant_figures

    rng = random.Random(seed)
    horizon = 300

    def stretch() -> tuple[int, int]:
        start = rng.randrange(horizon)
        return start, min(horizon, start + rng.randrange(1, horizon))

    prices = {"n0": NodePrice(7.3, spot=False), "n1": NodePrice(19.9, spot=True), "n2": NodePrice(None, spot=False), "gone": NodePrice(3.1, spot=True)}
    capacity: dict[str, list[tuple[int, int, float]]] = {"n0": [(*stretch(), 4)], "n2": [(*stretch(), 1)]}
    start, stop = stretch()
    middle = rng.randrange(start, stop + 1)
    capacity["n1"] = [(start, middle, 8), (middle, stop, rng.choice((0, 2, 4)))]
    held = []
    for _ in range(15):
        start, stop = stretch()
        cut = rng.randrange(start, stop + 1)
        segments = [(start, cut, g := rng.choice((0, 1, 2, 3, 4))), (cut, stop, g)]
        held.append((rng.choice(("a", "b", "sandbox")), rng.choice(list(prices)), segments))
    tenants = {"a": "a", "b": "b"}

    def samples(segments: list[tuple[int, int, float]], times: range) -> dict[int, float]:
        return {t: g for t in times for start, stop, g in segments if start <= t < stop}

    for times in (range(horizon), range(0, horizon, 5)):
        held_samples = [(namespace, node, samples(segments, times)) for namespace, node, segments in held]
        capacity_samples = {node: samples(segments, times) for node, segments in capacity.items()}
        want = _per_sample(tenants, held_samples, capacity_samples, prices, times)
        given = [(held, capacity)] if times.step == 1 else []
        given.append(
            (
                [(namespace, node, sample_runs(values, times.step)) for namespace, node, values in held_samples],
                {node: sample_runs(values, times.step) for node, values in capacity_samples.items()},
            )
        )
        for held_segments, capacity_segments in given:
            report = tenant_figures(
                tenants=tenants,
                held=held_segments,
                capacity=capacity_segments,
                prices=prices,
                waits={},
                queues=None,
                currency="USD",
                prices_date="d",
                region="r",
            )
            total = want["total"]
            assert report.cost == pytest.approx(total["cost"], rel=1e-12) and report.gpu_hours_paid == total["gpu_s"] / HOUR
            assert report.unpriced_nodes == ["n2"]
            for row in report.rows:
                figures = want.get(row.tenant, {"gpu_s": 0.0, "spot_gpu_s": 0.0, "cost": 0.0})
                assert row.gpu_hours == figures["gpu_s"] / HOUR, (row.tenant, times)
                assert row.spot_share == (figures["spot_gpu_s"] / figures["gpu_s"] if figures["gpu_s"] else None), (row.tenant, times)
                assert row.cost == pytest.approx(figures["cost"], rel=1e-12, abs=1e-15), (row.tenant, times)
                assert row.cost_share == pytest.approx(figures["cost"] / total["cost"] if total["cost"] else 0.0, rel=1e-12, abs=1e-15)
