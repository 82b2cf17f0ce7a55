"""DcgmExporter: NVIDIA's dcgm-exporter on GPU nodes only, scraped with the workload's labels.

On GKE the driver comes from GKE: the exporter mounts GKE's driver directory
(/home/kubernetes/bin/nvidia) and runs only the exporter. On EKS the AMI carries the
driver and the device plugin exposes the GPUs. The ServiceMonitor keeps the pod and
namespace labels of the workload using each GPU (honorLabels), which the adapter's
per-pod GPU metrics rely on.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import ClusterComponent, check_live, on_cluster
from gpu_platform.components.core.kube import component_namespace, helm_release
from gpu_platform.components.core.models import input_error
from gpu_platform.components.monitoring.dcgm_args import DCGM_REPOSITORY, DEFAULT_METRICS, DcgmExporterArgs, DcgmMetric, GpuNodeSelection
from gpu_platform.components.monitoring.dcgm_resources import dcgm_values, metrics_csv

__all__ = [
    "DEFAULT_METRICS",
    "DcgmExporter",
    "DcgmExporterArgs",
    "DcgmMetric",
    "GpuNodeSelection",
]


class DcgmExporter(pulumi.ComponentResource):
    """dcgm-exporter on GPU nodes with a ServiceMonitor that keeps workload labels."""

    namespace: pulumi.Output[str]
    """The exporter's namespace."""
    release: k8s.helm.v3.Release
    """The dcgm-exporter Helm release."""

    def __init__(
        self,
        name: str,
        args: DcgmExporterArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        service_monitor_crd: pulumi.Resource | None,
        cluster: ClusterComponent | None = None,
    ) -> None:
        """``service_monitor_crd``: what installs the ServiceMonitor CRD the chart's ServiceMonitor needs
        (PrometheusStack.release); the release waits for it. None only when the CRD is already on the cluster.
        ``cluster``: the cluster component it runs on (its provider, its GPU nodes waited for); its kind must
        be ``args.node_selection``. Default: none (``opts`` carries the provider)."""
        placed = on_cluster(cluster, opts)
        check_live(
            "service_monitor_crd",
            service_monitor_crd,
            (pulumi.Resource,),
            "the resource that installs the ServiceMonitor CRD (PrometheusStack.release) or None",
            optional=True,
        )
        if placed.cloud is not None and placed.cloud.value != args.node_selection.value:
            raise input_error(
                "args.node_selection",
                f"args.node_selection {args.node_selection.value} does not match cluster, a {placed.cloud.value} cluster; "
                f"use {placed.cloud.value} (got {args.node_selection.value!r})",
            )
        opts = placed.opts
        super().__init__("gpu-platform:dcgm_exporter:DcgmExporter", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = component_namespace(name, args.namespace, child)
        ns = namespace.metadata.name
        metrics = k8s.core.v1.ConfigMap(
            f"{name}-metrics",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="gpu-platform-dcgm-metrics", namespace=ns),
            data={"metrics": metrics_csv(args.metrics)},
            opts=child,
        )
        self.release = helm_release(
            f"{name}-release",
            chart="dcgm-exporter",
            version=args.chart_version,
            repository=DCGM_REPOSITORY,
            namespace=ns,
            release_name="dcgm-exporter",
            values=dcgm_values(args, "gpu-platform-dcgm-metrics"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[r for r in (metrics, service_monitor_crd) if r]),
        )
        self.namespace = ns
        self.register_outputs({"namespace": self.namespace})
