"""GpuGkeCluster: a GKE cluster for shared GPU work, with typed GPU node pools.

Regional or zonal; the default node pool is removed and every pool is declared here:
a small system pool for controllers, any number of GPU pools (on-demand, spot, or spot
with an on-demand fallback that a custom ComputeClass orders), and optionally the cheap
scheduler pool the Dask scheduler prefers. Nodes run as a dedicated least-privilege
service account with Workload Identity.
"""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum
from typing import Annotated, Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import yaml
from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from gpu_platform.components.gpu_catalog import (
    GCP_ACCELERATORS,
    GCP_MACHINE_SHAPES,
    GpuCombinationError,
    check_gcp_gpu,
    disk_types_for,
)
from gpu_platform.components.labels import MANAGED_LABELS, POOL_ROLE_LABEL, SCHEDULER_LABEL, PoolRole
from gpu_platform.components.models import input_error, key_path
from gpu_platform.components.numbers import Int
from gpu_platform.components.reserves import ReserveFormula
from gpu_platform.components.pools import (
    ENVIRONMENT_LABEL,
    Environment,
    ARGS_CONFIG,
    GPU_TAINT,
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    CapacityType,
    LabelMap,
    NodePoolShape,
    PoolPlacement,
    Taint,
    TaintEffect,
    field_error,
    pool_taints,
)
from gpu_platform.components.zones import zone_problem

__all__ = [
    "AuthorizedNetwork",
    "AutoscalingProfile",
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
    "ReleaseChannel",
    "SchedulerPoolArgs",
    "SystemPoolArgs",
]

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"

# Roles of the dedicated node service account. roles/container.defaultNodeServiceAccount
# is GKE's least-privilege node role (logging, monitoring, metadata, autoscaling metrics).
NODE_ROLES = ("roles/container.defaultNodeServiceAccount",)
ARTIFACT_REGISTRY_READER = "roles/artifactregistry.reader"
IMAGE_STREAMING_ROLE = "roles/serviceusage.serviceUsageConsumer"
BASIC_ROLES = ("roles/owner", "roles/editor", "roles/viewer")

_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
_ZONE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")
_RESOURCE_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_VERSION = re.compile(r"^(latest|1\.[0-9]{2}(\.[0-9]+(-gke\.[0-9]+)?)?)$")
_GCP_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_GCP_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")


def valid_cluster_name(name: str) -> bool:
    """GKE cluster names: lowercase letters, digits and '-', starting with a letter, at most 40."""
    return bool(_RESOURCE_NAME.match(name)) and len(name) <= 40


GCP_MAX_LABELS = 64
"""GCP allows at most 64 labels per resource (cloud.google.com/resource-manager/docs/labels-overview)."""


def _check_gcp_labels(value: dict[str, str]) -> dict[str, str]:
    if len(value) > GCP_MAX_LABELS - 1:
        raise ValueError(
            f"{len(value)} labels: GCP allows at most {GCP_MAX_LABELS} per resource and the component adds "
            f"{ENVIRONMENT_LABEL}; use at most {GCP_MAX_LABELS - 1}"
        )
    if ENVIRONMENT_LABEL in value:
        raise ValueError(f"label {ENVIRONMENT_LABEL} is the component's own (set environment instead)")
    for key, label in value.items():
        if not _GCP_LABEL_KEY.match(key):
            raise ValueError(
                f"GCP label key {key!r} is invalid: lowercase letters, digits, '_' and '-', "
                "starting with a letter, at most 63 characters"
            )
        if not _GCP_LABEL_VALUE.match(label):
            raise ValueError(
                f"GCP label value {label!r} (key {key}) is invalid: lowercase letters, digits, "
                "'_' and '-', at most 63 characters"
            )
    return value


GcpLabelMap = Annotated[dict[str, str], AfterValidator(_check_gcp_labels)]
"""GCP resource labels (billing): lowercase keys and values, no '/' or '.'."""


class ReleaseChannel(StrEnum):
    """GKE release channels."""

    RAPID = "RAPID"
    REGULAR = "REGULAR"
    STABLE = "STABLE"
    EXTENDED = "EXTENDED"


class AutoscalingProfile(StrEnum):
    """How eagerly the cluster autoscaler removes underused nodes."""

    BALANCED = "BALANCED"
    OPTIMIZE_UTILIZATION = "OPTIMIZE_UTILIZATION"


class LocationPolicy(StrEnum):
    """How the autoscaler spreads a pool's nodes over zones (ANY suits spot capacity)."""

    BALANCED = "BALANCED"
    ANY = "ANY"


class ImageType(StrEnum):
    """Node OS images GKE offers with containerd."""

    COS_CONTAINERD = "COS_CONTAINERD"
    UBUNTU_CONTAINERD = "UBUNTU_CONTAINERD"


class DiskType(StrEnum):
    """Boot disk types."""

    PD_STANDARD = "pd-standard"
    PD_BALANCED = "pd-balanced"
    PD_SSD = "pd-ssd"
    HYPERDISK_BALANCED = "hyperdisk-balanced"


class GpuDriverVersion(StrEnum):
    """Which NVIDIA driver GKE installs. Set explicitly: unset drifts, and a change replaces the pool."""

    DEFAULT = "DEFAULT"
    LATEST = "LATEST"
    INSTALLATION_DISABLED = "INSTALLATION_DISABLED"


class GpuSharingStrategy(StrEnum):
    """How several containers share one GPU."""

    TIME_SHARING = "TIME_SHARING"
    MPS = "MPS"


class AuthorizedNetwork(BaseModel):
    """A CIDR block allowed to reach the control plane."""

    model_config = ARGS_CONFIG

    cidr_block: str
    """IPv4 or IPv6 network in CIDR notation, host bits zero (e.g. 203.0.113.0/24). Required."""
    display_name: str = ""
    """Label shown in the console. Default: "" (none)."""

    @field_validator("cidr_block")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not a network in CIDR notation ({exc})") from None
        return value


