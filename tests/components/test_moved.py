"""The flat layout's deep import paths, kept for one release (components/_moved.py): each old module path
imports as the module at its new path, with a DeprecationWarning naming both; the three folders named like
an old module forward its names the same way."""

from __future__ import annotations

import json
import subprocess
import sys

from gpu_platform.components._moved import FOLDER_NAMED, MOVED
from tests.conftest import PROJECT_DIR

PROBE = """
import importlib, json, sys, warnings
import gpu_platform.components
from gpu_platform.components._moved import FOLDER_NAMED, MOVED
seen = {}
for old, new in MOVED.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(f"gpu_platform.components.{old}")
    target = importlib.import_module(f"gpu_platform.components.{new}")
    seen[old] = [module is target, [str(w.message) for w in caught if w.category is DeprecationWarning]]
forwarded = {}
for folder, new in FOLDER_NAMED.items():
    target = importlib.import_module(f"gpu_platform.components.{new}")
    name = target.__all__[0]
    package = importlib.import_module(f"gpu_platform.components.{folder}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(package, name)
    try:
        getattr(package, "NoSuchName")
        missing = "found"
    except AttributeError as error:
        missing = str(error)
    forwarded[folder] = [value is getattr(target, name), [str(w.message) for w in caught], missing]
print(json.dumps({"seen": seen, "forwarded": forwarded}))
"""


def test_every_old_module_path_imports_as_the_new_module_with_a_warning() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=PROJECT_DIR, capture_output=True, text=True, check=True, timeout=120)
    report = json.loads(result.stdout)
    for old, new in MOVED.items():
        same, warned = report["seen"][old]
        assert same, old
        assert warned == [f"gpu_platform.components.{old} moved to gpu_platform.components.{new}; the old import path is removed in the next release"]
    for folder, new in FOLDER_NAMED.items():
        same, warned, missing = report["forwarded"][folder]
        assert same, folder
        assert len(warned) == 1 and warned[0].startswith(f"gpu_platform.components.{folder}.") and f" moved to gpu_platform.components.{new}." in warned[0]
        assert missing == f"module gpu_platform.components.{folder!r} has no attribute 'NoSuchName'"


def test_the_table_names_every_module_that_moved_and_only_those() -> None:
    # Each new path is a module of the tree, and no old path is still a flat module.
    for new in [*MOVED.values(), *FOLDER_NAMED.values()]:
        assert (PROJECT_DIR / "components" / (new.replace(".", "/") + ".py")).is_file(), new
    flat = {p.stem for p in (PROJECT_DIR / "components").glob("*.py")}
    assert flat == {"__init__", "_moved"}
