"""The recording monitor (infra/preview/engine.py) is spared the SDK's stack capture; any other monitor is not.

The SDK walks and reads the Python stack of every resource's constructor so that a real engine can say where it
was declared. The recording monitor reads none of it, so the capture is skipped under it (the largest single cost
of registering a resource there); under another monitor, a real engine's above all, the SDK's capture must run as
it always did. Both are checked through what the monitor receives with each registration.
"""

from __future__ import annotations

from typing import Any

import pulumi.runtime
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.infra.preview.engine import RecordingMocks, RecordingMonitor


class _Seen:
    def __init__(self) -> None:
        self.requests: list[Any] = []


class _PlainMonitor(MockMonitor, _Seen):
    """The SDK's own mock monitor, standing for any monitor that is not the recording one."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        MockMonitor.__init__(self, mocks)
        _Seen.__init__(self)

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
        self.requests.append(request)
        return super().RegisterResource(request)  # type: ignore[no-untyped-call]


class _Recording(RecordingMonitor, _Seen):
    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        RecordingMonitor.__init__(self, mocks)
        _Seen.__init__(self)

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802
        self.requests.append(request)
        return super().RegisterResource(request)


def _register_under(monitor: _Seen) -> Any:
    """The request a ConfigMap declared in this file is registered with, under ``monitor``."""
    import pulumi_kubernetes as k8s

    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="p", stack="s", preview=True, monitor=monitor)
    # set_mocks opens a root stack for unit tests; run_in_stack opens its own, as the engine's run_program does.
    pulumi.runtime.settings.ROOT.set(None)

    def program() -> None:
        k8s.core.v1.ConfigMap("declared-here", data={"a": "b"})

    _sync_await(pulumi.runtime.run_in_stack(program))
    (request,) = [r for r in monitor.requests if r.name == "declared-here"]
    return request


def test_the_sdk_still_captures_where_a_resource_was_declared_under_any_other_monitor() -> None:
    request = _register_under(_PlainMonitor(RecordingMocks()))
    assert request.sourcePosition.uri.endswith("/tests/infra/test_recording_engine.py"), request.sourcePosition
    assert request.stackTrace.frames, "the SDK's stack trace is captured"


def test_the_recording_monitor_is_spared_the_stack_capture() -> None:
    request = _register_under(_Recording(RecordingMocks()))
    assert not request.HasField("sourcePosition"), request.sourcePosition
    assert not request.stackTrace.frames
