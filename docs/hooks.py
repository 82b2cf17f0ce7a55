"""The docs site's own mkdocs hooks (mkdocs.yml `hooks:`): what GitHub and the site read differently.

- Images of the repository outside docs/ (the plots examples/ holds, which their scripts rewrite): a page
  links them as GitHub does, relative to the page in the repository (``../../examples/report/gpus.png``);
  the site copies every image under examples/ to ``examples/`` and points the link there.
- A pipe inside a table's code span: GitHub needs it escaped (``\\|``), Python-Markdown keeps the
  backslash; it is dropped from the built page.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

IMAGES = ("*.png", "*.svg")
"""The repository files outside docs/ that pages may show, under examples/."""

_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")
_ESCAPED_PIPE_IN_CODE = re.compile(r"(<code>[^<]*?)\\\|")


def _root(config: Any) -> Path:
    return Path(config["docs_dir"]).parent


def on_files(files: Files, config: Any) -> Files:
    root = _root(config)
    for pattern in IMAGES:
        for path in sorted((root / "examples").rglob(pattern)):
            files.append(File.generated(config, path.relative_to(root).as_posix(), abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """A link that leaves docs/ for a file the site copied (see on_files) points at the copy."""
    here = posixpath.dirname(page.file.src_uri)

    def relink(m: re.Match[str]) -> str:
        target = m.group(2)
        resolved = posixpath.normpath(posixpath.join("docs", here, target))
        if target.startswith(("http:", "https:", "#")) or not resolved.startswith("examples/") or files.get_file_from_path(resolved) is None:
            return m.group(0)
        return m.group(1) + posixpath.relpath(resolved, here or ".") + m.group(3)

    return _LINK.sub(relink, markdown)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    previous = None
    while previous != html:
        previous, html = html, _ESCAPED_PIPE_IN_CODE.sub(r"\1|", html)
    return html
