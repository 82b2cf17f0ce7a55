"""GPU facts for the clouds the components deploy to, as data plus the lookups the validators use.

Everything here is plain data: to support a new accelerator or machine type, add a row.
Memory is in MiB and CPU in whole vCPUs so that capacity arithmetic stays exact.

GCP sources: "GPU machine types" and "About GPUs in GKE" in the Compute Engine and GKE
documentation (N1 vCPU/memory limits per attached GPU count, A2/A3/G2 shapes, MIG
partition sizes).

The AWS rows and lookups live in aws_catalog, the shared unit and error in catalog_base; both
are re-exported here, so ``gpu_catalog`` stays the one public home of the catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpu_platform.components.catalog.aws import (
    AWS_GPUS,
    AWS_INSTANCE_TYPES,
    AwsGpu,
    AwsInstanceType,
    aws_instance_type,
    aws_shape,
)
from gpu_platform.components.catalog.base import GIB, GpuCombinationError, shape_checked

if TYPE_CHECKING:
    from gpu_platform.components.pools.shapes import MachineShapeArgs

# Re-exported: gpu_catalog stays the public home of the AWS catalog's names too.
from gpu_platform.components.catalog.aws import AWS_ENI_LIMITS as AWS_ENI_LIMITS
from gpu_platform.components.catalog.aws import check_one_shape as check_one_shape

__all__ = [
    "GcpAccelerator",
    "GcpMachineShape",
    "GCP_ACCELERATORS",
    "GCP_MACHINE_SHAPES",
    "MIG_INSTANCES",
    "mig_slices",
    "gcp_accelerator",
    "allowed_accelerator_counts",
    "GpuCombinationError",
    "gcp_cpu_shape",
    "gcp_gpu_shape",
    "aws_shape",
    "shape_checked",
    "AwsGpu",
    "AwsInstanceType",
    "AWS_GPUS",
    "AWS_INSTANCE_TYPES",
    "aws_instance_type",
]


@dataclass(frozen=True)
class GcpAccelerator:
    """One GKE accelerator type (the value of `cloud.google.com/gke-accelerator`)."""

    name: str
    """GKE/Compute Engine accelerator type, e.g. ``nvidia-tesla-t4``."""
    model: str
    """Human name of the GPU."""
    memory_gib: int
    """GPU memory per device."""
    machine_family: str
    """The machine family the GPU attaches to (n1) or is built into (a2, a3, g2)."""
    mig_partitions: tuple[str, ...] = ()
    """Multi-instance GPU partition sizes GKE accepts for this GPU (empty: MIG unsupported)."""

    @property
    def compact_placement(self) -> bool:
        """Compact placement policies cover the A2, A3 and G2 families, not N1."""
        return self.machine_family in COMPACT_PLACEMENT_FAMILIES


@dataclass(frozen=True)
class GcpMachineShape:
    """A Compute Engine machine type's shape."""

    name: str
    vcpus: int
    memory_mib: int
    accelerator: str | None = None
    """The GPU the machine type is built with (A2, A3, G2); None for N1/E2/N2."""
    gpu_count: int = 0
    """How many GPUs the machine type fixes; 0 where GPUs are attached separately (N1)."""

    @property
    def family(self) -> str:
        return self.name.split("-", 1)[0]


@dataclass(frozen=True)
class N1Limit:
    """The largest N1 VM Compute Engine allows with a given number of one GPU model."""

    max_vcpus: int
    max_memory_mib: int


COMPACT_PLACEMENT_FAMILIES = frozenset({"a2", "a3", "g2"})

GCP_ACCELERATORS: dict[str, GcpAccelerator] = {
    a.name: a
    for a in (
        GcpAccelerator("nvidia-tesla-t4", "NVIDIA T4", 16, "n1"),
        GcpAccelerator("nvidia-tesla-p4", "NVIDIA P4", 8, "n1"),
        GcpAccelerator("nvidia-tesla-p100", "NVIDIA P100", 16, "n1"),
        GcpAccelerator("nvidia-tesla-v100", "NVIDIA V100", 16, "n1"),
        GcpAccelerator("nvidia-l4", "NVIDIA L4", 24, "g2"),
        GcpAccelerator(
            "nvidia-tesla-a100",
            "NVIDIA A100 40GB",
            40,
            "a2",
            ("1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"),
        ),
        GcpAccelerator(
            "nvidia-a100-80gb",
            "NVIDIA A100 80GB",
            80,
            "a2",
            ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"),
        ),
        GcpAccelerator(
            "nvidia-h100-80gb",
            "NVIDIA H100 80GB",
            80,
            "a3",
            ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "7g.80gb"),
        ),
        GcpAccelerator(
            "nvidia-h100-mega-80gb",
            "NVIDIA H100 Mega 80GB",
            80,
            "a3",
            ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "7g.80gb"),
        ),
    )
}

