"""gpu-platform components: Pulumi ComponentResources for shared, autoscaling GPU clusters.

Import a component and its Args from here; nothing in this package creates a resource
at import time.
"""

from components.dcgm_exporter import DcgmExporter, DcgmExporterArgs, DcgmMetric, GpuNodeSelection
from components.gpu_catalog import GCP_ACCELERATORS, GCP_MACHINE_SHAPES
from components.gpu_gke_cluster import (
    AuthorizedNetwork,
    AutoscalingProfile,
    ControlPlaneAccess,
    DiskType,
    GpuDriverVersion,
    GpuGkeCluster,
    GpuGkeClusterArgs,
    GpuNodePoolArgs,
    GpuSharing,
    GpuSharingStrategy,
    ImageType,
    LocationPolicy,
    ReleaseChannel,
    SchedulerPoolArgs,
    SystemPoolArgs,
)
from components.gpu_utilization_autoscaler import GpuUtilizationAutoscaler, GpuUtilizationAutoscalerArgs
from components.kubeflow_install import (
    AlbCognitoIngress,
    Edition,
    KubeflowInstall,
    KubeflowInstallArgs,
    TenantProfile,
    TrainingPoolSelector,
)
from components.prometheus_stack import AlertSettings, MetricsPreset, PrometheusStack, PrometheusStackArgs
from components.pools import (
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    CapacityType,
    NodePoolShape,
    PoolPlacement,
    Taint,
    TaintEffect,
)

__all__ = [
    "AlbCognitoIngress",
    "Edition",
    "KubeflowInstall",
    "KubeflowInstallArgs",
    "TenantProfile",
    "TrainingPoolSelector",
    "AlertSettings",
    "DcgmExporter",
    "DcgmExporterArgs",
    "DcgmMetric",
    "GpuNodeSelection",
    "GpuUtilizationAutoscaler",
    "GpuUtilizationAutoscalerArgs",
    "MetricsPreset",
    "PrometheusStack",
    "PrometheusStackArgs",
    "GCP_ACCELERATORS",
    "GCP_MACHINE_SHAPES",
    "AuthorizedNetwork",
    "AutoscalingBounds",
    "AutoscalingProfile",
    "BoundsScope",
    "CapacityStrategy",
    "CapacityType",
    "ControlPlaneAccess",
    "DiskType",
    "GpuDriverVersion",
    "GpuGkeCluster",
    "GpuGkeClusterArgs",
    "GpuNodePoolArgs",
    "GpuSharing",
    "GpuSharingStrategy",
    "ImageType",
    "LocationPolicy",
    "NodePoolShape",
    "PoolPlacement",
    "ReleaseChannel",
    "SchedulerPoolArgs",
    "SystemPoolArgs",
    "Taint",
    "TaintEffect",
]
