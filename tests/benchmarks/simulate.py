"""Benchmark: `gpu-platform simulate` on dev-gke, whole commands as a user runs them.

    python tests/benchmarks/simulate.py

Prints the wall time of (1) one simulated day of the RAPIDS deep-dive workload (``--hours 24``;
target <= 10 s on 2 cores) and (2) a 20-configuration sweep of the one-hour workload
(5 scale-down times x 4 GPU-pool minimums, in parallel processes; target <= 3 min), each in a
fresh interpreter, with the core count.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _project_python import project_python  # the scripts' folder is on sys.path

project_python(__file__)

PROJECT_DIR = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from gpu_platform.infra.cli import run; run()"]


def _time(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([*CLI, *args], check=True, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        day = _time(["simulate", "dev-gke", "--hours", "24", "--json", f"{tmp}/day.json"])
        sweep = _time(
            [
                "simulate",
                "dev-gke",
                "--sweep",
                "model.autoscaler.scale_down_unneeded_time=1m,2m,5m,10m,20m",
                "--sweep",
                "gke.gpu_pools[t4].autoscaling.min_nodes=0,1,2,4",
                "--json",
                f"{tmp}/sweep.json",
            ]
        )
    print(f"cores: {os.cpu_count()}")
    print(f"one simulated day of the deep-dive workload: {day:.1f} s (target <= 10 s)")
    print(f"20-configuration sweep: {sweep:.1f} s (target <= 180 s)")
    return 0 if day <= 10 and sweep <= 180 else 1


if __name__ == "__main__":
    raise SystemExit(main())
