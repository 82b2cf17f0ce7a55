"""GPU sharing, one home for GKE and EKS (components/pools/sharing.py): the typed setting's bounds and its
two rules, sharing and MIG exclusive, and one GPU per container on a shared GPU."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpu_platform.components.pools.sharing import GpuSharing, GpuSharingStrategy, mig_sharing_problem, shared_request_problem


def test_the_strategies_are_gke_s_names() -> None:
    assert [s.value for s in GpuSharingStrategy] == ["TIME_SHARING", "MPS"]
    assert GpuSharing.model_validate({"strategy": "MPS", "max_shared_clients_per_gpu": 48}).strategy is GpuSharingStrategy.MPS


@pytest.mark.parametrize(("clients", "bound"), [(1, "greater than or equal to 2"), (49, "less than or equal to 48")])
def test_fails_when_clients_per_gpu_is_out_of_2_to_48(clients: int, bound: str) -> None:
    with pytest.raises(ValidationError) as info:
        GpuSharing(strategy=GpuSharingStrategy.TIME_SHARING, max_shared_clients_per_gpu=clients)
    (error,) = info.value.errors()
    assert error["loc"] == ("max_shared_clients_per_gpu",) and bound in error["msg"]


def test_fails_when_a_field_is_missing_or_unknown() -> None:
    with pytest.raises(ValidationError) as info:
        GpuSharing.model_validate({"strategy": "TIME_SHARING", "clients": 2})
    assert {e["loc"] for e in info.value.errors()} == {("max_shared_clients_per_gpu",), ("clients",)}


def test_sharing_and_mig_are_exclusive() -> None:
    sharing = GpuSharing(strategy=GpuSharingStrategy.TIME_SHARING, max_shared_clients_per_gpu=4)
    assert mig_sharing_problem(sharing, None) is None
    assert mig_sharing_problem(None, "1g.5gb") is None
    assert mig_sharing_problem(sharing, "1g.5gb") == (
        "gpu_sharing TIME_SHARING and gpu_partition_size 1g.5gb are exclusive: share whole GPUs or partition them with MIG, not both; remove one"
    )


def test_a_container_on_a_shared_gpu_asks_for_exactly_one() -> None:
    assert shared_request_problem("worker", 1, "t4") is None
    assert shared_request_problem("worker", 2, "t4") == "worker asks for 2 GPUs on pool t4, whose GPUs are shared: a container there asks for exactly 1"
