"""The scripts of the repository (benchmarks, examples/report/make_sample.py) run as the README
prints them, ``python <script>`` from the repository root: under the Python that runs them
when it has gpu_platform installed (an activated virtualenv), else under ./.venv/bin/python
when the README's set-up made one (the script is started again there), else one line saying
how to install it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]


def project_python(script: str) -> None:
    """Go on under an interpreter that has gpu_platform; ``script`` is the running file."""
    if importlib.util.find_spec("gpu_platform") is not None:
        return
    venv = PROJECT_DIR / ".venv"
    python = venv / "bin" / "python"
    if python.is_file() and Path(sys.prefix).resolve() != venv.resolve():
        os.execv(str(python), [str(python), script, *sys.argv[1:]])
    raise SystemExit(
        f"{Path(script).name}: gpu_platform is not installed for {sys.executable}: run "
        "pip install -e '.[dev]' in the active environment, or create .venv as the README's quick start does"
    )
