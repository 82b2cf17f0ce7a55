"""`gpu-platform report` against a real Prometheus serving a generated workload with known answers."""

from __future__ import annotations

import json
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from gpu_platform.infra.cli import main
from gpu_platform.infra.report.prometheus import Report, ReportInputs, _iso, collect, nearest_rank, table_rows
from gpu_platform.infra.stack.errors import format_validation_error
from tests.conftest import PROJECT_DIR
from tests.infra.report_workload import Node, Pod, Workload, serve, simulate

HOUR = 3600


@pytest.fixture(scope="module")
def workload() -> Workload:
    # Whole minutes, two hours back: inside the server's retention, clear of its head block.
    return simulate(start=(int(time.time()) // 60) * 60 - 2 * HOUR, seconds=HOUR)


@pytest.fixture(scope="module")
def prometheus(workload: Workload, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    missing = [tool for tool in ("promtool", "prometheus") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (Debian's prometheus package; .ci/run installs it)")
    with serve(workload, tmp_path_factory.mktemp("prometheus")) as url:
        yield url


@pytest.fixture(scope="module")
def report(workload: Workload, prometheus: str) -> Report:
    return collect(ReportInputs(prometheus=prometheus, start=workload.start, end=workload.start + workload.seconds))


def test_the_workload_is_multi_tenant_with_scale_ups(workload: Workload) -> None:
    assert len(workload.pods) > 150
    assert len({p.namespace for p in workload.pods}) == 4
    assert len(workload.nodes) > 10, "the pool scaled up"
    assert any(n.removed is not None for n in workload.nodes), "and down"
    assert max(workload.pending().values()) > 120, "some pods waited for a new node"
    assert len(workload.cpu_pods) > 20 and all(p.resource == "cpu" for p in workload.cpu_pods), "CPU-only schedulers"
    assert all(p.created_series for p in workload.pods + workload.cpu_pods)


def _check_waits(report: Report, workload: Workload, a: int | None = None, b: int | None = None) -> None:
    """The report's waits against the generator's truth over [a, b) (seconds after the workload's start)."""
    truth = workload.pending(a, b)
    assert report.pods_created == len(truth)
    # Each pod within one sampling step (1 s); the generator samples at whole seconds, so exactly.
    assert report.pending_by_pod.keys() == truth.keys()
    assert all(abs(report.pending_by_pod[pod] - seconds) <= 1 for pod, seconds in truth.items())
    assert report.carried_over_by_pod == workload.carried_over(a or 0, b)
    assert report.pending_at_end_pods == workload.pending_at_end(a, b)
    ordered = sorted(truth.values())
    assert report.pending_median_s == pytest.approx(statistics.median(ordered), abs=1)
    assert report.pending_mean_s == pytest.approx(statistics.fmean(ordered), abs=1)
    assert report.pending_p99_s == pytest.approx(nearest_rank(ordered, 99), abs=1)
    assert report.pending_max_s == pytest.approx(ordered[-1], abs=1)
    assert report.scheduled_within is not None
    for limit in (2, 5, 60):
        assert report.scheduled_within[f"{limit}s"] == sum(1 for w in ordered if w <= limit) / len(ordered)


def test_report_recovers_the_pending_times(report: Report, workload: Workload) -> None:
    # Only GPU pods: the CPU-only scheduler pods have phase and creation series too.
    assert report.gpu_pods == len(workload.pods)
    assert (report.carried_over, report.pending_at_end, report.without_created) == (0, 0, 0)
    _check_waits(report, workload)


@pytest.mark.parametrize("length", [100, 600])
def test_a_range_that_starts_and_ends_mid_workload(workload: Workload, prometheus: str, length: int) -> None:
    a, b = workload.straddled_range(length)
    report = collect(ReportInputs(prometheus=prometheus, start=workload.start + a, end=workload.start + b))
    # Preconditions: pods pending across the start and pods pending at the end, and pods that were
    # created before the start and are running in the range (which the waits must not count as 0 s).
    assert report.carried_over > 0 and report.pending_at_end > 0
    running_before = {f"{p.namespace}/{p.name}" for p in workload.pods if p.scheduled is not None and p.scheduled <= a < p.finished}
    assert running_before and not running_before & report.pending_by_pod.keys()
    _check_waits(report, workload, a, b)
    assert report.pending_at_end == len(workload.pending_at_end(a, b))
    assert report.carried_over == len(workload.carried_over(a, b))
    available, utilised = workload.gpu_seconds(a, b)
    assert report.gpu_hours_available == pytest.approx(available / HOUR, rel=1e-3)
    assert report.gpu_hours_utilised == pytest.approx(utilised / HOUR, rel=1e-3)
    assert report.gpu_nodes_max == max(workload.nodes_at(t) for t in range(a, b))


def test_the_json_carries_the_series_per_minute(report: Report, workload: Workload) -> None:
    series = report.summary()["over_time"]
    minutes = range(0, workload.seconds, 60)
    assert series["bucket_s"] == 60
    assert series["t"] == [workload.start + m for m in minutes]
    assert series["gpus_available_mean"] == pytest.approx([statistics.fmean(workload.available_at(t) for t in range(m, m + 60)) for m in minutes], abs=1e-9)
    assert series["gpus_utilised_mean"] == pytest.approx([statistics.fmean(workload.utilised_at(t) for t in range(m, m + 60)) for m in minutes], abs=1e-9)
    assert series["gpu_nodes_max"] == [max(workload.nodes_at(t) for t in range(m, m + 60)) for m in minutes]


def test_report_recovers_the_gpu_overhead(report: Report, workload: Workload) -> None:
    available, utilised = workload.gpu_seconds()
    assert report.gpu_hours_available == pytest.approx(available / HOUR, rel=1e-3)
    assert report.gpu_hours_utilised == pytest.approx(utilised / HOUR, rel=1e-3)
    assert report.overhead_percent == pytest.approx(100 * (1 - utilised / available), abs=1)
    live_max = max(sum(1 for n in workload.nodes if n.ready <= t < (n.removed if n.removed is not None else HOUR)) for t in range(HOUR))
    assert report.gpu_nodes_max == live_max
    assert report.dcgm_gpu_util_mean_percent == pytest.approx(workload.dcgm_mean(), rel=1e-6)


def test_chunked_queries_give_the_same_report(report: Report, workload: Workload, prometheus: str) -> None:
    chunked = collect(ReportInputs(prometheus=prometheus, start=workload.start, end=workload.start + workload.seconds, max_points=700))
    assert chunked.summary() == report.summary()


def test_report_command_writes_json_and_plots(workload: Workload, prometheus: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # In-process (test_cli runs the console script itself); RFC 3339 times, as users type them.
    start = datetime.fromtimestamp(workload.start, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    end = datetime.fromtimestamp(workload.start + workload.seconds, tz=UTC).isoformat()
    code = main(["report", "--prometheus", prometheus, "--start", start, "--end", end, "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = _table(captured.out)
    waits = sorted(workload.pending().values())
    median, mean, p99, longest = (float(x) for x in re.fullmatch(r"(\S+) s / (\S+) s / (\S+) s / (\S+) s", rows["pending median / mean / p99 / max"]).groups())
    assert median == pytest.approx(statistics.median(waits), abs=1)
    assert mean == pytest.approx(statistics.fmean(waits), abs=1)
    assert p99 == pytest.approx(nearest_rank(waits, 99), abs=1)
    assert longest == pytest.approx(waits[-1], abs=1)
    available, utilised = workload.gpu_seconds()
    used, overhead = (float(x) for x in re.fullmatch(r"(\S+)% / (\S+)%", rows["utilisation / overhead"]).groups())
    assert used == pytest.approx(100 * utilised / available, abs=1)
    assert overhead == pytest.approx(100 * (1 - utilised / available), abs=1)
    assert rows["GPU pods"] == str(len(workload.pods))
    assert rows["GPU pods created in the range (waits)"] == str(len(workload.pods))
    summary = json.loads((tmp_path / "report.json").read_text())
    assert summary["overhead_percent"] == pytest.approx(100 * (1 - utilised / available), abs=1)
    assert len(summary["pending_by_pod"]) == len(workload.pods)
    assert len(summary["over_time"]["t"]) == workload.seconds // 60
    for name in ("wait_times.png", "gpus.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workload, str]]:
    """A hand-made five minutes: GPU pods a (created at 10 s, bound at 12 s) and b (20 s, 25 s) and a
    CPU-only pod c; kube-state-metrics lost kube_pod_created of b, and of d (200 s, 203 s), the only
    GPU pod after 150 s."""
    if shutil.which("promtool") is None or shutil.which("prometheus") is None:
        pytest.skip("promtool and prometheus not installed")
    w = Workload(start=(int(time.time()) // 60) * 60 - 2 * HOUR, seconds=300, nodes=[Node("gke-t4-0", ready=0)])
    for name, created, bound, gpus, kind, has_created in (
        ("a", 10, 12, 1, "nvidia_com_gpu", True),
        ("b", 20, 25, 1, "nvidia_com_gpu", False),
        ("c", 5, 9, 0, "cpu", True),
        ("d", 200, 203, 2, "nvidia_com_gpu", False),
    ):
        pod = Pod("team-x", name, gpus, created, 60, 0, scheduled=bound, node="gke-t4-0", resource=kind, created_series=has_created)
        (w.pods if kind == "nvidia_com_gpu" else w.cpu_pods).append(pod)
    with serve(w, tmp_path_factory.mktemp("sparse")) as url:
        yield w, url


def test_gpu_pods_without_kube_pod_created_are_counted_not_waited(sparse: tuple[Workload, str]) -> None:
    w, url = sparse
    report = collect(ReportInputs(prometheus=url, start=w.start, end=w.start + 150))
    assert report.gpu_pods == 2, "a and b; c requests no GPU, d is later"
    assert report.pending_by_pod == {"team-x/a": 2} == w.pending(0, 150)
    assert (report.without_created, report.without_created_pods) == (1, ["team-x/b"])
    rows = dict(table_rows(report))
    assert rows["without kube_pod_created (not in waits)"] == "1"
    assert rows["pending median / mean / p99 / max"] == "2 s / 2.0 s / 2 s / 2 s"


def test_a_range_with_no_pod_created_in_it_has_no_wait_statistics(sparse: tuple[Workload, str]) -> None:
    w, url = sparse
    report = collect(ReportInputs(prometheus=url, start=w.start + 30, end=w.start + 60))
    assert (report.gpu_pods, report.pods_created, report.carried_over) == (2, 0, 0)
    assert report.pending_median_s is None and report.scheduled_within is None
    assert dict(table_rows(report))["pending median / mean / p99 / max"] == "no GPU pod created in the range"
    assert report.gpu_hours_utilised == pytest.approx(2 * 30 / HOUR)


def test_the_command_reports_a_range_with_no_pod_created_in_it(sparse: tuple[Workload, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w, url = sparse
    code = main(["report", "--prometheus", url, "--start", str(w.start + 30), "--end", str(w.start + 60), "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert _table(captured.out)["pending median / mean / p99 / max"] == "no GPU pod created in the range"
    summary = json.loads((tmp_path / "report.json").read_text())
    assert (summary["pods_created"], summary["pending_median_s"], summary["scheduled_within"]) == (0, None, None)
    assert (tmp_path / "wait_times.png").read_bytes()[:4] == b"\x89PNG"


def test_fails_when_no_gpu_pod_has_kube_pod_created(sparse: tuple[Workload, str], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    w, url = sparse
    code = main(["report", "--prometheus", url, "--start", str(w.start + 150), "--end", str(w.start + 300), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4
    assert err == [
        f"gpu-platform: no kube_pod_created series for the 1 GPU pod between {_iso(w.start + 150)} and {_iso(w.start + 299)}: "
        "kube-state-metrics exports it by default; is it dropped by a denylist or relabelling?"
    ]


def _table(out: str) -> dict[str, str]:
    """The rows of the printed table: what -> value."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 2 and cells[0]:
            rows[cells[0]] = cells[1]
    return rows


def test_fails_when_the_range_holds_no_metrics(workload: Workload, prometheus: str, capsys: pytest.CaptureFixture[str]) -> None:
    start = workload.start - 2 * 24 * HOUR
    code = main(["report", "--prometheus", prometheus, "--start", str(start), "--end", str(start + HOUR), "--out", "/tmp/unused-report"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4
    assert len(err) == 1 and err[0].startswith("gpu-platform: no kube_pod_container_resource_requests series between ")


def test_fails_when_prometheus_is_not_there(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["report", "--prometheus", f"http://127.0.0.1:{port}", "--start", "0", "--end", "3600", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4
    assert err == [f"gpu-platform: cannot connect to Prometheus at http://127.0.0.1:{port}: is the URL right and the server up?"]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--prometheus", "localhost:9090", "--start", "0", "--end", "60"],
            'gpu-platform: --prometheus: prometheus must be an http:// or https:// URL with a host, e.g. http://localhost:9090 (got "localhost:9090")',
        ),
        (
            ["--prometheus", "http://x", "--start", "2026-11-20T10:00:00Z", "--end", "2026-11-20T10:00:00Z"],
            'gpu-platform: --end: end 2026-11-20T10:00:00+00:00 must be at least one step (1s) after start 2026-11-20T10:00:00+00:00: the range is empty (got "2026-11-20T10:00:00+00:00")',
        ),
        (
            ["--prometheus", "http://x", "--start", "yesterday", "--end", "60"],
            'gpu-platform: --start: a time is RFC 3339 (2026-11-20T10:00:00Z) or Unix seconds (got "yesterday")',
        ),
    ],
)
def test_fails_on_bad_inputs_one_line_exit_2(argv: list[str], line: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["report", *argv, "--out", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [line]


def test_report_inputs_defaults_and_grid() -> None:
    inputs = ReportInputs(prometheus="http://p:9090/", start="2026-11-20T10:00:00", end="2026-11-20T10:00:05")
    assert (inputs.step, inputs.timeout, inputs.max_points, inputs.prometheus) == (1, 30, 11_000, "http://p:9090")
    assert list(inputs.grid()) == [inputs.start.timestamp() + i for i in range(5)]
    with pytest.raises(ValidationError) as exc:
        ReportInputs(prometheus="http://p", start=0, end=60, max_points=20_000)
    assert format_validation_error(exc.value, ReportInputs) == ["max_points: Input should be less than or equal to 11000 (got 20000)"]


def test_nearest_rank() -> None:
    assert nearest_rank([1, 2, 3, 4], 50) == 2
    assert nearest_rank(list(range(1, 101)), 99) == 99
    assert nearest_rank([7], 99) == 7


def test_the_preview_does_not_import_the_report_dependencies() -> None:
    probe = "import sys, infra.cli; infra.cli.build_parser(); print(sorted(m for m in ('matplotlib', 'rich', 'requests') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT_DIR, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
