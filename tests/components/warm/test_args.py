"""WarmCapacityArgs (components/warm/args.py): its documented defaults, the priority window between the
autoscaler's expendable cutoff and 0, and the pool checks the stack and the component share."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from gpu_platform.components.pools.sharing import GpuSharing
from gpu_platform.components.warm.args import EXPENDABLE_PODS_PRIORITY_CUTOFF, WarmCapacityArgs, warm_capacity_problems
from tests.components.pools.test_awaits import gpu_pool


def test_defaults() -> None:
    args = WarmCapacityArgs()
    assert (args.pools, args.namespace, args.priority, args.image) == ({}, "gpu-warm-capacity", -5, "registry.k8s.io/pause:3.10")
    assert EXPENDABLE_PODS_PRIORITY_CUTOFF == -10


@pytest.mark.parametrize("priority", [-10, -1])
def test_the_priority_may_be_from_the_cutoff_to_minus_one(priority: int) -> None:
    assert WarmCapacityArgs(priority=priority).priority == priority


@pytest.mark.parametrize("priority", [-11, 0, 5])
def test_fails_when_the_priority_is_outside_the_cutoff_and_zero(priority: int) -> None:
    with pytest.raises(ValidationError) as info:
        WarmCapacityArgs(priority=priority)
    (error,) = info.value.errors()
    assert error["loc"] == ("priority",)
    assert f"priority {priority}: a placeholder priority must be from -10 to -1" in error["msg"]


def test_fails_when_a_pool_asks_for_more_than_1024_or_fewer_than_0() -> None:
    with pytest.raises(ValidationError) as info:
        WarmCapacityArgs.model_validate({"pools": {"t4": -1, "a100": 1025}})
    assert {e["loc"] for e in info.value.errors()} == {("pools", "t4"), ("pools", "a100")}


def test_enabled_leaves_out_pools_at_zero_in_name_order() -> None:
    assert list(WarmCapacityArgs(pools={"t4": 2, "a100": 0, "l4": 1}).enabled().items()) == [("l4", 1), ("t4", 2)]


def test_problems_name_the_pool_and_what_is_allowed() -> None:
    pools = [gpu_pool("t4", 0), dataclasses.replace(gpu_pool("dws", 0), queued_provisioning=True)]  # 8 nodes x 2 GPUs
    assert warm_capacity_problems(WarmCapacityArgs(pools={"t4": 16}), pools) == []
    problems = warm_capacity_problems(WarmCapacityArgs(pools={"t4": 17, "gone": 1, "dws": 1}), pools)
    assert [(loc, value) for loc, _, value in problems] == [(("pools", "t4"), 17), (("pools", "gone"), 1), (("pools", "dws"), 1)]
    messages = [m for _, m, _ in problems]
    assert messages[0] == "17 warm GPUs exceed the pool's 16 at its maximum (8 nodes x 2); use at most 16"
    assert messages[1] == "no GPU pool 'gone'; warm capacity names one of: dws, t4"
    assert messages[2].startswith("pool dws has queued_provisioning: its nodes come only for a ProvisioningRequest")


def test_a_shared_pool_holds_a_placeholder_per_client() -> None:
    shared = dataclasses.replace(gpu_pool("t4", 0), gpu_sharing=GpuSharing(strategy="TIME_SHARING", max_shared_clients_per_gpu=4))
    assert warm_capacity_problems(WarmCapacityArgs(pools={"t4": 64}), [shared]) == []
    ((_, message, _),) = warm_capacity_problems(WarmCapacityArgs(pools={"t4": 65}), [shared])
    assert message == "65 warm GPUs exceed the pool's 64 at its maximum (8 nodes x 8); use at most 64"


def test_without_gpu_pools_the_message_says_none() -> None:
    cpu = dataclasses.replace(gpu_pool("cpu", 0), gpus_per_node=0)
    ((_, message, _),) = warm_capacity_problems(WarmCapacityArgs(pools={"cpu": 1}), [cpu])
    assert message == "no GPU pool 'cpu'; warm capacity names one of: none (the stack has no GPU pool)"
