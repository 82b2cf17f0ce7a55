"""`gpu-platform report --stack`: cost per tenant and Kueue's queues, against a real Prometheus serving a
hand-made half hour whose per-tenant truth the test computes itself (tests/infra/tenant_workload.py)."""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_platform.infra.cli import main
from gpu_platform.infra.report.prometheus import ReportInputs, collect
from gpu_platform.infra.report.tenants import IDLE, OTHER, TenantReport, collect_tenants, ksm_label, tenant_namespaces
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

    # One 2-GPU node at 7.2/h for 10 steps of 1 s; a and b request 2 GPUs each on it for the first 5 steps.
    held = [("a", "n", dict.fromkeys(range(5), 2.0)), ("b", "n", dict.fromkeys(range(5), 2.0))]
    report = tenant_figures(
        step=1,
        tenants={"a": "a", "b": "b"},
        held=held,
        capacity={"n": dict.fromkeys(range(10), 2.0)},
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
