"""SharedDatasetsArgs and its parts: shared datasets for tenants, the same YAML on both clouds.

A dataset is a bucket (S3 on aws, Cloud Storage on gcp), created by the stack or existing, read-only
or read-write, mounted at one path by the tenants it names (Dask tenants and Kubeflow profiles). On
EKS the Kubeflow-on-EKS guide's FSx for Lustre file system sits in front of the bucket (linked by a
data repository association); on GKE the Cloud Storage FUSE CSI driver mounts the bucket itself.
What a tenant's pods add to mount it is a ``DatasetMount`` (``SharedDatasetsArgs.tenant_mounts``).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.kube import DnsLabel
from gpu_platform.components.core.models import ARGS_CONFIG, check_unique, field_error, first_repeat
from gpu_platform.components.core.numbers import Int

__all__ = [
    "FSX_CSI_ADDON",
    "FSX_CSI_DRIVER",
    "FSX_CSI_SERVICE_ACCOUNT",
    "FSX_THROUGHPUTS",
    "GCSFUSE_CSI_DRIVER",
    "LUSTRE_PORTS",
    "BucketProblem",
    "DatasetAccess",
    "DatasetArgs",
    "DatasetBucketArgs",
    "DatasetMount",
    "DatasetMountArgs",
    "FsxDeploymentType",
    "FsxLustreArgs",
    "GcsFuseArgs",
    "SharedDatasetsArgs",
    "bucket_name_problem",
    "mount_path_problem",
]

FSX_CSI_DRIVER = "fsx.csi.aws.com"
"""The FSx for Lustre CSI driver's name (a PersistentVolume's csi.driver)."""
FSX_CSI_ADDON = "aws-fsx-csi-driver"
"""The EKS add-on that installs the FSx for Lustre CSI driver."""
FSX_CSI_SERVICE_ACCOUNT = "fsx-csi-controller-sa"
"""The add-on's controller service account in kube-system (its IRSA role's subject)."""
GCSFUSE_CSI_DRIVER = "gcsfuse.csi.storage.gke.io"
"""The Cloud Storage FUSE CSI driver's name (GKE add-on gcsFuseCsiDriverConfig)."""
LUSTRE_PORTS = ((988, 988), (1018, 1023))
"""The TCP port ranges Lustre clients and servers talk on (FSx for Lustre's file system access control)."""


class DatasetAccess(StrEnum):
    """How a dataset is mounted."""

    READ_ONLY = "read_only"
    """Tenants read it (claims ReadOnlyMany; on EKS changes in the bucket are imported, nothing is exported)."""
    READ_WRITE = "read_write"
    """Tenants read and write it (claims ReadWriteMany; on EKS changes flow both ways)."""

    @property
    def access_mode(self) -> str:
        """The PersistentVolume access mode."""
        return "ReadOnlyMany" if self is DatasetAccess.READ_ONLY else "ReadWriteMany"


class FsxDeploymentType(StrEnum):
    """The FSx for Lustre deployment types a dataset may use."""

    PERSISTENT_2 = "PERSISTENT_2"
    """Replicated storage, a per-unit throughput, a customer KMS key, and the bucket linked by a data repository association."""
    SCRATCH_2 = "SCRATCH_2"
    """Unreplicated, cheaper; the bucket linked by the file system's own import and export paths (no association)."""


FSX_THROUGHPUTS: dict[FsxDeploymentType, tuple[int, ...]] = {
    FsxDeploymentType.PERSISTENT_2: (125, 250, 500, 1000),
    FsxDeploymentType.SCRATCH_2: (),
}
"""Per-unit storage throughput (MB/s/TiB) each deployment type takes (SCRATCH_2: none, it has a fixed 200)."""

KMS_KEY_PATTERN = r"^(arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/)?(mrk-[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$"
"""A KMS key as FSx's KmsKeyId takes it: a key ARN or a key id (a UUID, or mrk-<32 hex> for a multi-Region key)."""

_S3_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_S3_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_S3_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
_GCS_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")


def _ip_like(name: str) -> bool:
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return False
    return True


