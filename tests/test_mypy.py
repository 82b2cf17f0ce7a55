"""The type checker the project configures (mypy, [tool.mypy] in pyproject.toml) finds nothing in components/,
infra/ and policies/: the test command runs it, so a type error fails the suite like any other test.

mypy checks the package under its installed names (gpu_platform.components, ...). package-dir maps the folders
into gpu_platform, which mypy cannot follow through the editable install's import hook: the test lays
gpu_platform/{components,infra,policies} as links to the folders in a temporary directory and puts it on
MYPYPATH. Its cache is kept outside the checkout (``GPU_PLATFORM_MYPY_CACHE``, else ``~/.cache/gpu-platform/mypy``), so
every clone of the machine shares it: the first run analyses the provider SDKs and the libraries (a minute of CPU),
later runs, a fresh clone's too, take them from the cache: mypy takes an entry only for a file of the same hash,
analysed by the same mypy version with the same options, and keeps the cache in SQLite databases, whose transactions
let runs side by side share it."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR
from tests.gobuild import user_cache

PACKAGES = ("components", "infra", "policies")
PROVIDERS = ("pulumi_aws", "pulumi_gcp", "pulumi_kubernetes")


def _mypy() -> list[str]:
    found = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    if found is None:
        pytest.skip("mypy is not installed (pip install -e '.[dev]' installs it)")
    return [found]


def _linked(root: Path) -> Path:
    """``root``/gpu_platform holding a link to each folder, as the installed package names them."""
    package = root / "gpu_platform"
    package.mkdir(parents=True)
    for top in PACKAGES:
        (package / top).symlink_to(PROJECT_DIR / top, target_is_directory=True)
    return package


def _run(links: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": str(links.parent)}
    command = [*_mypy(), "--config-file", str(PROJECT_DIR / "pyproject.toml"), "--cache-dir", str(user_cache("mypy", "GPU_PLATFORM_MYPY_CACHE")), *args]
    return subprocess.run(command, cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=900)


def test_mypy_finds_nothing(tmp_path: Path) -> None:
    """The three packages [tool.mypy] names, checked as configured (strict, the pydantic plugin)."""
    links = _linked(tmp_path)
    result = _run(links)
    # Name the files as the repository does (components/...), not through the links.
    output = (result.stdout + result.stderr).replace(f"{links}{os.sep}", "")
    assert result.returncode == 0, output
    assert "Success: no issues found" in output, output


def test_mypy_is_configured_and_would_see_an_error(tmp_path: Path) -> None:
    """The configuration is the project's and is not blind: a module beside the package, checked with it, fails on a
    wrong return type, a function without annotations (strict), a wrong use of the package's own types (so the
    links resolve gpu_platform to the real code, not Any), a ``type: ignore`` without its code and an unused one."""
    links = _linked(tmp_path / "links")
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from gpu_platform.components.pools.shapes import tolerations\n"
        "\n"
        "\n"
        "def wrong(x: int) -> str:\n"
        "    return x\n"
        "\n"
        "\n"
        "def untyped(x):\n"
        "    return x\n"
        "\n"
        "\n"
        "count: int = tolerations([])\n"
        'bare: int = "1"  # type: ignore\n'
        "unused: int = 1  # type: ignore[assignment]\n"
    )
    result = _run(links, "--output", "json", str(bad))
    assert result.returncode == 1, result.stdout + result.stderr
    found = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    codes = sorted({(f["line"], f["code"]) for f in found if f["severity"] == "error"})
    assert codes == [(5, "return-value"), (8, "no-untyped-def"), (12, "assignment"), (13, "ignore-without-code"), (14, "unused-ignore")], result.stdout


def _provider_modules_used() -> set[str]:
    """Every provider package or module the code names (``aws.eks.Cluster`` -> pulumi_aws.eks)."""
    used: set[str] = set()
    for top in PACKAGES:
        for path in (PROJECT_DIR / top).rglob("*.py"):
            tree = ast.parse(path.read_text(), str(path))
            aliases: dict[str, str] = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name.split(".")[0] in PROVIDERS:
                            used.add(alias.name)
                            aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
                elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PROVIDERS:
                    used.add(node.module)
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                    used.add(f"{aliases[node.value.id]}.{node.attr}")
    return {name for name in used if _is_module(name)}


def _is_module(name: str) -> bool:
    package, _, rest = name.partition(".")
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, package
    if not rest:
        return True
    where = Path(next(iter(spec.submodule_search_locations)), *rest.split("."))
    return where.is_dir() or where.with_suffix(".py").is_file()


def _matches(pattern: str, module: str) -> bool:
    if pattern.endswith(".*"):
        return module == pattern[:-2] or module.startswith(pattern[:-1])
    return module == pattern


def test_every_provider_module_the_code_uses_is_followed() -> None:
    """[tool.mypy] skips the provider SDKs' modules (thousands) except the ones it names: a module the code starts
    to use must be named there, or mypy would read it as Any and check nothing the code does with it."""
    overrides = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    followed = [m for o in overrides if o.get("follow_imports") == "normal" for m in o["module"]]
    skipped = [m for o in overrides if o.get("follow_imports") == "skip" for m in o["module"]]
    used = _provider_modules_used()
    assert {"pulumi_aws.eks", "pulumi_gcp.container", "pulumi_kubernetes.core"} <= used, sorted(used)
    assert all(any(_matches(p, m) for p in skipped) for m in used), "the skip override no longer covers the providers"
    missing = sorted(m for m in used if not any(_matches(p, m) for p in followed))
    assert not missing, f"add to the follow_imports = normal override of [tool.mypy]: {missing}"
