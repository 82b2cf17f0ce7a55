"""GpuGkeClusterArgs and its pools: the typed, validated inputs of GpuGkeCluster.

Every rule a GKE cluster and its pools must follow is checked here, before any resource is
registered: machine and accelerator combinations (the catalog), zones of the region, image
and disk types, bounds, labels and taints. ``pool_shapes()`` is the pool plan's view for
workloads (gke_plan).
"""

from __future__ import annotations

import ipaddress
import functools
import re
from enum import StrEnum
from collections.abc import Mapping
from typing import Annotated, Any, Self

import pulumi
from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from gpu_platform.components.gpu_catalog import (
    GCP_ACCELERATORS,
    GcpMachineShape,
    disk_types_for,
    gcp_cpu_shape,
    gcp_family,
    gcp_gpu_shape,
    shape_checked,
)
from gpu_platform.components.labels import COMPUTE_CLASS_LABEL
from gpu_platform.components.models import key_path
from gpu_platform.components.numbers import Int
from gpu_platform.components.pools import (
    ENVIRONMENT_LABEL,
    Environment,
    GPU_TAINT,
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    CapacityType,
    LabelMap,
    MachineShapeArgs,
    NodePoolShape,
    pool_taints,
)
from gpu_platform.components.models import ARGS_CONFIG, CheckedWhenKnown, StrInput, field_error
from gpu_platform.components.gke_plan import REGION, ZONE, PlannedPool, cluster_zones, plan_pools, pool_zones
from gpu_platform.components.cloud import Cloud
from gpu_platform.components.zones import zone_problem