class ControlPlaneAccess(BaseModel):
    """Who can reach the Kubernetes API and whether nodes get public IPs."""

    model_config = ARGS_CONFIG

    private_nodes: bool = False
    """Nodes get internal IPs only (needs Cloud NAT for egress). Default: false."""
    private_endpoint: bool = False
    """The API is reachable only on its private endpoint; needs private_nodes. Default: false."""
    master_ipv4_cidr_block: str | None = None
    """A /28 for the control plane's peering range (classic private clusters). Default: none (GKE chooses)."""
    authorized_networks: list[AuthorizedNetwork] = Field(default_factory=list, max_length=100)
    """Networks allowed to reach the API; empty leaves authorized networks off. Default: []."""

    @field_validator("master_ipv4_cidr_block")
    @classmethod
    def _slash_28(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            net = ipaddress.IPv4Network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not an IPv4 network ({exc})") from None
        if net.prefixlen != 28:
            raise ValueError(f"master_ipv4_cidr_block must be a /28 (got /{net.prefixlen})")
        return value

    @model_validator(mode="after")
    def _endpoint_needs_private_nodes(self) -> ControlPlaneAccess:
        if self.private_endpoint and not self.private_nodes:
            raise field_error(
                "ControlPlaneAccess",
                "private_endpoint",
                "private_endpoint true needs private_nodes true; set private_nodes: true",
                self.private_endpoint,
            )
        if self.master_ipv4_cidr_block and not self.private_nodes:
            raise field_error(
                "ControlPlaneAccess",
                "master_ipv4_cidr_block",
                "master_ipv4_cidr_block applies to private clusters only; set private_nodes: true",
                self.master_ipv4_cidr_block,
            )
        return self

    @property
    def restricted(self) -> bool:
        """True when the API is private or limited to authorized networks."""
        return self.private_endpoint or bool(self.authorized_networks)


class GpuSharing(BaseModel):
    """Several containers on one physical GPU (time-sharing or NVIDIA MPS)."""

    model_config = ARGS_CONFIG

    strategy: GpuSharingStrategy
    """TIME_SHARING or MPS. Required."""
    max_shared_clients_per_gpu: Int = Field(ge=2, le=48)
    """Containers that may share one GPU. Required (2..48)."""


def _check_pool_name(value: str) -> str:
    if not _RESOURCE_NAME.match(value):
        raise ValueError(
            f"{value!r} is not a valid pool name: lowercase letters, digits and '-', "
            "starting with a letter"
        )
    return value


GkePoolTaints = pool_taints(GPU_TAINT.key, COMPUTE_CLASS_LABEL)
"""A GKE pool's own taints: not the GPU taint nor the compute-class taint, which the component adds."""


class _PoolBase(BaseModel):
    """Settings every node pool shares."""

    model_config = ARGS_CONFIG

    name: str = Field(min_length=1, max_length=30)
    """Node pool name; spot_then_on_demand pools add -spot and -on-demand. Required."""
    machine_type: str
    """Compute Engine machine type. Required."""
    autoscaling: AutoscalingBounds
    """Node-count bounds, per zone or total (scope is required). Required."""
    location_policy: LocationPolicy | None = None
    """How nodes spread over zones. Default: ANY for spot pools, BALANCED otherwise."""
    node_locations: list[str] | None = None
    """Zones of this pool, a subset of the cluster's. Default: the cluster's node locations."""
    image_type: ImageType = ImageType.COS_CONTAINERD
    """Node image. Default: COS_CONTAINERD."""
    image_streaming: bool = True
    """Stream container images (GKE image streaming; large RAPIDS images start in seconds). Needs COS_CONTAINERD. Default: true."""
    disk_size_gb: Int = Field(default=100, ge=10, le=65536)
    """Boot disk size in GB. Default: 100."""
    disk_type: DiskType = DiskType.PD_BALANCED
    """Boot disk type. Default: pd-balanced."""
    labels: LabelMap = Field(default_factory=dict)
    """Extra Kubernetes labels on the nodes. Default: {}."""
    taints: GkePoolTaints = Field(default_factory=list)
    """Extra taints on the nodes (the GPU taint is always added to GPU pools). Default: []."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_pool_name(value)

    @field_validator("node_locations")
    @classmethod
    def _zones(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("node_locations must name at least one zone or be left unset")
        for zone in value:
            if not _ZONE.match(zone):
                raise ValueError(f"{zone!r} is not a zone (e.g. us-central1-b)")
        if len(set(value)) != len(value):
            raise ValueError(f"node_locations lists a zone twice ({', '.join(value)})")
        return value

    @model_validator(mode="after")
    def _disk_type_offered(self) -> _PoolBase:
        shape = GCP_MACHINE_SHAPES.get(self.machine_type)
        if shape is not None:
            offered = disk_types_for(shape.family)
            if self.disk_type.value not in offered:
                raise field_error(
                    type(self).__name__,
                    "disk_type",
                    f"disk_type {self.disk_type.value} is not offered on {self.machine_type}; "
                    f"use {', '.join(offered)}",
                    self.disk_type.value,
                )
        return self

    @model_validator(mode="after")
    def _streaming_needs_cos(self) -> _PoolBase:
        if self.image_streaming and self.image_type is not ImageType.COS_CONTAINERD:
            raise field_error(
                type(self).__name__,
                "image_streaming",
                f"image streaming needs image_type COS_CONTAINERD (got image_type {self.image_type.value}); "
                "set image_type: COS_CONTAINERD or image_streaming: false",
                self.image_streaming,
            )
        return self

    def effective_location_policy(self, spot: bool) -> LocationPolicy:
        if self.location_policy is not None:
            return self.location_policy
        return LocationPolicy.ANY if spot else LocationPolicy.BALANCED


class SystemPoolArgs(_PoolBase):
    """The small on-demand pool for cluster controllers (DNS, metrics, operators). Not tainted."""

    name: str = Field(default="system", min_length=1, max_length=30)
    """Node pool name. Default: system."""
    machine_type: str = "e2-standard-4"
    """A CPU machine type of the catalog (no GPU machine types: controllers do not need one). Default: e2-standard-4."""
    autoscaling: AutoscalingBounds = AutoscalingBounds(
        scope=BoundsScope.PER_ZONE, min_nodes=1, max_nodes=3
    )
    """Node-count bounds. Default: 1..3 per zone."""
    disk_size_gb: Int = Field(default=50, ge=10, le=65536)
    """Boot disk size in GB. Default: 50."""

    @field_validator("machine_type")
    @classmethod
    def _cpu_machine(cls, value: str) -> str:
        shape = GCP_MACHINE_SHAPES.get(value)
        cpu = sorted(n for n, m in GCP_MACHINE_SHAPES.items() if m.accelerator is None and n.startswith("e2-"))
        if shape is None:
            raise ValueError(f"machine type {value!r} is not in the catalog; use a CPU machine type such as {', '.join(cpu[:6])}")
        if shape.accelerator is not None:
            raise ValueError(
                f"{value} is a GPU machine type ({shape.accelerator}); the system pool runs controllers: use a CPU "
                f"machine type such as {', '.join(cpu[:6])}"
            )
        return value


class GpuNodePoolArgs(_PoolBase):
    """A GPU node pool: machine type and GPUs checked against the catalog, always GPU-tainted."""

    accelerator_type: str
    """GKE accelerator type, e.g. nvidia-tesla-t4, nvidia-l4, nvidia-tesla-a100. Required."""
    accelerator_count: Int | None = Field(default=None, ge=1, le=16)
    """GPUs per node. Required on N1; on A2/A3/G2 the machine type fixes it. Default: from the machine type."""
    driver_version: GpuDriverVersion = GpuDriverVersion.DEFAULT
    """NVIDIA driver GKE installs (LATEST needs COS). Default: DEFAULT."""
    capacity: CapacityStrategy = CapacityStrategy.ON_DEMAND
    """on_demand, spot, or spot_then_on_demand (a spot pool first, an on-demand twin as fallback). Default: on_demand."""
    fallback_max_nodes: Int | None = Field(default=None, ge=1, le=1000)
    """spot_then_on_demand only: most on-demand fallback nodes (the fallback pool keeps no minimum; autoscaling.min_nodes applies to the spot pool). Default: none (autoscaling.max_nodes)."""
    migrate_back_to_spot: bool = False
    """spot_then_on_demand only: let GKE move pods back to spot nodes when spot capacity returns (it evicts them). Default: false."""
    gpu_sharing: GpuSharing | None = None
    """Time-sharing or MPS. Default: none (one container per GPU)."""
    gpu_partition_size: str | None = None
    """Multi-instance GPU partition, e.g. 1g.5gb (A100 and H100 only). Default: none."""
    compact_placement: bool = False
    """Place nodes physically close (low-latency interconnect); needs a single zone. Default: false."""
    queued_provisioning: bool = False
    """Dynamic Workload Scheduler queued provisioning: all-or-nothing GPU capacity. Needs total bounds with min 0 and on_demand capacity. Default: false."""

    @model_validator(mode="after")
    def _gpu_rules(self) -> GpuNodePoolArgs:
        model = "GpuNodePoolArgs"
        try:
            check_gcp_gpu(self.machine_type, self.accelerator_type, self.accelerator_count)
        except GpuCombinationError as exc:
            value = getattr(self, exc.field)
            raise field_error(model, exc.field, exc.message, value) from None
        if self.driver_version is GpuDriverVersion.LATEST and self.image_type is not ImageType.COS_CONTAINERD:
            raise field_error(
                model,
                "driver_version",
                f"driver_version LATEST is offered on COS only (got image_type {self.image_type.value}); "
                "use DEFAULT or image_type COS_CONTAINERD",
                self.driver_version.value,
            )
        if self.gpu_partition_size is not None:
            partitions = GCP_ACCELERATORS[self.accelerator_type].mig_partitions
            if self.gpu_partition_size not in partitions:
                allowed = ", ".join(partitions) if partitions else "none (MIG needs A100 or H100)"
                raise field_error(
                    model,
                    "gpu_partition_size",
                    f"gpu_partition_size {self.gpu_partition_size} is not offered for "
                    f"{self.accelerator_type}; allowed: {allowed}",
                    self.gpu_partition_size,
                )
        if self.compact_placement and not GCP_ACCELERATORS[self.accelerator_type].compact_placement:
            raise field_error(
                model,
                "compact_placement",
                f"compact_placement is not offered for {self.machine_type} (N1); "
                "use an A2, A3 or G2 machine type or compact_placement: false",
                self.compact_placement,
            )
        if self.fallback_max_nodes is not None and self.capacity is not CapacityStrategy.SPOT_THEN_ON_DEMAND:
            raise field_error(
                model,
                "fallback_max_nodes",
                f"fallback_max_nodes applies to capacity spot_then_on_demand only (got capacity {self.capacity.value})",
                self.fallback_max_nodes,
            )
        if self.migrate_back_to_spot and self.capacity is not CapacityStrategy.SPOT_THEN_ON_DEMAND:
            raise field_error(
                model,
                "migrate_back_to_spot",
                f"migrate_back_to_spot applies to capacity spot_then_on_demand only "
                f"(got capacity {self.capacity.value})",
                self.migrate_back_to_spot,
            )
        if self.capacity is CapacityStrategy.SPOT_THEN_ON_DEMAND and self.name.startswith(("gke", "autopilot")):
            raise field_error(
                model,
                "name",
                f"name {self.name!r} would name a ComputeClass, which may not start with "
                "'gke' or 'autopilot'; choose another name",
                self.name,
            )
        if self.queued_provisioning:
            problems = []
            if self.capacity is not CapacityStrategy.ON_DEMAND:
                problems.append(f"capacity on_demand (got {self.capacity.value})")
            if self.autoscaling.scope is not BoundsScope.TOTAL:
                problems.append(f"autoscaling.scope total (got {self.autoscaling.scope.value})")
            if self.autoscaling.min_nodes != 0:
                problems.append(f"autoscaling.min_nodes 0 (got {self.autoscaling.min_nodes})")
            if self.location_policy is LocationPolicy.BALANCED:
                problems.append("location_policy ANY (got BALANCED)")
            if self.compact_placement:
                problems.append("compact_placement false (got true)")
            if problems:
                raise field_error(
                    model,
                    "queued_provisioning",
                    "queued_provisioning needs " + ", ".join(problems),
                    self.queued_provisioning,
                )
        return self

    @property
    def gpus_per_node(self) -> int:
        return check_gcp_gpu(self.machine_type, self.accelerator_type, self.accelerator_count)

    def capacity_types(self) -> list[CapacityType]:
        return CapacityType.for_strategy(self.capacity)

    def bounds_for(self, capacity: CapacityType) -> AutoscalingBounds:
        """The bounds of one pool of this spec: an on-demand fallback keeps no minimum."""
        if self.capacity is CapacityStrategy.SPOT_THEN_ON_DEMAND and capacity is CapacityType.ON_DEMAND:
            maximum = self.autoscaling.max_nodes if self.fallback_max_nodes is None else self.fallback_max_nodes
            return AutoscalingBounds(scope=self.autoscaling.scope, min_nodes=0, max_nodes=maximum)
        return self.autoscaling

    def gke_pool_name(self, capacity: CapacityType) -> str:
        if self.capacity is CapacityStrategy.SPOT_THEN_ON_DEMAND:
            return f"{self.name}-{capacity.value}"
        return self.name


class SchedulerPoolArgs(GpuNodePoolArgs):
    """The RAPIDS Dask-scheduler-on-T4 guide's cheap pool for Dask schedulers: one small GPU per node, label dedicated=scheduler."""

    name: str = Field(default="scheduler", min_length=1, max_length=30)
    """Node pool name. Default: scheduler."""
    machine_type: str = "n1-standard-2"
    """Machine type. Default: n1-standard-2."""
    accelerator_type: str = "nvidia-tesla-t4"
    """GPU model (schedulers need a GPU to deserialise CUDA objects). Default: nvidia-tesla-t4."""
    accelerator_count: Int | None = Field(default=1, ge=1, le=16)
    """GPUs per node. Default: 1."""
    autoscaling: AutoscalingBounds = AutoscalingBounds(
        scope=BoundsScope.TOTAL, min_nodes=0, max_nodes=4
    )
    """Node-count bounds. Default: 0..4 in total."""


class GpuGkeClusterArgs(BaseModel):
    """Inputs of GpuGkeCluster."""

    model_config = ARGS_CONFIG

    location: str
    """Region (regional cluster, e.g. us-central1) or zone (zonal cluster, e.g. us-central1-a). Required."""
    gpu_pools: list[GpuNodePoolArgs] = Field(min_length=1)
    """GPU node pools. Required (at least one)."""
    project: str | None = None
    """GCP project. Default: the gcp provider's project (gcp:project)."""
    cluster_name: str | None = Field(default=None, max_length=40)
    """GKE cluster name. Default: the component's name."""
    node_locations: list[str] = Field(default_factory=list)
    """Zones the nodes run in, inside the location's region. Default: [] (GKE's choice for the region, or the cluster's zone)."""
    release_channel: ReleaseChannel = ReleaseChannel.STABLE
    """GKE release channel. Default: STABLE."""
    min_master_version: str | None = None
    """Lowest control-plane version, e.g. 1.33, 1.33.5-gke.1000 or latest. Default: none (the channel's default)."""
    autoscaling_profile: AutoscalingProfile = AutoscalingProfile.OPTIMIZE_UTILIZATION
    """Cluster autoscaler profile; OPTIMIZE_UTILIZATION removes idle GPU nodes sooner. Default: OPTIMIZE_UTILIZATION."""
    deletion_protection: bool = True
    """Refuse to delete the cluster (GKE deletion_protection and Pulumi protect). Default: true."""
    dataplane_v2: bool = True
    """GKE Dataplane V2 (datapath ADVANCED_DATAPATH), which enforces NetworkPolicy (the Dask tenants' isolation); GKE sets it at creation only, so changing it replaces the cluster. Default: true."""
    network: str = "default"
    """VPC network name or self link. Default: default."""
    subnetwork: str | None = None
    """Subnetwork name or self link. Default: none (the network's subnet in the region)."""
    control_plane: ControlPlaneAccess = Field(default_factory=ControlPlaneAccess)
    """Control-plane access: private nodes/endpoint, authorized networks. Default: public endpoint, no restriction."""
    managed_dcgm_metrics: bool = False
    """GKE's managed DCGM metrics (Managed Service for Prometheus collects GPU telemetry), the alternative to running DcgmExporter. Default: false."""
    cloud_nat: bool = False
    """Create a Cloud Router and NAT in the region so private nodes can pull public images (nvcr.io, Docker Hub); leave false when the network has NAT already. Needs control_plane.private_nodes. Default: false."""
    node_service_account_id: str | None = Field(default=None, min_length=6, max_length=30)
    """Account id of the dedicated node service account. Default: <cluster name, cut to 24>-nodes."""
    artifact_registry_access: bool = True
    """Grant the nodes roles/artifactregistry.reader to pull private images. Default: true."""
    extra_node_roles: list[str] = Field(default_factory=list)
    """Further IAM roles for the node service account (basic roles are refused). Default: []."""
    enable_apis: bool = True
    """Enable container.googleapis.com (and containerfilesystem.googleapis.com for image streaming); never disabled on destroy. Default: true."""
    resource_labels: GcpLabelMap = Field(default_factory=dict)
    """GCP labels on the cluster (billing breakdown): lowercase letters, digits, '_' and '-'; at most 63 (the component adds gpu-platform-environment). Default: {}."""
    environment: Environment | None = None
    """What the cluster is for, set as its gpu-platform-environment label; the policy pack's production rules read it (the program sets it from gpu-platform:environment). Default: none (the rules fall back to the stack name)."""
    system_pool: SystemPoolArgs = Field(default_factory=SystemPoolArgs)
    """The untainted pool for controllers. Default: e2-standard-4, 1..3 per zone."""
    scheduler_pool: SchedulerPoolArgs | None = None
    """The cheap Dask scheduler pool (n1-standard-2, 1x T4, dedicated=scheduler). Default: none."""

    @field_validator("location")
    @classmethod
    def _location(cls, value: str) -> str:
        if not (_REGION.match(value) or _ZONE.match(value)):
            raise ValueError(
                f"{value!r} is neither a region (us-central1) nor a zone (us-central1-a)"
            )
        return value

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, value: str | None) -> str | None:
        if value is not None and not _RESOURCE_NAME.match(value):
            raise ValueError(
                f"{value!r} is not a valid GKE cluster name: lowercase letters, digits and '-', "
                "starting with a letter, at most 40 characters"
            )
        return value

    @field_validator("min_master_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None and not _VERSION.match(value):
            raise ValueError(f"{value!r} is not a GKE version such as 1.33, 1.33.5-gke.1000 or latest")
        return value

    @field_validator("node_service_account_id")
    @classmethod
    def _account_id(cls, value: str | None) -> str | None:
        if value is not None and not _RESOURCE_NAME.match(value):
            raise ValueError(
                f"{value!r} is not a service account id: lowercase letters, digits and '-', "
                "starting with a letter, 6 to 30 characters"
            )
        return value

    @field_validator("extra_node_roles")
    @classmethod
    def _roles(cls, value: list[str]) -> list[str]:
        for role in value:
            if role in BASIC_ROLES:
                raise ValueError(
                    f"{role} is a basic role and far beyond what nodes need; "
                    "grant a predefined role such as roles/storage.objectViewer"
                )
            if not re.match(r"^(roles|projects/[^/]+/roles|organizations/[0-9]+/roles)/[A-Za-z0-9_.]+$", role):
                raise ValueError(f"{role!r} is not an IAM role name (roles/...)")
        return value

    @model_validator(mode="after")
    def _cluster_rules(self) -> GpuGkeClusterArgs:
        model = "GpuGkeClusterArgs"
        region = self.region
        if not self.regional and (problem := zone_problem("gcp", region, self.location)):
            raise field_error(model, "location", problem, self.location)
        for i, zone in enumerate(self.node_locations):
            m = _ZONE.match(zone)
            if not m:
                raise field_error(model, ("node_locations", i), f"{zone!r} is not a zone (e.g. us-central1-b)", zone)
            if m.group(1) == region and (problem := zone_problem("gcp", region, zone)):
                raise field_error(model, ("node_locations", i), problem, zone)
            if m.group(1) != region:
                raise field_error(
                    model,
                    ("node_locations", i),
                    f"zone {zone} is outside the cluster's region {region}; use zones {region}-<letter>",
                    zone,
                )
        if len(set(self.node_locations)) != len(self.node_locations):
            raise field_error(model, "node_locations", "node_locations lists a zone twice", self.node_locations)
        if not self.regional and self.location in self.node_locations:
            raise field_error(
                model,
                ("node_locations", self.node_locations.index(self.location)),
                f"zone {self.location} is the zonal cluster's own location; list only the additional zones",
                self.location,
            )
        if self.cloud_nat and not self.control_plane.private_nodes:
            raise field_error(
                model,
                "cloud_nat",
                "cloud_nat serves private nodes only; set control_plane.private_nodes: true or cloud_nat: false",
                self.cloud_nat,
            )

        cluster_zones = self.cluster_zones
        seen: dict[str, str] = {}
        configured: dict[str, str] = {}
        pools: list[tuple[tuple[str | int, ...], _PoolBase]] = [(("system_pool",), self.system_pool)]
        if self.scheduler_pool is not None:
            pools.append((("scheduler_pool",), self.scheduler_pool))
        pools += [(("gpu_pools", i), p) for i, p in enumerate(self.gpu_pools)]
        for loc, pool in pools:
            if pool.name in configured:
                raise field_error(
                    model,
                    (*loc, "name"),
                    f"pool name {pool.name} is already used by {configured[pool.name]}; give every pool its own name",
                    pool.name,
                )
            configured[pool.name] = key_path(loc)
            names = (
                [pool.gke_pool_name(c) for c in pool.capacity_types()]
                if isinstance(pool, GpuNodePoolArgs)
                else [pool.name]
            )
            for gke_name in names:
                if gke_name in seen:
                    raise field_error(
                        model,
                        (*loc, "name"),
                        f"node pool name {gke_name} is already used by {seen[gke_name]}; "
                        "give every pool its own name",
                        pool.name,
                    )
                seen[gke_name] = key_path(loc)
            if pool.node_locations is not None:
                for i, zone in enumerate(pool.node_locations):
                    if cluster_zones is not None and zone not in cluster_zones:
                        raise field_error(
                            model,
                            (*loc, "node_locations", i),
                            f"zone {zone} is not one of the cluster's node locations "
                            f"({', '.join(cluster_zones)})",
                            zone,
                        )
                    if not zone.startswith(region + "-"):
                        raise field_error(
                            model,
                            (*loc, "node_locations", i),
                            f"zone {zone} is outside the cluster's region {region}",
                            zone,
                        )
                    if problem := zone_problem("gcp", region, zone):
                        raise field_error(model, (*loc, "node_locations", i), problem, zone)
            if isinstance(pool, GpuNodePoolArgs) and pool.compact_placement:
                zones = pool.node_locations or cluster_zones
                if zones is None or len(zones) != 1:
                    got = ", ".join(zones) if zones else f"all zones of {region}"
                    raise field_error(
                        model,
                        (*loc, "compact_placement"),
                        f"compact_placement needs exactly one zone (got {got}); "
                        "set this pool's node_locations to one zone",
                        True,
                    )
        return self

    @property
    def regional(self) -> bool:
        return bool(_REGION.match(self.location))

    @property
    def region(self) -> str:
        if self.regional:
            return self.location
        m = _ZONE.match(self.location)
        assert m
        return m.group(1)

    @property
    def cluster_zones(self) -> list[str] | None:
        """The zones nodes run in; None for a regional cluster that leaves them to GKE."""
        if self.node_locations:
            zones = list(self.node_locations)
            if not self.regional and self.location not in zones:
                zones.insert(0, self.location)
            return zones
        if not self.regional:
            return [self.location]
        return None

    def all_pools(self) -> list[_PoolBase]:
        pools: list[_PoolBase] = [self.system_pool]
        if self.scheduler_pool is not None:
            pools.append(self.scheduler_pool)
        return pools + list(self.gpu_pools)

    @property
    def uses_image_streaming(self) -> bool:
        return any(p.image_streaming for p in self.all_pools())

    def pool_zone_count(self, pool: _PoolBase) -> int:
        """How many zones a pool's nodes spread over (GKE's default for a region is three)."""
        return len(pool.node_locations or self.cluster_zones or ()) or 3

    def pool_shapes(self) -> list[NodePoolShape]:
        """Every declared pool as workloads see it: shape, bounds in total, labels, taints, placement."""
        shapes = []
        system = self.system_pool
        machine = GCP_MACHINE_SHAPES[system.machine_type]
        low, high = system.autoscaling.node_range(self.pool_zone_count(system))
        shapes.append(
            NodePoolShape(
                name=system.name, role=PoolRole.SYSTEM, machine_type=system.machine_type, vcpus=machine.vcpus,
                memory_mib=machine.memory_mib, gpus_per_node=0, accelerator=None,
                capacity=CapacityStrategy.ON_DEMAND, min_nodes=low, max_nodes=high,
                labels={POOL_ROLE_LABEL: "system", **system.labels}, taints=tuple(system.taints),
                placement=PoolPlacement({NODE_POOL_LABEL: system.name}, tuple(system.taints)),
                per_zone_over=self._per_zone_over(system), reserve_formula=ReserveFormula.GKE,
            )
        )
        gpu_pools: list[tuple[GpuNodePoolArgs, str, dict[str, str]]] = [(p, "gpu", {}) for p in self.gpu_pools]
        if self.scheduler_pool is not None:
            gpu_pools.insert(0, (self.scheduler_pool, "scheduler", {SCHEDULER_LABEL[0]: SCHEDULER_LABEL[1]}))
        for pool, role, extra in gpu_pools:
            zones = self.pool_zone_count(pool)
            taints: tuple[Taint, ...] = (GPU_TAINT, *pool.taints)
            labels = {POOL_ROLE_LABEL: role, **pool.labels, **extra}
            if pool.capacity is CapacityStrategy.SPOT_THEN_ON_DEMAND:
                class_taint = Taint(key=COMPUTE_CLASS_LABEL, value=pool.name, effect=TaintEffect.NO_SCHEDULE)
                taints = (*taints, class_taint)
                labels[COMPUTE_CLASS_LABEL] = pool.name
                placement = PoolPlacement({COMPUTE_CLASS_LABEL: pool.name}, taints)
            else:
                placement = PoolPlacement({NODE_POOL_LABEL: pool.name}, taints)
            ranges = [pool.bounds_for(c).node_range(zones) for c in pool.capacity_types()]
            machine = GCP_MACHINE_SHAPES[pool.machine_type]
            shapes.append(
                NodePoolShape(
                    name=pool.name, role=role, machine_type=pool.machine_type, vcpus=machine.vcpus,
                    memory_mib=machine.memory_mib, gpus_per_node=pool.gpus_per_node,
                    accelerator=pool.accelerator_type, capacity=pool.capacity,
                    min_nodes=sum(r[0] for r in ranges), max_nodes=sum(r[1] for r in ranges),
                    labels=labels, taints=taints, placement=placement, per_zone_over=self._per_zone_over(pool),
                    reserve_formula=ReserveFormula.GKE,
                )
            )
        return shapes

    def _per_zone_over(self, pool: _PoolBase) -> int | None:
        """The zone count a per_zone pool's bounds multiply over; None for total bounds."""
        return self.pool_zone_count(pool) if pool.autoscaling.scope is BoundsScope.PER_ZONE else None


def compute_class_spec(spot_pool: str, on_demand_pool: str, migrate_back_to_spot: bool) -> dict[str, Any]:
    """The ComputeClass spec that makes GKE try ``spot_pool`` first, then ``on_demand_pool``.

    A ``nodepools`` priority may carry no other field, and pools listed in one entry have
    no order, so each pool is its own entry. Auto-creation is off: only these pools serve
    the class, and ``DoNotScaleUp`` keeps GKE from scaling any other pool for it.
    """
    return {
        "priorities": [{"nodepools": [spot_pool]}, {"nodepools": [on_demand_pool]}],
        "nodePoolAutoCreation": {"enabled": False},
        "activeMigration": {"optimizeRulePriority": migrate_back_to_spot},
        "whenUnsatisfiable": "DoNotScaleUp",
    }


def gke_kubeconfig(cluster_name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig in the exec form with gke-gcloud-auth-plugin."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster_name,
                "cluster": {
                    "certificate-authority-data": ca_certificate,
                    "server": f"https://{endpoint}",
                },
            }
        ],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "preferences": {},
        "users": [
            {
                "name": cluster_name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "installHint": "Install gke-gcloud-auth-plugin: "
                        "gcloud components install gke-gcloud-auth-plugin",
                        "provideClusterInfo": True,
                    }
                },
            }
        ],
    }
    return yaml.safe_dump(config, sort_keys=False)


