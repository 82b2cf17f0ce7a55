"""The control plane is built once however many processes ask at once (infra/apply/local.py build_binaries):
the first builds under a lock, the others wait and take its result; a build that failed while one waited is
not run again by it. A stand-in build.sh counts its runs; no Go is run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gpu_platform.infra.apply import local

BUILD = """#!/usr/bin/env bash
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
echo run >> "${here}/runs"
sleep 0.5
[ -e "${here}/fail" ] && exit 4
key="$(cd "${here}" && for f in k8s/go.mod k8s/go.sum kwok/go.mod kwok/go.sum build.sh; do printf '%s\\n' "${f}"; cat "${f}"; done | sha256sum | cut -c1-16)"
dest="${GPU_PLATFORM_KUBE_CACHE}/${key}/bin"
mkdir -p "${dest}"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do printf '#!/bin/sh\\n' > "${dest}/${b}"; chmod +x "${dest}/${b}"; done
echo stages > "${dest}/kwok-stages.yaml"
echo "${dest}"
"""


def _modules(tmp_path: Path, *, fail: bool) -> Path:
    modules = tmp_path / "kube"
    for name in local.KEY_FILES:
        (modules / name).parent.mkdir(parents=True, exist_ok=True)
        (modules / name).write_text(BUILD if name == "build.sh" else f"{name}\n")
    if fail:
        (modules / "fail").touch()
    return modules


def _ask_at_once(modules: Path, workers: int) -> list[object]:
    results: list[object] = [None] * workers

    def ask(i: int) -> None:
        try:
            results[i] = local.build_binaries(modules)
        except local.ControlPlaneError as error:
            results[i] = error

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("GPU_PLATFORM_KUBE_CACHE", str(root))
    monkeypatch.setattr(local, "go_binary", lambda: "/usr/bin/true")
    return root


def test_three_workers_asking_at_once_build_once_and_share_the_result(tmp_path: Path, cache: Path) -> None:
    modules = _modules(tmp_path, fail=False)
    key = local.cache_key(modules)
    results = _ask_at_once(modules, 3)
    assert results == [cache / key / "bin"] * 3
    assert (modules / "runs").read_text().splitlines() == ["run"]


def test_a_failed_build_is_not_run_again_by_the_workers_that_waited_for_it(tmp_path: Path, cache: Path) -> None:
    modules = _modules(tmp_path, fail=True)
    results = _ask_at_once(modules, 3)
    assert all(isinstance(r, local.ControlPlaneError) for r in results)
    assert sorted(str(r).split(" (")[0] for r in results) == [
        "tests/kube/build.sh failed",
        "tests/kube/build.sh failed in another process while this one waited",
        "tests/kube/build.sh failed in another process while this one waited",
    ]
    assert (modules / "runs").read_text().splitlines() == ["run"]
    # A later run (nobody waiting then) tries again.
    (modules / "fail").unlink()
    assert local.build_binaries(modules) == cache / local.cache_key(modules) / "bin"
    assert (modules / "runs").read_text().splitlines() == ["run", "run"]
    assert not (cache / f"{local.cache_key(modules)}.failed").exists()
