"""AWS GPU facts as data plus the lookups the EKS validators use: GPU models, EC2 instance
types (vCPUs, MiB, GPUs, network limits) and the one-shape rule of a node group.

Source: "Accelerated computing instances" in the EC2 documentation (what
``ec2:DescribeInstanceTypes`` reports: vCPUs, MiB, GpuInfo, NetworkInfo); the tests compare
every row with the instance-type data that moto ships, recorded from that API.
Re-exported by gpu_catalog, the catalog's public home.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpu_platform.components.catalog.base import GIB, GpuCombinationError
from gpu_platform.components.core.models import check_unique

if TYPE_CHECKING:
    from gpu_platform.components.pools.shapes import MachineShapeArgs

__all__ = [
    "AwsGpu",
    "AwsInstanceType",
    "AWS_GPUS",
    "AWS_ENI_LIMITS",
    "AWS_INSTANCE_TYPES",
    "aws_instance_type",
    "aws_shape",
    "check_one_shape",
]


@dataclass(frozen=True)
class AwsGpu:
    """An NVIDIA GPU model as EC2 offers it."""

    name: str
    """The model as ec2:DescribeInstanceTypes names it (T4, A10G, ...)."""
    accelerator_label: str
    """The value of the node label ``k8s.amazonaws.com/accelerator`` (the cluster autoscaler's GPU label on AWS)."""


AWS_GPUS: dict[str, AwsGpu] = {
    g.name: g
    for g in (
        AwsGpu("T4", "nvidia-tesla-t4"),
        AwsGpu("A10G", "nvidia-a10g"),
        AwsGpu("L4", "nvidia-l4"),
        AwsGpu("L40S", "nvidia-l40s"),
        AwsGpu("V100", "nvidia-tesla-v100"),
        AwsGpu("A100", "nvidia-a100"),
        AwsGpu("H100", "nvidia-h100"),
    )
}


@dataclass(frozen=True)
class AwsInstanceType:
    """An EC2 instance type's shape: vCPUs, memory and GPUs (none on CPU types)."""

    name: str
    vcpus: int
    memory_mib: int
    gpu: str | None = None
    """GPU model (a key of AWS_GPUS); None for CPU instance types."""
    gpu_count: int = 0
    gpu_memory_mib: int = 0
    """Memory of one GPU, as EC2 reports it."""

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def quota_family(self) -> str | None:
        """The EC2 vCPU quota the type counts against: G (G and VT) or P; None for CPU types."""
        if self.gpu is None:
            return None
        return "P" if self.family.startswith("p") else "G"

    @property
    def accelerator_label(self) -> str | None:
        """The ``k8s.amazonaws.com/accelerator`` value: the catalog's, else nvidia-<model> (H200: nvidia-h200)."""
        if self.gpu is None:
            return None
        known = AWS_GPUS.get(self.gpu)
        return known.accelerator_label if known else "nvidia-" + re.sub(r"[^a-z0-9]+", "-", self.gpu.lower()).strip("-")

    def same_shape(self, other: AwsInstanceType) -> bool:
        """The cluster autoscaler treats a node group as one shape: vCPUs, memory and GPUs must agree."""
        return (self.vcpus, self.memory_mib, self.gpu, self.gpu_count) == (
            other.vcpus,
            other.memory_mib,
            other.gpu,
            other.gpu_count,
        )

    @property
    def eks_max_pods(self) -> int:
        """Pods the EKS AMIs let the kubelet run on this type: ENIs x (IPv4 addresses per ENI - 1) + 2.

        The VPC CNI gives each pod a secondary IPv4 address of an ENI (the first address of
        each ENI is the node's own), plus 2 for host-network pods (kube-proxy, aws-node); the
        ENIs are those of the default network card, the only one the CNI attaches to. This is
        amazon-eks-ami's eni-max-pods.txt without prefix delegation (p3.8xlarge 234,
        g4dn.xlarge 29), and what the AMIs' memory reserve counts (255 MiB + 11 MiB per pod).
        """
        enis, ipv4 = AWS_ENI_LIMITS[self.name]
        return enis * (ipv4 - 1) + 2

    def describe(self) -> str:
        gpus = f", {self.gpu_count}x {self.gpu}" if self.gpu else ""
        return f"{self.name} ({self.vcpus} vCPUs, {self.memory_mib // GIB} GiB{gpus})"


def _aws_family(gpu: str | None, gpu_memory_mib: int, rows: tuple[tuple[str, int, int, int], ...]) -> list[AwsInstanceType]:
    """Rows of (instance type, vCPUs, memory GiB, GPUs)."""
    return [AwsInstanceType(name, vcpus, mem_gib * GIB, gpu, gpus, gpu_memory_mib if gpu else 0) for name, vcpus, mem_gib, gpus in rows]


_G_SIZES = (
    ("xlarge", 4, 1),
    ("2xlarge", 8, 1),
    ("4xlarge", 16, 1),
    ("8xlarge", 32, 1),
    ("16xlarge", 64, 1),
    ("12xlarge", 48, 4),
    ("24xlarge", 96, 4),
    ("48xlarge", 192, 8),
)


def _g_family(prefix: str, gpu: str, gpu_memory_mib: int, mib_per_vcpu_gib: int, sizes: tuple[tuple[str, int, int], ...] = _G_SIZES) -> list[AwsInstanceType]:
    return _aws_family(gpu, gpu_memory_mib, tuple((f"{prefix}.{s}", v, v * mib_per_vcpu_gib, g) for s, v, g in sizes))


AWS_INSTANCE_TYPES: dict[str, AwsInstanceType] = {
    t.name: t
    for t in (
        # g4dn: NVIDIA T4 16 GB; 12xlarge and metal carry 4 and 8.
        *_g_family("g4dn", "T4", 16 * GIB, 4, (*_G_SIZES[:6], ("metal", 96, 8))),
        # g5: A10G 24 GB, g6: L4 24 GB (EC2 reports 22888 MiB), g6e: L40S 48 GB (45776 MiB).
        *_g_family("g5", "A10G", 22888, 4),
        *_g_family("g6", "L4", 22888, 4),
        *_g_family("g6e", "L40S", 45776, 8),
        # p3: V100 16 GB (the Kubeflow-on-EKS guide's GPU groups); p3dn: V100 32 GB.
        *_aws_family("V100", 16 * GIB, (("p3.2xlarge", 8, 61, 1), ("p3.8xlarge", 32, 244, 4), ("p3.16xlarge", 64, 488, 8))),
        *_aws_family("V100", 32 * GIB, (("p3dn.24xlarge", 96, 768, 8),)),
        *_aws_family("A100", 40 * GIB, (("p4d.24xlarge", 96, 1152, 8),)),
        *_aws_family("A100", 80 * GIB, (("p4de.24xlarge", 96, 1152, 8),)),
        *_aws_family("H100", 80 * GIB, (("p5.48xlarge", 192, 2048, 8),)),
        # CPU types for system node groups.
        *_aws_family(
            None, 0, tuple((f"{f}.{s}", v, v * 4, 0) for f in ("m5", "m6i", "m7i") for s, v in (("large", 2), ("xlarge", 4), ("2xlarge", 8), ("4xlarge", 16)))
        ),
        *_aws_family(None, 0, (("t3.medium", 2, 4, 0), ("t3.large", 2, 8, 0), ("t3.xlarge", 4, 16, 0), ("t3.2xlarge", 8, 32, 0))),
    )
}
"""EC2 instance types the EKS components know, by name."""

AWS_ENI_LIMITS: dict[str, tuple[int, int]] = {
    # (ENIs on the default network card, IPv4 addresses per ENI), as ec2:DescribeInstanceTypes reports
    # them in NetworkInfo (NetworkCards[DefaultNetworkCardIndex].MaximumNetworkInterfaces,
    # Ipv4AddressesPerInterface); the p3 rows follow the EC2 documentation.
    **{f"g4dn.{s}": (3, 10) for s in ("xlarge", "2xlarge", "4xlarge")},
    **{f"g4dn.{s}": (4, 15) for s in ("8xlarge", "16xlarge")},
    "g4dn.12xlarge": (8, 30),
    "g4dn.metal": (15, 50),
    **{f"g5.{s}": (4, 15) for s in ("xlarge", "2xlarge")},
    **{f"g5.{s}": (8, 30) for s in ("4xlarge", "8xlarge", "16xlarge")},
    **{f"g5.{s}": (15, 50) for s in ("12xlarge", "24xlarge")},
    "g5.48xlarge": (7, 50),
    **{f"g6.{s}": (4, 15) for s in ("xlarge", "2xlarge")},
    **{f"g6.{s}": (8, 30) for s in ("4xlarge", "8xlarge", "12xlarge")},
    **{f"g6.{s}": (15, 50) for s in ("16xlarge", "24xlarge", "48xlarge")},
    **{f"g6e.{s}": (4, 15) for s in ("xlarge", "2xlarge")},
    **{f"g6e.{s}": (8, 30) for s in ("4xlarge", "8xlarge")},
    "g6e.16xlarge": (15, 50),
    "g6e.12xlarge": (10, 30),
    "g6e.24xlarge": (10, 50),
    "g6e.48xlarge": (10, 50),
    "p3.2xlarge": (4, 15),
    "p3.8xlarge": (8, 30),
    "p3.16xlarge": (8, 30),
    "p3dn.24xlarge": (15, 50),
    "p4d.24xlarge": (15, 50),
    "p4de.24xlarge": (15, 50),
    "p5.48xlarge": (2, 50),
    **{f"{f}.large": (3, 10) for f in ("m5", "m6i", "m7i")},
    **{f"{f}.{s}": (4, 15) for f in ("m5", "m6i", "m7i") for s in ("xlarge", "2xlarge")},
    **{f"{f}.4xlarge": (8, 30) for f in ("m5", "m6i", "m7i")},
    "t3.medium": (3, 6),
    "t3.large": (3, 12),
    "t3.xlarge": (4, 15),
    "t3.2xlarge": (4, 15),
}
"""Network limits of every type in AWS_INSTANCE_TYPES, for the pods a node may run (AwsInstanceType.eks_max_pods)."""


def aws_instance_type(name: str, *, gpu: bool | None = None) -> AwsInstanceType:
    """The catalog row of ``name``; ``gpu`` True/False also requires a GPU or a CPU type. Raises ValueError."""
    row = AWS_INSTANCE_TYPES.get(name)
    if row is None or (gpu is not None and (row.gpu is not None) != gpu):
        kind = {True: "GPU ", False: "CPU ", None: ""}[gpu]
        known = sorted(t.name for t in AWS_INSTANCE_TYPES.values() if gpu is None or (t.gpu is not None) == gpu)
        raise ValueError(
            f"{name!r} is not a known {kind}instance type; use one of {', '.join(known)}, or state the "
            "shape (shape: vcpus, memory_gib, gpus, gpu_type) of a type the catalog does not know yet"
        )
    return row


def check_one_shape(names: list[str], *, gpu: bool) -> None:
    """Refuse instance types that repeat, are unknown (or of the wrong kind), or differ in shape:
    the cluster autoscaler builds one node template per group. Raises ValueError."""
    check_unique(names, "instance_types", "a type")
    shapes = [aws_instance_type(n, gpu=gpu) for n in names]
    for other in shapes[1:]:
        if not other.same_shape(shapes[0]):
            raise ValueError(
                "instance types of one node group must share one shape, or the autoscaler's node template is "
                f"wrong; {other.describe()} differs from {shapes[0].describe()}"
            )


_AWS_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")
_AWS_GPU_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 .-]{0,31}$")


