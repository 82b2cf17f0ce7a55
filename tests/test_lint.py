"""The linter the project configures (ruff, [tool.ruff] in pyproject.toml) finds nothing: the test
command runs it, so a lint finding fails the suite like any other test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR


def _ruff() -> list[str]:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (pip install -e '.[dev]' installs it)")
    return [found]


def test_ruff_finds_nothing() -> None:
    result = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise", "."], cwd=PROJECT_DIR,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_is_configured_and_would_see_a_finding(tmp_path: Path) -> None:
    """The configuration is the project's, and it is not blind: an unused import in a module fails."""
    (tmp_path / "pyproject.toml").write_text((PROJECT_DIR / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("import os\n")
    result = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise", "."], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "F401" in result.stdout, result.stdout + result.stderr
