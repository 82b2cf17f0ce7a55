"""The lowest layer every Args model shares: key paths, the unique and min <= max rules, and
the errors a constructor raises."""

from __future__ import annotations

import pulumi
import pytest
from pydantic import BaseModel, ValidationError, model_validator

from gpu_platform.components.core.models import (
    ARGS_CONFIG,
    check_min_max,
    check_unique,
    first_repeat,
    input_error,
    input_errors,
    key_path,
)


@pytest.mark.parametrize(
    ("loc", "path"),
    [(("gke",), "gke"), (("gke", "gpu_pools", 0, "name"), "gke.gpu_pools[0].name"), ((0, "a"), "[0].a"), ((), "")],
)
def test_key_path_is_written_as_the_user_wrote_it(loc: tuple[str | int, ...], path: str) -> None:
    assert key_path(loc) == path


def test_unique_names_compliant_and_violating() -> None:
    check_unique(["a", "b"], "classes", "a name")
    assert first_repeat(["a", "b"]) is None
    assert first_repeat(["a", "b", "a", "b"]) == 2
    with pytest.raises(ValueError, match=r"^classes lists a name twice \(a, b, a\); each once$"):
        check_unique(["a", "b", "a"], "classes", "a name", "each once")


class _Bounds(BaseModel):
    model_config = ARGS_CONFIG
    low: int
    high: int | None = None

    @model_validator(mode="after")
    def _ordered(self) -> _Bounds:
        check_min_max(self, "low", "high")
        return self


def test_min_not_above_max_compliant_and_violating() -> None:
    assert _Bounds(low=3, high=3).low == 3
    assert _Bounds(low=9).high is None, "an unset maximum bounds nothing"
    with pytest.raises(ValidationError) as error:
        _Bounds(low=4, high=3)
    (problem,) = error.value.errors()
    assert problem["loc"] == ("low",) and problem["msg"] == "low 4 is above high 3; use at most 3"


def test_input_errors_carry_the_property_paths() -> None:
    one = input_error(("args", "gpu_pools", 1, "machine_type"), "unknown machine type")
    assert isinstance(one, pulumi.InputPropertyError)
    assert (one.property_path, one.reason) == ("args.gpu_pools[1].machine_type", "unknown machine type")
    assert input_errors([("pools", "x")]).property_path == "pools"  # type: ignore[union-attr]
    several = input_errors([("a", "x"), (("b", 0), "y")])
    assert isinstance(several, pulumi.InputPropertiesError)
    assert several.errors == [{"property_path": "a", "reason": "x"}, {"property_path": "b[0]", "reason": "y"}]
