"""Benchmark: the rendered and the unrendered offline preview of every shipped stack.

    python tests/benchmarks/render_preview.py [--runs 5] [--upstream ../shared/reference/upstream]

Run from the repository root with the Python that has gpu-platform installed (the active
virtualenv), or any Python when ./.venv has it: the script then runs under .venv/bin/python.

For each stack file, runs `gpu-platform preview <stack> --quiet --no-render` and
`gpu-platform preview <stack> --quiet --upstream DIR` N times each, alternating, each in a
fresh interpreter, after one warm-up run of each (so the render cache is warm: chart CRDs
parsed once, Kustomize builds kept), and prints the median and minimum wall time of each.
Target (issue 13): rendered <= 10 s per stack on a 2-core machine.

The render cache goes to a temporary folder (GPU_PLATFORM_CACHE), never the user's, and
nothing is fetched (GPU_PLATFORM_OFFLINE=1).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _project_python import project_python  # the scripts' folder is on sys.path

project_python(__file__)

PROJECT_DIR = Path(__file__).resolve().parents[2]


def _time(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=PROJECT_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--upstream", default=str(PROJECT_DIR.parent / "shared" / "reference" / "upstream"))
    parser.add_argument("stacks", nargs="*", help="default: every stacks/Pulumi.<stack>.yaml")
    args = parser.parse_args()
    if not Path(args.upstream, "charts").is_dir():
        raise SystemExit(f"--upstream {args.upstream}: no pinned sources there")
    stacks = args.stacks or sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
    with tempfile.TemporaryDirectory(prefix="gpu-platform-bench-") as cache:
        env = {**os.environ, "GPU_PLATFORM_CACHE": cache, "GPU_PLATFORM_OFFLINE": "1"}
        print(f"{'stack':<12} {'unrendered median/min':>22} {'rendered median/min':>22}   ({args.runs} runs each, warm cache, {os.cpu_count()} cores)")
        for stack in stacks:
            base = [sys.executable, "-m", "gpu_platform.infra.cli", "preview", stack, "--quiet"]
            plain, rendered = base + ["--no-render"], base + ["--upstream", args.upstream]
            _time(plain, env)
            _time(rendered, env)  # warm: the render cache is filled here
            a, b = [], []
            for _ in range(args.runs):
                a.append(_time(plain, env))
                b.append(_time(rendered, env))
            print(f"{stack:<12} {statistics.median(a):>14.2f}s / {min(a):.2f}s {statistics.median(b):>14.2f}s / {min(b):.2f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
