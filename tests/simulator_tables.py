"""Regenerate the simulator's figures that docs/simulator/validation.md prints: the comparison with the RAPIDS
deep-dive's measured run, and the sweep of dev-gke's autoscaling profile and GPU-pool minimum with its
``--target-p90 60s`` recommendation.

    .venv/bin/python -m tests.simulator_tables            # print the generated sections
    .venv/bin/python -m tests.simulator_tables --check    # exit 1, naming each section that differs
    .venv/bin/python -m tests.simulator_tables --write    # rewrite them in the page

Each section lies between ``<!-- generated:NAME -->`` and ``<!-- end:NAME -->`` in the page and is made from the
JSON of ``gpu-platform simulate`` commands run here, in-process, exactly as a user would run them (GUIDE_COMMAND,
SWEEP_COMMAND): the figures are the simulator's, never typed. tests/infra/test_simulator_tables.py runs ``--check``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpu_platform.infra.simulate.workloads import DeepDive, deep_dive

PROJECT_DIR = Path(__file__).resolve().parents[1]
PAGE = PROJECT_DIR / "docs" / "simulator" / "validation.md"

GUIDE_IMAGE = "us-central1-docker.pkg.dev/gpu-platform-dev/rapids/base:26.02-cuda12-py3.13"
"""The RAPIDS image mirrored to Artifact Registry in dev-gke's region, which GKE streams: the deep-dive's containers
ran 12 s after their GPUs (its image streamed)."""
GUIDE_SEEDS = range(12)
"""The seeds the guide comparison runs (model.seed 0-11: the workload's widths and work, and the model's draws)."""
GUIDE_COMMAND = [
    "simulate",
    "dev-gke",
    "--set",
    f"dask.rapids_image={GUIDE_IMAGE}",
    "--sweep",
    "model.seed=" + ",".join(str(s) for s in GUIDE_SEEDS),
]
"""dev-gke with the defaults and the image streamed, once per seed (a sweep of model.seed)."""
SWEEP_COMMAND = [
    "simulate",
    "dev-gke",
    "--sweep",
    "gke.autoscaling_profile=BALANCED,OPTIMIZE_UTILIZATION",
    "--sweep",
    "gke.gpu_pools[t4].autoscaling.min_nodes=0,1,3",
    "--target-p90",
    "60s",
]
"""The third command of the first block of docs/commands/simulate.md, without its --out."""
TARGET_S = 60

GUIDE = {
    "median": "2 s",
    "within_5s": "72%",
    "within_60s": "91%",
    "utilisation": "64%",
    "p99": "326 s",
    "run": "78 min",
    "gpu_hours": "15.2",
}
"""The deep-dive's measured run (RAPIDS multi-tenant GKE deep-dive: its Prometheus figures over the 1.8 h range, N = 618
pods of its namespace; the run took 1 h 18 min)."""


def simulate_json(arguments: Sequence[str]) -> dict[str, Any]:
    """``gpu-platform <arguments> --json FILE`` in this process, its printed output discarded; the JSON. One process: the
    figures do not depend on it (deterministic for a seed), and no worker pays the imports again."""
    from gpu_platform.infra.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.json"
        with contextlib.redirect_stdout(io.StringIO()):
            code = main([*arguments, "--project-dir", str(PROJECT_DIR), "--processes", "1", "--json", str(path)])
        if code != 0 or not path.exists():
            raise SystemExit(f"gpu-platform {' '.join(arguments)} exited {code}")
        document: dict[str, Any] = json.loads(path.read_text())
        return document


def _span(values: Sequence[float], fmt: Callable[[float], str], unit: str = "") -> str:
    low, high = fmt(min(values)), fmt(max(values))
    return f"{low}{unit}" if low == high else f"{low}-{high}{unit}"


def run_minutes(configuration: dict[str, Any]) -> float:
    """The work's length, the first Dask cluster to the last one done: the run's range less the deep-dive's 15-minute
    lead-in (DeepDive.lead: the session starts at 0, the first cluster then) and the 15 minutes after the end (the
    pattern's tail), as the guide's 1 h 18 min counts it."""
    tail = deep_dive(DeepDive(), 0).tail_s
    return float(configuration["end"] - configuration["start"] - DeepDive().lead - tail) / 60


def guide_table(document: dict[str, Any]) -> str:
    """The guide comparison over GUIDE_SEEDS: each figure, the guide's, the model's range, and what kind of figure the
    model's is (an input, fitted, or predicted)."""
    runs = document["configurations"]
    seeds = [c["simulation"]["seed"] for c in runs]

    def pct(v: float) -> str:
        return f"{100 * v:.1f}"

    rows = [
        ("median wait", GUIDE["median"], _span([c["pending_median_s"] for c in runs], lambda v: f"{v:g}", " s"), "input (the pod start on a warm node)"),
        ("GPU pods within 5 s", GUIDE["within_5s"], _span([c["scheduled_within"]["5s"] for c in runs], pct, "%"), "predicted"),
        ("GPU pods within 60 s", GUIDE["within_60s"], _span([c["scheduled_within"]["60s"] for c in runs], pct, "%"), "predicted"),
        ("GPU utilisation", GUIDE["utilisation"], _span([c["utilisation_percent"] for c in runs], lambda v: f"{v:.1f}", "%"), "fitted (`work`, scale-down)"),
        ("p99 wait", GUIDE["p99"], _span([c["pending_p99_s"] for c in runs], lambda v: f"{v:g}", " s"), "fitted (`work`, scale-down)"),
        ("run: first cluster to last done", GUIDE["run"], _span([run_minutes(c) for c in runs], lambda v: f"{v:.0f}", " min"), "fitted (`work`)"),
        ("GPU-hours held by pods", GUIDE["gpu_hours"], _span([c["gpu_hours_utilised"] for c in runs], lambda v: f"{v:.1f}"), "fitted (`work` derived from it)"),
    ]
    lines = [
        f"| figure | guide (measured) | model, seeds {seeds[0]}-{seeds[-1]} | the model's figure is |",
        "| --- | --- | --- | --- |",
        *(f"| {what} | {guide} | {model} | {kind} |" for what, guide, model, kind in rows),
    ]
    return "\n".join(lines)


def _value(v: Any) -> str:
    return str(v)


def sweep_table(document: dict[str, Any], configured: dict[str, Any]) -> str:
    """The sweep's figures per configuration (seed 0), the pick and the stack as configured marked."""
    pick = document["recommendation"]["label"]
    lines = [
        "| `autoscaling_profile` | `min_nodes` per zone | median | p90 | p99 | within 5 s | within 60 s | GPU utilisation "
        "| GPU-hours paid / used | cost per day | cost per workload |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in document["configurations"]:
        o = c["simulation"]["overrides"]
        profile, min_nodes = o["gke.autoscaling_profile"], o["gke.gpu_pools[t4].autoscaling.min_nodes"]
        notes = [n for n, hit in (("the sweep's pick", c["simulation"]["label"] == pick), ("dev-gke as configured", o == configured)) if hit]
        cost = c["cost"]
        lines.append(
            f"| {profile}{' (' + ', '.join(notes) + ')' if notes else ''} | {min_nodes} | {c['pending_median_s']:g} s | {c['pending_p90_s']} s "
            f"| {c['pending_p99_s']:g} s | {100 * c['scheduled_within']['5s']:.0f}% | {100 * c['scheduled_within']['60s']:.0f}% "
            f"| {c['utilisation_percent']:.1f}% | {cost['gpu_hours_paid']:.1f} / {cost['gpu_hours_used']:.1f} | ${cost['usd_per_day']:,.0f} "
            f"| ${cost['usd_per_workload']:,.2f} |"
        )
    return "\n".join(lines)


def sweep_pick(document: dict[str, Any], configured: dict[str, Any]) -> str:
    """What --target-p90 60s names among the sweep's configurations, on how many seeds, at what tail, beside the stack as
    configured."""
    rec = document["recommendation"]
    by_label = {c["simulation"]["label"]: c for c in document["configurations"]}
    chosen = by_label[rec["label"]]
    as_configured = next(c for c in document["configurations"] if c["simulation"]["overrides"] == configured)
    p90s = rec["pending_p90_s_by_seed"]
    met = sum(1 for p in p90s if p is not None and p <= TARGET_S)
    seeds = rec["seeds"]
    configured_p90 = as_configured["pending_p90_s"]
    verdict = "meets" if configured_p90 <= TARGET_S else "misses"
    return (
        f"Among these six, `--target-p90 60s` names `{rec['label']}`: p90 {min(p90s)}-{max(p90s)} s on seeds {seeds[0]}-{seeds[-1]}, "
        f"meeting {TARGET_S} s on {met} of {len(seeds)} (the rule: 3 in 4), ${rec['usd_per_workload']:,.2f} per workload on seed {seeds[0]}, "
        f"with a p99 of {chosen['pending_p99_s']:g} s against {as_configured['pending_p99_s']:g} s for dev-gke as configured, which "
        f"{verdict} the target on seed {seeds[0]} ({configured_p90} s)."
    )


def configured_overrides() -> dict[str, Any]:
    """dev-gke's own values of the swept keys (its profile and the T4 pool's minimum), read from its stack."""
    from gpu_platform.infra.stack.read import load_stack

    stack = load_stack(PROJECT_DIR, "dev-gke")
    (t4,) = [p for p in stack.gke.gpu_pools if p.name == "t4"]
    return {"gke.autoscaling_profile": stack.gke.autoscaling_profile.value, "gke.gpu_pools[t4].autoscaling.min_nodes": t4.autoscaling.min_nodes}


def sections() -> dict[str, str]:
    """Every generated section of the page, by name."""
    guide = simulate_json(GUIDE_COMMAND)
    sweep = simulate_json(SWEEP_COMMAND)
    configured = configured_overrides()
    return {"guide-table": guide_table(guide), "sweep-table": sweep_table(sweep, configured), "sweep-pick": sweep_pick(sweep, configured)}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated:{re.escape(name)} -->\n)(.*?)(\n?<!-- end:{re.escape(name)} -->)", re.S)


def in_page(text: str, name: str) -> str | None:
    """The section ``name`` as the page has it (None: the page has no such section)."""
    m = _pattern(name).search(text)
    return None if m is None else m.group(2)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.simulator_tables", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1, naming each section of the page that differs from what the simulator gives")
    mode.add_argument("--write", action="store_true", help="rewrite the sections that differ in the page")
    args = parser.parse_args(argv)
    generated = sections()
    text = PAGE.read_text()
    if not (args.check or args.write):
        for name, body in generated.items():
            print(f"<!-- generated:{name} -->\n{body}\n<!-- end:{name} -->\n")
        return 0
    stale = [name for name, body in generated.items() if in_page(text, name) != body]
    missing = [name for name in stale if in_page(text, name) is None]
    if missing:
        for name in missing:
            print(f"{PAGE.relative_to(PROJECT_DIR)}: no section <!-- generated:{name} --> ... <!-- end:{name} -->", file=sys.stderr)
        return 1
    if args.check:
        for name in stale:
            print(f"{PAGE.relative_to(PROJECT_DIR)}: section {name} differs from the simulator's figures: run python -m tests.simulator_tables --write")
        return 1 if stale else 0
    for name in stale:
        m = _pattern(name).search(text)
        assert m is not None  # not missing
        text = text[: m.start()] + m.group(1) + generated[name] + f"\n<!-- end:{name} -->" + text[m.end() :]
    PAGE.write_text(text)
    for name in stale:
        print(f"rewrote section {name} of {PAGE.relative_to(PROJECT_DIR)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
