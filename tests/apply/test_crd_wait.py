"""How long a run of CRDs is waited for (infra/apply/apply.py CRD_TIMEOUT): a bound on a stall, not on
the run. A server that establishes a long run of CRDs slowly but steadily (85 Kubeflow CRDs, or a loaded
machine) is not refused; one that stops establishing is, in one line naming the bound, and the CRDs after
the stalled one are not each waited the full bound again. A scripted server stands in for the API server's
establishing controller here so the timings are exact; tests/apply/test_apply_stacks.py applies every
stack's real CRDs to a real one."""

from __future__ import annotations

import time
from typing import Any

from gpu_platform.infra.apply.apply import ApplyObject, ApplyResult, apply_objects


class _EstablishingServer:
    """Accepts every CRD; reports one Established ``delays[name]`` seconds after the one before it was
    (in the run's order), never when its delay is None."""

    def __init__(self, delays: dict[str, float | None]) -> None:
        self.delays = delays
        self.established: dict[str, float] = {}
        self.last = 0.0

    def resource(self, api_version: str, kind: str, refresh: bool = False) -> tuple[str, bool]:
        return "customresourcedefinitions", False

    @staticmethod
    def base(api_version: str) -> str:
        return f"/apis/{api_version}"

    def request(self, method: str, path: str, *args: Any) -> tuple[int, dict[str, Any], list[str]]:
        name = path.rsplit("/", 1)[-1]
        if method == "PATCH":
            self.last = max(self.last, time.monotonic())
            return 200, {}, []
        delay = self.delays[name]
        if name not in self.established and delay is not None and time.monotonic() >= self.last + delay:
            self.established[name] = self.last = time.monotonic()
        ready = name in self.established
        condition = {"type": "Established", "status": "True" if ready else "False", "message": "the initial names have been accepted"}
        return 200, {"status": {"conditions": [condition, {"type": "NamesAccepted", "status": "True"}]}}, []


def _crd(name: str) -> ApplyObject:
    body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name}}
    return ApplyObject(body, "test")


def test_a_slow_but_steady_run_of_crds_is_waited_for_beyond_the_bound() -> None:
    names = [f"c{i}.example.com" for i in range(6)]
    server = _EstablishingServer(dict.fromkeys(names, 0.25))
    start = time.monotonic()
    result = apply_objects(server, [_crd(n) for n in names], ApplyResult(), crd_timeout=0.6)  # type: ignore[arg-type]
    assert time.monotonic() - start > 0.6 * 2  # the run took well over one bound ...
    assert result.refusals == []  # ... and nothing is refused: each CRD made progress within it
    assert sorted(server.established) == names


def test_a_crd_that_is_never_established_is_refused_naming_the_bound_and_the_rest_share_what_is_left() -> None:
    names = ["a.example.com", "stuck.example.com", "b.example.com", "c.example.com"]
    server = _EstablishingServer({"a.example.com": 0.0, "stuck.example.com": None, "b.example.com": None, "c.example.com": None})
    start = time.monotonic()
    result = apply_objects(server, [_crd(n) for n in names], ApplyResult(), crd_timeout=0.5)  # type: ignore[arg-type]
    took = time.monotonic() - start
    assert [r.obj.name for r in result.refusals] == names[1:]
    assert {r.reason for r in result.refusals} == {"not Established within 0.5 s: the initial names have been accepted"}
    assert took < 0.5 * 2  # the stalled bound is shared, not paid again for each CRD after it