MIG_INSTANCES: dict[str, int] = {
    "1g.5gb": 7,
    "2g.10gb": 3,
    "3g.20gb": 2,
    "7g.40gb": 1,
    "1g.10gb": 7,
    "1g.20gb": 4,
    "2g.20gb": 3,
    "3g.40gb": 2,
    "7g.80gb": 1,
}
"""MIG instances one GPU holds at each partition size the catalog's GPUs offer (NVIDIA's MIG user guide,
"Supported MIG Profiles": A100 40GB, A100 80GB, H100 80GB): GKE advertises each instance as one
nvidia.com/gpu, so a node's schedulable GPUs are its GPUs times this."""


def mig_slices(accelerator: str, partition: str) -> int | None:
    """MIG instances per GPU of ``accelerator`` at ``partition``; None when the catalog does not know the GPU
    or it does not offer that partition (a stated shape: the plan does not know the count)."""
    known = GCP_ACCELERATORS.get(accelerator)
    if known is None or partition not in known.mig_partitions:
        return None
    return MIG_INSTANCES.get(partition)


# N1 VMs take T4, P4, P100 and V100 GPUs attached separately; the GPU count caps the VM size.
N1_GPU_LIMITS: dict[str, dict[int, N1Limit]] = {
    "nvidia-tesla-t4": {
        1: N1Limit(48, 312 * GIB),
        2: N1Limit(48, 312 * GIB),
        4: N1Limit(96, 624 * GIB),
    },
    "nvidia-tesla-p4": {
        1: N1Limit(24, 156 * GIB),
        2: N1Limit(48, 312 * GIB),
        4: N1Limit(96, 624 * GIB),
    },
    "nvidia-tesla-p100": {
        1: N1Limit(16, 104 * GIB),
        2: N1Limit(32, 208 * GIB),
        # us-east1-c, europe-west1-b and europe-west1-d cap 4x P100 at 64 vCPUs / 208 GB.
        4: N1Limit(96, 624 * GIB),
    },
    "nvidia-tesla-v100": {
        1: N1Limit(12, 78 * GIB),
        2: N1Limit(24, 156 * GIB),
        4: N1Limit(48, 312 * GIB),
        8: N1Limit(96, 624 * GIB),
    },
}


def _family(prefix: str, sizes: tuple[int, ...], mib_per_vcpu: float) -> list[GcpMachineShape]:
    return [GcpMachineShape(f"{prefix}-{n}", n, int(n * mib_per_vcpu)) for n in sizes]


def _gpu_shapes(accelerator: str, rows: tuple[tuple[str, int, int, int], ...]) -> list[GcpMachineShape]:
    return [GcpMachineShape(name, vcpus, mem_gb * GIB, accelerator, gpus) for name, gpus, vcpus, mem_gb in rows]


_N1_SIZES = (1, 2, 4, 8, 16, 32, 64, 96)
_SIZES = (2, 4, 8, 16, 32)

