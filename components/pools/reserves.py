"""What the kubelet keeps from a node before pods get any of it: GKE's and the EKS AMIs'
reserve formulas, the DaemonSets' requests, and the allocatable they leave.

The components check that a pod fits a pool with it; plan-capacity and the simulator size
pools with it. Exact: CPU in millicores, memory in MiB, reserves rounded up so allocatable
rounds down.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from gpu_platform.components.core.cloud import Cloud, ClusterKind
from gpu_platform.components.core.models import ARGS_CONFIG
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.core.quantities import MiB, Millicores

if TYPE_CHECKING:
    from gpu_platform.components.pools.shapes import NodePoolShape

__all__ = [
    "DaemonSetOverhead",
    "KUBELET_DEFAULT_MAX_PODS",
    "NodeAllocatable",
    "NodeReserves",
    "ReserveFormula",
    "allocatable",
    "eks_default_max_pods",
    "eks_reserved_memory_mib",
    "gke_reserved_cpu_millicores",
    "gke_reserved_memory_mib",
]


class ReserveFormula(StrEnum):
    """How the kubelet's kube-reserved and system-reserved resources are computed."""

    GKE = "gke"
    """GKE's documented node allocatable formula (see gke_reserved_cpu_millicores/gke_reserved_memory_mib)."""
    EKS = "eks"
    """The EKS AMIs' formula: CPU as GKE's, memory 255 MiB + 11 MiB per pod the kubelet allows (max_pods, by default the instance type's ENI-based limit)."""
    NONE = "none"
    """No formula: only extra_cpu/extra_memory and the eviction threshold are reserved."""

    @classmethod
    def of(cls, cloud: Cloud) -> ReserveFormula:
        """The formula of the managed Kubernetes on ``cloud`` (GKE's on gcp, the EKS AMIs' on aws)."""
        return {ClusterKind.GKE: cls.GKE, ClusterKind.EKS: cls.EKS}[cloud.kind]


class NodeReserves(BaseModel):
    """What the kubelet keeps from a node's capacity before pods get any of it."""

    model_config = ARGS_CONFIG

    formula: ReserveFormula | None = None
    """kube-reserved + system-reserved by GKE's or the EKS AMIs' formula, or none. Default: the stack's cloud's (gke on GCP, eks on AWS)."""
    max_pods: Int | None = Field(default=None, ge=1, le=5000)
    """Pods per node the kubelet allows, for the eks formula. Default: the instance type's, as the EKS AMIs set it: ENIs x (IPv4 addresses per ENI - 1) + 2 from the catalog (g4dn.xlarge 29, p3.8xlarge 234); 110 (the kubelet's default) for a type the catalog lacks."""
    eviction_memory: MiB = 100
    """Hard eviction threshold (memory.available); GKE and EKS both use 100Mi. Default: 100 (MiB)."""
    extra_cpu: Millicores = 0
    """CPU reserved on top of the formula (e.g. your own system daemons). Default: 0."""
    extra_memory: MiB = 0
    """Memory reserved on top of the formula. Default: 0."""


class DaemonSetOverhead(BaseModel):
    """Requests of the DaemonSet pods every node of the pool runs, summed."""

    model_config = ARGS_CONFIG

    cpu: Millicores = 300
    """Summed CPU requests of the node's DaemonSets (kube-proxy 100m, logging and metrics agents, node-exporter, dcgm-exporter). Default: 300m."""
    memory: MiB = 512
    """Summed memory requests of the node's DaemonSets. Default: 512 (MiB)."""


# GKE, "Standard cluster architecture: node allocatable resources" (cloud.google.com/kubernetes-engine
# /docs/concepts/plan-node-sizes): memory 25% of the first 4 GiB, 20% of the next 4 GiB, 10% of the next
# 8 GiB, 6% of the next 112 GiB, 2% above 128 GiB (255 MiB on machines under 1 GiB); CPU 6% of the
# first core, 1% of the next, 0.5% of the next 2, 0.25% of every core above 4. Eviction: 100 MiB.
_GKE_MEMORY_TIERS = (
    (4 * 1024, Fraction(25, 100)),
    (4 * 1024, Fraction(20, 100)),
    (8 * 1024, Fraction(10, 100)),
    (112 * 1024, Fraction(6, 100)),
    (None, Fraction(2, 100)),
)
_GKE_CPU_TIERS = ((1000, Fraction(6, 100)), (1000, Fraction(1, 100)), (2000, Fraction(5, 1000)), (None, Fraction(25, 10000)))


