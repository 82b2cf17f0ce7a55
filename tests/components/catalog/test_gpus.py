"""The GPU catalog: facts the validators rely on."""

from __future__ import annotations

import pytest

from gpu_platform.components.catalog.gpus import (
    GCP_ACCELERATORS,
    GCP_MACHINE_SHAPES,
    GpuCombinationError,
    allowed_accelerator_counts,
    check_gcp_gpu,
    machine_types_for,
)


@pytest.mark.parametrize(
    ("machine_type", "accelerator", "counts"),
    [
        ("n1-standard-4", "nvidia-tesla-t4", [1, 2, 4]),
        ("n1-standard-64", "nvidia-tesla-t4", [4]),  # > 48 vCPUs needs 4 T4s
        ("n1-standard-16", "nvidia-tesla-v100", [2, 4, 8]),  # 1 V100 allows at most 12 vCPUs
        ("n1-standard-32", "nvidia-tesla-p4", [2, 4]),
        ("n1-standard-96", "nvidia-tesla-v100", [8]),
        ("n1-highmem-32", "nvidia-tesla-p100", [2, 4]),  # 208 GB: 1 P100 allows at most 104 GB
        ("a2-highgpu-2g", "nvidia-tesla-a100", [2]),
        ("a2-megagpu-16g", "nvidia-tesla-a100", [16]),
        ("a2-ultragpu-4g", "nvidia-a100-80gb", [4]),
        ("a3-highgpu-8g", "nvidia-h100-80gb", [8]),
        ("a3-megagpu-8g", "nvidia-h100-mega-80gb", [8]),
        ("g2-standard-24", "nvidia-l4", [2]),
        ("g2-standard-32", "nvidia-l4", [1]),
        ("a2-highgpu-2g", "nvidia-tesla-t4", []),
        ("e2-standard-4", "nvidia-tesla-t4", []),
    ],
)
def test_allowed_counts(machine_type: str, accelerator: str, counts: list[int]) -> None:
    assert allowed_accelerator_counts(machine_type, accelerator) == counts


def test_seed_pool_is_valid() -> None:
    assert check_gcp_gpu("n1-standard-4", "nvidia-tesla-t4", 2) == 2


def test_fixed_count_machine_types_need_no_count() -> None:
    assert check_gcp_gpu("a2-highgpu-4g", "nvidia-tesla-a100", None) == 4
    assert check_gcp_gpu("g2-standard-48", "nvidia-l4", None) == 4


@pytest.mark.parametrize(
    ("machine_type", "accelerator", "count", "field", "message"),
    [
        ("n1-standard-4", "nvidia-tesla-t4", 3, "accelerator_count", "accelerator_count 3 is not offered for nvidia-tesla-t4; use 1, 2 or 4"),
        ("a2-highgpu-2g", "nvidia-tesla-t4", 2, "accelerator_type", "does not run on a2-highgpu-2g"),
        ("n1-standard-4", "nvidia-tesla-t4", None, "accelerator_count", "accelerator_count is required"),
        ("a2-highgpu-1g", "nvidia-tesla-a100", 2, "accelerator_count", "fixes 1x nvidia-tesla-a100"),
        ("n1-standard-16", "nvidia-tesla-v100", 1, "machine_type", "too large for 1x nvidia-tesla-v100"),
        ("e2-standard-4", "nvidia-tesla-t4", 1, "machine_type", "cannot carry nvidia-tesla-t4"),
        ("n1-standard-4", "nvidia-tesla-k80", 1, "accelerator_type", "not a known GKE accelerator"),
        ("n9-giant-4", "nvidia-tesla-t4", 1, "machine_type", "not a known GPU host"),
    ],
)
def test_fails_when_combination_is_not_offered(machine_type: str, accelerator: str, count: int | None, field: str, message: str) -> None:
    with pytest.raises(GpuCombinationError) as info:
        check_gcp_gpu(machine_type, accelerator, count)
    assert info.value.field == field
    assert message in info.value.message


def test_every_gpu_machine_type_names_a_known_accelerator() -> None:
    for shape in GCP_MACHINE_SHAPES.values():
        if shape.accelerator is not None:
            assert shape.accelerator in GCP_ACCELERATORS, shape.name
            assert shape.gpu_count >= 1
            assert GCP_ACCELERATORS[shape.accelerator].machine_family == shape.family


def test_every_accelerator_has_a_host() -> None:
    for name in GCP_ACCELERATORS:
        assert machine_types_for(name), name


