"""The linter the project configures (ruff, [tool.ruff] in pyproject.toml) finds nothing: the test
command runs it, so a lint finding fails the suite like any other test."""

from __future__ import annotations

import json
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
    result = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise", "."], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_would_change_nothing() -> None:
    """Every Python file is as ``ruff format`` writes it (line length and the rest from [tool.ruff])."""
    result = subprocess.run([*_ruff(), "format", "--no-cache", "--check", "."], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_is_configured_and_would_see_a_finding(tmp_path: Path) -> None:
    """The configuration is the project's, and it is not blind: an unused import fails, a statement right after a
    function without its two blank lines fails (E305, a preview rule named in the selection), and so does a file
    ``ruff format`` would change."""
    (tmp_path / "pyproject.toml").write_text((PROJECT_DIR / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("import os\n")
    (tmp_path / "crowded.py").write_text("def f():\n    return 1\nx = f()\n")
    result = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "json", "."], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert sorted({(Path(f["filename"]).name, f["code"]) for f in json.loads(result.stdout)}) == [("bad.py", "F401"), ("crowded.py", "E305")]
    formatted = subprocess.run([*_ruff(), "format", "--no-cache", "--check", "."], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert formatted.returncode == 1 and "crowded.py" in formatted.stdout, formatted.stdout + formatted.stderr
