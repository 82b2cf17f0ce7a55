"""ExistingClusterArgs: a GKE or EKS cluster the platform did not create, described by its pools.

Many teams already run a cluster made by their own Terraform or console and want the GPU platform's
Kubernetes layer on it (monitoring, DCGM, the GPU HPA, Dask tenants, Kubeflow, Kueue queues, inference,
Headlamp, warm capacity). The platform cannot read the cluster's node pools offline, so the stack describes
them: each pool's machine type (checked against the catalog like a pool the platform makes), its GPUs, how a
pod selects its nodes (``node_selector``) and the taints those nodes carry, its node bounds, zones and
capacity. From that description every reader gets the same NodePoolShape as from a cluster the platform
creates: pod placement, Kueue's flavors and quotas, plan-capacity, simulate, the stack's cross-feature
checks and the local nodes of ``--apply``.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, model_validator

from gpu_platform.components.catalog.aws import aws_shape
from gpu_platform.components.catalog.base import shape_checked
from gpu_platform.components.catalog.gpu_zones import absent_gpu_zones
from gpu_platform.components.catalog.gpus import gcp_cpu_shape, gcp_gpu_shape, mig_slices
from gpu_platform.components.catalog.zones import zone_problem
from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.components.core.kube import DnsLabel
from gpu_platform.components.core.labels import EKS_NODEGROUP_LABEL, NODE_POOL_LABEL, PoolRole
from gpu_platform.components.core.models import ARGS_CONFIG, PlannedOnce, check_min_max, check_unique, field_error
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.pools.shapes import (
    GPU_TAINT,
    CapacityStrategy,
    MachineShapeArgs,
    NodePoolShape,
    PoolPlacement,
    Taint,
    _check_label_value,
    _check_qualified_name,
)
from gpu_platform.components.pools.sharing import GpuSharing, mig_sharing_problem

__all__ = ["ExistingClusterArgs", "ExistingPoolArgs", "default_node_selector"]

SelectorKey = Annotated[str, AfterValidator(_check_qualified_name)]
SelectorValue = Annotated[str, Field(min_length=1), AfterValidator(_check_label_value)]

_CONTEXT = re.compile(r"^[^\s]{1,253}$")


def default_node_selector(kind: ClusterKind, pool: str) -> dict[str, str]:
    """The label the cloud puts on every node of a node pool or managed node group, naming it: GKE's
    cloud.google.com/gke-nodepool, EKS's eks.amazonaws.com/nodegroup."""
    return {NODE_POOL_LABEL if kind is ClusterKind.GKE else EKS_NODEGROUP_LABEL: pool}