class GpuGkeCluster(pulumi.ComponentResource):
    """A GKE cluster with typed GPU node pools, a least-privilege node identity and a Kubernetes provider."""

    cluster_name: pulumi.Output[str]
    """The GKE cluster's name."""
    endpoint: pulumi.Output[str]
    """The control plane's IP address."""
    kubeconfig: pulumi.Output[str]
    """A kubeconfig (gke-gcloud-auth-plugin exec form); a Pulumi secret."""
    provider: k8s.Provider
    """A Kubernetes provider for downstream components."""
    node_service_account_email: pulumi.Output[str]
    """The nodes' service account."""
    node_pools: dict[str, gcp.container.NodePool]
    """Every node pool, by GKE pool name."""
    compute_classes: dict[str, str]
    """ComputeClass name of each spot_then_on_demand GPU pool, by pool name."""
    placements: dict[str, PoolPlacement]
    """How a pod lands on each declared pool (by pool name as configured)."""
    compute_class_resources: dict[str, k8s.apiextensions.CustomResource]
    """The ComputeClass objects, by pool name (depend on them before scheduling onto a class)."""

    def __init__(
        self,
        name: str,
        args: GpuGkeClusterArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        project = args.project or gcp.config.project
        if not project:
            raise input_error("args.project", "no GCP project; set GpuGkeClusterArgs.project or the gcp:project config")
        cluster_name = args.cluster_name or name
        if not valid_cluster_name(cluster_name):
            raise input_error(
                "args.cluster_name",
                f"the default (the component name {name!r}) is not a valid GKE cluster name; set cluster_name",
            )
        super().__init__("gpu-platform:gpu_gke_cluster:GpuGkeCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        apis: list[pulumi.Resource] = []
        if args.enable_apis:
            services = ["container.googleapis.com"]
            if args.uses_image_streaming:
                services.append("containerfilesystem.googleapis.com")
            for service in services:
                apis.append(
                    gcp.projects.Service(
                        f"{name}-{service.split('.')[0]}-api",
                        gcp.projects.ServiceArgs(
                            project=project, service=service, disable_on_destroy=False
                        ),
                        opts=child,
                    )
                )

        account_id = args.node_service_account_id or f"{cluster_name[:24].rstrip('-')}-nodes"
        account = gcp.serviceaccount.Account(
            f"{name}-nodes",
            gcp.serviceaccount.AccountArgs(
                project=project,
                account_id=account_id,
                display_name=f"GKE nodes of {cluster_name}",
            ),
            opts=child,
        )
        roles = list(NODE_ROLES)
        if args.artifact_registry_access:
            roles.append(ARTIFACT_REGISTRY_READER)
        if args.uses_image_streaming:
            roles.append(IMAGE_STREAMING_ROLE)
        roles += [r for r in args.extra_node_roles if r not in roles]
        member = account.email.apply(lambda email: f"serviceAccount:{email}")
        bindings = [
            gcp.projects.IAMMember(
                f"{name}-nodes-{role.rsplit('/', 1)[1].replace('.', '-').lower()}",
                gcp.projects.IAMMemberArgs(project=project, role=role, member=member),
                opts=child,
            )
            for role in roles
        ]

        nat: list[pulumi.Resource] = []
        if args.cloud_nat:
            router = gcp.compute.Router(
                f"{name}-router",
                gcp.compute.RouterArgs(project=project, region=args.region, network=args.network),
                opts=child,
            )
            nat.append(
                gcp.compute.RouterNat(
                    f"{name}-nat",
                    gcp.compute.RouterNatArgs(
                        project=project,
                        region=args.region,
                        router=router.name,
                        nat_ip_allocate_option="AUTO_ONLY",
                        source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
                        log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
                    ),
                    opts=child,
                )
            )

        cp = args.control_plane
        private = None
        if cp.private_nodes:
            private = gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True,
                enable_private_endpoint=cp.private_endpoint,
                master_ipv4_cidr_block=cp.master_ipv4_cidr_block,
            )
        authorized = None
        if cp.authorized_networks:
            authorized = gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                        cidr_block=n.cidr_block, display_name=n.display_name or None
                    )
                    for n in cp.authorized_networks
                ]
            )

        cluster = gcp.container.Cluster(
            f"{name}-cluster",
            gcp.container.ClusterArgs(
                name=cluster_name,
                project=project,
                location=args.location,
                node_locations=args.node_locations or None,
                # GKE needs a pool at creation; it is removed at once and every pool is declared below.
                remove_default_node_pool=True,
                initial_node_count=1,
                node_config=gcp.container.ClusterNodeConfigArgs(
                    service_account=account.email,
                    oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                    workload_metadata_config=gcp.container.ClusterNodeConfigWorkloadMetadataConfigArgs(
                        mode="GKE_METADATA"
                    ),
                ),
                release_channel=gcp.container.ClusterReleaseChannelArgs(channel=args.release_channel.value),
                min_master_version=args.min_master_version,
                cluster_autoscaling=gcp.container.ClusterClusterAutoscalingArgs(
                    autoscaling_profile=args.autoscaling_profile.value
                ),
                workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                    workload_pool=f"{project}.svc.id.goog"
                ),
                deletion_protection=args.deletion_protection,
                network=args.network,
                subnetwork=args.subnetwork,
                networking_mode="VPC_NATIVE",
                # Dataplane V2 enforces NetworkPolicy; the legacy datapath ignores it.
                datapath_provider="ADVANCED_DATAPATH" if args.dataplane_v2 else None,
                ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(),
                private_cluster_config=private,
                master_authorized_networks_config=authorized,
                enable_shielded_nodes=True,
                resource_labels=(
                    {**args.resource_labels, **({ENVIRONMENT_LABEL: args.environment.value} if args.environment else {})}
                    or None
                ),
                monitoring_config=(
                    gcp.container.ClusterMonitoringConfigArgs(
                        enable_components=["SYSTEM_COMPONENTS", "DCGM"],
                        managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
                    )
                    if args.managed_dcgm_metrics
                    else None
                ),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.deletion_protection,
                depends_on=[*apis, *bindings, *nat],
                # The default pool's settings stop mattering once it is removed.
                ignore_changes=["nodeConfig", "initialNodeCount"],
            ),
        )

        self.node_pools = {}
        self.compute_classes = {}

        def add_pool(pool: _PoolBase, gke_name: str, spot: bool, role: str, extra_labels: dict[str, str],
                     gpu: GpuNodePoolArgs | None, taints: list[Taint],
                     bounds: AutoscalingBounds | None = None) -> gcp.container.NodePool:
            node_pool = gcp.container.NodePool(
                f"{name}-{gke_name}",
                _node_pool_args(
                    pool=pool,
                    gke_name=gke_name,
                    cluster=cluster,
                    project=project,
                    location=args.location,
                    service_account=account.email,
                    spot=spot,
                    labels={POOL_ROLE_LABEL: role, **pool.labels, **extra_labels},
                    taints=taints,
                    gpu=gpu,
                    bounds=bounds or pool.autoscaling,
                    zones=args.pool_zone_count(pool),
                ),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    # initial_node_count forces replacement; the autoscaler owns the count afterwards.
                    ignore_changes=["initialNodeCount"],
                ),
            )
            self.node_pools[gke_name] = node_pool
            return node_pool

        add_pool(args.system_pool, args.system_pool.name, False, "system", {}, None, list(args.system_pool.taints))
        self.placements = {shape.name: shape.placement for shape in args.pool_shapes()}

        gpu_pools: list[tuple[GpuNodePoolArgs, str, dict[str, str]]] = [
            (p, "gpu", {}) for p in args.gpu_pools
        ]
        if args.scheduler_pool is not None:
            gpu_pools.insert(0, (args.scheduler_pool, "scheduler", {SCHEDULER_LABEL[0]: SCHEDULER_LABEL[1]}))

        class_pools: list[tuple[GpuNodePoolArgs, list[gcp.container.NodePool]]] = []
        for pool, role, extra in gpu_pools:
            taints = [GPU_TAINT, *pool.taints]
            created = []
            if pool.capacity is CapacityStrategy.SPOT_THEN_ON_DEMAND:
                class_name = pool.name
                class_taint = Taint(key=COMPUTE_CLASS_LABEL, value=class_name, effect=TaintEffect.NO_SCHEDULE)
                for capacity in pool.capacity_types():
                    created.append(
                        add_pool(pool, pool.gke_pool_name(capacity), capacity is CapacityType.SPOT, role,
                                 {**extra, COMPUTE_CLASS_LABEL: class_name}, pool, [*taints, class_taint],
                                 pool.bounds_for(capacity))
                    )
                self.compute_classes[pool.name] = class_name
                class_pools.append((pool, created))
            else:
                add_pool(pool, pool.name, pool.capacity is CapacityStrategy.SPOT, role, extra, pool, taints)

        self.cluster_name = cluster.name
        self.endpoint = cluster.endpoint
        self.node_service_account_email = account.email
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, cluster.endpoint, cluster.master_auth.cluster_ca_certificate).apply(
                lambda v: gke_kubeconfig(v[0], v[1], v[2])
            )
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            k8s.ProviderArgs(kubeconfig=self.kubeconfig),
            opts=child,
        )

        self.compute_class_resources = {}
        for pool, created in class_pools:
            spot_name, od_name = (pool.gke_pool_name(c) for c in pool.capacity_types())
            # CustomResource takes its fields as keywords (its Args class is not accepted).
            self.compute_class_resources[pool.name] = k8s.apiextensions.CustomResource(
                f"{name}-{pool.name}-compute-class",
                api_version="cloud.google.com/v1",
                kind="ComputeClass",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=self.compute_classes[pool.name],
                    labels=dict(MANAGED_LABELS),
                ),
                spec=compute_class_spec(spot_name, od_name, pool.migrate_back_to_spot),
                opts=pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=created),
            )

        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "endpoint": self.endpoint,
                "kubeconfig": self.kubeconfig,
                "nodeServiceAccountEmail": self.node_service_account_email,
                "nodePools": list(self.node_pools),
                "computeClasses": self.compute_classes,
            }
        )


