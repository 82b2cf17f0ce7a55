"""Regenerate the sample report in this folder from the test suite's generated workload.

    python examples/report/make_sample.py [--out DIR]

Run from the repository root with the Python that has gpu-platform installed (the active
virtualenv), or any Python when ./.venv has it: the script then runs under .venv/bin/python.
Needs promtool and prometheus on PATH (Debian's prometheus package). Simulates the one-hour
multi-tenant workload of tests/infra/report_workload.py (fixed seed, ending two hours ago),
backfills it into a temporary Prometheus on 127.0.0.1 started with
``--query.lookback-delta=500ms`` (backfilled blocks carry no staleness markers, so a series
must end where its samples end) and ``--storage.tsdb.retention.time=100y``, runs
`gpu-platform report` against it, and writes report.json, wait_times.png and gpus.png here
(each file replaced atomically; the other files of this folder stay).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT_DIR = HERE.parents[1]
sys.path.insert(0, str(PROJECT_DIR))  # tests.infra.report_workload, tests.benchmarks._project_python

from tests.benchmarks._project_python import project_python  # noqa: E402

project_python(__file__)


def run(out: Path = HERE) -> int:
    from gpu_platform.infra.cli import main
    from gpu_platform.infra.output import file_target, write_outputs
    from gpu_platform.infra.report.prometheus import REPORT_FILES
    from tests.infra.report_workload import serve, simulate

    missing = [tool for tool in ("promtool", "prometheus") if shutil.which(tool) is None]
    if missing:
        print(f"make_sample.py: {' and '.join(missing)} not on PATH (Debian's prometheus package)", file=sys.stderr)
        return 2
    workload = simulate(start=(int(time.time()) // 60) * 60 - 3 * 3600)
    with tempfile.TemporaryDirectory() as work, serve(workload, Path(work)) as url:
        end = workload.start + workload.seconds
        staged = Path(work) / "report"  # report --out replaces a folder whole; this one holds more
        code = main(["report", "--prometheus", url, "--start", str(workload.start), "--end", str(end), "--out", str(staged)])
        if code != 0:
            return code
        written = [name for name in REPORT_FILES if (staged / name).exists()]  # tenants.png only with --stack
        write_outputs([(file_target("--out", str(out / name)), (staged / name).read_bytes()) for name in written])
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="the folder to write the three files into (default: this one)")
    sys.exit(run(parser.parse_args().out))
