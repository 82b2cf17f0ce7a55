"""Read once, plan once: one `gpu-platform preview` validates the stack config once and plans its
pools once; every reader after that (the component, the stack checks, the policy pack, the
preview's checks) asks that one config and plan."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from gpu_platform.components.eks import plan as eks_plan
from gpu_platform.components.gke import plan as gke_plan
from gpu_platform.components.karpenter import plan as karpenter_plan
from gpu_platform.components.queues import plan as queues_plan
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


def _count_cached(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> list[int]:
    """Count every computation of a cached property (not every read of it)."""
    prop = owner.__dict__[name]
    calls = [0]
    function = prop.func

    def counted(instance: Any) -> Any:
        calls[0] += 1
        return function(instance)

    monkeypatch.setattr(prop, "func", counted)
    return calls


@pytest.mark.parametrize("stack", ["dev-eks", "prod-eks"])
def test_one_eks_preview_plans_each_class_its_expander_and_its_priorities_once(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The node groups, the expander's ConfigMap, the stack's plan and the policy pack read one plan: per preview
    each class's node groups and shape, the system group's shape, the expander's tiers and their ConfigMap text
    are made once (they were made 16, 4, 2, 2 and 3 times on dev-eks)."""
    from gpu_platform.components.eks.node_group_args import PriorityExpander, SpotFailoverEksNodeGroupsArgs
    from gpu_platform.infra.stack.read import load_stack

    classes = len(load_stack(PROJECT_DIR, stack).eks_node_groups.classes)  # type: ignore[union-attr]
    counts = {
        "class_node_groups": _count_calls(monkeypatch, eks_plan.class_node_groups),
        "class_shape": _count_calls(monkeypatch, eks_plan.class_shape),
        "system_shape": _count_calls(monkeypatch, eks_plan.system_shape),
        "plan_node_pools": _count_calls(monkeypatch, karpenter_plan.plan_node_pools),
        "expander": _count_cached(monkeypatch, SpotFailoverEksNodeGroupsArgs, "planned_expander"),
        "priorities_text": _count_cached(monkeypatch, PriorityExpander, "text"),
    }
    assert main(["preview", stack, "--quiet", "--no-render", "--project-dir", str(PROJECT_DIR)]) in (0, 1)
    karpenter = stack == "prod-eks"
    assert {k: v[0] for k, v in counts.items()} == {
        "class_node_groups": classes,
        "class_shape": classes,
        "system_shape": 1,
        "plan_node_pools": 1 if karpenter else 0,
        "expander": 1,
        # Karpenter stacks have no priority expander ConfigMap.
        "priorities_text": 0 if karpenter else 1,
    }


PLAN_FUNCTIONS = {
    "plan_pools": gke_plan.plan_pools,
    "plan_node_groups": eks_plan.plan_node_groups,
    "plan_node_pools": karpenter_plan.plan_node_pools,
    "provisioner_problems": karpenter_plan.provisioner_problems,
    "plan_queues": queues_plan.plan_queues,
    "dask_queue_tenants": queues_plan.dask_queue_tenants,
    "kubeflow_queue_tenants": queues_plan.kubeflow_queue_tenants,
}
"""The stack's plan functions (and the provisioner check, which the node groups' Args run when validated): each runs at
most once per preview, whichever readers ask for its plan."""


def count_plans(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """Counters of every PLAN_FUNCTIONS call, under whatever name a loaded module imported it."""
    return {name: _count_calls(monkeypatch, function) for name, function in PLAN_FUNCTIONS.items()}


def plans_made(counts: dict[str, list[int]]) -> dict[str, int]:
    """The counts, then zeroed for the next preview."""
    made = {name: calls[0] for name, calls in counts.items()}
    for calls in counts.values():
        calls[0] = 0
    return made


@pytest.mark.parametrize("stack", ["prod-gke", "prod-eks"])
def test_one_preview_places_the_queue_tenants_and_plans_the_queues_once(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack's checks (StackConfig.queues_plan) and the Kueue component read one queue plan (KueueArgs.plans) of one
    placing of the tenants (StackConfig.planned_queue_tenants): both were made twice per preview; and on Karpenter the
    component and the stack read one NodePool plan (SpotFailoverEksNodeGroupsArgs.planned_node_pools), of the Args the
    stack validated once (they were validated again for the component)."""
    counts = count_plans(monkeypatch)
    assert main(["preview", stack, "--quiet", "--no-render", "--project-dir", str(PROJECT_DIR)]) in (0, 1)
    assert plans_made(counts) == {
        "plan_pools": 1 if stack.endswith("gke") else 0,
        "plan_node_groups": 0 if stack.endswith("gke") else 1,
        "plan_node_pools": 0 if stack.endswith("gke") else 1,
        "provisioner_problems": 0 if stack.endswith("gke") else 1,
        "plan_queues": 1,
        "dask_queue_tenants": 1,
        "kubeflow_queue_tenants": 1,
    }


def test_the_component_is_planned_again_for_other_tenants() -> None:
    """The queue plan is kept per tenants and pools: asked for others, KueueArgs plans them."""
    from gpu_platform.components.queues.plan import planned_queues
    from gpu_platform.infra.stack.read import load_stack

    config = load_stack(PROJECT_DIR, "prod-gke")
    assert config.queues is not None and config.queues_plan is not None
    tenants, pools = config.queue_tenants(), config.pool_shapes()
    assert planned_queues(config.queues, list(tenants), list(pools)) is config.queues_plan
    fewer = planned_queues(config.queues, tenants[:1], pools)
    assert fewer is not config.queues_plan and len(fewer.cluster_queues) == 1 < len(config.queues_plan.cluster_queues)
    assert len(config.queues.plans) == 2
