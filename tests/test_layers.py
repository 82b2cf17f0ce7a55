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
    (tmp_path / "components" / "a.py").write_text("def f():\n    from gpu_platform.infra.capacity import MiB\n    return MiB\n")
    (tmp_path / "components" / "b.py").write_text("import importlib\nimportlib.import_module('gpu_platform.policies.rules')\n")
    (tmp_path / "components" / "c.py").write_text("from components.pools.shapes import Taint\n")
    (tmp_path / "policies" / "d.py").write_text("from ..infra import config\n")
    (tmp_path / "infra" / "e.py").write_text("from gpu_platform.policies.rules import RULES\nfrom gpu_platform.components import pools\n")
    (tmp_path / "policies" / "f.py").write_text("from gpu_platform.components.core.labels import X\n")
    assert layer_violations(tmp_path) == [
        "components/a.py:2: components imports gpu_platform.infra.capacity",
        "components/b.py:2: components imports gpu_platform.policies.rules",
        "components/c.py:1: imports components.pools.shapes; use gpu_platform.components.pools.shapes",
        "policies/d.py:1: policies imports gpu_platform.infra",
    ]


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node that can run: all of the tree but the bodies of ``if TYPE_CHECKING:`` blocks, whose
    imports only name types for a checker (a plan module naming the Args it plans is not an import)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
            (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
        ):
            skipped.update(id(n) for child in node.body for n in ast.walk(child))
    return [n for n in ast.walk(tree) if id(n) not in skipped]


def _module_name(root: Path, path: Path) -> str:
    relative = path.relative_to(root).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "gpu_platform." + ".".join(parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package modules it imports, at any depth (function-level imports included).

    `from a.b import c` is an edge to a.b.c when that is a module of the tree, else to a.b.
    """
    files = {_module_name(root, p): p for layer in FORBIDDEN for p in sorted((root / layer).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: set[str] = set()
        tree = ast.parse(path.read_text(), str(path))
        for node in _runtime_nodes(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base_module = ".".join(base + ([node.module] if node.module else []))
                else:
                    base_module = node.module or ""
                targets = [f"{base_module}.{alias.name}" if f"{base_module}.{alias.name}" in files else base_module for alias in node.names]
            for target in targets:
                if target in files and target != module:
                    edges.add(target)
        graph[module] = edges
    return graph


def import_cycles(root: Path) -> list[list[str]]:
    """Every set of modules that import each other, directly or through others (Tarjan's SCCs)."""
    graph = import_graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(cycles)


def test_no_import_cycle_even_through_function_level_imports() -> None:
    assert import_cycles(PROJECT_DIR) == []


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    for layer in FORBIDDEN:
        (tmp_path / layer).mkdir()
    (tmp_path / "infra" / "a.py").write_text("from gpu_platform.infra.b import x\n")
    (tmp_path / "infra" / "b.py").write_text("x = 1\ndef f():\n    from gpu_platform.infra import c\n    return c\n")
    (tmp_path / "infra" / "c.py").write_text("def g():\n    from gpu_platform.infra.a import x\n    return x\n")
    (tmp_path / "infra" / "d.py").write_text("from gpu_platform.infra import b\n")
    # A type-only import back does not run: f -> g -> (f, for a checker only) is no cycle.
    (tmp_path / "infra" / "f.py").write_text("from gpu_platform.infra.g import y\n")
    (tmp_path / "infra" / "g.py").write_text("from typing import TYPE_CHECKING\ny = 1\nif TYPE_CHECKING:\n    from gpu_platform.infra.f import y\n")
    assert import_cycles(tmp_path) == [["gpu_platform.infra.a", "gpu_platform.infra.b", "gpu_platform.infra.c"]]


def test_the_command_line_is_the_top_no_application_imports_it() -> None:
    """infra/cli parses flags and prints; the applications (stack, preview, simulate, report, ...)
    never reach up into it."""
    graph = import_graph(PROJECT_DIR)
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if not module.startswith("gpu_platform.infra.cli")
        for target in targets
        if target.startswith("gpu_platform.infra.cli")
    )
    assert upward == []
