"""`gpu-platform report` against a real Prometheus serving a generated workload with known answers."""

from __future__ import annotations

import json
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

from infra.cli import main
from infra.config import format_validation_error
from infra.report import Report, ReportInputs, collect, nearest_rank
from tests.conftest import PROJECT_DIR
from tests.infra.report_workload import Workload, serve, simulate

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


def test_report_recovers_the_pending_times(report: Report, workload: Workload) -> None:
    truth = workload.pending()
    assert report.gpu_pods == len(truth)
    # Each pod within one sampling step (1 s); the generator samples at whole seconds, so exactly.
    assert all(abs(report.pending_by_pod[pod] - seconds) <= 1 for pod, seconds in truth.items())
    ordered = sorted(truth.values())
    assert report.pending_median_s == pytest.approx(statistics.median(ordered), abs=1)
    assert report.pending_mean_s == pytest.approx(statistics.fmean(ordered), abs=1)
    assert report.pending_p99_s == pytest.approx(nearest_rank(ordered, 99), abs=1)
    for limit in (2, 5, 60):
        assert report.scheduled_within[f"{limit}s"] == sum(1 for w in ordered if w <= limit) / len(ordered)


def test_report_recovers_the_gpu_overhead(report: Report, workload: Workload) -> None:
    available, utilised = workload.gpu_seconds()
    assert report.gpu_hours_available == pytest.approx(available / HOUR, rel=1e-3)
    assert report.gpu_hours_utilised == pytest.approx(utilised / HOUR, rel=1e-3)
    assert report.overhead_percent == pytest.approx(100 * (1 - utilised / available), abs=1)
    live_max = max(
        sum(1 for n in workload.nodes if n.ready <= t < (n.removed if n.removed is not None else HOUR))
        for t in range(HOUR)
    )
    assert report.gpu_nodes_max == live_max
    assert report.dcgm_gpu_util_mean_percent == pytest.approx(workload.dcgm_mean(), rel=1e-6)


def test_chunked_queries_give_the_same_report(report: Report, workload: Workload, prometheus: str) -> None:
    chunked = collect(
        ReportInputs(prometheus=prometheus, start=workload.start, end=workload.start + workload.seconds, max_points=700)
    )
    assert chunked.summary() == report.summary()


def test_report_command_writes_json_and_plots(
    workload: Workload, prometheus: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # In-process (test_cli runs the console script itself); RFC 3339 times, as users type them.
    start = datetime.fromtimestamp(workload.start, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    end = datetime.fromtimestamp(workload.start + workload.seconds, tz=timezone.utc).isoformat()
    code = main(["report", "--prometheus", prometheus, "--start", start, "--end", end, "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "pending median / mean / p99 / max" in captured.out
    assert "utilisation / overhead" in captured.out
    summary = json.loads((tmp_path / "report.json").read_text())
    available, utilised = workload.gpu_seconds()
    assert summary["overhead_percent"] == pytest.approx(100 * (1 - utilised / available), abs=1)
    assert len(summary["pending_by_pod"]) == len(workload.pods)
    for name in ("wait_times.png", "gpus.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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
        (["--prometheus", "localhost:9090", "--start", "0", "--end", "60"],
         "gpu-platform: --prometheus: prometheus must be an http:// or https:// URL with a host, e.g. http://localhost:9090 (got \"localhost:9090\")"),
        (["--prometheus", "http://x", "--start", "2026-11-20T10:00:00Z", "--end", "2026-11-20T10:00:00Z"],
         "gpu-platform: --end: end 2026-11-20T10:00:00+00:00 must be at least one step (1s) after start 2026-11-20T10:00:00+00:00: the range is empty (got \"2026-11-20T10:00:00+00:00\")"),
        (["--prometheus", "http://x", "--start", "yesterday", "--end", "60"],
         "gpu-platform: --start: a time is RFC 3339 (2026-11-20T10:00:00Z) or Unix seconds (got \"yesterday\")"),
    ],
)
def test_fails_on_bad_inputs_one_line_exit_2(argv: list[str], line: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["report", *argv, "--out", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [line]


def test_report_inputs_defaults_and_grid() -> None:
    inputs = ReportInputs(prometheus="http://p:9090/", start="2026-11-20T10:00:00", end="2026-11-20T10:00:05")
    assert (inputs.step, inputs.timeout, inputs.max_points, inputs.prometheus) == (1, 30, 11_000, "http://p:9090")
    assert inputs.grid() == [inputs.start.timestamp() + i for i in range(5)]
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
