"""GpuUtilizationAutoscaler: an autoscaling/v2 HPA that scales a Deployment on per-pod GPU
utilisation, the custom metric PrometheusStack's adapter exposes (the EKS DCGM + GPU HPA guide's HPA on
DCGM_FI_DEV_GPU_UTIL_AVG, as a Pods metric with an AverageValue target)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
from pydantic import BaseModel, Field, field_validator, model_validator

from gpu_platform.components.kube import DnsLabel
from gpu_platform.components.numbers import Int
from gpu_platform.components.models import ARGS_CONFIG, check_min_max
from gpu_platform.components.prometheus_stack import GPU_CUSTOM_METRICS

__all__ = ["GpuUtilizationAutoscaler", "GpuUtilizationAutoscalerArgs"]


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


class GpuUtilizationAutoscaler(pulumi.ComponentResource):
    """An HPA on per-pod GPU utilisation."""

    hpa: k8s.autoscaling.v2.HorizontalPodAutoscaler
    """The HorizontalPodAutoscaler."""

    def __init__(self, name: str, args: GpuUtilizationAutoscalerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpu-platform:gpu_utilization_autoscaler:GpuUtilizationAutoscaler", name, None, opts)
        self.hpa = k8s.autoscaling.v2.HorizontalPodAutoscaler(
            f"{name}-hpa",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.deployment, namespace=args.namespace),
            spec=k8s.autoscaling.v2.HorizontalPodAutoscalerSpecArgs(
                scale_target_ref=k8s.autoscaling.v2.CrossVersionObjectReferenceArgs(
                    api_version="apps/v1", kind="Deployment", name=args.deployment
                ),
                min_replicas=args.min_replicas,
                max_replicas=args.max_replicas,
                metrics=[
                    k8s.autoscaling.v2.MetricSpecArgs(
                        type="Pods",
                        pods=k8s.autoscaling.v2.PodsMetricSourceArgs(
                            metric=k8s.autoscaling.v2.MetricIdentifierArgs(name=args.metric),
                            target=k8s.autoscaling.v2.MetricTargetArgs(
                                type="AverageValue", average_value=str(args.target_utilization_percent)
                            ),
                        ),
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"hpaName": self.hpa.metadata.name})
