"""GpuUtilizationAutoscaler: an autoscaling/v2 HPA that scales a Deployment on per-pod GPU
utilisation, the custom metric PrometheusStack's adapter exposes (the EKS DCGM + GPU HPA guide's HPA on
DCGM_FI_DEV_GPU_UTIL_AVG, as a Pods metric with an AverageValue target)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import ClusterComponent, on_cluster
from gpu_platform.components.monitoring.gpu_utilization_args import GpuUtilizationAutoscalerArgs

__all__ = ["GpuUtilizationAutoscaler", "GpuUtilizationAutoscalerArgs"]


class GpuUtilizationAutoscaler(pulumi.ComponentResource):
    """An HPA on per-pod GPU utilisation."""

    hpa: k8s.autoscaling.v2.HorizontalPodAutoscaler
    """The HorizontalPodAutoscaler."""

    def __init__(
        self,
        name: str,
        args: GpuUtilizationAutoscalerArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterComponent | None = None,
    ) -> None:
        """``cluster``: the cluster component the Deployment runs on (its provider; its nodes waited for).
        Default: none (``opts`` carries the provider)."""
        opts = on_cluster(cluster, opts).opts
        super().__init__("gpu-platform:gpu_utilization_autoscaler:GpuUtilizationAutoscaler", name, None, opts)
        self.hpa = k8s.autoscaling.v2.HorizontalPodAutoscaler(
            f"{name}-hpa",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.deployment, namespace=args.namespace),
            spec=k8s.autoscaling.v2.HorizontalPodAutoscalerSpecArgs(
                scale_target_ref=k8s.autoscaling.v2.CrossVersionObjectReferenceArgs(api_version="apps/v1", kind="Deployment", name=args.deployment),
                min_replicas=args.min_replicas,
                max_replicas=args.max_replicas,
                metrics=[
                    k8s.autoscaling.v2.MetricSpecArgs(
                        type="Pods",
                        pods=k8s.autoscaling.v2.PodsMetricSourceArgs(
                            metric=k8s.autoscaling.v2.MetricIdentifierArgs(name=args.metric),
                            target=k8s.autoscaling.v2.MetricTargetArgs(type="AverageValue", average_value=str(args.target_utilization_percent)),
                        ),
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"hpaName": self.hpa.metadata.name})
