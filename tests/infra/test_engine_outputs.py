"""Every ``Output.apply`` callback of the program over what the engine resolves, for every stack: the
outputs the components read back (a cluster's endpoint and CA, an IAM role's ARN, a node group's
autoscaling group, a generated password, ...) as the engine can give them, not only the plain values
the offline preview's mocks answer with.

- secret: every value the mocks answer with is a secret, at the leaves (inside lists and maps too, as
  a provider marks a nested field). The program registers the same resources with the same inputs once
  resolved, and every input that carries one of those values (found from the plain run) is secret.
- unknown, in a preview: every such value and every id is unknown (a create the engine has not made).
  The program registers the same resources; the inputs built from those values are unknown, nothing fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pulumi.runtime import rpc

from gpu_platform.infra.preview.engine import SECRET_SIG, Plan, RecordingMocks, RecordingMonitor, _mock_outputs, run_program
from gpu_platform.infra.stack.read import read_stack_file
from tests.conftest import PROJECT_DIR, shipped_plan
from tests.infra.test_preview import STACKS

Path = tuple[str | int, ...]


def leaves_as(value: Any, fn: Any) -> Any:
    if isinstance(value, dict):
        return {k: leaves_as(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [leaves_as(v, fn) for v in value]
    return fn(value)


class EngineOutputs(RecordingMocks):
    """The recording mocks, with every output they make up given in one engine shape."""

    def __init__(self, shape: str) -> None:
        super().__init__()
        self.shape = shape

    def new_resource(self, args: Any) -> tuple[str | None, dict[str, Any]]:
        id_, state = super().new_resource(args)
        made_up = _mock_outputs(args)
        if self.shape == "secret":
            state.update({k: leaves_as(v, lambda leaf: rpc.wrap_rpc_secret(leaf)) for k, v in made_up.items()})
            return id_, state
        state.update({k: leaves_as(v, lambda _: rpc.UNKNOWN) for k, v in made_up.items()})
        return ("" if args.resource_id is None or args.resource_id == "" else id_), state


def run(stack: str, shape: str) -> Plan:
    config, secret = read_stack_file(PROJECT_DIR, stack)
    return run_program(PROJECT_DIR, stack, config, secret, RecordingMonitor(EngineOutputs(shape)))


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and all(value.get(k) == v for k, v in SECRET_SIG.items())


def strip(value: Any) -> Any:
    if is_secret(value):
        return strip(value["value"])
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def walk(value: Any, path: Path = (), secret: bool = False) -> Iterator[tuple[Path, Any, bool]]:
    """(path, scalar, whether it sits under a secret marker) for every scalar of a recorded input."""
    if is_secret(value):
        yield from walk(value["value"], path, True)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from walk(v, (*path, k), secret)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk(v, (*path, i), secret)
    else:
        yield path, value, secret


def made_up_values(plan: Plan) -> set[str]:
    """The strings the mocks made up for this plan's resources (at least 8 characters: a shorter one is no
    evidence that an input was built from it)."""
    found: set[str] = set()
    for resource in plan.resources:
        inputs = strip(resource.inputs)
        args = type("Args", (), {"typ": resource.type, "name": resource.name, "inputs": inputs, "resource_id": None})()
        echoed = {value for _, value, _ in walk(inputs)}  # an output that repeats an input (vpcConfig) is not made up
        for _, value, _ in walk(_mock_outputs(args)):  # type: ignore[arg-type]
            if isinstance(value, str) and len(value) >= 8 and value not in echoed:
                found.add(value)
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_secret_outputs_stay_secret_in_every_input_built_from_them(stack: str) -> None:
    plain, secret = shipped_plan(stack), run(stack, "secret")
    assert [r.urn for r in secret.resources] == [r.urn for r in plain.resources]
    made_up = made_up_values(plain)
    assert made_up, "the mocks made up nothing for this stack: the test would check nothing"
    leaks, carried = [], 0
    for before, after in zip(plain.resources, secret.resources, strict=True):
        assert strip(after.inputs) == strip(before.inputs), f"{after.urn}: other inputs once resolved"
        for path, value, covered in walk(after.inputs):
            if isinstance(value, str) and any(m in value for m in made_up):
                carried += 1
                if not covered:
                    leaks.append(f"{after.name}: {'.'.join(map(str, path))}")
    assert carried, "no input carries an output: the test would check nothing"
    assert not leaks, "inputs built from secret outputs are not secret:\n" + "\n".join(leaks)


@pytest.mark.parametrize("stack", STACKS)
def test_unknown_outputs_during_a_preview_register_the_same_resources(stack: str) -> None:
    plain, unknown = shipped_plan(stack), run(stack, "unknown")
    assert [(r.urn, r.type) for r in unknown.resources] == [(r.urn, r.type) for r in plain.resources]
    made_up = made_up_values(plain)
    for before, after in zip(plain.resources, unknown.resources, strict=True):
        after_values = {path: value for path, value, _ in walk(after.inputs)}
        for path, value, _ in walk(before.inputs):
            if isinstance(value, str) and any(m in value for m in made_up) and path in after_values:
                assert after_values[path] == "<computed>", f"{after.name}: {'.'.join(map(str, path))} is known without its output"
