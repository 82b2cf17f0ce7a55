"""Benchmark: whole-process time of the offline dev-gke preview vs a bare SDK import.

    python tests/benchmarks/preview_vs_import.py [--runs N] [--stack dev-gke]

Runs both commands N times, alternating, each in a fresh interpreter (the same Python
that runs this script), and prints the median and minimum wall time of each and their
ratio. Target (issue 2): the preview takes at most 3x the bare import.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _project_python import project_python  # the scripts' folder is on sys.path

project_python(__file__)

PROJECT_DIR = Path(__file__).resolve().parents[2]
BARE_IMPORT = [sys.executable, "-c", "import pulumi, pulumi_gcp, pulumi_kubernetes"]


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--stack", default="dev-gke")
    args = parser.parse_args()
    preview = [sys.executable, "-m", "gpu_platform.infra.cli", "preview", args.stack, "--quiet"]

    _time(BARE_IMPORT)  # warm the bytecode caches once
    _time(preview)
    bare, prev = [], []
    for _ in range(args.runs):
        bare.append(_time(BARE_IMPORT))
        prev.append(_time(preview))
    ratio = statistics.median(prev) / statistics.median(bare)
    print(f"bare import  median {statistics.median(bare):.3f}s  min {min(bare):.3f}s  ({args.runs} runs)")
    print(f"preview {args.stack}  median {statistics.median(prev):.3f}s  min {min(prev):.3f}s  ({args.runs} runs)")
    print(f"ratio (median preview / median bare import): {ratio:.2f}x  (target <= 3.00x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
