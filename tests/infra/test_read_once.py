"""Read once, plan once: one `gpu-platform preview` validates the stack config once and plans its
pools once; every reader after that (the component, the stack checks, the policy pack, the
preview's checks) asks that one config and plan."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from gpu_platform.components.eks import plan as eks_plan
from gpu_platform.components.gke import plan as gke_plan
from gpu_platform.infra.cli import main
from gpu_platform.infra.stack.model import StackConfig
from tests.conftest import PROJECT_DIR


def _count_calls(monkeypatch: pytest.MonkeyPatch, function: Any) -> list[int]:
    """Count every call of ``function``, under whatever name any loaded module imported it."""
    calls = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return function(*args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("gpu_platform") and getattr(module, function.__name__, None) is function:
            monkeypatch.setattr(module, function.__name__, counted)
    return calls


@pytest.mark.parametrize("stack", ["dev-gke", "prod-gke", "dev-eks", "prod-eks"])
def test_one_preview_validates_the_stack_once_and_plans_it_once(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    validations = [0]
    validate = StackConfig.model_validate

    def counted_validate(cls: type[StackConfig], *args: Any, **kwargs: Any) -> StackConfig:
        validations[0] += 1
        return validate(*args, **kwargs)

    monkeypatch.setattr(StackConfig, "model_validate", classmethod(counted_validate))
    gke_plans = _count_calls(monkeypatch, gke_plan.plan_pools)
    eks_plans = _count_calls(monkeypatch, eks_plan.plan_node_groups)
    assert main(["preview", stack, "--quiet", "--project-dir", str(PROJECT_DIR)]) in (0, 1)
    assert validations[0] == 1
    assert (gke_plans[0], eks_plans[0]) == ((1, 0) if stack.endswith("gke") else (0, 1))


def test_the_counting_sees_a_second_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The counters are not blind: reading the stack again on top of the preview counts twice."""
    from gpu_platform.infra.stack.read import load_stack

    plans = _count_calls(monkeypatch, gke_plan.plan_pools)
    load_stack(PROJECT_DIR, "dev-gke").pool_shapes()
    load_stack(PROJECT_DIR, "dev-gke").pool_shapes()
    assert plans[0] == 2
