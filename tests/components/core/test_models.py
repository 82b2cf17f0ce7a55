"""The lowest layer every Args model shares: key paths, the unique and min <= max rules, and
the errors a constructor raises."""

from __future__ import annotations

import functools
import importlib
import pkgutil

import pulumi
import pytest
from pydantic import BaseModel, ValidationError, model_validator

import gpu_platform
from gpu_platform.components.core.models import (
    ARGS_CONFIG,
    PlannedOnce,
    cached_names,
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


# --- plans cached on a model are made again for a copy with other values ---------------------------


class _Planned(PlannedOnce, BaseModel):
    model_config = ARGS_CONFIG

    nodes: int = 1
    """Nodes. Default: 1."""

    @functools.cached_property
    def planned(self) -> list[int]:
        return list(range(self.nodes))


def test_a_copy_with_other_values_is_planned_again_and_one_with_the_same_keeps_the_plan() -> None:
    model = _Planned(nodes=2)
    plan = model.planned
    assert model.model_copy().planned is plan
    assert model.model_copy(deep=True).planned == [0, 1]
    replanned = model.model_copy(update={"nodes": 3})
    assert replanned.planned == [0, 1, 2]
    assert model.planned is plan
    assert cached_names(_Planned) == ("planned",)


def test_without_it_pydantic_keeps_the_replaced_values_plan() -> None:
    """The defect PlannedOnce removes: pydantic's model_copy copies cached values with the fields."""

    class Plain(BaseModel):
        model_config = ARGS_CONFIG
        nodes: int = 1
        """Nodes. Default: 1."""

        @functools.cached_property
        def planned(self) -> list[int]:
            return list(range(self.nodes))

    model = Plain(nodes=2)
    assert model.planned == [0, 1]
    assert model.model_copy(update={"nodes": 3}).planned == [0, 1]


def _package_models() -> list[type[BaseModel]]:
    for info in pkgutil.walk_packages(gpu_platform.__path__, "gpu_platform."):
        if not info.name.endswith("__main__"):  # the program and the pack's entry point run, not import
            importlib.import_module(info.name)
    seen: list[type[BaseModel]] = []
    todo = list(BaseModel.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.startswith("gpu_platform.") and cls not in seen:
            seen.append(cls)
    return seen


def test_every_model_of_the_package_that_caches_a_plan_makes_it_again_for_a_changed_copy() -> None:
    """A model with a functools.cached_property (GpuGkeClusterArgs.plan, GpuClassArgs.planned_shape, StackConfig.eks_plan,
    KueueArgs.plans, ...) is a PlannedOnce: ``model_copy(update=...)`` drops what it cached."""
    caching = [cls for cls in _package_models() if cached_names(cls)]
    assert len(caching) >= 8, [c.__name__ for c in caching]
    assert [c.__qualname__ for c in caching if not issubclass(c, PlannedOnce)] == []


def test_an_eks_class_copied_with_fewer_nodes_plans_fewer() -> None:
    from gpu_platform.infra.stack.read import load_stack
    from tests.conftest import PROJECT_DIR

    config = load_stack(PROJECT_DIR, "dev-eks")
    assert config.eks_node_groups is not None
    cls = config.eks_node_groups.classes[0]
    assert max(g.max_nodes for g in cls.node_groups()) > 2
    fewer = cls.model_copy(update={"max_nodes": 2, "fallback_max_nodes": None})
    assert {g.max_nodes for g in fewer.node_groups()} == {2}
    assert fewer.planned_shape.max_nodes < cls.planned_shape.max_nodes
    groups = config.eks_node_groups.model_copy(update={"classes": [fewer, *config.eks_node_groups.classes[1:]]})
    assert groups.planned_expander is not config.eks_node_groups.planned_expander
    stack = config.model_copy(update={"eks_node_groups": groups})
    assert stack.eks_plan is not config.eks_plan
