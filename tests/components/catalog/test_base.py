"""What the catalogs share (components/catalog/base.py): a shape lookup's GpuCombinationError becomes the
asking model's ValidationError, naming the key and the value."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError, model_validator

from gpu_platform.components.catalog.base import GIB, GpuCombinationError, shape_checked
from gpu_platform.components.core.models import ARGS_CONFIG


class _Shape(BaseModel):
    model_config = ARGS_CONFIG

    gpus: int
    """GPUs. Required."""

    @model_validator(mode="after")
    def _offered(self) -> _Shape:
        def lookup() -> int:
            if self.gpus == 3:
                raise GpuCombinationError("gpus", "count 3 is not offered; use 1, 2 or 4")
            return self.gpus * GIB

        shape_checked(self, lookup)
        return self


def test_a_lookup_that_passes_returns_its_value() -> None:
    assert GIB == 1024
    assert shape_checked(object(), lambda: "found") == "found"
    _Shape(gpus=2)


def test_fails_when_the_lookup_refuses_the_combination() -> None:
    with pytest.raises(ValidationError) as info:
        _Shape(gpus=3)
    (error,) = info.value.errors()
    assert error["loc"] == ("gpus",)
    assert error["msg"] == "count 3 is not offered; use 1, 2 or 4" and error["input"] == 3


def test_other_errors_pass_through() -> None:
    def broken() -> None:
        raise KeyError("not a combination error")

    with pytest.raises(KeyError):
        shape_checked(object(), broken)