class ExistingPoolArgs(BaseModel):
    """One node pool (GKE) or node group (EKS) of a cluster the platform did not create, as it is: the
    platform only places pods on it and counts what it offers."""

    model_config = ARGS_CONFIG

    name: DnsLabel = Field(max_length=63)
    """The pool's name (the node pool or node group as the cloud names it). Required."""
    role: PoolRole = PoolRole.GPU
    """system (the platform's controllers run there), gpu, or scheduler (Dask schedulers). Default: gpu."""
    machine_type: str = Field(min_length=1, max_length=64)
    """The pool's GCE machine type or EC2 instance type, checked against the catalog (state ``shape`` for a type it does not know). Required."""
    shape: MachineShapeArgs | None = None
    """The machine's shape, for a type the catalog does not know. Default: none (the catalog's)."""
    accelerator_type: str | None = Field(default=None, min_length=1, max_length=64)
    """GKE: the GPU pool's accelerator type (nvidia-l4); required on GKE GPU pools. EKS: leave unset (the instance type names its GPU). Default: none."""
    gpus_per_node: Int | None = Field(default=None, ge=1, le=16)
    """Physical GPUs per node. Default: the machine type's (the catalog's or ``shape.gpus``)."""
    node_selector: dict[SelectorKey, SelectorValue] | None = Field(default=None, min_length=1)
    """The labels that select this pool's nodes, which pods placed on it carry as their nodeSelector. Default: the cloud's pool label: cloud.google.com/gke-nodepool=<name> on GKE, eks.amazonaws.com/nodegroup=<name> on EKS."""
    labels: dict[SelectorKey, SelectorValue] = Field(default_factory=dict)
    """Other labels every node of the pool carries (e.g. the label the Kubeflow training pool selector names). Default: {} (none)."""
    taints: list[Taint] | None = None
    """The taints every node of the pool carries, which pods placed on it tolerate. Default: on GKE GPU pools nvidia.com/gpu=present:NoSchedule (GKE taints every GPU node), else none."""
    capacity: CapacityStrategy = CapacityStrategy.ON_DEMAND
    """How the pool buys its nodes (on_demand, spot, spot_then_on_demand). Default: on_demand."""
    min_nodes: Int = Field(default=0, ge=0, le=1000)
    """Fewest nodes over all of the pool's zones, as its autoscaler keeps it. Default: 0."""
    max_nodes: Int = Field(ge=1, le=1000)
    """Most nodes over all of the pool's zones, as its autoscaler keeps it. Required."""
    zones: list[str] | None = Field(default=None, min_length=1)
    """The zones the pool's nodes run in. Default: none (one zone, unnamed)."""
    gpu_sharing: GpuSharing | None = None
    """How the pool's GPUs are shared (time-sharing or MPS), as its device plugin is configured. Default: none."""
    gpu_partition_size: str | None = Field(default=None, min_length=1, max_length=32)
    """The MIG partition each GPU is cut into (GKE's gpu_partition_size, e.g. 1g.10gb). Default: none."""
    queued_provisioning: bool = False
    """GKE: the pool gets nodes only for a ProvisioningRequest (Dynamic Workload Scheduler). Default: false."""

    @model_validator(mode="after")
    def _coherent(self) -> ExistingPoolArgs:
        check_min_max(self, "min_nodes", "max_nodes")
        if self.zones is not None:
            try:
                check_unique(self.zones, "zones", "a zone")
            except ValueError as exc:
                raise field_error("ExistingPoolArgs", "zones", str(exc), self.zones) from None
        if problem := mig_sharing_problem(self.gpu_sharing, self.gpu_partition_size):
            raise field_error("ExistingPoolArgs", "gpu_sharing", problem, self.gpu_sharing.strategy.value if self.gpu_sharing else None)
        if self.role is PoolRole.SYSTEM:
            for key in ("accelerator_type", "gpus_per_node", "gpu_sharing", "gpu_partition_size"):
                if getattr(self, key) is not None:
                    raise field_error("ExistingPoolArgs", key, f"{key} applies to GPU pools; the system pool runs controllers: remove it", "set")
            if self.queued_provisioning:
                raise field_error("ExistingPoolArgs", "queued_provisioning", "queued provisioning applies to GPU pools; remove it", True)
        return self

    def check_on(self, kind: ClusterKind) -> None:
        """The checks that need the cluster's kind: the machine against the catalog, the GKE-only fields.
        Raises a ValidationError at the key."""
        if kind is ClusterKind.EKS:
            for key in ("accelerator_type", "gpu_partition_size"):
                if getattr(self, key) is not None:
                    raise field_error("ExistingPoolArgs", key, f"{key} applies to GKE pools; on EKS the instance type names its GPU: remove it", "set")
            if self.queued_provisioning:
                raise field_error(
                    "ExistingPoolArgs", "queued_provisioning", "queued provisioning is GKE's (Dynamic Workload Scheduler); remove it on eks", True
                )
        elif self.role is not PoolRole.SYSTEM and self.accelerator_type is None:
            raise field_error("ExistingPoolArgs", "accelerator_type", "a GKE GPU pool names its accelerator type (e.g. nvidia-l4)", None)
        shape_checked(self, lambda: self._machine(kind))

    def _machine(self, kind: ClusterKind) -> tuple[str, int, int, int, str | None]:
        """(machine type, vCPUs, memory MiB, GPUs per node, accelerator label) from the catalog or ``shape``."""
        gpu = self.role is not PoolRole.SYSTEM
        if kind is ClusterKind.GKE:
            if not gpu:
                cpu = gcp_cpu_shape(self.machine_type, self.shape)
                return cpu.name, cpu.vcpus, cpu.memory_mib, 0, None
            assert self.accelerator_type is not None  # check_on requires it
            machine, gpus = gcp_gpu_shape(self.machine_type, self.accelerator_type, self.gpus_per_node, self.shape)
            return machine.name, machine.vcpus, machine.memory_mib, gpus, self.accelerator_type
        instance = aws_shape([self.machine_type], self.shape, gpu=gpu)
        count = instance.gpu_count if gpu else 0
        if gpu and self.gpus_per_node is not None and self.gpus_per_node != count:
            from gpu_platform.components.catalog.base import GpuCombinationError

            raise GpuCombinationError("gpus_per_node", f"gpus_per_node {self.gpus_per_node} contradicts {instance.describe()}; leave it unset")
        return instance.name, instance.vcpus, instance.memory_mib, count, instance.accelerator_label

    def selector(self, kind: ClusterKind) -> dict[str, str]:
        """The labels pods select the pool's nodes by (``node_selector``, else the cloud's pool label)."""
        return dict(self.node_selector) if self.node_selector is not None else default_node_selector(kind, self.name)

    def node_taints(self, kind: ClusterKind) -> tuple[Taint, ...]:
        """The pool's taints (``taints``, else GKE's own GPU taint on GKE GPU pools)."""
        if self.taints is not None:
            return tuple(self.taints)
        return (GPU_TAINT,) if kind is ClusterKind.GKE and self.role is not PoolRole.SYSTEM else ()

    def pool_shape(self, kind: ClusterKind, region: str | None) -> NodePoolShape:
        """The pool as workloads see it: the NodePoolShape every reader takes."""
        machine_type, vcpus, memory_mib, gpus, accelerator = self._machine(kind)
        selector = self.selector(kind)
        taints = self.node_taints(kind)
        partition = self.gpu_partition_size
        return NodePoolShape.build(
            name=self.name,
            role=self.role,
            machine_type=machine_type,
            vcpus=vcpus,
            memory_mib=memory_mib,
            gpus_per_node=gpus,
            accelerator=accelerator,
            capacity=self.capacity if self.role is not PoolRole.SYSTEM else CapacityStrategy.ON_DEMAND,
            groups=[(self.min_nodes, self.max_nodes)],
            labels={**self.labels, **selector},
            taints=taints,
            placement=PoolPlacement(selector, taints),
            cloud=kind.cloud,
            gpu_sharing=self.gpu_sharing,
            mig_partition=partition,
            mig_slices_per_gpu=mig_slices(accelerator, partition) if accelerator is not None and partition is not None else None,
            zones=self.zones,
            region=region,
            queued_provisioning=self.queued_provisioning,
        )