def aws_shape(names: list[str], stated: MachineShapeArgs | None, *, gpu: bool) -> AwsInstanceType:
    """The one shape of a node group's instance types: the catalog's (check_one_shape), or the
    shape stated for types it does not know, which every type the catalog knows must match.
    Raises GpuCombinationError naming the key (``instance_types``, ``shape.gpus``, ...)."""
    if stated is None:
        try:
            check_one_shape(names, gpu=gpu)
        except ValueError as exc:
            raise GpuCombinationError("instance_types", str(exc)) from None
        return aws_instance_type(names[0])
    try:
        check_unique(names, "instance_types", "a type")
    except ValueError as exc:
        raise GpuCombinationError("instance_types", str(exc)) from None
    if gpu:
        if not stated.gpus:
            raise GpuCombinationError(
                "shape.gpus", f"a GPU class needs shape.gpus, the GPUs per instance (got {stated.gpus if stated.gpus is not None else 'none'})"
            )
        if stated.gpu_type is None:
            raise GpuCombinationError("shape.gpu_type", "a GPU class needs shape.gpu_type, the GPU model as EC2 names it (e.g. H200)")
        if not _AWS_GPU_MODEL.match(stated.gpu_type):
            raise GpuCombinationError("shape.gpu_type", f"shape.gpu_type {stated.gpu_type!r} is not a GPU model name as EC2 gives it (e.g. H200, L40S)")
        offered = [t.gpu_count for t in AWS_INSTANCE_TYPES.values() if t.gpu == stated.gpu_type]
        if offered and stated.gpus > max(offered):
            raise GpuCombinationError(
                "shape.gpus",
                f"shape.gpus {stated.gpus} is more GPUs than one instance carries of {stated.gpu_type} (at most {max(offered)})",
            )
    elif stated.gpus:
        raise GpuCombinationError("shape.gpus", f"shape.gpus {stated.gpus} contradicts a CPU node group; leave it unset or 0")
    elif stated.gpu_type is not None:
        raise GpuCombinationError("shape.gpu_type", f"shape.gpu_type {stated.gpu_type} contradicts a CPU node group; leave it unset")
    shape = AwsInstanceType(names[0], stated.vcpus, stated.memory_mib, stated.gpu_type if gpu else None, stated.gpus or 0)
    for name in names:
        row = AWS_INSTANCE_TYPES.get(name)
        if row is None:
            if not _AWS_INSTANCE_TYPE.match(name):
                raise GpuCombinationError("instance_types", f"{name!r} is not an EC2 instance type name (<family>.<size>, e.g. p5en.48xlarge)")
            continue
        if (row.gpu is not None) != gpu:
            kind = "a GPU" if row.gpu else "a CPU"
            raise GpuCombinationError("instance_types", f"{name} is {kind} instance type; this node group takes {'GPU' if gpu else 'CPU'} types")
        for key, mine, theirs in (
            ("shape.vcpus", stated.vcpus, row.vcpus),
            ("shape.memory_gib", stated.memory_mib, row.memory_mib),
            ("shape.gpu_type", stated.gpu_type if gpu else None, row.gpu),
            ("shape.gpus", stated.gpus or 0, row.gpu_count),
        ):
            if mine != theirs:
                shown = f"{stated.memory_gib:g}" if key == "shape.memory_gib" else mine
                raise GpuCombinationError(key, f"{key} {shown} contradicts the catalog: {row.describe()}; a node group's types share one shape")
        if name == names[0]:
            shape = row
    return shape