__all__ = [
    "AuthorizedNetwork",
    "AutoscalingProfile",
    "ControlPlaneAccess",
    "DiskType",
    "GpuDriverVersion",
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

# Roles of the dedicated node service account. roles/container.defaultNodeServiceAccount
# is GKE's least-privilege node role (logging, monitoring, metadata, autoscaling metrics).
NODE_ROLES = ("roles/container.defaultNodeServiceAccount",)
ARTIFACT_REGISTRY_READER = "roles/artifactregistry.reader"
IMAGE_STREAMING_ROLE = "roles/serviceusage.serviceUsageConsumer"
BASIC_ROLES = ("roles/owner", "roles/editor", "roles/viewer")

_REGION = REGION
_ZONE = ZONE
_PROJECT_ID = re.compile(r"^([a-z0-9.-]+:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$")
"""A GCP project id (optionally domain-scoped, as example.com:my-project)."""
_RESOURCE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
"""A Compute Engine resource name (RFC 1035): networks and subnetworks."""
_LINK_PREFIX = r"^(https://(www|compute)\.googleapis\.com/compute/(v1|beta)/)?projects/[^/]+/"
_NETWORK_LINK = re.compile(_LINK_PREFIX + r"global/networks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_SUBNETWORK_LINK = re.compile(_LINK_PREFIX + r"regions/(?P<region>[a-z]+-[a-z]+[0-9]+)/subnetworks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
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
    """The newest Kubernetes versions, weeks after their release."""
    REGULAR = "REGULAR"
    """Versions a few months after RAPID: a balance of features and stability."""
    STABLE = "STABLE"
    """Versions after REGULAR, proven in production: the slowest standard channel."""
    EXTENDED = "EXTENDED"
    """STABLE's versions, kept for up to 24 months (extra cost)."""


class AutoscalingProfile(StrEnum):
    """How eagerly the cluster autoscaler removes underused nodes."""

    BALANCED = "BALANCED"
    """The autoscaler's default profile: keeps spare capacity longer."""
    OPTIMIZE_UTILIZATION = "OPTIMIZE_UTILIZATION"
    """Removes underused nodes sooner and prefers filling nodes: idle GPU nodes cost less."""


class LocationPolicy(StrEnum):
    """How the autoscaler spreads a pool's nodes over zones (ANY suits spot capacity)."""

    BALANCED = "BALANCED"
    """Spread nodes evenly over the pool's zones."""
    ANY = "ANY"
    """Take capacity in whichever zone has it (best for spot and scarce GPUs)."""


class ImageType(StrEnum):
    """Node OS images GKE offers with containerd."""

    COS_CONTAINERD = "COS_CONTAINERD"
    """Container-Optimized OS with containerd: GKE's default; needed for image streaming and LATEST drivers."""
    UBUNTU_CONTAINERD = "UBUNTU_CONTAINERD"
    """Ubuntu with containerd, for node software that needs Ubuntu."""


class DiskType(StrEnum):
    """Boot disk types."""

    PD_STANDARD = "pd-standard"
    """Standard persistent disk (HDD)."""
    PD_BALANCED = "pd-balanced"
    """Balanced persistent disk (SSD): GKE's default."""
    PD_SSD = "pd-ssd"
    """Performance persistent disk (SSD)."""
    HYPERDISK_BALANCED = "hyperdisk-balanced"
    """Hyperdisk Balanced, for newer machine series (A3 and later)."""


class GpuDriverVersion(StrEnum):
    """Which NVIDIA driver GKE installs. Set explicitly: unset drifts, and a change replaces the pool."""

    DEFAULT = "DEFAULT"
    """The driver version GKE chooses as default for the node's GKE version."""
    LATEST = "LATEST"
    """The newest driver GKE offers for the node's GKE version (COS only)."""
    INSTALLATION_DISABLED = "INSTALLATION_DISABLED"
    """GKE installs no driver (the NVIDIA GPU operator or a DaemonSet of your own does)."""


class GpuSharingStrategy(StrEnum):
    """How several containers share one GPU."""

    TIME_SHARING = "TIME_SHARING"
    """Containers take turns on the whole GPU."""
    MPS = "MPS"
    """NVIDIA Multi-Process Service: containers run on the GPU at once."""


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


_MIG_PARTITION = re.compile(r"^[1-8]g\.[0-9]+gb$")


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
    shape: MachineShapeArgs | None = None
    """The machine type's shape (vcpus, memory_gib; GPUs come from accelerator_type and accelerator_count), stated for a type the catalog does not know (c3, a3-ultragpu, a4): refused only where it contradicts itself, the type's name or the catalog. Default: none (the catalog's)."""
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
        offered = disk_types_for(gcp_family(self.machine_type))
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

    @model_validator(mode="after")
    def _cpu_machine(self) -> SystemPoolArgs:
        shape_checked(self, lambda: gcp_cpu_shape(self.machine_type, self.shape))
        return self

    @property
    def machine(self) -> GcpMachineShape:
        """The machine type's shape: the catalog's, or the one stated."""
        return gcp_cpu_shape(self.machine_type, self.shape)


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
        shape_checked(self, lambda: gcp_gpu_shape(self.machine_type, self.accelerator_type, self.accelerator_count, self.shape))
        if self.driver_version is GpuDriverVersion.LATEST and self.image_type is not ImageType.COS_CONTAINERD:
            raise field_error(
                model,
                "driver_version",
                f"driver_version LATEST is offered on COS only (got image_type {self.image_type.value}); "
                "use DEFAULT or image_type COS_CONTAINERD",
                self.driver_version.value,
            )
        known = GCP_ACCELERATORS.get(self.accelerator_type)
        if self.gpu_partition_size is not None and known is None:
            # A GPU the catalog does not know (stated shape): only the partition's form is known.
            if not _MIG_PARTITION.match(self.gpu_partition_size):
                raise field_error(
                    model,
                    "gpu_partition_size",
                    f"gpu_partition_size {self.gpu_partition_size} is not a MIG partition size (<n>g.<memory>gb, e.g. 1g.10gb)",
                    self.gpu_partition_size,
                )
        elif self.gpu_partition_size is not None:
            partitions = known.mig_partitions
            if self.gpu_partition_size not in partitions:
                allowed = ", ".join(partitions) if partitions else "none (MIG needs A100 or H100)"
                raise field_error(
                    model,
                    "gpu_partition_size",
                    f"gpu_partition_size {self.gpu_partition_size} is not offered for "
                    f"{self.accelerator_type}; allowed: {allowed}",
                    self.gpu_partition_size,
                )
        placeable = known.compact_placement if known else gcp_family(self.machine_type) != "n1"
        if self.compact_placement and not placeable:
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
        """GPUs on every node: accelerator_count, or the count the machine type (or its stated shape) fixes."""
        return gcp_gpu_shape(self.machine_type, self.accelerator_type, self.accelerator_count, self.shape)[1]

    @property
    def machine(self) -> GcpMachineShape:
        """The machine type's shape: the catalog's, or the one stated."""
        return gcp_gpu_shape(self.machine_type, self.accelerator_type, self.accelerator_count, self.shape)[0]

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
    project: Annotated[StrInput, CheckedWhenKnown("its form (a GCP project id)")] | None = None
    """GCP project id; in a program also an Output (a project made in the same program). Default: the gcp provider's project (gcp:project)."""
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
    network: Annotated[StrInput, CheckedWhenKnown("its form (a network name or self link)")] = "default"
    """VPC network name or self link (projects/<p>/global/networks/<n>); in a program also an Output (a network made in the same program). Default: default."""
    subnetwork: Annotated[
        StrInput, CheckedWhenKnown("its form and region (a subnetwork name, or a self link in the cluster's region)")
    ] | None = None
    """Subnetwork name or self link (projects/<p>/regions/<region>/subnetworks/<n>, in the cluster's region); in a program also an Output. A custom-mode network needs it. Default: none (the network's subnet in the region)."""
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

    @field_validator("project")
    @classmethod
    def _project(cls, value: str | pulumi.Output[str] | None) -> str | pulumi.Output[str] | None:
        if isinstance(value, str) and not _PROJECT_ID.match(value):
            raise ValueError(
                f"{value!r} is not a GCP project id: 6 to 30 lowercase letters, digits and '-', starting with a letter "
                "(the id, not the project's display name or number)"
            )
        return value

    @field_validator("network")
    @classmethod
    def _network(cls, value: str | pulumi.Output[str]) -> str | pulumi.Output[str]:
        if isinstance(value, str) and not (_RESOURCE_NAME.match(value) or _NETWORK_LINK.match(value)):
            raise ValueError(f"{value!r} is not a VPC network name or self link (projects/<project>/global/networks/<name>)")
        return value

    @field_validator("subnetwork")
    @classmethod
    def _subnetwork(cls, value: str | pulumi.Output[str] | None) -> str | pulumi.Output[str] | None:
        if isinstance(value, str) and not (_RESOURCE_NAME.match(value) or _SUBNETWORK_LINK.match(value)):
            raise ValueError(
                f"{value!r} is not a subnetwork name or self link (projects/<project>/regions/<region>/subnetworks/<name>)"
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
        if not self.regional and (problem := zone_problem(Cloud.GCP, region, self.location)):
            raise field_error(model, "location", problem, self.location)
        for i, zone in enumerate(self.node_locations):
            m = _ZONE.match(zone)
            if not m:
                raise field_error(model, ("node_locations", i), f"{zone!r} is not a zone (e.g. us-central1-b)", zone)
            if m.group(1) == region and (problem := zone_problem(Cloud.GCP, region, zone)):
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
        if isinstance(self.subnetwork, str) and (m := _SUBNETWORK_LINK.match(self.subnetwork)) and m.group("region") != region:
            raise field_error(
                model,
                "subnetwork",
                f"subnetwork {self.subnetwork} is in region {m.group('region')}, not the cluster's region {region}; "
                f"use a subnetwork of {region}",
                self.subnetwork,
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
                    if problem := zone_problem(Cloud.GCP, region, zone):
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
        """The zones nodes run in; None for a regional cluster that leaves them to GKE (gke_plan.cluster_zones)."""
        zones = cluster_zones(self.location, self.node_locations)
        return list(zones) if zones is not None else None

    def all_pools(self) -> list[_PoolBase]:
        pools: list[_PoolBase] = [self.system_pool]
        if self.scheduler_pool is not None:
            pools.append(self.scheduler_pool)
        return pools + list(self.gpu_pools)

    @property
    def uses_image_streaming(self) -> bool:
        return any(p.image_streaming for p in self.all_pools())

    def pool_zone_count(self, pool: _PoolBase) -> int:
        """How many zones a pool's nodes spread over, as the plan counts them (gke_plan.pool_zones)."""
        return pool_zones(self.location, self.node_locations, pool.node_locations).count

    @functools.cached_property
    def plan(self) -> tuple[PlannedPool, ...]:
        """The pool plan (gke_plan.plan_pools), computed once for these Args: the component, the stack's
        checks, plan-capacity and the simulator all read this one."""
        return tuple(plan_pools(self))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update``, its plan is made again from the updated values (pydantic copies
        cached values along with the fields)."""
        copied = super().model_copy(update=update, deep=deep)
        if update:
            copied.__dict__.pop("plan", None)
        return copied

    def pool_shapes(self) -> list[NodePoolShape]:
        """Every declared pool as workloads see it: shape, bounds in total, labels, taints, placement
        (the plan's, see ``plan``)."""
        return [planned.shape for planned in self.plan]


