"""The node pools of GpuGkeClusterArgs: the typed, validated inputs of one GKE pool.

SystemPoolArgs (controllers), GpuNodePoolArgs (GPU pools, checked against the catalog and always
GPU-tainted) and SchedulerPoolArgs (the Dask scheduler's small T4 pool), with the enums and GPU
sharing settings they take. Re-exported by gke_args, the public home of GKE inputs.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from gpu_platform.components.catalog.gpus import (
    GCP_ACCELERATORS,
    GcpMachineShape,
    disk_types_for,
    gcp_cpu_shape,
    gcp_family,
    gcp_gpu_shape,
    shape_checked,
)
from gpu_platform.components.core.labels import COMPUTE_CLASS_LABEL
from gpu_platform.components.core.models import ARGS_CONFIG, field_error
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.gke.plan import ZONE as _ZONE
from gpu_platform.components.pools.ladders import CapacityRung, gke_ladder_problems, ladder_text, named_ladder, rung_slugs
from gpu_platform.components.pools.shapes import (
    GPU_TAINT,
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    LabelMap,
    MachineShapeArgs,
    Taint,
    pool_taints,
)
from gpu_platform.components.pools.sharing import GpuSharing, GpuSharingStrategy, mig_sharing_problem

__all__ = [
    "DiskType",
    "GpuDriverVersion",
    "GpuNodePoolArgs",
    "GpuSharing",
    "GpuSharingStrategy",
    "ImageType",
    "LocationPolicy",
    "SchedulerPoolArgs",
    "SystemPoolArgs",
]

_RESOURCE_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
"""A GCP resource name: lowercase letters, digits and '-', starting with a letter."""


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


_MIG_PARTITION = re.compile(r"^[1-8]g\.[0-9]+gb$")


def _check_pool_name(value: str) -> str:
    if not _RESOURCE_NAME.match(value):
        raise ValueError(f"{value!r} is not a valid pool name: lowercase letters, digits and '-', starting with a letter")
    return value


GkePoolTaints = Annotated[list[Taint], pool_taints(GPU_TAINT.key, COMPUTE_CLASS_LABEL)]
"""A GKE pool's own taints: not the GPU taint nor the compute-class taint, which the component adds."""


