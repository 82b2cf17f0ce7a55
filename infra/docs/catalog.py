"""The machine catalog (docs/reference/catalog.md): every GPU, machine type and instance type the
components know, from `gpu_platform.components.catalog.gpus`."""

from __future__ import annotations

from gpu_platform.infra.docs.markdown import GENERATED

__all__ = ["catalog_reference"]


def _gib(mib: int) -> str:
    return f"{mib / 1024:g}"


def catalog_reference() -> str:
    """The machine catalog the validators and the capacity planner read, as tables."""
    from gpu_platform.components.catalog.gpus import AWS_INSTANCE_TYPES, GCP_ACCELERATORS, GCP_MACHINE_SHAPES

    lines = [
        "# Machine catalog",
        "",
        GENERATED,
        "",
        "The shapes the components know (`gpu_platform.components.catalog.gpus`): pools are checked against them "
        "and `plan-capacity` computes allocatable from them.",
        "",
        "## A type the catalog does not know",
        "",
        "State its shape on the pool or class (`shape`, a `MachineShapeArgs`): the type is then used as stated, "
        "by the validators, the fit checks, `plan-capacity`, the autoscaler's node templates and the policy pack. "
        "A stated shape is refused only where it contradicts itself or the catalog, in one line naming the key:",
        "",
        "- for a type the catalog knows, every stated value must equal the catalog's;",
        "- a GCP name states a size (`c3-standard-8`: 8 vCPUs, `a4-highgpu-8g`: 8 GPUs, `n2-custom-8-32768`: "
        "8 vCPUs and 32768 MiB), and the shape must agree with it (GPUs default to the name's);",
        "- a GPU the catalog knows fits its machines (at most the GPUs one machine carries, N1's vCPU and "
        "memory limits, and its machine family: `nvidia-l4` runs on g2 only);",
        "- on EKS every type of a class shares the shape, and a GPU class states `gpus` and `gpu_type` (the model "
        "as EC2 names it); `gpu-platform preflight` compares the stated shape with what EC2 reports.",
        "",
        "```yaml",
        "gpu_pools:",
        "  - name: b200",
        "    machine_type: a4-highgpu-8g",
        "    accelerator_type: nvidia-b200",
        "    shape: {vcpus: 224, memory_gib: 3968}",
        "    autoscaling: {scope: total, max_nodes: 2}",
        "```",
        "",
        "```yaml",
        "classes:",
        "  - name: h200",
        "    instance_types: [p5en.48xlarge]",
        "    shape: {vcpus: 192, memory_gib: 2048, gpus: 8, gpu_type: H200}",
        "    max_nodes: 2",
        "```",
        "",
        "## GCP accelerators",
        "",
        "| accelerator | GPU | memory (GiB) | machine family | MIG partitions |",
        "| --- | --- | --- | --- | --- |",
    ]
    for a in GCP_ACCELERATORS.values():
        lines.append(f"| `{a.name}` | {a.model} | {a.memory_gib} | {a.machine_family} | {', '.join(a.mig_partitions) or '-'} |")
    lines += ["", "## GCP machine types", "", "| machine type | vCPU | memory (GiB) | built-in GPUs |", "| --- | --- | --- | --- |"]
    for m in sorted(GCP_MACHINE_SHAPES.values(), key=lambda m: (m.family, m.vcpus, m.name)):
        gpus = f"{m.gpu_count}x `{m.accelerator}`" if m.accelerator else "- (N1: attached)" if m.family == "n1" else "-"
        lines.append(f"| `{m.name}` | {m.vcpus} | {_gib(m.memory_mib)} | {gpus} |")
    lines += ["", "## AWS instance types", "", "| instance type | vCPU | memory (GiB) | GPUs |", "| --- | --- | --- | --- |"]
    for t in sorted(AWS_INSTANCE_TYPES.values(), key=lambda t: (t.name.split(".")[0], t.vcpus, t.name)):
        gpus = f"{t.gpu_count}x {t.gpu} ({_gib(t.gpu_memory_mib)} GiB)" if t.gpu else "-"
        lines.append(f"| `{t.name}` | {t.vcpus} | {_gib(t.memory_mib)} | {gpus} |")
    return "\n".join(lines) + "\n"