GCP_MACHINE_SHAPES: dict[str, GcpMachineShape] = {
    s.name: s
    for s in (
        # General purpose shapes (system pools, N1 hosts for attached GPUs).
        *_family("n1-standard", _N1_SIZES, 3.75 * GIB),
        *_family("n1-highmem", _N1_SIZES[1:], 6.5 * GIB),
        *_family("n1-highcpu", _N1_SIZES[1:], 0.9 * GIB),
        *_family("e2-standard", _SIZES, 4 * GIB),
        *_family("e2-highmem", (2, 4, 8, 16), 8 * GIB),
        *_family("n2-standard", (2, 4, 8, 16, 32, 48, 64, 80, 96, 128), 4 * GIB),
        # G2: L4 built in; (name, GPUs, vCPUs, memory GB).
        *_gpu_shapes(
            "nvidia-l4",
            (
                ("g2-standard-4", 1, 4, 16),
                ("g2-standard-8", 1, 8, 32),
                ("g2-standard-12", 1, 12, 48),
                ("g2-standard-16", 1, 16, 64),
                ("g2-standard-24", 2, 24, 96),
                ("g2-standard-32", 1, 32, 128),
                ("g2-standard-48", 4, 48, 192),
                ("g2-standard-96", 8, 96, 384),
            ),
        ),
        # A2 standard: A100 40GB.
        *_gpu_shapes(
            "nvidia-tesla-a100",
            (
                ("a2-highgpu-1g", 1, 12, 85),
                ("a2-highgpu-2g", 2, 24, 170),
                ("a2-highgpu-4g", 4, 48, 340),
                ("a2-highgpu-8g", 8, 96, 680),
                ("a2-megagpu-16g", 16, 96, 1360),
            ),
        ),
        # A2 ultra: A100 80GB.
        *_gpu_shapes(
            "nvidia-a100-80gb",
            (
                ("a2-ultragpu-1g", 1, 12, 170),
                ("a2-ultragpu-2g", 2, 24, 340),
                ("a2-ultragpu-4g", 4, 48, 680),
                ("a2-ultragpu-8g", 8, 96, 1360),
            ),
        ),
        # A3: H100 80GB.
        *_gpu_shapes(
            "nvidia-h100-80gb",
            (
                ("a3-highgpu-1g", 1, 26, 234),
                ("a3-highgpu-2g", 2, 52, 468),
                ("a3-highgpu-4g", 4, 104, 936),
                ("a3-highgpu-8g", 8, 208, 1872),
                ("a3-edgegpu-8g", 8, 208, 1872),
            ),
        ),
        *_gpu_shapes("nvidia-h100-mega-80gb", (("a3-megagpu-8g", 8, 208, 1872),)),
    )
}


# Boot disk types by machine family. Older families take Persistent Disk only; A3 (a
# third-generation series) takes Hyperdisk Balanced and no Standard Persistent Disk.
_PERSISTENT_DISK = ("pd-standard", "pd-balanced", "pd-ssd")
DISK_TYPES: dict[str, tuple[str, ...]] = {
    "n1": _PERSISTENT_DISK,
    "e2": _PERSISTENT_DISK,
    "n2": _PERSISTENT_DISK,
    "a2": _PERSISTENT_DISK,
    "a3": ("pd-balanced", "pd-ssd", "hyperdisk-balanced"),
}


def disk_types_for(family: str) -> tuple[str, ...]:
    """Boot disk types a machine family takes; every known type for a family not listed."""
    return DISK_TYPES.get(family, (*_PERSISTENT_DISK, "hyperdisk-balanced"))


def gcp_accelerator(name: str) -> GcpAccelerator:
    try:
        return GCP_ACCELERATORS[name]
    except KeyError:
        raise KeyError(f"unknown accelerator type {name!r}; known: {', '.join(sorted(GCP_ACCELERATORS))}") from None


def _or_list(values: list[int] | list[str]) -> str:
    items = [str(v) for v in values]
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " or " + items[-1]


def machine_types_for(accelerator: str) -> list[str]:
    """The machine types that can carry ``accelerator`` (N1 types for attached GPUs)."""
    acc = gcp_accelerator(accelerator)
    if acc.machine_family == "n1":
        return sorted(
            (s.name for s in GCP_MACHINE_SHAPES.values() if s.family == "n1"),
            key=lambda n: (n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1])),
        )
    return [s.name for s in GCP_MACHINE_SHAPES.values() if s.accelerator == accelerator]


def allowed_accelerator_counts(machine_type: str, accelerator: str) -> list[int]:
    """GPU counts Compute Engine offers for this machine type and accelerator (may be empty)."""
    shape = GCP_MACHINE_SHAPES.get(machine_type)
    acc = GCP_ACCELERATORS.get(accelerator)
    if shape is None or acc is None:
        return []
    if shape.accelerator is not None:
        return [shape.gpu_count] if shape.accelerator == accelerator else []
    if shape.family != "n1" or acc.machine_family != "n1":
        return []
    limits = N1_GPU_LIMITS[accelerator]
    return [count for count, limit in sorted(limits.items()) if shape.vcpus <= limit.max_vcpus and shape.memory_mib <= limit.max_memory_mib]


