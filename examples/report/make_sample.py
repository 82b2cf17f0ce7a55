"""Regenerate the sample report in this folder from the test suite's generated workload.

    .venv/bin/python examples/report/make_sample.py

Needs promtool and prometheus (Debian's prometheus package). Simulates the one-hour
multi-tenant workload of tests/infra/report_workload.py (fixed seed, ending two hours
ago), backfills it into a temporary Prometheus on a loopback port, and runs
`gpu-platform report` against it, writing report.json, wait_times.png and gpus.png here.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from gpu_platform.infra.cli import main  # noqa: E402
from tests.infra.report_workload import serve, simulate  # noqa: E402


def run() -> int:
    workload = simulate(start=(int(time.time()) // 60) * 60 - 3 * 3600)
    with tempfile.TemporaryDirectory() as work, serve(workload, Path(work)) as url:
        end = workload.start + workload.seconds
        return main(["report", "--prometheus", url, "--start", str(workload.start), "--end", str(end), "--out", str(HERE)])


if __name__ == "__main__":
    sys.exit(run())
