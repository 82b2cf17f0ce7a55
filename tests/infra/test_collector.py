"""The cyclic collector paused around a preview's allocation bursts (infra/collector.py): off inside, back as it was
after, whatever happens inside; and paused where the library says it is: a command, the engine's run of a program,
the rendering of its charts, the manifests' writing."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.infra.collector import collector_paused


@pytest.fixture(autouse=True)
def _collector_enabled_after() -> Iterator[None]:
    yield
    gc.enable()


def test_paused_inside_and_enabled_again_after_even_when_the_block_raises() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_left_off_when_it_was_off_and_nested_pauses_do_not_turn_it_on_early() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
    gc.enable()
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def _program(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: probe\nruntime: python\n")
    (tmp_path / "__main__.py").write_text("import gc\nimport pulumi\npulumi.export('collector_enabled', gc.isenabled())\n")
    return tmp_path


def test_the_engine_runs_a_program_with_the_collector_paused_and_restores_it(tmp_path: Path) -> None:
    from gpu_platform.infra.preview.engine import load_program, run_program

    gc.enable()
    program = _program(tmp_path)
    plan = run_program(program, "dev", {}, program=load_program(program))
    assert plan.outputs["collector_enabled"] is False
    assert gc.isenabled()


def test_the_manifests_are_written_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from gpu_platform.infra.preview import manifests
    from tests.conftest import shipped_plan

    seen: list[bool] = []
    dump = yaml.dump

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return dump(*args, **kwargs)

    monkeypatch.setattr(manifests.yaml, "dump", recording)
    gc.enable()
    files = manifests.manifest_files(manifests.kubernetes_objects(shipped_plan("dev-gke")))
    assert files and len(seen) == len(files) and not any(seen)
    assert gc.isenabled()


def test_a_command_runs_with_the_collector_paused_and_restores_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpu_platform.infra.cli import app, docs

    seen: list[bool] = []
    monkeypatch.setattr(docs, "cmd_docs", lambda args: seen.append(gc.isenabled()) or 0)
    gc.enable()
    assert app.main(["docs"]) == 0
    assert seen == [False]
    assert gc.isenabled()


def test_the_charts_are_rendered_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpu_platform.infra.preview import render
    from gpu_platform.infra.preview.upstream import load_lock
    from tests.conftest import shipped_plan

    seen: list[bool] = []
    monkeypatch.setattr(render, "_prepare_helm", lambda *args: seen.append(gc.isenabled()))
    gc.enable()
    render.render_plan(shipped_plan("dev-gke"), "1.34", None, load_lock())
    assert seen and not any(seen)
    assert gc.isenabled()


def test_paused_as_a_decorator_for_each_call() -> None:
    @collector_paused()
    def probe() -> bool:
        return gc.isenabled()

    gc.enable()
    assert (probe(), probe(), gc.isenabled()) == (False, False, True)