class _PoolBase(BaseModel):
    """Settings every node pool shares."""

    model_config = ARGS_CONFIG

    name: str = Field(min_length=1, max_length=30)
    """Node pool name; a pool of more than one capacity rung makes a node pool per rung, named <name>-<rung> (spot_then_on_demand: -spot and -on-demand). Required."""
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
                f"disk_type {self.disk_type.value} is not offered on {self.machine_type}; use {', '.join(offered)}",
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
    autoscaling: AutoscalingBounds = AutoscalingBounds(scope=BoundsScope.PER_ZONE, min_nodes=1, max_nodes=3)
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
    """on_demand, spot, or spot_then_on_demand (a spot pool first, an on-demand twin as fallback): a named capacity ladder. Default: on_demand."""
    capacity_ladder: list[CapacityRung] | None = Field(default=None, min_length=1, max_length=6)
    """The pool's capacity as an ordered ladder of rungs (reservation, flex_start, spot, on_demand), in place of capacity: one node pool per rung, tried in the ladder's order through a ComputeClass (see the capacity ladders guide). Default: none (the ladder capacity names)."""
    fallback_max_nodes: Int | None = Field(default=None, ge=1, le=1000)
    """More than one rung only: most nodes of each fallback rung's node pool (fallbacks keep no minimum; autoscaling.min_nodes applies to the first rung's pool). Default: none (autoscaling.max_nodes)."""
    migrate_back_to_spot: bool = False
    """More than one rung only: let GKE move pods back to a higher rung's node pool when its capacity returns (ComputeClass activeMigration; it evicts them). Default: false."""
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
                f"driver_version LATEST is offered on COS only (got image_type {self.image_type.value}); use DEFAULT or image_type COS_CONTAINERD",
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
        elif self.gpu_partition_size is not None and known is not None:
            partitions = known.mig_partitions
            if self.gpu_partition_size not in partitions:
                allowed = ", ".join(partitions) if partitions else "none (MIG needs A100 or H100)"
                raise field_error(
                    model,
                    "gpu_partition_size",
                    f"gpu_partition_size {self.gpu_partition_size} is not offered for {self.accelerator_type}; allowed: {allowed}",
                    self.gpu_partition_size,
                )
        if problem := mig_sharing_problem(self.gpu_sharing, self.gpu_partition_size):
            raise field_error(model, "gpu_sharing", problem, self.gpu_sharing.strategy.value if self.gpu_sharing else None)
        placeable = known.compact_placement if known else gcp_family(self.machine_type) != "n1"
        if self.compact_placement and not placeable:
            raise field_error(
                model,
                "compact_placement",
                f"compact_placement is not offered for {self.machine_type} (N1); use an A2, A3 or G2 machine type or compact_placement: false",
                self.compact_placement,
            )
        if self.capacity_ladder is not None:
            if "capacity" in self.model_fields_set:
                raise field_error(
                    model,
                    "capacity_ladder",
                    f"capacity_ladder replaces capacity; set one of them (got capacity {self.capacity.value} and capacity_ladder {ladder_text(self.capacity_ladder)})",
                    ladder_text(self.capacity_ladder),
                )
            if ladder_problems := gke_ladder_problems(self.capacity_ladder):
                raise ValidationError.from_exception_data(
                    model,
                    [
                        InitErrorDetails(type=PydanticCustomError("invalid_combination", message), loc=("capacity_ladder", *loc), input=value)
                        for loc, message, value in ladder_problems
                    ],
                )
        rungs = self.ladder
        if self.fallback_max_nodes is not None and len(rungs) < 2:
            raise field_error(
                model,
                "fallback_max_nodes",
                f"fallback_max_nodes applies to a pool of more than one capacity rung, such as capacity spot_then_on_demand (got {self.capacity_text})",
                self.fallback_max_nodes,
            )
        if self.migrate_back_to_spot and len(rungs) < 2:
            raise field_error(
                model,
                "migrate_back_to_spot",
                f"migrate_back_to_spot applies to a pool of more than one capacity rung, such as capacity spot_then_on_demand (got {self.capacity_text})",
                self.migrate_back_to_spot,
            )
        if len(rungs) > 1 and self.name.startswith(("gke", "autopilot")):
            raise field_error(
                model,
                "name",
                f"name {self.name!r} would name a ComputeClass, which may not start with 'gke' or 'autopilot'; choose another name",
                self.name,
            )
        if self.queued_provisioning:
            problems = []
            if rungs != named_ladder(CapacityStrategy.ON_DEMAND):
                problems.append(f"capacity on_demand (got {self.capacity.value if self.capacity_ladder is None else self.capacity_text})")
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

    @property
    def ladder(self) -> tuple[CapacityRung, ...]:
        """The pool's capacity ladder, first rung first: capacity_ladder, else the one capacity names."""
        return tuple(self.capacity_ladder) if self.capacity_ladder is not None else named_ladder(self.capacity)

    @property
    def capacity_text(self) -> str:
        """The pool's capacity as messages name it: capacity spot_then_on_demand, or capacity_ladder spot -> on_demand."""
        return f"capacity {self.capacity.value}" if self.capacity_ladder is None else f"capacity_ladder {ladder_text(self.capacity_ladder)}"

    def bounds_for(self, rung: int) -> AutoscalingBounds:
        """The bounds of the node pool of rung ``rung`` (0 first): the first rung's are autoscaling; a fallback keeps
        no minimum and at most fallback_max_nodes (else autoscaling.max_nodes)."""
        if rung == 0:
            return self.autoscaling
        maximum = self.autoscaling.max_nodes if self.fallback_max_nodes is None else self.fallback_max_nodes
        return AutoscalingBounds(scope=self.autoscaling.scope, min_nodes=0, max_nodes=maximum)

    def gke_pool_names(self) -> list[str]:
        """The GKE node pool of each rung, in ladder order: the pool's name for a one-rung ladder, else
        <name>-<rung> (spot_then_on_demand: <name>-spot, <name>-on-demand)."""
        rungs = self.ladder
        if len(rungs) == 1:
            return [self.name]
        return [f"{self.name}-{slug}" for slug in rung_slugs(rungs)]


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
    autoscaling: AutoscalingBounds = AutoscalingBounds(scope=BoundsScope.TOTAL, min_nodes=0, max_nodes=4)
    """Node-count bounds. Default: 0..4 in total."""
