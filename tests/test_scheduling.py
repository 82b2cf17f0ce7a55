"""The test command's scheduler (tests/conftest.py): files that share a per-process cache run on one worker, and the
longest units of work are handed out first."""

from __future__ import annotations

import re

from tests.conftest import PROJECT_DIR, SAME_WORKER, START_FIRST, _LongestFirst, _scope_of


def test_the_declared_long_units_go_first_in_their_order_then_the_larger() -> None:
    queue = _LongestFirst()
    for scope, count in {"tests/a.py": 50, "tests/b.py": 3, **dict.fromkeys(reversed(START_FIRST), 2), "tests/c.py": 9}.items():
        queue[scope] = {f"{scope}::t{i}": False for i in range(count)}
    assert [queue.popitem(last=False)[0] for _ in range(len(queue))] == [*START_FIRST, "tests/a.py", "tests/c.py", "tests/b.py"]


def test_files_that_read_the_rendering_cache_share_a_worker_and_the_control_plane_files_another() -> None:
    assert _scope_of("tests/infra/test_headlamp_rendered.py") == _scope_of("tests/infra/test_rendered_intent.py") == "renderings"
    assert _scope_of("tests/apply/test_workloads.py") == _scope_of("tests/engine/test_engine_smoke.py") == "control-plane"
    assert _scope_of("tests/infra/test_cli.py") == "tests/infra/test_cli.py"
    readers = sorted(
        str(path.relative_to(PROJECT_DIR))
        for path in (PROJECT_DIR / "tests").rglob("test_*.py")
        if path.name == "test_rendered_intent.py" or re.search(r"from tests\.infra\.test_rendered_intent import .*\b_rendered\b", path.read_text())
    )
    assert readers == sorted(path for path, group in SAME_WORKER.items() if group == "renderings")


def test_every_unit_declared_long_is_a_test_file_or_a_group() -> None:
    assert [s for s in START_FIRST if not (PROJECT_DIR / s).is_file() and s not in SAME_WORKER.values()] == []