def check_gcp_gpu(machine_type: str, accelerator: str, count: int | None) -> int:
    """Return the GPU count per node for the combination, or raise GpuCombinationError.

    ``count`` may be None where the machine type fixes it (A2, A3, G2). The error's
    ``field`` names the input that should change.
    """
    if accelerator not in GCP_ACCELERATORS:
        raise GpuCombinationError(
            "accelerator_type",
            f"accelerator_type {accelerator!r} is not a known GKE accelerator; "
            f"use one of {', '.join(sorted(GCP_ACCELERATORS))}, or state the machine's shape "
            "(shape: vcpus, memory_gib) for a GPU the catalog does not know yet",
        )
    if machine_type not in GCP_MACHINE_SHAPES:
        raise GpuCombinationError(
            "machine_type",
            f"machine_type {machine_type!r} is not a known GPU host for {accelerator}; "
            f"use one of {', '.join(machine_types_for(accelerator))}, or state its shape "
            "(shape: vcpus, memory_gib) if the catalog does not know it yet",
        )
    shape = GCP_MACHINE_SHAPES[machine_type]
    acc = GCP_ACCELERATORS[accelerator]
    if shape.accelerator is not None and shape.accelerator != accelerator:
        raise GpuCombinationError(
            "accelerator_type",
            f"accelerator_type {accelerator} does not run on {machine_type}, which carries "
            f"{shape.accelerator}; use {shape.accelerator} or one of "
            f"{', '.join(machine_types_for(accelerator))}",
        )
    if shape.accelerator is None and (shape.family != "n1" or acc.machine_family != "n1"):
        raise GpuCombinationError(
            "machine_type",
            f"machine_type {machine_type} cannot carry {accelerator}; use one of {', '.join(machine_types_for(accelerator))}",
        )
    if shape.accelerator is not None:
        if count is not None and count != shape.gpu_count:
            raise GpuCombinationError(
                "accelerator_count",
                f"accelerator_count {count} is not offered on {machine_type}, which fixes "
                f"{shape.gpu_count}x {accelerator}; use {shape.gpu_count} or leave it unset",
            )
        return shape.gpu_count
    limits = N1_GPU_LIMITS[accelerator]
    allowed = allowed_accelerator_counts(machine_type, accelerator)
    if count is None:
        raise GpuCombinationError(
            "accelerator_count",
            f"accelerator_count is required for {accelerator} on {machine_type}; use {_or_list(allowed)}",
        )
    if count not in limits:
        raise GpuCombinationError(
            "accelerator_count",
            f"accelerator_count {count} is not offered for {accelerator}; use {_or_list(sorted(limits))}",
        )
    if count not in allowed:
        limit = limits[count]
        raise GpuCombinationError(
            "machine_type",
            f"machine_type {machine_type} ({shape.vcpus} vCPUs, {shape.memory_mib // GIB} GB) "
            f"is too large for {count}x {accelerator} (at most {limit.max_vcpus} vCPUs, "
            f"{limit.max_memory_mib // GIB} GB); use more GPUs or a smaller N1 type",
        )
    return count


# --- Shapes stated for types the catalog does not know (MachineShapeArgs) ---------------

_GCP_MACHINE_TYPE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$")
_GCP_CUSTOM = re.compile(r"^(?:(?P<family>[a-z][a-z0-9]*)-)?custom-(?P<vcpus>\d+)-(?P<mib>\d+)(?:-ext)?$")
_GCP_SIZED = re.compile(r"^(?P<family>[a-z][a-z0-9]*)-[a-z0-9]+-(?P<n>\d+)(?P<gpus>g)?(?:-lssd|-metal|-nolssd)?$")
_GKE_GPU = re.compile(r"^nvidia-[a-z0-9]+(-[a-z0-9]+)*$")


def gcp_family(machine_type: str) -> str:
    """The machine family of a Compute Engine machine type (custom-4-8192 is N1's)."""
    custom = _GCP_CUSTOM.match(machine_type)
    if custom:
        return custom["family"] or "n1"
    return machine_type.split("-", 1)[0]


def gcp_name_states(machine_type: str) -> dict[str, int]:
    """What a Compute Engine machine type's name states by the documented naming: custom types
    <family>-custom-<vCPUs>-<MiB>, GPU types <family>-<kind>-<GPUs>g (a3-ultragpu-8g), others
    <family>-<kind>-<vCPUs> (c3-standard-8). Empty where the name states no size (e2-medium)."""
    custom = _GCP_CUSTOM.match(machine_type)
    if custom:
        return {"vcpus": int(custom["vcpus"]), "memory_mib": int(custom["mib"])}
    sized = _GCP_SIZED.match(machine_type)
    if sized:
        return {"gpus" if sized["gpus"] else "vcpus": int(sized["n"])}
    return {}


