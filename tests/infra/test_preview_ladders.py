"""`gpu-platform preview` of a stack whose GPU pool states a capacity ladder (issue 38): the program runs clean (no
schema or policy violation) and the tree shows each rung's node pool buying its rung, and the ComputeClass
trying them in the ladder's order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.infra.cli import main
from tests.conftest import PROJECT_DIR
from tests.infra.test_cli import project_with_stack
from tests.test_readme_blocks import block

GUIDE = "docs/clouds/gke-capacity-ladders.md"


def _with_the_guides_ladder(config: dict[str, Any]) -> None:
    config["gpu-platform:gke"]["gpu_pools"] = yaml.safe_load(block(GUIDE, "example:gke-ladder"))["gpu-platform:gke"]["gpu_pools"]


def test_the_guides_ladder_previews_clean_and_the_tree_shows_each_rung(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = project_with_stack(tmp_path, "ladder-gke", _with_the_guides_ladder)
    code = main(["preview", "ladder-gke", "--project-dir", str(project), "--no-render", "--offline"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 schema violations; policy pack: 0 mandatory and 0 advisory violations" in out
    tree = out.splitlines()
    # Each resource's settings are the line after its name.
    lines = {
        name: tree[i + 1]
        for i, line in enumerate(tree)
        for name in ("a100-reserved", "a100-flex", "a100-spot", "a100-on-demand")
        if line.endswith(f"ladder-gke-{name}")
    }
    assert "reservation=a100-training" in lines["a100-reserved"] and "spot=false" in lines["a100-reserved"]
    assert "flexStart=on maxRun=86400s" in lines["a100-flex"] and "autoscaling=0..4 total (ANY)" in lines["a100-flex"]
    assert "spot=true" in lines["a100-spot"] and "reservation=" not in lines["a100-spot"]
    assert "spot=false" in lines["a100-on-demand"] and "flexStart" not in lines["a100-on-demand"]
    assert "priorities=a100-reserved > a100-flex > a100-spot > a100-on-demand" in out
    assert (PROJECT_DIR / GUIDE).is_file()
