"""The GitHub workflows: valid against GitHub's workflow schema, and doing what they promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import PROJECT_DIR

WORKFLOWS = sorted((PROJECT_DIR / ".github" / "workflows").glob("*.yml"))
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))


def check(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_workflows_match_githubs_schema() -> None:
    assert {p.name for p in WORKFLOWS} == {"preview.yml", "tests.yml"}
    result = check(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_schema_check_is_live(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("name: bad\non: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    stepz: []\n")
    assert check(bad).returncode != 0


def load(name: str) -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((PROJECT_DIR / ".github" / "workflows" / name).read_text())


def test_preview_runs_every_stack_offline_and_with_pulumi() -> None:
    workflow = load("preview.yml")
    assert workflow[True] == {"pull_request": None}  # YAML reads the key `on` as True
    assert workflow["permissions"]["pull-requests"] == "write"
    job = workflow["jobs"]["preview"]
    assert job["strategy"]["matrix"]["stack"] == STACKS
    steps = {s.get("name", s.get("uses")): s for s in job["steps"]}
    assert "gpu-platform preview ${{ matrix.stack }}" in steps["Offline preview with the policy pack"]["run"]
    assert "if" not in steps["Offline preview with the policy pack"]  # always runs
    pulumi = steps["Pulumi preview with the policy pack"]
    assert pulumi["uses"] == "pulumi/actions@v7"
    assert pulumi["with"] == {
        "command": "preview",
        "stack-name": "${{ matrix.stack }}",
        "work-dir": ".",
        "comment-on-pr": True,
        "policyPacks": "policies",
    }
    assert "IS_FORK != 'true'" in pulumi["if"]
    assert "::notice" in steps["Cloud preview skipped"]["run"]
    assert "IS_FORK == 'true'" in steps["Cloud preview skipped"]["if"]


def test_tests_workflow_runs_ci_on_push() -> None:
    workflow = load("tests.yml")
    assert "push" in workflow[True]
    assert any(step.get("run") == "bash .ci/run" for step in workflow["jobs"]["tests"]["steps"])
