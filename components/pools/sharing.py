"""GPU sharing, one home for GKE and EKS: the typed setting (time-sharing or MPS, clients per GPU) and
its rules (sharing and MIG exclusive; one GPU per container on a shared GPU), which GKE pools and EKS
GPU classes both apply."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from gpu_platform.components.core.models import ARGS_CONFIG
from gpu_platform.components.core.numbers import Int

__all__ = ["GpuSharing", "GpuSharingStrategy", "mig_sharing_problem", "shared_request_problem"]


class GpuSharingStrategy(StrEnum):
    """How several containers share one GPU."""

    TIME_SHARING = "TIME_SHARING"
    """Containers take turns on the whole GPU."""
    MPS = "MPS"
    """NVIDIA Multi-Process Service: containers run on the GPU at once."""


class GpuSharing(BaseModel):
    """Several containers on one physical GPU (time-sharing or NVIDIA MPS)."""

    model_config = ARGS_CONFIG

    strategy: GpuSharingStrategy
    """TIME_SHARING or MPS. Required."""
    max_shared_clients_per_gpu: Int = Field(ge=2, le=48)
    """Containers that may share one GPU. Required (2..48)."""


def mig_sharing_problem(sharing: GpuSharing | None, partition: str | None) -> str | None:
    """Why ``sharing`` cannot go with MIG partition ``partition``, or None: a pool either partitions its GPUs
    (MIG) or shares them whole (time-sharing, MPS), never both."""
    if sharing is not None and partition is not None:
        return (
            f"gpu_sharing {sharing.strategy.value} and gpu_partition_size {partition} are exclusive: share whole GPUs "
            "or partition them with MIG, not both; remove one"
        )
    return None


def shared_request_problem(who: str, gpus: int, pool: str) -> str | None:
    """Why a container of ``who`` asking for ``gpus`` GPUs cannot run on shared pool ``pool``, or None: on a
    shared GPU a container asks for exactly one (the device plugin and GKE refuse more)."""
    if gpus > 1:
        return f"{who} asks for {gpus} GPUs on pool {pool}, whose GPUs are shared: a container there asks for exactly 1"
    return None
