"""SharedDatasetsArgs and its parts (components/datasets/args.py): the documented defaults, the FSx and GCS FUSE
settings offered, bucket names by each cloud's rules, and every validator."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.datasets.args import (
    DatasetAccess,
    DatasetArgs,
    DatasetMountArgs,
    FsxDeploymentType,
    FsxLustreArgs,
    GcsFuseArgs,
    SharedDatasetsArgs,
    bucket_name_problem,
)
from gpu_platform.components.gke.args import GpuGkeClusterArgs
from tests.components.datasets.test_shared_datasets import dataset
from tests.factories import gke


def test_dataset_defaults() -> None:
    args = DatasetArgs.model_validate(dataset())
    assert args.access is DatasetAccess.READ_ONLY
    assert args.path == "/datasets/reference" and args.mount_path is None
    assert args.claim == "dataset-reference"
    assert args.bucket.create is True and args.deletion_protection is True
    assert args.fsx is None and args.gcs_fuse is None
    assert SharedDatasetsArgs().datasets == [] and SharedDatasetsArgs().fsx_csi_driver_version is None
    assert GpuGkeClusterArgs.model_validate(gke()).gcs_fuse_csi_driver is False


def test_a_mount_defaults_to_the_datasets_access_and_a_tenant_may_be_given_by_name() -> None:
    args = DatasetArgs.model_validate(dataset(access="read_write", tenants=["team-a", {"tenant": "team-b", "access": "read_only"}]))
    assert args.tenants[0] == DatasetMountArgs(tenant="team-a") and args.tenants[0].access is None
    assert args.tenant_access("team-a") is DatasetAccess.READ_WRITE
    assert args.tenant_access("team-b") is DatasetAccess.READ_ONLY


def test_fsx_defaults_are_persistent_2_at_125_with_1200_gib() -> None:
    fsx = FsxLustreArgs()
    assert fsx.deployment_type is FsxDeploymentType.PERSISTENT_2
    assert fsx.per_unit_storage_throughput is None and fsx.throughput == 125
    assert fsx.storage_capacity_gib == 1200 and fsx.kms_key_id is None
    assert FsxLustreArgs(deployment_type="SCRATCH_2").throughput is None
    assert DatasetArgs.model_validate(dataset()).fsx_settings() == fsx


def test_gcs_fuse_defaults_to_implicit_dirs() -> None:
    assert GcsFuseArgs().mount_options == ["implicit-dirs"]
    assert DatasetArgs.model_validate(dataset()).gcs_fuse_settings().mount_options == ["implicit-dirs"]


def test_mount_path_is_used_when_given() -> None:
    assert DatasetArgs.model_validate(dataset(mount_path="/data/ref")).path == "/data/ref"


@pytest.mark.parametrize(
    ("fsx", "loc", "fragment"),
    [
        (
            {"per_unit_storage_throughput": 200},
            "per_unit_storage_throughput",
            "per_unit_storage_throughput 200 is not offered on PERSISTENT_2; use one of 125, 250, 500, 1000",
        ),
        (
            {"deployment_type": "SCRATCH_2", "per_unit_storage_throughput": 125},
            "per_unit_storage_throughput",
            "not offered on SCRATCH_2; remove it (scratch throughput is fixed)",
        ),
        (
            {"storage_capacity_gib": 3000},
            "storage_capacity_gib",
            "storage_capacity_gib 3000 is not offered on PERSISTENT_2; use 1200 or a multiple of 2400 (e.g. 2400 or 4800)",
        ),
        ({"storage_capacity_gib": 1000}, "storage_capacity_gib", "greater than or equal to 1200"),
        (
            {"deployment_type": "SCRATCH_2", "kms_key_id": "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"},
            "kms_key_id",
            "kms_key_id applies to PERSISTENT_2 only",
        ),
        ({"deployment_type": "PERSISTENT_1"}, "deployment_type", "PERSISTENT_2"),
    ],
)
def test_fails_when_fsx_settings_are_not_offered(fsx: dict[str, Any], loc: str, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        FsxLustreArgs.model_validate(fsx)
    (error,) = info.value.errors()
    assert error["loc"] == (loc,) and fragment in error["msg"]


@pytest.mark.parametrize("capacity", [1200, 2400, 4800, 9600])
def test_fsx_capacity_takes_1200_and_multiples_of_2400(capacity: int) -> None:
    assert FsxLustreArgs(storage_capacity_gib=capacity).storage_capacity_gib == capacity


@pytest.mark.parametrize(
    ("value", "loc", "fragment"),
    [
        (dataset(tenants=["a", "a"]), ("tenants",), "tenants lists a tenant twice (a, a)"),
        (dataset(tenants=[]), ("tenants",), "at least 1 item"),
        (dataset(mount_path="data"), ("mount_path",), "should match pattern"),
        (dataset(name="Ref"), ("name",), "is not a DNS label"),
        (dataset(gcs_fuse={"mount_options": ["implicit-dirs uid=1"]}), ("gcs_fuse", "mount_options"), "must be one non-empty word"),
        (
            dataset(access="read_only", tenants=[{"tenant": "a", "access": "read_write"}]),
            ("tenants", 0, "access"),
            "tenant a mounts dataset reference read_write, but the dataset is read_only",
        ),
    ],
)
def test_fails_when_a_dataset_is_wrong(value: dict[str, Any], loc: tuple[Any, ...], fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        DatasetArgs.model_validate(value)
    (error,) = info.value.errors()
    assert error["loc"] == loc and fragment in error["msg"], error


def test_fails_when_two_datasets_share_a_name_or_a_bucket() -> None:
    with pytest.raises(ValidationError, match="dataset name reference is used twice"):
        SharedDatasetsArgs.model_validate({"datasets": [dataset(), dataset(bucket={"name": "other-bucket"})]})
    with pytest.raises(ValidationError, match="bucket acme-reference-data backs two datasets"):
        SharedDatasetsArgs.model_validate({"datasets": [dataset(), dataset(name="other")]})
    with pytest.raises(ValidationError, match="should match pattern"):
        SharedDatasetsArgs.model_validate({"fsx_csi_driver_version": "1.9.0"})
    assert SharedDatasetsArgs(fsx_csi_driver_version="v1.9.0-eksbuild.1").fsx_csi_driver_version == "v1.9.0-eksbuild.1"


@pytest.mark.parametrize(
    ("cloud", "name", "fragment"),
    [
        (Cloud.AWS, "My_Bucket", "an S3 bucket name is 3 to 63 lowercase letters"),
        (Cloud.AWS, "a" * 64, "an S3 bucket name is 3 to 63"),
        (Cloud.AWS, "data..set", "no two adjacent dots"),
        (Cloud.AWS, "192.168.1.1", "not an IP address"),
        (Cloud.AWS, "xn--data", "S3 reserves the prefixes"),
        (Cloud.AWS, "data-s3alias", "S3 reserves the prefixes"),
        (Cloud.AWS, "data_set", "an S3 bucket name is 3 to 63"),
        (Cloud.GCP, "Data", "a Cloud Storage bucket name is 3 to 222"),
        (Cloud.GCP, "goog-data", "may not start with goog"),
        (Cloud.GCP, "my-google-data", "nor contain google"),
        (Cloud.GCP, "a" * 64, "dot-separated parts of 1 to 63"),
    ],
)
def test_bucket_names_follow_their_clouds_rules(cloud: Cloud, name: str, fragment: str) -> None:
    problem = bucket_name_problem(cloud, name)
    assert problem is not None and fragment in problem


@pytest.mark.parametrize(
    ("cloud", "name"),
    [(Cloud.AWS, "acme-reference-data"), (Cloud.AWS, "acme.reference.data"), (Cloud.GCP, "acme_reference-data"), (Cloud.GCP, "acme.reference.data")],
)
def test_valid_bucket_names_pass(cloud: Cloud, name: str) -> None:
    assert bucket_name_problem(cloud, name) is None