def _node_pool_args(
    *,
    pool: _PoolBase,
    gke_name: str,
    cluster: gcp.container.Cluster,
    project: str,
    location: str,
    service_account: pulumi.Input[str],
    spot: bool,
    labels: dict[str, str],
    taints: list[Taint],
    gpu: GpuNodePoolArgs | None,
    bounds: AutoscalingBounds,
    zones: int,
) -> gcp.container.NodePoolArgs:
    queued = gpu is not None and gpu.queued_provisioning
    if bounds.scope is BoundsScope.PER_ZONE:
        autoscaling = gcp.container.NodePoolAutoscalingArgs(
            min_node_count=bounds.min_nodes,
            max_node_count=bounds.max_nodes,
            location_policy=pool.effective_location_policy(spot).value,
        )
        initial = bounds.min_nodes
    else:
        autoscaling = gcp.container.NodePoolAutoscalingArgs(
            total_min_node_count=bounds.min_nodes,
            total_max_node_count=bounds.max_nodes,
            location_policy=(LocationPolicy.ANY if queued else pool.effective_location_policy(spot)).value,
        )
        # Per zone: the total minimum spread over the zones, rounded up, never above the maximum.
        initial = min(-(-bounds.min_nodes // zones), bounds.max_nodes // zones)

    accelerators = None
    if gpu is not None:
        accelerators = [
            gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                type=gpu.accelerator_type,
                count=gpu.gpus_per_node,
                gpu_driver_installation_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                    gpu_driver_version=gpu.driver_version.value
                ),
                gpu_sharing_config=(
                    gcp.container.NodePoolNodeConfigGuestAcceleratorGpuSharingConfigArgs(
                        gpu_sharing_strategy=gpu.gpu_sharing.strategy.value,
                        max_shared_clients_per_gpu=gpu.gpu_sharing.max_shared_clients_per_gpu,
                    )
                    if gpu.gpu_sharing
                    else None
                ),
                gpu_partition_size=gpu.gpu_partition_size,
            )
        ]

    return gcp.container.NodePoolArgs(
        name=gke_name,
        cluster=cluster.name,
        project=project,
        location=location,
        node_locations=pool.node_locations,
        initial_node_count=initial,
        autoscaling=autoscaling,
        management=gcp.container.NodePoolManagementArgs(auto_repair=not queued, auto_upgrade=True),
        upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(strategy="SURGE", max_surge=1, max_unavailable=0),
        placement_policy=(
            gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT")
            if gpu is not None and gpu.compact_placement
            else None
        ),
        queued_provisioning=gcp.container.NodePoolQueuedProvisioningArgs(enabled=True) if queued else None,
        node_config=gcp.container.NodePoolNodeConfigArgs(
            machine_type=pool.machine_type,
            image_type=pool.image_type.value,
            disk_size_gb=pool.disk_size_gb,
            disk_type=pool.disk_type.value,
            spot=spot,
            service_account=service_account,
            oauth_scopes=[CLOUD_PLATFORM_SCOPE],
            labels=labels,
            taints=[
                gcp.container.NodePoolNodeConfigTaintArgs(key=t.key, value=t.value, effect=t.effect.gke)
                for t in taints
            ]
            or None,
            guest_accelerators=accelerators,
            gcfs_config=gcp.container.NodePoolNodeConfigGcfsConfigArgs(enabled=pool.image_streaming),
            workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
            shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                # Drivers a user installs himself are unsigned: secure boot would refuse them.
                enable_secure_boot=not (gpu is not None and gpu.driver_version is GpuDriverVersion.INSTALLATION_DISABLED),
                enable_integrity_monitoring=True,
            ),
            reservation_affinity=(
                gcp.container.NodePoolNodeConfigReservationAffinityArgs(consume_reservation_type="NO_RESERVATION")
                if queued
                else None
            ),
            metadata={"disable-legacy-endpoints": "true"},
        ),
    )
