"""GpuGkeClusterArgs and its pools: the typed, validated inputs of GpuGkeCluster.

Every rule a GKE cluster and its pools must follow is checked here, before any resource is
registered: machine and accelerator combinations (the catalog), zones of the region, image
and disk types, bounds, labels and taints. ``pool_shapes()`` is the pool plan's view for
workloads (gke_plan).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from enum import StrEnum
from typing import Annotated

import pulumi
from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from gpu_platform.components.catalog.gpu_zones import absent_gpu_zones
from gpu_platform.components.catalog.zones import zone_problem
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.models import ARGS_CONFIG, CheckedWhenKnown, PlannedOnce, StrInput, field_error, key_path
from gpu_platform.components.gke.plan import REGION, ZONE, PlannedPool, cluster_zones, plan_pools, pool_zones

# Re-exported: gke_args stays the public home of the pool Args' helpers too.
from gpu_platform.components.gke.pool_args import _MIG_PARTITION as _MIG_PARTITION
from gpu_platform.components.gke.pool_args import (  # re-exported: gke_args is their public home too
    _RESOURCE_NAME,
    DiskType,
    GpuDriverVersion,
    GpuNodePoolArgs,
    GpuSharing,
    GpuSharingStrategy,
    ImageType,
    LocationPolicy,
    SchedulerPoolArgs,
    SystemPoolArgs,
    _PoolBase,
)
from gpu_platform.components.gke.pool_args import GkePoolTaints as GkePoolTaints
from gpu_platform.components.gke.pool_args import _check_pool_name as _check_pool_name
from gpu_platform.components.pools.shapes import (
    ENVIRONMENT_LABEL,
    Environment,
    NodePoolShape,
)

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
_LINK_PREFIX = r"^(https://(www|compute)\.googleapis\.com/compute/(v1|beta)/)?projects/[^/]+/"
_NETWORK_LINK = re.compile(_LINK_PREFIX + r"global/networks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_SUBNETWORK_LINK = re.compile(_LINK_PREFIX + r"regions/(?P<region>[a-z]+-[a-z]+[0-9]+)/subnetworks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
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
            raise ValueError(f"GCP label key {key!r} is invalid: lowercase letters, digits, '_' and '-', starting with a letter, at most 63 characters")
        if not _GCP_LABEL_VALUE.match(label):
            raise ValueError(f"GCP label value {label!r} (key {key}) is invalid: lowercase letters, digits, '_' and '-', at most 63 characters")
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


class GpuGkeClusterArgs(PlannedOnce, BaseModel):
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
    gcs_fuse_csi_driver: bool = False
    """Turn on GKE's Cloud Storage FUSE CSI driver add-on (pods mount buckets as volumes; the stack turns it on when it has shared datasets). Default: false."""
    dataplane_v2: bool = True
    """GKE Dataplane V2 (datapath ADVANCED_DATAPATH), which enforces NetworkPolicy (the Dask tenants' isolation); GKE sets it at creation only, so changing it replaces the cluster. Default: true."""
    network: Annotated[StrInput, CheckedWhenKnown("its form (a network name or self link)")] = "default"
    """VPC network name or self link (projects/<p>/global/networks/<n>); in a program also an Output (a network made in the same program). Default: default."""
    subnetwork: Annotated[StrInput, CheckedWhenKnown("its form and region (a subnetwork name, or a self link in the cluster's region)")] | None = None
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
            raise ValueError(f"{value!r} is neither a region (us-central1) nor a zone (us-central1-a)")
        return value

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, value: str | None) -> str | None:
        if value is not None and not _RESOURCE_NAME.match(value):
            raise ValueError(f"{value!r} is not a valid GKE cluster name: lowercase letters, digits and '-', starting with a letter, at most 40 characters")
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
            raise ValueError(f"{value!r} is not a service account id: lowercase letters, digits and '-', starting with a letter, 6 to 30 characters")
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
            raise ValueError(f"{value!r} is not a subnetwork name or self link (projects/<project>/regions/<region>/subnetworks/<name>)")
        return value

    @field_validator("extra_node_roles")
    @classmethod
    def _roles(cls, value: list[str]) -> list[str]:
        for role in value:
            if role in BASIC_ROLES:
                raise ValueError(f"{role} is a basic role and far beyond what nodes need; grant a predefined role such as roles/storage.objectViewer")
            if not re.match(r"^(roles|projects/[^/]+/roles|organizations/[0-9]+/roles)/[A-Za-z0-9_.]+$", role):
                raise ValueError(f"{role!r} is not an IAM role name (roles/...)")
        return value

    @model_validator(mode="after")
    def _cluster_rules(self) -> GpuGkeClusterArgs:
        model = "GpuGkeClusterArgs"
        region = self.region
        self._check_cluster_zones(model, region)
        self._check_network(model, region)
        self._check_pools(model, region)
        self._check_gpu_zones(model)
        return self

    def _check_gpu_zones(self, model: str) -> None:
        """Every pool with GPUs (the scheduler pool's included) offers its GPU in each zone its shape (the plan)
        lists, by the one verdict (catalog.gpu_zones.absent_gpu_zones): an error at the key that lists the zone."""
        pools: list[tuple[tuple[str | int, ...], _PoolBase]] = [(("scheduler_pool",), self.scheduler_pool)] if self.scheduler_pool is not None else []
        pools += [(("gpu_pools", i), p) for i, p in enumerate(self.gpu_pools)]
        shapes = {s.name: s for s in self.pool_shapes()}
        for loc, pool in pools:
            shape = shapes[pool.name]
            if shape.accelerator is None or shape.zones is None:
                continue
            for zone, problem in absent_gpu_zones(shape.accelerator, shape.zones):
                if pool.node_locations:
                    key: tuple[str | int, ...] = (*loc, "node_locations", pool.node_locations.index(zone))
                elif zone in self.node_locations:
                    key = ("node_locations", self.node_locations.index(zone))
                else:
                    key = ("location",)
                raise field_error(model, key, f"pool {pool.name}: {problem}", zone)

    def _check_cluster_zones(self, model: str, region: str) -> None:
        """The location and node_locations: real zones of the cluster's region, each listed once."""
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

    def _check_network(self, model: str, region: str) -> None:
        """The subnetwork lies in the cluster's region; Cloud NAT only with private nodes."""
        if isinstance(self.subnetwork, str) and (m := _SUBNETWORK_LINK.match(self.subnetwork)) and m.group("region") != region:
            raise field_error(
                model,
                "subnetwork",
                f"subnetwork {self.subnetwork} is in region {m.group('region')}, not the cluster's region {region}; use a subnetwork of {region}",
                self.subnetwork,
            )
        if self.cloud_nat and not self.control_plane.private_nodes:
            raise field_error(
                model,
                "cloud_nat",
                "cloud_nat serves private nodes only; set control_plane.private_nodes: true or cloud_nat: false",
                self.cloud_nat,
            )

    def _check_pools(self, model: str, region: str) -> None:
        """Every pool, in order (system, scheduler, GPU pools): its own names, its zones, its placement."""
        cluster_zones = self.cluster_zones
        seen: dict[str, str] = {}
        configured: dict[str, str] = {}
        pools: list[tuple[tuple[str | int, ...], _PoolBase]] = [(("system_pool",), self.system_pool)]
        if self.scheduler_pool is not None:
            pools.append((("scheduler_pool",), self.scheduler_pool))
        pools += [(("gpu_pools", i), p) for i, p in enumerate(self.gpu_pools)]
        for loc, pool in pools:
            _check_pool_names_unique(model, loc, pool, configured, seen)
            _check_pool_zones(model, loc, pool, region, cluster_zones)
            if isinstance(pool, GpuNodePoolArgs) and pool.compact_placement:
                zones = pool.node_locations or cluster_zones
                if zones is None or len(zones) != 1:
                    got = ", ".join(zones) if zones else f"all zones of {region}"
                    raise field_error(
                        model,
                        (*loc, "compact_placement"),
                        f"compact_placement needs exactly one zone (got {got}); set this pool's node_locations to one zone",
                        True,
                    )

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

    def pool_shapes(self) -> list[NodePoolShape]:
        """Every declared pool as workloads see it: shape, bounds in total, labels, taints, placement
        (the plan's, see ``plan``)."""
        return [planned.shape for planned in self.plan]


