"""Every number a stack may set is finite (issue 35): every numeric field of every stack-facing Args
model, given YAML's ``.inf``, ``-.inf`` or ``.nan``, is refused at that field, never accepted (a queue
weight of .inf) nor carried on to crash a plan (``int(inf)``: OverflowError, exit 3). The rule lives
in the one home of the number types (components/core/numbers.py); this walk holds every field to it,
so a field added later with a bare ``float`` fails here."""

from __future__ import annotations

import math
import types
import typing
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from gpu_platform.components import __all__ as exported
from gpu_platform.infra.stack.model import StackConfig
from tests.bad_input.test_config_mutations import STACKS, Case, set_

BAD = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _members(annotation: Any) -> list[Any]:
    """The leaf types an annotation may hold, with the shape around each: ("scalar"|"list"|"dict", type)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    if origin in (list, tuple, set, frozenset):
        return [("list", t) for arg in typing.get_args(annotation) if arg is not Ellipsis for _, t in _members(arg)]
    if origin is dict:
        return [("dict", t) for _, t in _members(typing.get_args(annotation)[1])]
    return [("scalar", annotation)]


def _models() -> list[type[BaseModel]]:
    """StackConfig and every model inside it, with every exported Args model and the models inside them."""
    import gpu_platform.components as face

    roots: list[type[BaseModel]] = [StackConfig]
    roots += [m for name in exported if isinstance(m := getattr(face, name), type) and issubclass(m, BaseModel)]
    found: dict[type[BaseModel], None] = {}
    stack = list(roots)
    while stack:
        model = stack.pop()
        if model in found:
            continue
        found[model] = None
        for field in model.model_fields.values():
            stack += [t for _, t in _members(field.annotation) if isinstance(t, type) and issubclass(t, BaseModel)]
    return sorted(found, key=lambda m: m.__qualname__)


def _numeric_fields() -> list[tuple[type[BaseModel], str, str]]:
    out = []
    for model in _models():
        for name, field in model.model_fields.items():
            for shape, leaf in _members(field.annotation):
                if leaf in (int, float):
                    out.append((model, name, shape))
                    break
    return out


FIELDS = _numeric_fields()


def test_the_walk_finds_the_newer_systems_numbers() -> None:
    names = {f"{m.__name__}.{n}" for m, n, _ in FIELDS}
    for want in (
        "TenantQueueArgs.cpus",
        "TenantQueueArgs.memory_gib",
        "TenantQueueArgs.weight",
        "WarmCapacityArgs.pools",
        "FsxLustreArgs.storage_capacity_gib",
    ):
        assert want in names, sorted(names)
    assert len(FIELDS) >= 50, len(FIELDS)


@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize(("model", "field", "shape"), FIELDS, ids=[f"{m.__name__}.{n}" for m, n, _ in FIELDS])
def test_fails_when_a_number_is_not_finite(model: type[BaseModel], field: str, shape: str, bad: str) -> None:
    value: Any = {"scalar": BAD[bad], "list": [BAD[bad]], "dict": {"k": BAD[bad]}}[shape]
    with pytest.raises(ValidationError) as raised:
        model.model_validate({field: value})
    at = [e for e in raised.value.errors() if e["loc"][:1] == (field,)]
    assert at, (field, raised.value.errors())


# --- the stack path: the crash and the acceptance the issue found, each one line at its key -----

NS = "gpu-platform:"


def _queues(tenant: dict[str, Any]) -> Any:
    return set_(NS + "queues", value={"tenants": [{"name": "team-a", **tenant}]})


STACK_CASES = [
    Case("queue-cpus-inf", "dev-gke", "gpu-platform:queues.tenants[0].cpus: ", _queues({"cpus": math.inf})),
    Case("queue-memory-inf", "dev-gke", "gpu-platform:queues.tenants[0].memory_gib: ", _queues({"memory_gib": math.inf})),
    Case("queue-weight-inf", "dev-gke", "gpu-platform:queues.tenants[0].weight: ", _queues({"weight": math.inf})),
    Case("queue-weight-nan", "dev-gke", "gpu-platform:queues.tenants[0].weight: ", _queues({"weight": math.nan})),
    Case("warm-inf", "dev-gke", "gpu-platform:warm_capacity.pools.t4: ", set_(NS + "warm_capacity", value={"pools": {"t4": math.inf}})),
]


@pytest.mark.parametrize("case", STACK_CASES, ids=[c.id for c in STACK_CASES])
def test_a_stack_with_an_infinite_number_is_refused_in_one_line(case: Case, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.bad_input.test_config_mutations import run_case

    code, out, err = run_case(case, tmp_path)
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and case.expect in lines[0], lines
    assert "finite" in lines[0] and "Traceback" not in out + err
    assert case.stack in STACKS
