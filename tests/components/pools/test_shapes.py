"""The building blocks GKE pools and EKS classes share: taints with the managed-taint rule,
tolerations, bounds and the role enum."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, Field, ValidationError

from gpu_platform.components.core.labels import POOL_ROLE_LABEL, PoolRole
from gpu_platform.components.core.models import ARGS_CONFIG
from gpu_platform.components.eks.node_groups import GpuClassArgs
from gpu_platform.components.gke.cluster import GpuNodePoolArgs
from gpu_platform.components.pools.shapes import GPU_TAINT, AutoscalingBounds, BoundsScope, Taint, TaintEffect, pool_taints, tolerations


class _Pool(BaseModel):
    model_config = ARGS_CONFIG
    taints: Annotated[list[Taint], pool_taints(GPU_TAINT.key, "cloud.google.com/compute-class")] = Field(default_factory=list)


TRAINING = Taint(key="gpu-platform.io/workload", value="training")


def test_pool_taints_compliant() -> None:
    assert _Pool(taints=[TRAINING]).taints == [TRAINING]
    assert _Pool().taints == []


@pytest.mark.parametrize(
    ("taints", "message"),
    [
        ([GPU_TAINT], "taint nvidia.com/gpu is managed by the component; remove it from taints"),
        ([Taint(key="cloud.google.com/compute-class", value="a")], "taint cloud.google.com/compute-class is managed by the component"),
        ([TRAINING, TRAINING], "taints lists a key twice (gpu-platform.io/workload, gpu-platform.io/workload)"),
    ],
)
def test_pool_taints_violating(taints: list[Taint], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _Pool(taints=taints)


def test_gke_pools_and_eks_classes_share_the_rule() -> None:
    for build in (
        lambda t: GpuNodePoolArgs(
            name="t4",
            machine_type="n1-standard-4",
            accelerator_type="nvidia-tesla-t4",
            accelerator_count=1,
            autoscaling=AutoscalingBounds(scope=BoundsScope.TOTAL, max_nodes=2),
            taints=t,
        ),
        lambda t: GpuClassArgs(name="small", instance_types=["g4dn.xlarge"], max_nodes=2, taints=t),
    ):
        with pytest.raises(ValidationError, match="taint nvidia.com/gpu is managed by the component"):
            build([GPU_TAINT])
        assert build([TRAINING]).taints == [TRAINING]


def test_tolerations_are_exact() -> None:
    assert tolerations([GPU_TAINT, Taint(key="k", value="v", effect=TaintEffect.NO_EXECUTE)]) == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute"},
    ]


def test_roles_are_the_label_values() -> None:
    assert [r.value for r in PoolRole] == ["system", "gpu", "scheduler"]
    assert POOL_ROLE_LABEL == "gpu-platform.io/pool-role"
    with pytest.raises(ValueError):
        PoolRole("worker")
