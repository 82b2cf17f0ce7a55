"""gpu-platform components: Pulumi ComponentResources for shared, autoscaling GPU clusters.

Import a component and its Args from here; nothing in this package creates a resource
at import time.
"""

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
    PoolPlacement,
    ReleaseChannel,
    SchedulerPoolArgs,
    SystemPoolArgs,
)
from components.pools import (
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    CapacityType,
    Taint,
    TaintEffect,
)

__all__ = [
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
    "PoolPlacement",
    "ReleaseChannel",
    "SchedulerPoolArgs",
    "SystemPoolArgs",
    "Taint",
    "TaintEffect",
]
