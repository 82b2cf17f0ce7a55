"""One strict integer and float type for every Args and config model (components.core.numbers)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from typing import Any

import pytest
from pydantic import BaseModel, BeforeValidator, ValidationError

from gpu_platform import components, infra
from gpu_platform.components.core.numbers import Float, Int
from gpu_platform.components.pools.shapes import AutoscalingBounds


def _models() -> list[type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    for package in (components, infra):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if info.name.rpartition(".")[2] in ("__main__", "platform"):
                continue
            module = importlib.import_module(info.name)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if issubclass(cls, BaseModel) and cls.__module__ == module.__name__:
                    found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return list(found.values())


def _bare_numbers(annotation: Any, metadata: tuple[Any, ...] = ()) -> bool:
    if annotation in (int, float):
        return not any(isinstance(m, BeforeValidator) and "_no_bool" in m.func.__qualname__ for m in metadata)
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *meta = typing.get_args(annotation)
        return _bare_numbers(inner, tuple(meta))
    return any(_bare_numbers(a) for a in typing.get_args(annotation))


def test_every_model_number_refuses_booleans() -> None:
    bare = [
        f"{model.__name__}.{name}"
        for model in _models()
        for name, field in model.model_fields.items()
        if _bare_numbers(field.annotation, tuple(field.metadata))
    ]
    assert _models(), "no models found"
    assert bare == []


def test_fails_when_an_integer_is_a_boolean() -> None:
    with pytest.raises(ValidationError) as info:
        AutoscalingBounds.model_validate({"scope": "total", "max_nodes": True})
    assert "not a boolean (true)" in str(info.value)


def test_integer_and_float_read_numbers_and_digit_strings() -> None:
    from pydantic import TypeAdapter

    assert AutoscalingBounds.model_validate({"scope": "total", "max_nodes": "3"}).max_nodes == 3
    assert TypeAdapter(Int).validate_python(7) == 7
    assert TypeAdapter(Float).validate_python("0.5") == 0.5
    with pytest.raises(ValidationError):
        TypeAdapter(Float).validate_python(False)
