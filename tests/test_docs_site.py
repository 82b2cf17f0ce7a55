"""The docs site (mkdocs.yml over docs/, issue 33 item 4): it builds with --strict (no broken link or
anchor, no page left out of the navigation), its navigation holds every page once, and a user finds the
guides that were hard to find in the README from it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import PROJECT_DIR


class _Loader(yaml.SafeLoader):
    """mkdocs.yml as data: its Python and !relative tags read as plain values."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _config() -> dict[str, Any]:
    return yaml.load((PROJECT_DIR / "mkdocs.yml").read_text(), Loader=_Loader)


def _nav(entries: list[Any], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """(titles from the top, page) of every page of the navigation."""
    found = []
    for entry in entries:
        if isinstance(entry, str):
            found.append((path, entry))
            continue
        ((title, value),) = entry.items()
        found += _nav(value, (*path, title)) if isinstance(value, list) else [((*path, title), value)]
    return found


def test_the_navigation_holds_every_page_once() -> None:
    pages = [page for _, page in _nav(_config()["nav"])]
    on_disk = sorted(p.relative_to(PROJECT_DIR / "docs").as_posix() for p in (PROJECT_DIR / "docs").rglob("*.md"))
    assert sorted(pages) == on_disk


@pytest.mark.parametrize(
    ("section", "wanted"),
    [("GKE", "DWS"), ("GKE", "time-sharing"), ("Features", "Warm capacity"), ("EKS", "Karpenter"), ("Reference", "Policy rules")],
)
def test_a_user_finds_the_guides_from_the_navigation(section: str, wanted: str) -> None:
    """DWS and time-sharing on GKE (absent from the README) and warm capacity (inside its simulator section)
    have entries of their own."""
    titles = [" / ".join(path) for path, _ in _nav(_config()["nav"])]
    assert any(t.startswith(f"{section} / ") and wanted.lower() in t.lower() for t in titles), (section, wanted, titles)


def test_mkdocs_builds_the_site_strictly(tmp_path: Path) -> None:
    """`mkdocs build --strict` as the docs are written: a broken link or anchor, a page outside the
    navigation, a missing snippet or a warning of any plugin fails it."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs-material is not installed (it is in the [dev] extra: pip install -e '.[dev]')")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(PROJECT_DIR / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    site = tmp_path / "site"
    for page in ("index.html", "features/warm-capacity/index.html", "reference/components/index.html", "examples/report/gpus.png"):
        assert (site / page).is_file(), page
    # The home page shows the README's quick start (pymdownx.snippets includes it) and its commands.
    home = (site / "index.html").read_text()
    assert "On a fresh machine with Python 3.11" in home and "<!-- quickstart:test -->" in home
    # The hook: a pipe in a table's code span shows without GitHub's escape.
    components = (site / "reference" / "components" / "index.html").read_text()
    assert "<code>pulumi.Output[str] | None</code>" in components and "\\|" not in components
