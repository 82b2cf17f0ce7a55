"""The project's shape as DESIGN.md fixes it, and the packaging promises."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from gpu_platform.infra.docs import pulumi_config_section
from tests.conftest import PROJECT_DIR

TOP_LEVEL = {
    "Pulumi.yaml",
    "pyproject.toml",
    "README.md",
    "components",
    "infra",
    "stacks",
    "policies",
    "tests",
    ".ci",
    ".github",
    ".gitignore",
    ".git",
    # Asked for by the packaging issue: the consumer example and the release notes.
    "examples",
    "CHANGELOG.md",
    # Asked for by the any-language issue: the manifest of the source-based component package.
    "PulumiPlugin.yaml",
    # Asked for by issue 33 (item 4): the docs site, its pages and mkdocs' configuration.
    "docs",
    "mkdocs.yml",
}
# Made by the quick start or a preview run, ignored by git.
# Made on the machine, never committed (.gitignore): virtualenvs (.ci/run makes .venv-kfp), build output.
LOCAL = {".venv", ".venv-kfp", ".pytest_cache", ".ruff_cache", ".mypy_cache", "build", "dist", "gpu_platform.egg-info", "plan.json", "manifests"}


def test_top_level_is_as_designed() -> None:
    entries = {p.name for p in PROJECT_DIR.iterdir()} - LOCAL
    assert entries <= TOP_LEVEL, f"unexpected top-level entries: {sorted(entries - TOP_LEVEL)}"
    assert {"Pulumi.yaml", "pyproject.toml", "README.md", "components", "infra", "stacks", "policies", "tests"} <= entries


def test_pulumi_yaml() -> None:
    project = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())
    assert project["name"] == "gpu-platform"
    assert project["runtime"]["name"] == "python"
    assert project["runtime"]["options"]["virtualenv"] == ".venv"
    assert project["main"] == "infra/"
    assert project["stackConfigDir"] == "stacks"
    assert project["config"] == pulumi_config_section()
    assert project["config"]["cloud"]["type"] == "string" and "default" not in project["config"]["cloud"]


def test_pyproject() -> None:
    meta = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())
    project = meta["project"]
    assert project["name"] == "gpu-platform"
    assert project["scripts"] == {"gpu-platform": "gpu_platform.infra.cli:run"}
    pins = {d.split("~=")[0]: d for d in project["dependencies"]}
    for package in ("pulumi", "pulumi-gcp", "pulumi-aws", "pulumi-kubernetes", "pydantic"):
        assert "~=" in pins[package], f"{package} must be pinned compatibly"
    assert "dev" in project["optional-dependencies"]
    # One namespace, the project's folders mapped into it, and every subpackage in the wheel.
    setuptools = meta["tool"]["setuptools"]
    assert setuptools["package-dir"] == {f"gpu_platform.{top}": top for top in ("components", "infra", "policies")}
    on_disk = {
        "gpu_platform." + ".".join(init.parent.relative_to(PROJECT_DIR).parts)
        for top in ("components", "infra", "policies")
        for init in (PROJECT_DIR / top).rglob("__init__.py")
    }
    assert set(setuptools["packages"]) == on_disk
    assert (PROJECT_DIR / "components" / "py.typed").is_file()


def test_every_stack_file_holds_values_only() -> None:
    for path in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"):
        document = yaml.safe_load(path.read_text())
        assert set(document) == {"config"}, path.name
        assert document["config"]["gpu-platform:cloud"]


def test_importing_the_components_registers_nothing() -> None:
    # A fresh interpreter, so that the import really runs (reloading here would split classes).
    probe = """
import pulumi
from gpu_platform.infra.preview.engine import RecordingMocks, RecordingMonitor
monitor = RecordingMonitor(RecordingMocks())
pulumi.runtime.set_mocks(monitor.mocks, monitor=monitor)
import gpu_platform.components, gpu_platform.components.gke.cluster, gpu_platform.components.catalog.gpus, gpu_platform.components.pools.shapes
print(len(monitor.recorded))
"""
    result = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT_DIR, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "0"


def test_components_reexports_its_public_api() -> None:
    from gpu_platform import components

    for name in components.__all__:
        assert getattr(components, name) is not None
    # Every Args model and component a user builds is importable from the package itself.
    for module in ("gke/args", "gke/cluster", "eks/cluster", "eks/node_groups"):
        tree = ast.parse((PROJECT_DIR / "components" / f"{module}.py").read_text())
        public = {n.name for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.startswith("_") and n.name.endswith(("Args", "Cluster", "Groups"))}
        assert public <= set(components.__all__), (module, sorted(public - set(components.__all__)))


def test_docs_name_the_guides_never_the_seed() -> None:
    # Users never saw "the seed": docstrings, messages and docs name the guide they come from.
    found = []
    for path in [*PROJECT_DIR.glob("*.md"), *(PROJECT_DIR / "stacks").iterdir()]:
        found += [f"{path.name}:{i}" for i, line in enumerate(path.read_text().splitlines(), 1) if re.search(r"\bthe seed\b|\bseed's\b", line, re.I)]
    for top in ("components", "infra", "policies"):
        for path in (PROJECT_DIR / top).rglob("*"):
            if path.suffix in (".py", ".md", ".yaml"):
                text = path.read_text()
                found += [
                    f"{path.relative_to(PROJECT_DIR)}:{i}" for i, line in enumerate(text.splitlines(), 1) if re.search(r"\bthe seed\b|\bseed's\b", line, re.I)
                ]
    assert not found, found


def _mirrored_test(module: Path) -> Path:
    """The test file of a components module: components/<family>/<module>.py ->
    tests/components/<family>/test_<module>.py (a private top-level module without its underscore)."""
    relative = module.relative_to(PROJECT_DIR / "components")
    return PROJECT_DIR / "tests" / "components" / relative.parent / f"test_{relative.stem.lstrip('_')}.py"


def test_every_components_module_has_a_test_file_of_its_own() -> None:
    # Tests mirror the source (issue 33): a module without its test file, or a family folder of tests that is
    # not a package (its test modules would then clash by name with another family's), fails here.
    modules = [m for m in sorted((PROJECT_DIR / "components").rglob("*.py")) if m.name != "__init__.py"]
    assert len(modules) > 60
    missing = [str(m.relative_to(PROJECT_DIR)) for m in modules if not _mirrored_test(m).is_file()]
    assert not missing, f"components modules without tests/components/<family>/test_<module>.py: {missing}"
    folders = {_mirrored_test(m).parent for m in modules}
    assert not [str(f.relative_to(PROJECT_DIR)) for f in folders if not (f / "__init__.py").is_file()]