def max_gpus_per_machine(accelerator: str) -> int:
    """Most GPUs of a catalog accelerator one machine carries (attached to N1, or built in)."""
    if accelerator in N1_GPU_LIMITS:
        return max(N1_GPU_LIMITS[accelerator])
    return max(s.gpu_count for s in GCP_MACHINE_SHAPES.values() if s.accelerator == accelerator)


def _gib(mib: int) -> str:
    return f"{mib / GIB:g}"


def _agrees_with_catalog(name: str, vcpus: int, memory_mib: int, stated: MachineShapeArgs) -> None:
    forget = f"correct it, or remove shape: the catalog knows {name}"
    if stated.vcpus != vcpus:
        raise GpuCombinationError("shape.vcpus", f"shape.vcpus {stated.vcpus} contradicts the catalog: {name} has {vcpus} vCPUs; {forget}")
    if stated.memory_mib != memory_mib:
        raise GpuCombinationError(
            "shape.memory_gib",
            f"shape.memory_gib {stated.memory_gib:g} contradicts the catalog: {name} has {_gib(memory_mib)} GiB; {forget}",
        )


def _agrees_with_name(machine_type: str, stated: MachineShapeArgs, gpus: int, gpus_key: str) -> None:
    said = gcp_name_states(machine_type)
    if "vcpus" in said and stated.vcpus != said["vcpus"]:
        raise GpuCombinationError("shape.vcpus", f"shape.vcpus {stated.vcpus} contradicts the machine type's name: {machine_type} has {said['vcpus']} vCPUs")
    if "memory_mib" in said and stated.memory_mib != said["memory_mib"]:
        raise GpuCombinationError(
            "shape.memory_gib",
            f"shape.memory_gib {stated.memory_gib:g} contradicts the machine type's name: {machine_type} has "
            f"{said['memory_mib']} MiB ({_gib(said['memory_mib'])} GiB)",
        )
    if "gpus" in said and gpus != said["gpus"]:
        raise GpuCombinationError(gpus_key, f"{gpus_key} {gpus} contradicts the machine type's name: {machine_type} carries {said['gpus']} GPUs")


def _check_gcp_name(machine_type: str) -> None:
    if not _GCP_MACHINE_TYPE.match(machine_type):
        raise GpuCombinationError(
            "machine_type",
            f"machine_type {machine_type!r} is not a Compute Engine machine type name (<family>-<kind>-<size>, e.g. c3-standard-8 or a3-ultragpu-8g)",
        )


