"""Warm capacity's setting (StackConfig.warm_capacity, components/warm/args.py) and what it
deploys (components/warm/warm_capacity.py): the defaults, the validators (violating and compliant), and the
rendered placeholders: a priority below every real workload and at or above the cluster autoscaler's
expendable cutoff, the pool's own node selector and tolerations."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from pydantic import ValidationError

from gpu_platform.components.warm.args import EXPENDABLE_PODS_PRIORITY_CUTOFF, WarmCapacityArgs
from gpu_platform.infra.stack.errors import ConfigError
from gpu_platform.infra.stack.model import StackConfig
from gpu_platform.infra.stack.read import load_stack_config
from gpu_platform.infra.testing import preview_program
from tests.conftest import PROJECT_DIR
from tests.factories import eks_stack, gke
from tests.infra.test_config import set_config


def test_the_defaults_are_off_and_documented() -> None:
    args = WarmCapacityArgs()
    assert args.pools == {} and args.enabled() == {}
    assert (args.namespace, args.priority, args.image) == ("gpu-warm-capacity", -5, "registry.k8s.io/pause:3.10")
    assert StackConfig.model_validate({"cloud": "gcp", "gke": gke()}).warm_capacity is None
    assert WarmCapacityArgs(pools={"t4": 0, "a": 2}).enabled() == {"a": 2}


def test_the_cutoff_is_the_autoscalers_flag_default() -> None:
    """cluster-autoscaler 1.34.5 config/flags/flags.go:161: --expendable-pods-priority-cutoff defaults to -10."""
    assert EXPENDABLE_PODS_PRIORITY_CUTOFF == -10


@pytest.mark.parametrize("priority", [-11, 0, 5])
def test_a_priority_outside_cutoff_to_minus_one_is_refused(priority: int) -> None:
    with pytest.raises(ValidationError) as info:
        WarmCapacityArgs(priority=priority)
    message = info.value.errors()[0]["msg"]
    assert f"priority {priority}: a placeholder priority must be from -10 to -1" in message


@pytest.mark.parametrize("priority", [-10, -1])
def test_a_priority_from_the_cutoff_to_minus_one_is_accepted(priority: int) -> None:
    assert WarmCapacityArgs(priority=priority).priority == priority


def _lines(values: dict[str, object]) -> list[str]:
    set_config(values)
    with pytest.raises(ConfigError) as info:
        load_stack_config()
    return info.value.lines


GKE = {"gpu-platform:cloud": "gcp", "gcp:project": "p", "gpu-platform:gke": gke(), "gpu-platform:monitoring": {"enabled": False}}


def test_a_pool_the_stack_does_not_have_is_one_line_naming_the_pools() -> None:
    assert _lines({**GKE, "gpu-platform:warm_capacity": {"pools": {"a100": 2}}}) == [
        "gpu-platform:warm_capacity.pools.a100: no GPU pool 'a100'; warm capacity names one of: t4 (got 2)"
    ]


def test_more_warm_gpus_than_the_pool_holds_is_refused_and_its_maximum_is_accepted() -> None:
    # t4: 20 nodes per zone in 2 zones, 2 GPUs each: 80 GPUs at most.
    assert _lines({**GKE, "gpu-platform:warm_capacity": {"pools": {"t4": 81}}}) == [
        "gpu-platform:warm_capacity.pools.t4: 81 warm GPUs exceed the pool's 80 at its maximum (40 nodes x 2); use at most 80 (got 81)"
    ]
    set_config({**GKE, "gpu-platform:warm_capacity": {"pools": {"t4": 80}}})
    assert load_stack_config().warm_capacity.enabled() == {"t4": 80}


def test_an_eks_gpu_class_takes_warm_capacity() -> None:
    config = StackConfig.model_validate({**eks_stack(), "monitoring": {"enabled": False}, "warm_capacity": {"pools": {"small": 1}}})
    assert config.warm_capacity is not None and config.warm_capacity.enabled() == {"small": 1}


@functools.cache
def _plan() -> Any:
    return preview_program(PROJECT_DIR, "dev-gke", config={"gpu-platform:warm_capacity": {"pools": {"t4": 3, "scheduler": 1}}})


def _objects(kind: str) -> list[Any]:
    return [r for r in _plan().resources if r.type.endswith(f":{kind}")]


def test_the_placeholders_priority_is_below_every_workload_and_above_the_cutoff() -> None:
    plan = _plan()
    plan.assert_no_violations()
    ours = [r.inputs for r in _objects("PriorityClass") if r.name == "dev-gke-warm-priority-class"]
    assert len(ours) == 1
    pc = ours[0]
    assert EXPENDABLE_PODS_PRIORITY_CUTOFF <= pc["value"] < 0
    assert pc["preemptionPolicy"] == "Never" and pc["globalDefault"] is False
    # Every other PriorityClass of the stack (and a pod without one, priority 0) outranks the placeholders.
    others = [r.inputs["value"] for r in _objects("PriorityClass") if r.name != "dev-gke-warm-priority-class"]
    assert all(v > pc["value"] for v in [0, *others])
    pods = [r.inputs["spec"]["template"]["spec"] for r in _objects("Deployment") if r.name.startswith("dev-gke-warm-")]
    assert pods and all(p["priorityClassName"] == pc["metadata"]["name"] for p in pods)


def test_each_pools_placeholders_carry_its_placement_and_ask_one_gpu_each() -> None:
    from gpu_platform.components.pools.shapes import tolerations

    shapes = {s.name: s for s in _stack().pool_shapes()}
    deployments = {r.name.removeprefix("dev-gke-warm-"): r.inputs for r in _objects("Deployment") if r.name.startswith("dev-gke-warm-")}
    assert {p: d["spec"]["replicas"] for p, d in deployments.items()} == {"t4": 3, "scheduler": 1}
    for pool, d in deployments.items():
        spec = d["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == shapes[pool].placement.node_selector
        assert spec["tolerations"] == tolerations(shapes[pool].placement.tolerations)
        assert spec["containers"][0]["resources"]["requests"] == {"cpu": "10m", "memory": "16Mi", "nvidia.com/gpu": "1"}
        assert d["metadata"]["namespace"] == "gpu-warm-capacity"


def _stack() -> StackConfig:
    from gpu_platform.infra.stack.read import read_stack_file, stack_config_from

    values, secrets = read_stack_file(PROJECT_DIR, "dev-gke")
    return stack_config_from(values, secrets, "dev-gke")
