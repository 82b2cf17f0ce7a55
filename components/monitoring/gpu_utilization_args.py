"""GpuUtilizationAutoscalerArgs: the Deployment to scale, its replica bounds and the GPU utilisation target."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator, model_validator

from gpu_platform.components.core.kube import DnsLabel
from gpu_platform.components.core.models import ARGS_CONFIG, check_min_max
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.monitoring.prometheus_args import GPU_CUSTOM_METRICS

__all__ = ["GpuUtilizationAutoscalerArgs"]


class GpuUtilizationAutoscalerArgs(BaseModel):
    """Inputs of GpuUtilizationAutoscaler."""

    model_config = ARGS_CONFIG

    deployment: DnsLabel
    """Name of the Deployment to scale. Required."""
    namespace: DnsLabel
    """Its namespace. Required."""
    min_replicas: Int = Field(default=1, ge=1, le=1000)
    """Fewest replicas. Default: 1."""
    max_replicas: Int = Field(ge=1, le=1000)
    """Most replicas (each holds GPUs: this bounds the GPU spend). Required."""
    target_utilization_percent: Int = Field(default=70, ge=1, le=100)
    """Average GPU utilisation per pod to hold. Default: 70."""
    metric: str = "DCGM_FI_DEV_GPU_UTIL_AVG"
    """Custom metric to scale on; one the adapter exposes. Default: DCGM_FI_DEV_GPU_UTIL_AVG."""

    @field_validator("metric")
    @classmethod
    def _exposed(cls, value: str) -> str:
        if value not in GPU_CUSTOM_METRICS:
            raise ValueError(f"metric {value} is not exposed by the adapter rules; use {' or '.join(GPU_CUSTOM_METRICS)}")
        return value

    @model_validator(mode="after")
    def _bounds(self) -> GpuUtilizationAutoscalerArgs:
        check_min_max(self, "min_replicas", "max_replicas")
        return self
