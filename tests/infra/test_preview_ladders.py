"""`gpu-platform preview` of a stack whose GPU pool states a capacity ladder (issue 38): the program runs clean (no
schema or policy violation) and the tree shows each rung's node pool buying its rung, and the ComputeClass
trying them in the ladder's order."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.infra.cli import main
from tests.conftest import PROJECT_DIR
from tests.infra.test_cli import project_with_stack
from tests.test_readme_blocks import block

GUIDE = "docs/clouds/capacity-ladders.md"


def _with_the_guides_ladder(config: dict[str, Any]) -> None:
    config["gpu-platform:gke"]["gpu_pools"] = yaml.safe_load(block(GUIDE, "example:gke-ladder"))["gpu-platform:gke"]["gpu_pools"]


def _previewed_clean(project: Path, stack: str, prefix: str, names: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, str]]:
    """`gpu-platform preview` of ``stack`` offline, clean of schema and policy violations: (its output, the settings
    line of each resource named ``prefix + name``, which the tree prints on the line after the name)."""
    code = main(["preview", stack, "--project-dir", str(project), "--no-render", "--offline"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 schema violations; policy pack: 0 mandatory and 0 advisory violations" in out
    tree = out.splitlines()
    return out, {name: tree[i + 1] for i, line in enumerate(tree) for name in names if line.endswith(prefix + name)}


def test_the_guides_ladder_previews_clean_and_the_tree_shows_each_rung(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = project_with_stack(tmp_path, "ladder-gke", _with_the_guides_ladder)
    out, lines = _previewed_clean(project, "ladder-gke", "ladder-gke-", ("a100-reserved", "a100-flex", "a100-spot", "a100-on-demand"), capsys)
    assert "reservation=a100-training" in lines["a100-reserved"] and "spot=false" in lines["a100-reserved"]
    assert "flexStart=on maxRun=86400s" in lines["a100-flex"] and "autoscaling=0..4 total (ANY)" in lines["a100-flex"]
    assert "spot=true" in lines["a100-spot"] and "reservation=" not in lines["a100-spot"]
    assert "spot=false" in lines["a100-on-demand"] and "flexStart" not in lines["a100-on-demand"]
    assert "priorities=a100-reserved > a100-flex > a100-spot > a100-on-demand" in out
    assert (PROJECT_DIR / GUIDE).is_file()


LADDER_STACKS = {"ladder-gke": "dev-gke", "ladder-eks": "dev-eks", "ladder-karpenter": "prod-eks"}
"""The issue's three ladders, each a stack of its own (what ``ladder_project`` writes): the guide's GKE pool
(reservation -> flex_start -> spot -> on_demand) in dev-gke's place, and the guide's h100 class (capacity_block ->
reservation -> spot -> on_demand) added to dev-eks (the cluster autoscaler) and to prod-eks (Karpenter). Previewed
here, rendered clean in tests/infra/test_render.py and applied in tests/apply/test_apply_stacks.py."""


def ladder_project(root: Path, name: str) -> Path:
    """A copy of the project under ``root`` (made if missing) whose stack ``name`` (a key of LADDER_STACKS) is its
    base stack with the guide's ladder."""
    if name == "ladder-gke":
        return project_with_stack(root, name, _with_the_guides_ladder)
    return _project_with_eks_stack(root, LADDER_STACKS[name], name)


def _project_with_eks_stack(tmp_path: Path, base: str, name: str) -> Path:
    """A copy of the project whose stack ``name`` is ``base`` with the guide's h100 class (capacity_block ->
    reservation -> spot -> on_demand) added to its classes."""
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "infra").symlink_to(PROJECT_DIR / "infra")
    (tmp_path / "stacks").mkdir()
    document = yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{base}.yaml").read_text())
    classes = yaml.safe_load(block(GUIDE, "example:eks-ladder-reserved"))["gpu-platform:eks_node_groups"]["classes"]
    document["config"]["gpu-platform:eks_node_groups"]["classes"] += [c for c in classes if c["name"] == "h100"]
    (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(document))
    return tmp_path


def test_the_guides_eks_ladder_previews_clean_under_the_cluster_autoscaler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """dev-eks with the h100 class: no schema or policy violation, and the tree shows each rung's node group with its
    capacity type and the reservation its launch template buys."""
    project = _project_with_eks_stack(tmp_path, "dev-eks", "ladder-eks")
    names = ("h100-block", "h100-reserved", "h100-spot", "h100-on-demand", "h100-block-launch-template", "h100-reserved-launch-template")
    _, lines = _previewed_clean(project, "ladder-eks", "ladder-eks-gpu-", names, capsys)
    assert "types=p5.48xlarge capacity=CAPACITY_BLOCK" in lines["h100-block"] and "launchTemplate" in lines["h100-block"]
    assert "capacity=ON_DEMAND" in lines["h100-reserved"] and "launchTemplate" in lines["h100-reserved"]
    assert "capacity=SPOT" in lines["h100-spot"] and "launchTemplate" not in lines["h100-spot"]
    assert "capacity=ON_DEMAND" in lines["h100-on-demand"] and "launchTemplate" not in lines["h100-on-demand"]
    assert "reservation=cr-0a1b2c3d4e5f60718 market=capacity-block" in lines["h100-block-launch-template"]
    assert "reservation=cr-0123456789abcdef0" in lines["h100-reserved-launch-template"] and "market=" not in lines["h100-reserved-launch-template"]


def test_the_guides_eks_ladder_previews_clean_with_karpenter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """prod-eks (Karpenter) with the h100 class: its NodePools and EC2NodeClass (reserved capacity type, reservation
    ids, selector terms) pass the pinned karpenter-crd 1.14.1 schemas and the policy pack."""
    project = _project_with_eks_stack(tmp_path, "prod-eks", "ladder-karpenter")
    manifests = tmp_path / "manifests"
    code = main(["preview", "ladder-karpenter", "--project-dir", str(project), "--no-render", "--offline", "--manifests", str(manifests)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 schema violations; policy pack: 0 mandatory and 0 advisory violations" in out
    objects = [o for f in sorted(manifests.rglob("*.yaml")) for o in yaml.safe_load_all(f.read_text()) if o]
    pools = {o["metadata"]["name"]: o["spec"] for o in objects if o.get("kind") == "NodePool"}
    weights = sorted((n for n in pools if n.startswith("h100-")), key=lambda n: -pools[n]["weight"])
    assert weights == ["h100-block", "h100-reserved", "h100-spot", "h100-on-demand"]
    (h100,) = [o["spec"] for o in objects if o.get("kind") == "EC2NodeClass" and o["metadata"]["name"] == "h100"]
    assert h100["capacityReservationSelectorTerms"] == [{"id": "cr-0a1b2c3d4e5f60718"}, {"id": "cr-0123456789abcdef0"}]
