"""One label table (components/core/labels.py): every well-known label key, annotation and the GPU resource
name is spelled there and nowhere else in the package's code (docstrings, which document them, apart)."""

from __future__ import annotations

import ast
from pathlib import Path

from gpu_platform.components.core import labels
from tests.conftest import PROJECT_DIR

LAYERS = ("components", "policies", "infra")


def _table() -> dict[str, str]:
    """name -> value of every string constant of the label table (tuple members included)."""
    out: dict[str, str] = {}
    for name in labels.__all__:
        value = getattr(labels, name)
        if isinstance(value, str):
            out[name] = value
        elif isinstance(value, tuple):
            out |= {f"{name}[{i}]": v for i, v in enumerate(value) if isinstance(v, str) and i == 0}
        elif isinstance(value, dict):
            out |= {f"{name} key {k}": k for k in value}
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (a bare string statement)."""
    return {
        id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def spelled_out(root: Path) -> list[str]:
    """One line per string in the code of ``root``'s layers that spells out a value of the label table."""
    table = _table()
    problems = []
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            if path == root / "components" / "core" / "labels.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            skip = _docstrings(tree)
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
                    continue
                for name, value in table.items():
                    # Keys with a prefix are matched inside any string; bare words only as the whole string.
                    if ("/" in value and value in node.value) or node.value == value:
                        problems.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r} spells out labels.{name}")
    return problems


def test_the_label_table_holds_the_gpu_resource_and_the_cloud_labels() -> None:
    assert labels.GPU_RESOURCE == "nvidia.com/gpu"
    assert labels.GPU_QUOTA_KEY == "requests.nvidia.com/gpu"
    assert labels.GPU_TEMPLATE_TAG == "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
    assert (labels.GKE_ACCELERATOR_LABEL, labels.AWS_ACCELERATOR_LABEL) == (
        "cloud.google.com/gke-accelerator",
        "k8s.amazonaws.com/accelerator",
    )
    assert labels.SCHEDULER_LABEL == ("dedicated", "scheduler")


def test_no_module_spells_out_a_label_of_the_table() -> None:
    assert spelled_out(PROJECT_DIR) == []


def test_the_guard_finds_a_spelled_out_label(tmp_path: Path) -> None:
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
    (tmp_path / "components" / "core").mkdir()
    (tmp_path / "components" / "core" / "labels.py").write_text('GPU_RESOURCE = "nvidia.com/gpu"\n')
    (tmp_path / "infra" / "x.py").write_text(
        '"""Docstrings may name nvidia.com/gpu."""\nLIMITS = {"nvidia.com/gpu": 1}\nQUOTA = f"requests.nvidia.com/gpu={1}"\n'
    )
    assert spelled_out(tmp_path) == [
        "infra/x.py:2: 'nvidia.com/gpu' spells out labels.GPU_RESOURCE",
        "infra/x.py:3: 'requests.nvidia.com/gpu=' spells out labels.GPU_QUOTA_KEY",
        "infra/x.py:3: 'requests.nvidia.com/gpu=' spells out labels.GPU_RESOURCE",
    ]
