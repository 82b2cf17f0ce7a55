"""gpu-platform components: Pulumi ComponentResources for shared, autoscaling GPU clusters.

Import a component and its Args from here; nothing in this package creates a resource
at import time.
"""

from gpu_platform.components import _moved
from gpu_platform.components.catalog.gpus import AWS_INSTANCE_TYPES, GCP_ACCELERATORS, GCP_MACHINE_SHAPES
from gpu_platform.components.core.cluster import ClusterComponent, ClusterPools
from gpu_platform.components.dask.operator import (
    DaskNotebookArgs,
    DaskOperator,
    DaskOperatorArgs,
    DaskTenantArgs,
    OperatorScope,
    RapidsDaskClusterSpec,
    SharedDaskClusterArgs,
)
from gpu_platform.components.datasets.args import (
    DatasetAccess,
    DatasetArgs,
    DatasetBucketArgs,
    DatasetMountArgs,
    FsxDeploymentType,
    FsxLustreArgs,
    GcsFuseArgs,
    SharedDatasetsArgs,
)
from gpu_platform.components.datasets.shared_datasets import SharedDatasets
from gpu_platform.components.eks.args import AccessScope, EksAccessEntryArgs, EksAccessPolicy, ExistingVpcArgs, SecretsEncryption
from gpu_platform.components.eks.cluster import (
    EbsStorageArgs,
    EksAddon,
    EksCluster,
    EksClusterArgs,
    EksClusterRef,
    EksEndpointAccess,
    EksLogType,
    NatGateways,
    SystemNodeGroupArgs,
)
from gpu_platform.components.eks.node_groups import (
    AmiType,
    ClassRole,
    ClusterAutoscalerSettings,
    Expander,
    GpuClassArgs,
    PriorityExpander,
    PriorityTier,
    SpotFailoverEksNodeGroups,
    SpotFailoverEksNodeGroupsArgs,
)
from gpu_platform.components.existing.cluster import ExistingCluster, ExistingClusterArgs, ExistingPoolArgs
from gpu_platform.components.gke.cluster import (
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
from gpu_platform.components.headlamp.headlamp import Headlamp, HeadlampArgs, HeadlampTenantAccess
from gpu_platform.components.inference.service import GpuInferenceService, GpuInferenceServiceArgs, InferenceIngressArgs
from gpu_platform.components.karpenter.args import (
    ConsolidationPolicy,
    DisruptionBudget,
    KarpenterDisruption,
    KarpenterSettings,
    Provisioner,
)
from gpu_platform.components.karpenter.node_pools import KarpenterNodePools, KarpenterNodePoolsArgs
from gpu_platform.components.kubeflow.install import (
    AlbCognitoIngress,
    Edition,
    KubeflowInstall,
    KubeflowInstallArgs,
    OidcIssuer,
    TenantProfile,
    TrainingPoolSelector,
)
from gpu_platform.components.load_balancer.controller import AwsLoadBalancerController, AwsLoadBalancerControllerArgs
from gpu_platform.components.monitoring.dcgm_exporter import DcgmExporter, DcgmExporterArgs, DcgmMetric, GpuNodeSelection
from gpu_platform.components.monitoring.gpu_utilization_autoscaler import GpuUtilizationAutoscaler, GpuUtilizationAutoscalerArgs
from gpu_platform.components.monitoring.prometheus_stack import (
    AlertSettings,
    ClusterKind,
    MetricSource,
    MetricsPreset,
    MonitoredCluster,
    PrometheusStack,
    PrometheusStackArgs,
)
from gpu_platform.components.pools.ladders import CapacityRung, RungKind
from gpu_platform.components.pools.shapes import (
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    CapacityType,
    NodePoolShape,
    PoolPlacement,
    Taint,
    TaintEffect,
)
from gpu_platform.components.queues.args import ReclaimWithinCohort, TenantQueueArgs, WithinClusterQueue
from gpu_platform.components.queues.kueue import Kueue, KueueArgs
from gpu_platform.components.warm.args import WarmCapacityArgs
from gpu_platform.components.warm.warm_capacity import WarmCapacity

__all__ = [
    "ClusterComponent",
    "ClusterPools",
    "DaskNotebookArgs",
    "DaskOperator",
    "DaskOperatorArgs",
    "DaskTenantArgs",
    "OperatorScope",
    "RapidsDaskClusterSpec",
    "SharedDaskClusterArgs",
    "DatasetAccess",
    "DatasetArgs",
    "DatasetBucketArgs",
    "DatasetMountArgs",
    "FsxDeploymentType",
    "FsxLustreArgs",
    "GcsFuseArgs",
    "SharedDatasets",
    "SharedDatasetsArgs",
    "WarmCapacity",
    "WarmCapacityArgs",
    "GpuInferenceService",
    "GpuInferenceServiceArgs",
    "InferenceIngressArgs",
    "AwsLoadBalancerController",
    "AwsLoadBalancerControllerArgs",
    "AWS_INSTANCE_TYPES",
    "AmiType",
    "ClassRole",
    "ClusterAutoscalerSettings",
    "EbsStorageArgs",
    "AccessScope",
    "EksAccessEntryArgs",
    "EksAccessPolicy",
    "EksAddon",
    "EksCluster",
    "EksClusterArgs",
    "EksClusterRef",
    "ExistingCluster",
    "ExistingClusterArgs",
    "ExistingPoolArgs",
    "EksEndpointAccess",
    "EksLogType",
    "ExistingVpcArgs",
    "SecretsEncryption",
    "Expander",
    "GpuClassArgs",
    "NatGateways",
    "PriorityExpander",
    "PriorityTier",
    "SpotFailoverEksNodeGroups",
    "ConsolidationPolicy",
    "DisruptionBudget",
    "KarpenterDisruption",
    "KarpenterNodePools",
    "KarpenterNodePoolsArgs",
    "KarpenterSettings",
    "Provisioner",
    "SpotFailoverEksNodeGroupsArgs",
    "SystemNodeGroupArgs",
    "AlbCognitoIngress",
    "Edition",
    "Headlamp",
    "HeadlampArgs",
    "HeadlampTenantAccess",
    "KubeflowInstall",
    "KubeflowInstallArgs",
    "TenantProfile",
    "TrainingPoolSelector",
    "Kueue",
    "KueueArgs",
    "ReclaimWithinCohort",
    "TenantQueueArgs",
    "WithinClusterQueue",
    "AlertSettings",
    "ClusterKind",
    "MetricSource",
    "MonitoredCluster",
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
    "CapacityRung",
    "CapacityStrategy",
    "CapacityType",
    "RungKind",
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
    "OidcIssuer",
    "PoolPlacement",
    "ReleaseChannel",
    "SchedulerPoolArgs",
    "SystemPoolArgs",
    "Taint",
    "TaintEffect",
]

# help(<Component>) lists its outputs: appended from the annotated, docstring'd attributes.
import pulumi as _pulumi

from gpu_platform.components.core.outputs import document_outputs as _document_outputs

for _exported in __all__:
    _value = globals()[_exported]
    if isinstance(_value, type) and issubclass(_value, _pulumi.ComponentResource):
        _document_outputs(_value)

# The flat layout's deep import paths (gpu_platform.components.gke_plan, ...) still import, with a
# DeprecationWarning, for one release.
_moved.install()