def _check_pool_names_unique(model: str, loc: tuple[str | int, ...], pool: _PoolBase, configured: dict[str, str], seen: dict[str, str]) -> None:
    """A pool's configured name, and the GKE pool names it makes, are used by no earlier pool;
    records them in ``configured`` and ``seen`` (name -> key path of its pool)."""
    if pool.name in configured:
        raise field_error(
            model,
            (*loc, "name"),
            f"pool name {pool.name} is already used by {configured[pool.name]}; give every pool its own name",
            pool.name,
        )
    configured[pool.name] = key_path(loc)
    names = pool.gke_pool_names() if isinstance(pool, GpuNodePoolArgs) else [pool.name]
    for gke_name in names:
        if gke_name in seen:
            raise field_error(
                model,
                (*loc, "name"),
                f"node pool name {gke_name} is already used by {seen[gke_name]}; give every pool its own name",
                pool.name,
            )
        seen[gke_name] = key_path(loc)


def _check_pool_zones(model: str, loc: tuple[str | int, ...], pool: _PoolBase, region: str, cluster_zones: list[str] | None) -> None:
    """A pool's own node_locations: zones of the cluster (and its region) that exist."""
    if pool.node_locations is None:
        return
    for i, zone in enumerate(pool.node_locations):
        if cluster_zones is not None and zone not in cluster_zones:
            raise field_error(
                model,
                (*loc, "node_locations", i),
                f"zone {zone} is not one of the cluster's node locations ({', '.join(cluster_zones)})",
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