def gcp_gpu_shape(machine_type: str, accelerator: str, count: int | None, stated: MachineShapeArgs | None) -> tuple[GcpMachineShape, int]:
    """The machine of a GKE GPU pool and its GPUs per node: the catalog's, or the shape stated for
    a type it does not know. Raises GpuCombinationError naming the key (``shape.vcpus``, ...)
    when the shape contradicts itself, the pool's accelerator fields or the catalog."""
    if stated is None:
        checked = check_gcp_gpu(machine_type, accelerator, count)
        return GCP_MACHINE_SHAPES[machine_type], checked
    if stated.gpu_type is not None and stated.gpu_type != accelerator:
        raise GpuCombinationError(
            "shape.gpu_type",
            f"shape.gpu_type {stated.gpu_type} contradicts accelerator_type {accelerator}; leave shape.gpu_type unset (the pool's accelerator_type is its GPU)",
        )
    if stated.gpus is not None and count is not None and stated.gpus != count:
        raise GpuCombinationError("shape.gpus", f"shape.gpus {stated.gpus} contradicts accelerator_count {count}; state GPUs per machine once")
    gpus_key = "accelerator_count" if count is not None or stated.gpus is None else "shape.gpus"
    gpus = count if count is not None else stated.gpus
    known = GCP_MACHINE_SHAPES.get(machine_type)
    if known is not None:
        _agrees_with_catalog(machine_type, known.vcpus, known.memory_mib, stated)
        try:
            return known, check_gcp_gpu(machine_type, accelerator, gpus)
        except GpuCombinationError as exc:
            if exc.field == "accelerator_count" and gpus_key != exc.field:
                raise GpuCombinationError(gpus_key, exc.message.replace("accelerator_count", gpus_key)) from None
            raise
    _check_gcp_name(machine_type)
    if gpus is None:
        gpus = gcp_name_states(machine_type).get("gpus")  # a3-ultragpu-8g carries 8
    if not gpus:
        raise GpuCombinationError(
            gpus_key,
            f"a GPU pool needs GPUs on every machine: set accelerator_count (or shape.gpus) for {machine_type}, which the catalog does not know",
        )
    _agrees_with_name(machine_type, stated, gpus, gpus_key)
    family = gcp_family(machine_type)
    acc = GCP_ACCELERATORS.get(accelerator)
    if acc is None:
        if not _GKE_GPU.match(accelerator):
            raise GpuCombinationError(
                "accelerator_type",
                f"accelerator_type {accelerator!r} is not a GKE GPU accelerator type (nvidia-<model>, e.g. nvidia-b200)",
            )
        if family == "n1":
            raise GpuCombinationError(
                "accelerator_type",
                f"accelerator_type {accelerator} does not attach to N1 machines, which carry only {_or_list(sorted(N1_GPU_LIMITS))}",
            )
    else:
        if family != acc.machine_family:
            raise GpuCombinationError(
                "machine_type",
                f"machine_type {machine_type} (family {family}) cannot carry {accelerator}, which runs on "
                f"{acc.machine_family} machines such as {', '.join(machine_types_for(accelerator)[:4])}",
            )
        most = max_gpus_per_machine(accelerator)
        if gpus > most:
            raise GpuCombinationError(gpus_key, f"{gpus_key} {gpus} is more GPUs than one machine carries of {accelerator} (at most {most})")
        if acc.machine_family == "n1":
            limits = N1_GPU_LIMITS[accelerator]
            if gpus not in limits:
                raise GpuCombinationError(gpus_key, f"{gpus_key} {gpus} is not offered for {accelerator}; use {_or_list(sorted(limits))}")
            limit = limits[gpus]
            if stated.vcpus > limit.max_vcpus:
                raise GpuCombinationError(
                    "shape.vcpus",
                    f"shape.vcpus {stated.vcpus} is more than N1 allows with {gpus}x {accelerator} (at most {limit.max_vcpus})",
                )
            if stated.memory_mib > limit.max_memory_mib:
                raise GpuCombinationError(
                    "shape.memory_gib",
                    f"shape.memory_gib {stated.memory_gib:g} is more than N1 allows with {gpus}x {accelerator} (at most {_gib(limit.max_memory_mib)} GiB)",
                )
    built_in = family != "n1"
    shape = GcpMachineShape(machine_type, stated.vcpus, stated.memory_mib, accelerator if built_in else None, gpus if built_in else 0)
    return shape, gpus


def gcp_cpu_shape(machine_type: str, stated: MachineShapeArgs | None) -> GcpMachineShape:
    """The machine of a GKE CPU pool (the system pool): a CPU type of the catalog, or the shape
    stated for a type it does not know. Raises GpuCombinationError naming the key."""
    known = GCP_MACHINE_SHAPES.get(machine_type)
    examples = ", ".join(sorted(n for n, m in GCP_MACHINE_SHAPES.items() if m.accelerator is None and n.startswith("e2-"))[:6])
    if known is not None and known.accelerator is not None:
        raise GpuCombinationError(
            "machine_type",
            f"{machine_type} is a GPU machine type ({known.accelerator}); the system pool runs controllers: use a CPU machine type such as {examples}",
        )
    if stated is not None and stated.gpus:
        raise GpuCombinationError("shape.gpus", f"shape.gpus {stated.gpus} contradicts a CPU pool (it runs controllers); leave it unset or 0")
    if stated is not None and stated.gpu_type is not None:
        raise GpuCombinationError("shape.gpu_type", f"shape.gpu_type {stated.gpu_type} contradicts a CPU pool (it runs controllers); leave it unset")
    if known is not None:
        if stated is not None:
            _agrees_with_catalog(machine_type, known.vcpus, known.memory_mib, stated)
        return known
    if stated is None:
        raise GpuCombinationError(
            "machine_type",
            f"machine type {machine_type!r} is not in the catalog; use a CPU machine type such as {examples}, or state its shape (shape: vcpus, memory_gib)",
        )
    _check_gcp_name(machine_type)
    _agrees_with_name(machine_type, stated, 0, "shape.gpus")
    return GcpMachineShape(machine_type, stated.vcpus, stated.memory_mib)