def bucket_name_problem(cloud: Cloud, name: str) -> str | None:
    """Why ``name`` is not a valid bucket name on ``cloud`` (S3's or Cloud Storage's naming rules), or None."""
    if cloud is Cloud.AWS:
        if not _S3_NAME.match(name):
            return "an S3 bucket name is 3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit"
        if ".." in name or _ip_like(name):
            return "an S3 bucket name has no two adjacent dots and is not an IP address"
        if name.startswith(_S3_RESERVED_PREFIXES) or name.endswith(_S3_RESERVED_SUFFIXES):
            return f"S3 reserves the prefixes {', '.join(_S3_RESERVED_PREFIXES)} and the suffixes {', '.join(_S3_RESERVED_SUFFIXES)}"
        return None
    if not _GCS_NAME.match(name):
        return "a Cloud Storage bucket name is 3 to 222 lowercase letters, digits, dots, hyphens and underscores, starting and ending with a letter or digit"
    if any(len(part) > 63 or not part for part in name.split(".")) or _ip_like(name):
        return "a Cloud Storage bucket name has dot-separated parts of 1 to 63 characters and is not an IP address"
    if name.startswith("goog") or "google" in name:
        return "a Cloud Storage bucket name may not start with goog nor contain google"
    return None


CLAIM_PREFIX = "dataset-"
"""What a dataset's claim, pod volume and PodDefault label name put before the dataset's name."""
NAME_MAX = 63 - len(CLAIM_PREFIX)
"""The longest dataset name: dataset-<name> is a pod volume's name and a label key's name part, DNS labels of at most 63."""
SYSTEM_PATHS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/run", "/sbin", "/sys", "/usr", "/var/run")
"""Where a dataset may not be mounted (nor under): the container's system directories, and among them the
platform's own mounts (components/dask/args.py CLUSTER_SPEC_DIR /etc/gpu-platform/dask, Jupyter's config
under /etc/jupyter), which a dataset mounted there would hide."""


def mount_path_problem(path: str) -> str | None:
    """Why ``path`` may not be where a dataset is mounted, or None: an absolute path of plain segments (no
    ``.``, ``..`` or empty segment: the kubelet refuses ``..`` in a mountPath), not / and not over or under
    a system directory (SYSTEM_PATHS)."""
    segments = path.split("/")[1:]
    if any(s in ("", ".", "..") for s in segments):
        return f"mount_path {path} has an empty, '.' or '..' segment; write the plain absolute path (e.g. /datasets/reference)"
    for system in SYSTEM_PATHS:
        if path == system or path.startswith(system + "/"):
            return f"mount_path {path} is over {system}, the container's own (the platform mounts its config under /etc); use a path of its own such as /datasets/<name>"
    return None


BucketProblem = tuple[tuple[str | int, ...], str, Any]
"""One problem of a dataset (key path under datasets, what is wrong and the fix, the value received)."""


class DatasetBucketArgs(BaseModel):
    """The bucket that holds a dataset: S3 on aws, Cloud Storage on gcp."""

    model_config = ARGS_CONFIG

    name: str = Field(min_length=3, max_length=222)
    """The bucket's name (S3's or Cloud Storage's naming rules, checked for the stack's cloud). Required."""
    create: bool = True
    """true: the stack creates the bucket (encrypted, public access blocked, protected by deletion_protection); false: an existing bucket, by name. Default: true."""


class DatasetMountArgs(BaseModel):
    """One tenant that mounts a dataset (a Dask tenant or a Kubeflow profile, by name)."""

    model_config = ARGS_CONFIG

    tenant: DnsLabel
    """The tenant's name (its namespace). Required."""
    access: DatasetAccess | None = None
    """read_only or read_write for this tenant; read_write only on a read_write dataset. Default: the dataset's access."""