def _tiered(total: int, tiers: tuple[tuple[int | None, Fraction], ...]) -> int:
    reserved = Fraction(0)
    left = total
    for size, rate in tiers:
        chunk = left if size is None else min(left, size)
        reserved += chunk * rate
        left -= chunk
        if left <= 0:
            break
    return -(-reserved.numerator // reserved.denominator)  # round up: allocatable rounds down


def gke_reserved_memory_mib(memory_mib: int) -> int:
    """GKE's kube-reserved memory for a node of ``memory_mib`` (no eviction threshold), rounded up."""
    if memory_mib < 1024:
        return 255
    return _tiered(memory_mib, _GKE_MEMORY_TIERS)


def eks_reserved_memory_mib(max_pods: int) -> int:
    """The EKS AMIs' kube-reserved memory: 255 MiB + 11 MiB per pod (amazon-eks-ami, nodeadm)."""
    return 255 + 11 * max_pods


KUBELET_DEFAULT_MAX_PODS = 110
"""The kubelet's own default --max-pods, used for an instance type the catalog does not know."""


def eks_default_max_pods(instance_type: str) -> int:
    """The max pods the EKS AMIs give ``instance_type``: its ENI-based limit from the catalog
    (components.catalog.gpus.AwsInstanceType.eks_max_pods), else the kubelet's default 110."""
    from gpu_platform.components.catalog.gpus import AWS_INSTANCE_TYPES

    row = AWS_INSTANCE_TYPES.get(instance_type)
    return row.eks_max_pods if row is not None else KUBELET_DEFAULT_MAX_PODS


def gke_reserved_cpu_millicores(vcpus: int) -> int:
    """GKE's kube-reserved CPU for a node of ``vcpus`` cores, in millicores, rounded up."""
    return _tiered(vcpus * 1000, _GKE_CPU_TIERS)


@dataclass(frozen=True)
class NodeAllocatable:
    """One node of a pool: capacity, what the kubelet and DaemonSets take, and what is left for jobs."""

    formula: str
    """The reserve formula applied (gke, eks or none)."""
    max_pods: int | None
    """The pods per node the eks formula counted; None for the other formulas."""
    capacity_cpu: int
    capacity_memory_mib: int
    reserved_cpu: int
    reserved_memory_mib: int
    daemonset_cpu: int
    daemonset_memory_mib: int
    gpus: int
    """nvidia.com/gpu the node advertises: the shape's schedulable GPUs (x clients when shared, MIG instances)."""

    @property
    def cpu(self) -> int:
        """Millicores left for jobs: capacity - reserves - DaemonSets (never below 0)."""
        return max(0, self.capacity_cpu - self.reserved_cpu - self.daemonset_cpu)

    @property
    def memory_mib(self) -> int:
        """MiB left for jobs."""
        return max(0, self.capacity_memory_mib - self.reserved_memory_mib - self.daemonset_memory_mib)


def allocatable(
    shape: NodePoolShape,
    reserves: NodeReserves | None = None,
    daemonsets: DaemonSetOverhead | None = None,
) -> NodeAllocatable:
    """A node of ``shape`` as the scheduler sees it, minus the DaemonSets' requests.

    The pool's own formula (``shape.reserve_formula``: its cloud's) applies unless
    ``reserves.formula`` names another. Default reserves and DaemonSets: ``NodeReserves()``,
    ``DaemonSetOverhead()``.
    """
    reserves = reserves if reserves is not None else NodeReserves()
    daemonsets = daemonsets if daemonsets is not None else DaemonSetOverhead()
    cpu = shape.vcpus * 1000
    formula = reserves.formula or shape.reserve_formula
    max_pods = None
    if formula is ReserveFormula.GKE:
        reserved_cpu = gke_reserved_cpu_millicores(shape.vcpus)
        reserved_mem = gke_reserved_memory_mib(shape.memory_mib)
    elif formula is ReserveFormula.EKS:
        reserved_cpu = gke_reserved_cpu_millicores(shape.vcpus)  # the EKS AMIs use the same CPU tiers
        max_pods = reserves.max_pods or eks_default_max_pods(shape.machine_type)
        reserved_mem = eks_reserved_memory_mib(max_pods)
    else:
        reserved_cpu = reserved_mem = 0
    return NodeAllocatable(
        formula=formula.value,
        max_pods=max_pods,
        capacity_cpu=cpu,
        capacity_memory_mib=shape.memory_mib,
        reserved_cpu=reserved_cpu + reserves.extra_cpu,
        reserved_memory_mib=reserved_mem + reserves.eviction_memory + reserves.extra_memory,
        daemonset_cpu=daemonsets.cpu,
        daemonset_memory_mib=daemonsets.memory,
        gpus=shape.schedulable_gpus_per_node,
    )
