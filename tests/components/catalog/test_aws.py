"""The AWS instance catalog (components/catalog/aws.py): each type's shape, quota family, accelerator label and
max pods, one shape per node group, and the shape stated for a type the catalog does not know."""

from __future__ import annotations

import pytest

from gpu_platform.components.catalog.aws import AWS_INSTANCE_TYPES, AwsInstanceType, aws_instance_type, aws_shape, check_one_shape
from gpu_platform.components.catalog.base import GpuCombinationError
from gpu_platform.components.pools.shapes import MachineShapeArgs


def test_a_row_knows_its_shape_quota_label_and_max_pods() -> None:
    p3 = AWS_INSTANCE_TYPES["p3.8xlarge"]
    assert (p3.vcpus, p3.memory_mib, p3.gpu, p3.gpu_count) == (32, 249856, "V100", 4)
    assert (p3.family, p3.quota_family, p3.accelerator_label, p3.eks_max_pods) == ("p3", "P", "nvidia-tesla-v100", 234)
    g4 = AWS_INSTANCE_TYPES["g4dn.xlarge"]
    assert (g4.quota_family, g4.accelerator_label, g4.eks_max_pods) == ("G", "nvidia-tesla-t4", 29)
    cpu = AWS_INSTANCE_TYPES["m6i.2xlarge"]
    assert (cpu.quota_family, cpu.accelerator_label) == (None, None)
    assert p3.describe() == "p3.8xlarge (32 vCPUs, 244 GiB, 4x V100)" and cpu.describe() == "m6i.2xlarge (8 vCPUs, 32 GiB)"


def test_an_unknown_gpu_model_gets_an_nvidia_label() -> None:
    assert AwsInstanceType("p5e.48xlarge", 192, 2 * 1024**2, "H200", 8).accelerator_label == "nvidia-h200"


def test_fails_when_a_type_is_unknown_or_of_the_wrong_kind() -> None:
    assert aws_instance_type("g4dn.xlarge", gpu=True).gpu == "T4"
    with pytest.raises(ValueError, match=r"^'m6i.2xlarge' is not a known GPU instance type; use one of .*g4dn.xlarge"):
        aws_instance_type("m6i.2xlarge", gpu=True)
    with pytest.raises(ValueError, match="or state the shape"):
        aws_instance_type("x9.huge")


def test_a_node_group_s_types_share_one_shape() -> None:
    check_one_shape(["p3.2xlarge"], gpu=True)
    with pytest.raises(ValueError) as info:
        check_one_shape(["g4dn.xlarge", "g4dn.2xlarge"], gpu=True)
    assert str(info.value) == (
        "instance types of one node group must share one shape, or the autoscaler's node template is wrong; "
        "g4dn.2xlarge (8 vCPUs, 32 GiB, 1x T4) differs from g4dn.xlarge (4 vCPUs, 16 GiB, 1x T4)"
    )


def test_a_stated_shape_stands_for_a_type_the_catalog_lacks() -> None:
    stated = MachineShapeArgs(vcpus=192, memory_gib=2048, gpus=8, gpu_type="H200")
    shape = aws_shape(["p5e.48xlarge"], stated, gpu=True)
    assert (shape.name, shape.vcpus, shape.memory_mib, shape.gpu, shape.gpu_count) == ("p5e.48xlarge", 192, 2048 * 1024, "H200", 8)
    assert aws_shape(["p3.2xlarge"], None, gpu=True) is AWS_INSTANCE_TYPES["p3.2xlarge"]


@pytest.mark.parametrize(
    ("names", "stated", "gpu", "key", "message"),
    [
        (["p5e.48xlarge"], {"vcpus": 192, "memory_gib": 2048}, True, "shape.gpus", "a GPU class needs shape.gpus"),
        (["p5e.48xlarge"], {"vcpus": 192, "memory_gib": 2048, "gpus": 8}, True, "shape.gpu_type", "a GPU class needs shape.gpu_type"),
        (["p3.2xlarge"], {"vcpus": 4, "memory_gib": 61, "gpus": 1, "gpu_type": "V100"}, True, "shape.vcpus", "shape.vcpus 4 contradicts the catalog"),
        (["big_box"], {"vcpus": 8, "memory_gib": 32, "gpus": 1, "gpu_type": "T4"}, True, "instance_types", "'big_box' is not an EC2 instance type name"),
        (["m6i.2xlarge"], {"vcpus": 8, "memory_gib": 32, "gpus": 1}, False, "shape.gpus", "shape.gpus 1 contradicts a CPU node group"),
        (["g4dn.xlarge"], {"vcpus": 4, "memory_gib": 16, "gpus": 9, "gpu_type": "T4"}, True, "shape.gpus", "shape.gpus 9 is more GPUs than one instance"),
    ],
)
def test_fails_when_a_stated_shape_contradicts_itself_or_the_catalog(names: list[str], stated: dict[str, object], gpu: bool, key: str, message: str) -> None:
    with pytest.raises(GpuCombinationError) as info:
        aws_shape(names, MachineShapeArgs.model_validate(stated), gpu=gpu)
    assert info.value.field == key and info.value.message.startswith(message)