class FsxLustreArgs(BaseModel):
    """EKS: the FSx for Lustre file system in front of a dataset's S3 bucket (the Kubeflow-on-EKS guide's shared dataset)."""

    model_config = ARGS_CONFIG

    deployment_type: FsxDeploymentType = FsxDeploymentType.PERSISTENT_2
    """PERSISTENT_2 or SCRATCH_2. Default: PERSISTENT_2."""
    per_unit_storage_throughput: Int | None = None
    """MB/s per TiB of storage: 125, 250, 500 or 1000 on PERSISTENT_2; none on SCRATCH_2 (fixed). Default: 125 on PERSISTENT_2, none on SCRATCH_2."""
    storage_capacity_gib: Int = Field(default=1200, ge=1200, le=1_000_800)
    """Storage in GiB: 1200, or a multiple of 2400 (SSD PERSISTENT_2 and SCRATCH_2). Default: 1200."""
    kms_key_id: str | None = None
    """PERSISTENT_2: the KMS key that encrypts the file system at rest, by key ARN (arn:aws:kms:<region>:<account>:key/<id>) or key id (a UUID, or mrk-... for a multi-Region key); a wildcard such as "*" or an alias is refused; none on SCRATCH_2 (always encrypted with an AWS-owned key). Default: none (the component creates a key with rotation on PERSISTENT_2)."""

    @field_validator("kms_key_id")
    @classmethod
    def _a_key(cls, value: str | None) -> str | None:
        if value is not None and not re.match(KMS_KEY_PATTERN, value):
            raise ValueError(
                "kms_key_id must name one KMS key: its ARN (arn:aws:kms:<region>:<account>:key/<key id>) or its key id "
                "(a UUID, or mrk-<32 hex> for a multi-Region key); a wildcard or an alias names no key FSx can encrypt with"
            )
        return value

    @model_validator(mode="after")
    def _valid_for_type(self) -> FsxLustreArgs:
        allowed = FSX_THROUGHPUTS[self.deployment_type]
        kind = self.deployment_type.value
        if self.per_unit_storage_throughput is not None and self.per_unit_storage_throughput not in allowed:
            fix = f"use one of {', '.join(map(str, allowed))}" if allowed else "remove it (scratch throughput is fixed)"
            raise field_error(
                "FsxLustreArgs",
                ("per_unit_storage_throughput",),
                f"per_unit_storage_throughput {self.per_unit_storage_throughput} is not offered on {kind}; {fix}",
                self.per_unit_storage_throughput,
            )
        size = self.storage_capacity_gib
        if size != 1200 and size % 2400:
            lower = max(2400, size // 2400 * 2400)
            raise field_error(
                "FsxLustreArgs",
                ("storage_capacity_gib",),
                f"storage_capacity_gib {size} is not offered on {kind}; use 1200 or a multiple of 2400 (e.g. {lower} or {lower + 2400})",
                size,
            )
        if self.kms_key_id is not None and self.deployment_type is FsxDeploymentType.SCRATCH_2:
            raise field_error(
                "FsxLustreArgs",
                ("kms_key_id",),
                "kms_key_id applies to PERSISTENT_2 only (SCRATCH_2 is encrypted with an AWS-owned key); remove it",
                self.kms_key_id,
            )
        return self

    @property
    def throughput(self) -> int | None:
        """The per-unit throughput the file system gets (the default on PERSISTENT_2)."""
        if self.per_unit_storage_throughput is not None:
            return self.per_unit_storage_throughput
        allowed = FSX_THROUGHPUTS[self.deployment_type]
        return allowed[0] if allowed else None


class GcsFuseArgs(BaseModel):
    """GKE: how the Cloud Storage FUSE CSI driver mounts a dataset's bucket."""

    model_config = ARGS_CONFIG

    mount_options: list[str] = Field(default_factory=lambda: ["implicit-dirs"])
    """Cloud Storage FUSE mount options of the PersistentVolume (implicit-dirs shows folders made by other tools). Default: [implicit-dirs]."""

    @field_validator("mount_options")
    @classmethod
    def _no_spaces(cls, value: list[str]) -> list[str]:
        for option in value:
            if not option or any(c.isspace() for c in option):
                raise ValueError(f"mount option {option!r} must be one non-empty word such as implicit-dirs or uid=1001")
        return value


@dataclass(frozen=True)
class DatasetMount:
    """What a tenant's pod adds to mount one dataset: a volume from the claim, and a mount."""

    dataset: str
    """The dataset's name."""
    claim: str
    """The PersistentVolumeClaim in the tenant's namespace."""
    mount_path: str
    """Where containers see it."""
    read_only: bool
    """Mounted read-only."""
    gcsfuse: bool
    """The pod needs the gke-gcsfuse/volumes annotation (GKE's Cloud Storage FUSE)."""

    @property
    def volume(self) -> str:
        """The pod's volume name."""
        return f"dataset-{self.dataset}"


def _mount_list(value: Any) -> Any:
    """A tenant may be given by name alone: ``[team-a, {tenant: team-b, access: read_write}]``."""
    if isinstance(value, list):
        return [{"tenant": v} if isinstance(v, str) else v for v in value]
    return value


class DatasetArgs(BaseModel):
    """One shared dataset: a bucket, how it is mounted and by whom."""

    model_config = ARGS_CONFIG

    name: DnsLabel
    """The dataset's name: its claims are dataset-<name> in each tenant's namespace. Required."""
    bucket: DatasetBucketArgs
    """The bucket that holds it. Required."""
    access: DatasetAccess = DatasetAccess.READ_ONLY
    """read_only or read_write. Default: read_only."""
    tenants: list[DatasetMountArgs] = Field(min_length=1)
    """The tenants that mount it (Dask tenants and Kubeflow profiles, by name; a name alone or {tenant, access}). Required."""
    mount_path: str | None = Field(default=None, pattern=r"^/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$")
    """Where tenants' containers see it (an absolute path). Default: /datasets/<name>."""
    fsx: FsxLustreArgs | None = None
    """EKS only: the FSx for Lustre file system in front of the bucket. Default: none (FsxLustreArgs' defaults on aws); refused on gcp."""
    gcs_fuse: GcsFuseArgs | None = None
    """GKE only: the Cloud Storage FUSE mount. Default: none (GcsFuseArgs' defaults on gcp); refused on aws."""
    deletion_protection: bool = True
    """Protect the bucket the stack creates and the FSx file system (Pulumi protect; the bucket is never force-destroyed). Default: true."""

    @field_validator("name")
    @classmethod
    def _short_enough(cls, value: str) -> str:
        if len(value) > NAME_MAX:
            raise ValueError(
                f"dataset name of {len(value)} characters makes the claim and pod volume {CLAIM_PREFIX}<name> "
                f"{len(value) + len(CLAIM_PREFIX)} characters, more than a DNS label's 63; use at most {NAME_MAX}"
            )
        return value

    @field_validator("mount_path")
    @classmethod
    def _plain_path(cls, value: str | None) -> str | None:
        if value is not None and (problem := mount_path_problem(value)):
            raise ValueError(problem)
        return value

    @field_validator("tenants", mode="before")
    @classmethod
    def _tenant_names(cls, value: Any) -> Any:
        return _mount_list(value)

    @field_validator("tenants")
    @classmethod
    def _distinct_tenants(cls, value: list[DatasetMountArgs]) -> list[DatasetMountArgs]:
        check_unique([m.tenant for m in value], "tenants", "a tenant", "each tenant mounts a dataset once")
        return value

    @model_validator(mode="after")
    def _mounts(self) -> DatasetArgs:
        for i, mount in enumerate(self.tenants):
            if mount.access is DatasetAccess.READ_WRITE and self.access is DatasetAccess.READ_ONLY:
                raise field_error(
                    "DatasetArgs",
                    ("tenants", i, "access"),
                    f"tenant {mount.tenant} mounts dataset {self.name} read_write, but the dataset is read_only; "
                    "make the dataset read_write or mount it read_only",
                    mount.access.value,
                )
        return self

    @property
    def path(self) -> str:
        """Where tenants see it."""
        return self.mount_path or f"/datasets/{self.name}"

    @property
    def claim(self) -> str:
        """The claim's name in each tenant namespace."""
        return f"{CLAIM_PREFIX}{self.name}"

    def volume_name(self, tenant: str) -> str:
        """The PersistentVolume of ``tenant``'s mount (cluster-scoped: one per tenant, each pre-bound to its claim)."""
        return f"{tenant}-{self.claim}"

    def tenant_access(self, tenant: str) -> DatasetAccess:
        """How ``tenant`` mounts it."""
        mount = next(m for m in self.tenants if m.tenant == tenant)
        return mount.access or self.access

    def fsx_settings(self) -> FsxLustreArgs:
        """The FSx file system's settings (the defaults when not given)."""
        return self.fsx or FsxLustreArgs()

    def gcs_fuse_settings(self) -> GcsFuseArgs:
        """The Cloud Storage FUSE settings (the defaults when not given)."""
        return self.gcs_fuse or GcsFuseArgs()


class SharedDatasetsArgs(BaseModel):
    """Inputs of SharedDatasets: the datasets, and the EKS add-on version."""

    model_config = ARGS_CONFIG

    datasets: list[DatasetArgs] = Field(default_factory=list)
    """The shared datasets. Default: []."""
    fsx_csi_driver_version: str | None = Field(default=None, pattern=r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$")
    """EKS: the aws-fsx-csi-driver add-on version (e.g. v1.9.0-eksbuild.1). Default: none (EKS's default for the cluster's version)."""

    @field_validator("datasets")
    @classmethod
    def _distinct(cls, value: list[DatasetArgs]) -> list[DatasetArgs]:
        if (i := first_repeat([d.name for d in value])) is not None:
            raise ValueError(f"dataset name {value[i].name} is used twice; give each dataset its own name")
        if (i := first_repeat([d.bucket.name for d in value])) is not None:
            raise ValueError(f"bucket {value[i].bucket.name} backs two datasets; one dataset per bucket")
        return value

    def problems(self, cloud: Cloud, tenants: set[str] | None) -> list[BucketProblem]:
        """What ``cloud`` refuses of these datasets, one per problem: bucket names, the other cloud's
        settings, and (when ``tenants`` is given) tenants that do not exist."""
        found: list[BucketProblem] = self._composed_name_problems()
        for i, dataset in enumerate(self.datasets):
            if problem := bucket_name_problem(cloud, dataset.bucket.name):
                found.append(((i, "bucket", "name"), f"{problem} (cloud {cloud.value})", dataset.bucket.name))
            if cloud is Cloud.GCP and dataset.fsx is not None:
                found.append(((i, "fsx"), "fsx is FSx for Lustre on EKS; on gcp the Cloud Storage FUSE driver mounts the bucket: remove it", "set"))
            if cloud is Cloud.AWS and dataset.gcs_fuse is not None:
                found.append(((i, "gcs_fuse"), "gcs_fuse is GKE's Cloud Storage FUSE; on aws FSx for Lustre serves the bucket (fsx): remove it", "set"))
            for j, mount in enumerate(dataset.tenants):
                if tenants is not None and mount.tenant not in tenants:
                    known = ", ".join(sorted(tenants)) or "none"
                    found.append(
                        (
                            (i, "tenants", j),
                            f"dataset {dataset.name} is mounted by tenant {mount.tenant}, which is no Dask tenant nor Kubeflow "
                            f"profile of this stack (tenants: {known}); add it or remove the mount",
                            mount.tenant,
                        )
                    )
        return found

    def _composed_name_problems(self) -> list[BucketProblem]:
        """Names the datasets compose that Kubernetes would refuse together: two mounts making one
        PersistentVolume name (cluster-scoped, <tenant>-dataset-<name>), and two datasets one tenant mounts
        at one path (a pod's mountPaths must differ)."""
        found: list[BucketProblem] = []
        volumes: dict[str, str] = {}
        paths: dict[tuple[str, str], str] = {}
        for i, dataset in enumerate(self.datasets):
            for mount in dataset.tenants:
                volume = dataset.volume_name(mount.tenant)
                if volume in volumes:
                    found.append(
                        (
                            (i, "name"),
                            f"dataset {dataset.name} mounted by {mount.tenant} makes PersistentVolume {volume}, as {volumes[volume]} "
                            "does already; rename one dataset",
                            dataset.name,
                        )
                    )
                volumes.setdefault(volume, f"dataset {dataset.name} of tenant {mount.tenant}")
                where = (mount.tenant, dataset.path)
                if where in paths:
                    found.append(
                        (
                            (i, "mount_path"),
                            f"tenant {mount.tenant} mounts dataset {paths[where]} at {dataset.path} already; give dataset {dataset.name} its own mount_path",
                            dataset.path,
                        )
                    )
                paths.setdefault(where, dataset.name)
        return found

    def tenant_mounts(self, cloud: Cloud) -> dict[str, list[DatasetMount]]:
        """What each tenant's pods mount, by tenant."""
        mounts: dict[str, list[DatasetMount]] = {}
        for dataset in self.datasets:
            for mount in dataset.tenants:
                mounts.setdefault(mount.tenant, []).append(
                    DatasetMount(
                        dataset=dataset.name,
                        claim=dataset.claim,
                        mount_path=dataset.path,
                        read_only=dataset.tenant_access(mount.tenant) is DatasetAccess.READ_ONLY,
                        gcsfuse=cloud is Cloud.GCP,
                    )
                )
        return mounts