class ExistingClusterArgs(PlannedOnce, BaseModel):
    """A cluster the platform did not create: how to reach it and its pools as they are."""

    model_config = ARGS_CONFIG

    kind: ClusterKind
    """gke or eks: the managed Kubernetes the cluster is. Required (a stack file takes it from gpu-platform:cloud)."""
    context: str | None = Field(default=None, min_length=1, max_length=253)
    """The kubeconfig context to use. Default: the kubeconfig's current context."""
    region: str | None = Field(default=None, min_length=1, max_length=64)
    """The cluster's region, where its pools' zones are. Default: none."""
    pools: list[ExistingPoolArgs] = Field(min_length=1)
    """Every node pool or node group of the cluster the platform's pods may use; exactly one has role system. Required."""

    @model_validator(mode="after")
    def _coherent(self) -> ExistingClusterArgs:
        if self.context is not None and not _CONTEXT.match(self.context):
            raise field_error("ExistingClusterArgs", "context", "context must be a kubeconfig context name, without whitespace", self.context)
        try:
            check_unique([p.name for p in self.pools], "pools", "a name")
        except ValueError as exc:
            raise field_error("ExistingClusterArgs", "pools", str(exc), [p.name for p in self.pools]) from None
        systems = [p.name for p in self.pools if p.role is PoolRole.SYSTEM]
        if len(systems) != 1:
            got = ", ".join(systems) if systems else "none"
            raise field_error(
                "ExistingClusterArgs", "pools", f"exactly one pool has role system, where the platform's controllers run (got {got})", len(systems)
            )
        for i, pool in enumerate(self.pools):
            try:
                pool.check_on(self.kind)
            except Exception as exc:  # a ValidationError at the pool's key: located under pools[i]
                from pydantic import ValidationError

                if not isinstance(exc, ValidationError):
                    raise
                detail = exc.errors()[0]
                raise field_error("ExistingClusterArgs", ("pools", i, *detail["loc"]), detail["msg"], detail.get("input")) from None
            if self.region is not None:
                for z, zone in enumerate(pool.zones or ()):
                    if problem := zone_problem(self.kind.cloud, self.region, zone):
                        raise field_error("ExistingClusterArgs", ("pools", i, "zones", z), problem, zone)
            if self.kind is ClusterKind.GKE and pool.accelerator_type is not None:
                # The one verdict on a GKE GPU pool's zones (a pool the platform creates gets the same): no such pool can
                # exist, so the description is wrong.
                for zone, problem in absent_gpu_zones(pool.accelerator_type, pool.zones or ()):
                    z = (pool.zones or []).index(zone)
                    raise field_error("ExistingClusterArgs", ("pools", i, "zones", z), problem, zone)
        return self

    @functools.cached_property
    def plan(self) -> tuple[NodePoolShape, ...]:
        """Every pool as workloads see it, in the order listed, computed once for these Args: the component, the
        stack's checks, plan-capacity and the simulator all read this one."""
        return tuple(p.pool_shape(self.kind, self.region) for p in self.pools)

    def pool_shapes(self) -> list[NodePoolShape]:
        """Every pool as workloads see it (the plan's, see ``plan``)."""
        return list(self.plan)

    @classmethod
    def of_shapes(cls, kind: ClusterKind, shapes: list[NodePoolShape], *, region: str | None = None, context: str | None = None) -> ExistingClusterArgs:
        """The description of a cluster whose pools are ``shapes`` (a stack's planned pools, e.g. to move a stack's
        Kubernetes layer onto a cluster made elsewhere with the same pools)."""
        pools: list[dict[str, Any]] = []
        for s in shapes:
            pool: dict[str, Any] = {
                "name": s.name,
                "role": s.role.value,
                "machine_type": s.machine_type,
                "node_selector": dict(s.placement.node_selector),
                "labels": {k: v for k, v in s.labels.items() if k not in s.placement.node_selector},
                "taints": [t.model_dump(mode="json") for t in s.taints],
                "capacity": s.capacity.value,
                "min_nodes": s.min_nodes,
                "max_nodes": s.max_nodes,
                "queued_provisioning": s.queued_provisioning,
            }
            if s.zones is not None:
                pool["zones"] = list(s.zones)
            if s.role is not PoolRole.SYSTEM:
                pool["gpus_per_node"] = s.gpus_per_node if kind is ClusterKind.GKE else None
                if kind is ClusterKind.GKE:
                    pool["accelerator_type"] = s.accelerator
                if s.gpu_sharing is not None:
                    pool["gpu_sharing"] = s.gpu_sharing.model_dump(mode="json")
                if s.mig_partition is not None:
                    pool["gpu_partition_size"] = s.mig_partition
            pools.append({k: v for k, v in pool.items() if v is not None})
        return cls.model_validate({"kind": kind.value, "region": region, "context": context, "pools": pools})
