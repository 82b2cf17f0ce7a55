"""Layers, lowest first: components <- policies <- infra. An import the other way is a bug,
including one hidden inside a function or made with importlib."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import PROJECT_DIR

# What each layer may not import (by module prefix, in the installed namespace).
FORBIDDEN = {
    "components": ("gpu_platform.infra", "gpu_platform.policies"),
    "policies": ("gpu_platform.infra",),
    "infra": (),
}
# The folders are installed as gpu_platform.<folder>: a bare `import components` would load a
# second copy (or a user's own module of that name).
BARE = ("components", "infra", "policies")


def _imported(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """(line, module) of every import in the tree, at any depth, relative ones resolved."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def layer_violations(root: Path) -> list[str]:
    """One line per import in root/<layer>/**.py that runs against the layers."""
    problems = []
    for layer, forbidden in FORBIDDEN.items():
        for path in sorted((root / layer).rglob("*.py")):
            relative = path.relative_to(root)
            package = "gpu_platform." + ".".join(relative.parent.parts)
            for line, module in _imported(ast.parse(path.read_text(), str(path)), package):
                head = module.split(".")[0]
                if head in BARE:
                    problems.append(f"{relative}:{line}: imports {module}; use gpu_platform.{module}")
                elif any(module == f or module.startswith(f + ".") for f in forbidden):
                    problems.append(f"{relative}:{line}: {layer} imports {module}")
    return problems


def test_no_import_runs_against_the_layers() -> None:
    assert layer_violations(PROJECT_DIR) == []


def test_the_check_finds_hidden_imports(tmp_path: Path) -> None:
    for layer in FORBIDDEN:
        (tmp_path / layer).mkdir()
    (tmp_path / "components" / "a.py").write_text(
        "def f():\n    from gpu_platform.infra.capacity import MiB\n    return MiB\n"
    )
    (tmp_path / "components" / "b.py").write_text("import importlib\nimportlib.import_module('gpu_platform.policies.rules')\n")
    (tmp_path / "components" / "c.py").write_text("from components.pools import Taint\n")
    (tmp_path / "policies" / "d.py").write_text("from ..infra import config\n")
    (tmp_path / "infra" / "e.py").write_text("from gpu_platform.policies.rules import RULES\nfrom gpu_platform.components import pools\n")
    (tmp_path / "policies" / "f.py").write_text("from gpu_platform.components.labels import X\n")
    assert layer_violations(tmp_path) == [
        "components/a.py:2: components imports gpu_platform.infra.capacity",
        "components/b.py:2: components imports gpu_platform.policies.rules",
        "components/c.py:1: imports components.pools; use gpu_platform.components.pools",
        "policies/d.py:1: policies imports gpu_platform.infra",
    ]