def test_mig_is_offered_on_a100_and_h100_only() -> None:
    with_mig = {name for name, acc in GCP_ACCELERATORS.items() if acc.mig_partitions}
    assert with_mig == {"nvidia-tesla-a100", "nvidia-a100-80gb", "nvidia-h100-80gb", "nvidia-h100-mega-80gb"}
    assert "1g.5gb" in GCP_ACCELERATORS["nvidia-tesla-a100"].mig_partitions


def test_machine_shapes_are_exact_integers() -> None:
    assert GCP_MACHINE_SHAPES["n1-standard-4"].memory_mib == 15 * 1024
    assert GCP_MACHINE_SHAPES["n1-standard-1"].memory_mib == 3840
    assert GCP_MACHINE_SHAPES["a2-highgpu-1g"].memory_mib == 85 * 1024
    assert all(isinstance(s.memory_mib, int) for s in GCP_MACHINE_SHAPES.values())


# --- AWS ---------------------------------------------------------------------------------------


def test_aws_rows_match_what_ec2_reports() -> None:
    """Every catalog row against the DescribeInstanceTypes data moto ships (recorded from EC2).
    moto 5.2's data has no p3 types (the seed's); their rows follow the EC2 documentation."""
    import boto3
    from moto import mock_aws

    from gpu_platform.components.catalog.gpus import AWS_ENI_LIMITS, AWS_INSTANCE_TYPES

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        names = sorted(AWS_INSTANCE_TYPES)
        reported = {}
        for name in names:
            try:
                (item,) = ec2.describe_instance_types(InstanceTypes=[name])["InstanceTypes"]
            except ec2.exceptions.ClientError:
                continue
            reported[name] = item
    assert set(names) - set(reported) == {"p3.2xlarge", "p3.8xlarge", "p3.16xlarge"}
    for name, item in reported.items():
        row = AWS_INSTANCE_TYPES[name]
        gpus = (item.get("GpuInfo") or {}).get("Gpus") or [{}]
        assert (row.vcpus, row.memory_mib) == (item["VCpuInfo"]["DefaultVCpus"], item["MemoryInfo"]["SizeInMiB"]), name
        assert (row.gpu, row.gpu_count, row.gpu_memory_mib) == (
            gpus[0].get("Name"),
            gpus[0].get("Count", 0),
            (gpus[0].get("MemoryInfo") or {}).get("SizeInMiB", 0),
        ), name
        network = item["NetworkInfo"]
        default_card = next(c for c in network["NetworkCards"] if c["NetworkCardIndex"] == network.get("DefaultNetworkCardIndex", 0))
        assert AWS_ENI_LIMITS[name] == (default_card["MaximumNetworkInterfaces"], network["Ipv4AddressesPerInterface"]), name


def test_eks_max_pods_follow_the_eni_formula() -> None:
    """ENIs x (IPv4 per ENI - 1) + 2, as amazon-eks-ami's eni-max-pods.txt lists them."""
    from gpu_platform.components.catalog.gpus import AWS_ENI_LIMITS, AWS_INSTANCE_TYPES, aws_instance_type

    assert set(AWS_ENI_LIMITS) == set(AWS_INSTANCE_TYPES), "every catalog type has its network limits"
    known = {
        "g4dn.xlarge": 29,
        "g4dn.12xlarge": 234,
        "g5.xlarge": 58,
        "g5.48xlarge": 345,
        "p3.2xlarge": 58,
        "p3.8xlarge": 234,
        "p3.16xlarge": 234,
        "p4d.24xlarge": 737,
        "p5.48xlarge": 100,
        "m5.large": 29,
        "t3.medium": 17,
    }
    assert {name: aws_instance_type(name).eks_max_pods for name in known} == known


def test_aws_shapes_and_quota_families() -> None:
    from gpu_platform.components.catalog.gpus import aws_instance_type

    assert aws_instance_type("g4dn.xlarge").quota_family == "G"
    assert aws_instance_type("p3.8xlarge").quota_family == "P"
    assert aws_instance_type("m6i.large").quota_family is None
    assert aws_instance_type("g4dn.xlarge").same_shape(aws_instance_type("g4dn.xlarge"))
    assert not aws_instance_type("g4dn.xlarge").same_shape(aws_instance_type("g5.xlarge"))  # same size, other GPU
    assert aws_instance_type("p3.2xlarge").accelerator_label == "nvidia-tesla-v100"
    with pytest.raises(ValueError, match="'m6i.large' is not a known GPU instance type"):
        aws_instance_type("m6i.large", gpu=True)
