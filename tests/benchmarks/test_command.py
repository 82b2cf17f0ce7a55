"""Benchmark: the README's test command, as a user runs it, timed step by step.

    python tests/benchmarks/test_command.py [--slowest 15] [--pytest-only] [--log FILE] [-- PYTEST ARGS]

Run from the repository root with any Python 3.11+: the script needs only the standard library, because
the command it times makes ./.venv itself (so, unlike the other benchmarks, it does not go on under
./.venv/bin/python; it runs what README.md's ``quickstart:test`` block says, as .ci/run does).

The command is split at its ``&&`` and each step is run in turn with bash, the pytest step with
``--durations=N`` added. For each step it prints the wall time and the CPU time (user + sys) of the
step's processes (every process it waited for, the test workers included), and for the whole run the load
average before and after, and how much CPU the rest of the machine used meanwhile (all busy time in
/proc/stat minus this run's), because on a shared machine the wall time alone says little. Then the
pytest summary line and the N slowest tests.

Target (issue 33): the test command under 120 s on an unloaded 2-core machine, apart from the one-time
builds (tests/kube/build.sh and tests/engine/build.sh, which .ci/run makes before the tests; built, the
tests start them, unbuilt they skip). ``--pytest-only`` times only the pytest step.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]


def readme_test_command() -> str:
    """The command in README.md's quickstart:test block (the same pattern .ci/run reads)."""
    readme = (PROJECT_DIR / "README.md").read_text()
    m = re.search(r"<!-- quickstart:test -->\s*```sh\n(.+?)\n```", readme, re.S)
    if not m:
        raise SystemExit("README.md has no quickstart:test block")
    return m.group(1).strip()


def _busy_jiffies() -> int | None:
    """The machine's busy time so far, in clock ticks (user, nice, system, irq, softirq, steal), or None off Linux."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return user + nice + system + irq + softirq + steal


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slowest", type=int, default=15, help="how many of the slowest tests to list (pytest --durations)")
    parser.add_argument("--pytest-only", action="store_true", help="time only the pytest step (./.venv must exist)")
    parser.add_argument("--log", type=Path, help="keep the pytest step's whole output in this file")
    parser.add_argument("pytest_args", nargs="*", help="extra arguments for the pytest step (after --)")
    args = parser.parse_args()

    steps = [s.strip() for s in readme_test_command().split("&&")]
    (test_step,) = [s for s in steps if " -m pytest" in s]
    test_step = " ".join([test_step, f"--durations={args.slowest}", "--durations-min=0", *args.pytest_args])
    steps = [test_step] if args.pytest_only else [test_step if " -m pytest" in s else s for s in steps]

    ticks = os.sysconf("SC_CLK_TCK")
    load_before = os.getloadavg()
    busy_before = _busy_jiffies()
    total_wall = total_cpu = 0.0
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpu-platform-bench-") as tmp:
        log = Path(tmp) / "pytest.log"
        for step in steps:
            cpu0, wall0 = _children_cpu(), time.perf_counter()
            with log.open("w") as out:
                done = subprocess.run(["bash", "-c", step], cwd=PROJECT_DIR, stdout=out, stderr=subprocess.STDOUT, check=False)
            wall, cpu = time.perf_counter() - wall0, _children_cpu() - cpu0
            total_wall, total_cpu = total_wall + wall, total_cpu + cpu
            rows.append((step, wall, cpu, done.returncode))
            if done.returncode != 0 and step is not test_step:
                print(log.read_text()[-4000:])
                raise SystemExit(f"{step!r} exited {done.returncode}")
        output = log.read_text()
        if args.log:
            args.log.write_text(output)
    busy_after = _busy_jiffies()
    load_after = os.getloadavg()

    print(f"README test command, step by step ({os.cpu_count()} cores):")
    for step, wall, cpu, code in rows:
        print(f"  {wall:7.1f} s wall {cpu:7.1f} s CPU  exit {code}  {step}")
    print(f"  {total_wall:7.1f} s wall {total_cpu:7.1f} s CPU  in all")
    print(f"load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; after: {', '.join(f'{x:.2f}' for x in load_after)}")
    if busy_before is not None and busy_after is not None:
        others = (busy_after - busy_before) / ticks - total_cpu
        print(f"CPU used by the rest of the machine meanwhile: {max(others, 0.0):.1f} s (of {total_wall * (os.cpu_count() or 1):.1f} core-seconds)")
    summary = [line for line in output.splitlines() if re.match(r"(=+ )?\d+ (passed|failed|error).* in [\d.]+s", line)]
    print(summary[-1].strip("= ") if summary else "(no pytest summary line: see the output below)")
    m = re.search(r"=+ slowest (?:\d+ )?durations =+\n(.*?)(?:\n\n|\n=)", output, re.S)
    if m:
        print(f"the {args.slowest} slowest test phases (setup, call, teardown):")
        for line in m.group(1).splitlines():
            print(f"  {line}")
    code = rows[-1][3]
    if code != 0:
        print(output[-6000:])
    return code


if __name__ == "__main__":
    sys.exit(main())
