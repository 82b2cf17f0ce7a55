"""The real control plane for the apply tests: built once (tests/kube/build.sh; .ci/run builds it
before the tests), started once per test worker, always stopped; only when GPU_PLATFORM_CONTROL_PLANE=1
(or another gate that needs it: tests/conftest.py CONTROL_PLANE_GATES), which .ci/run sets in a step after the
README's test command.

Skips with the reason when Go is missing or the build cannot be made. The binaries are found by
infra/apply/local.py's rule (GPU_PLATFORM_KUBE_BIN, else the cache keyed by tests/kube's go.mod/go.sum).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import control_plane_gate_or_skip


@pytest.fixture(scope="session")
def control_plane() -> Iterator[Any]:
    from gpu_platform.infra.apply.local import ControlPlaneError, control_plane, find_binaries, go_binary

    control_plane_gate_or_skip()
    try:
        binaries = find_binaries(build=False)
    except ControlPlaneError as absent:
        if go_binary() is None:
            pytest.skip(f"Go 1.26 is not installed, so the control plane cannot be built: {absent}")
        if os.environ.get("GPU_PLATFORM_KUBE_BUILD") == "0":
            pytest.skip(f"{absent} (GPU_PLATFORM_KUBE_BUILD=0: not building it here)")
        try:
            binaries = find_binaries(build=True)  # minutes, once: .ci/run does this before the tests
        except ControlPlaneError as failed:
            pytest.skip(f"the control plane could not be built: {failed}")
    try:
        with control_plane(binaries) as plane:
            yield plane
    except ControlPlaneError as exc:
        pytest.fail(f"the built control plane did not start: {exc}")
