"""SharedDatasets: buckets shared with tenants, mounted the same way on both clouds.

Per dataset, on EKS (the Kubeflow-on-EKS guide's shared dataset): the S3 bucket (created encrypted with
public access blocked, or an existing one), an FSx for Lustre file system in the cluster's private
subnet behind a security group that opens the Lustre ports to the nodes, linked to the bucket (a data
repository association on PERSISTENT_2, import/export paths on SCRATCH_2), and once for the cluster the
FSx CSI driver as the EKS add-on ``aws-fsx-csi-driver`` with its IRSA role (allowed nothing: static volumes need no
AWS call of the driver). On GKE: the Cloud Storage
bucket (created with uniform access and public access prevention enforced, or an existing one) and
Workload Identity grants (roles/storage.objectViewer or objectUser) for each mounting tenant's
Kubernetes service accounts; the Cloud Storage FUSE CSI driver is GKE's add-on
(``GpuGkeClusterArgs.gcs_fuse_csi_driver``). On both: a static PersistentVolume and its claim
``dataset-<name>`` in every mounting tenant's namespace. The tenants' pods mount the claim
(``SharedDatasetsArgs.tenant_mounts`` given to DaskOperator as ``datasets=``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.cluster import CLUSTER_COMPONENTS, ClusterComponent, a_type, on_cluster
from gpu_platform.components.core.models import input_error, input_errors
from gpu_platform.components.datasets.args import (
    FSX_CSI_ADDON,
    FSX_CSI_DRIVER,
    FSX_CSI_SERVICE_ACCOUNT,
    GCSFUSE_CSI_DRIVER,
    LUSTRE_PORTS,
    DatasetAccess,
    DatasetArgs,
    FsxDeploymentType,
    SharedDatasetsArgs,
)
from gpu_platform.components.datasets.resources import (
    GCSFUSE_CAPACITY,
    claim_args,
    csi_source,
    pod_default_label,
    pod_default_spec,
    volume_args,
)
from gpu_platform.components.eks.cluster import EksCluster
from gpu_platform.components.eks.gpu_pools import EksGpuPools
from gpu_platform.components.eks.resources import irsa_role
from gpu_platform.components.gke.cluster import GpuGkeCluster

__all__ = ["DEFAULT_SERVICE_ACCOUNTS", "SharedDatasets", "SharedDatasetsArgs", "workload_identity_member"]

DEFAULT_SERVICE_ACCOUNTS = ("default",)
"""GKE: the Kubernetes service accounts of a tenant granted a bucket when ``service_accounts`` does not
name the tenant (the namespace's default, which pods that name none run as)."""

_S3_EVENTS = ["NEW", "CHANGED", "DELETED"]
_DATASET_TAG = "gpu-platform-dataset"
"""The tag (AWS) and label (GCP) naming the dataset a bucket, file system or security group serves."""


def workload_identity_member(project_number: str, project: str, namespace: str, service_account: str) -> str:
    """GKE Workload Identity: the IAM principal of one Kubernetes service account (no Google service account)."""
    return (
        f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
        f"{project}.svc.id.goog/subject/ns/{namespace}/sa/{service_account}"
    )


class SharedDatasets(pulumi.ComponentResource):
    """Shared datasets: the buckets, FSx for Lustre on EKS, and a volume and claim per mounting tenant."""

    buckets: dict[str, pulumi.Output[str]]
    """Each dataset's bucket name, by dataset."""
    volume_handles: dict[str, pulumi.Output[str]]
    """What each dataset's PersistentVolumes name as volumeHandle (the FSx file system id, or the bucket), by dataset."""
    claims: dict[str, list[str]]
    """Each dataset's claims as namespace/name, by dataset."""

    def __init__(
        self,
        name: str,
        args: SharedDatasetsArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterComponent,
        namespaces: Mapping[str, pulumi.Resource] | None = None,
        service_accounts: Mapping[str, Sequence[str]] | None = None,
        pod_defaults: Collection[str] = (),
    ) -> None:
        """``cluster``: GpuGkeCluster, EksCluster, or the SpotFailoverEksNodeGroups or KarpenterNodePools built with an EksCluster.
        ``namespaces``: every mounting tenant's namespace resource (a Dask tenant's Namespace, a Kubeflow
        Profile), by tenant: claims wait for them. ``service_accounts`` (GKE): the Kubernetes service
        accounts of a tenant whose pods mount its datasets, by tenant. Default: DEFAULT_SERVICE_ACCOUNTS.
        ``pod_defaults``: tenants that are Kubeflow platform profiles: each of their datasets also gets a
        PodDefault (kubeflow.org/v1alpha1) that mounts it into the pods carrying the label
        ``pod_default_label(dataset)`` (notebooks offer it in the UI). Default: none.

        Raises pulumi.InputPropertyError (or InputPropertiesError) before anything is registered when
        a bucket name is not valid on the cluster's cloud, a dataset carries the other cloud's settings,
        or a mounting tenant is not in ``namespaces``."""
        placed = on_cluster(cluster, opts, required=True)
        cloud_cluster = _cloud_cluster(cluster)
        cloud = Cloud.GCP if isinstance(cloud_cluster, GpuGkeCluster) else Cloud.AWS
        namespaces = dict(namespaces or {})
        problems = args.problems(cloud, set(namespaces))
        if problems:
            raise input_errors([(("args", "datasets", *loc), message) for loc, message, _ in problems])
        super().__init__("gpu-platform:shared_datasets:SharedDatasets", name, None, placed.opts)
        self._name = name
        self._pod_defaults = frozenset(pod_defaults)
        self._cloud = cloud
        self.buckets = {}
        self.volume_handles = {}
        self.claims = {}
        if args.datasets and isinstance(cloud_cluster, EksCluster):
            driver = self._fsx_csi_driver(args, cloud_cluster)
            for dataset in args.datasets:
                self._on_eks(dataset, cloud_cluster, namespaces, driver)
        elif args.datasets and isinstance(cloud_cluster, GpuGkeCluster):
            for dataset in args.datasets:
                self._on_gke(dataset, cloud_cluster, namespaces, dict(service_accounts or {}))
        self.register_outputs({"buckets": self.buckets, "volumeHandles": self.volume_handles, "claims": self.claims})

    # --- EKS ------------------------------------------------------------------------------------

    def _fsx_csi_driver(self, args: SharedDatasetsArgs, eks: EksCluster) -> aws.eks.Addon:
        """The FSx CSI driver as the EKS add-on, its controller assuming an IRSA role that is allowed nothing.

        This component makes the file systems (Pulumi) and mounts each with a static PersistentVolume whose
        volumeAttributes carry its DNS and mount names, so the driver calls no AWS API for it: the node plugin
        mounts ``<dnsname>@tcp:/<mountname>`` from those attributes (aws-fsx-csi-driver v1.9.0, the chart
        1.17.0's app: pkg/driver/node.go:108-119), and the controller calls FSx only to create, delete,
        validate and resize volumes it provisions itself (pkg/driver/controller.go:120-344, 392-404, 459-504;
        install.md's AmazonFSxFullAccess is for that dynamic provisioning, which the claims here, with no
        StorageClass and reclaimed by Retain, never ask for). Its one other call, a background ``fsx:DescribeFileSystems`` each minute
        that fills the cache only CreateVolume reads (pkg/cloud/cloud.go:50, 489-503), is refused and logged.
        The role is kept, without a policy, so that the controller never falls back to the node role's
        credentials."""
        name, child = self._name, pulumi.ResourceOptions(parent=self)
        role = irsa_role(
            f"{name}-fsx-csi-role",
            "FSx for Lustre CSI driver (IRSA)",
            eks.oidc_provider_arn,
            eks.oidc_issuer_url,
            "kube-system",
            FSX_CSI_SERVICE_ACCOUNT,
            child,
            tags=self._aws_tags(eks),
        )
        return aws.eks.Addon(
            f"{name}-{FSX_CSI_ADDON}",
            aws.eks.AddonArgs(
                cluster_name=eks.cluster_name,
                region=eks.ref.region,
                addon_name=FSX_CSI_ADDON,
                addon_version=args.fsx_csi_driver_version,
                service_account_role_arn=role.arn,
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="PRESERVE",
                tags=self._aws_tags(eks),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[eks.system_node_group]),
        )

    @staticmethod
    def _aws_tags(eks: EksCluster, dataset: str | None = None) -> pulumi.Output[dict[str, str]]:
        """The cluster's tags (and the dataset's name)."""
        extra = {_DATASET_TAG: dataset} if dataset else {}
        return eks.cluster.tags.apply(lambda tags: {**(tags or {}), **extra})

    def _on_eks(self, dataset: DatasetArgs, eks: EksCluster, namespaces: Mapping[str, pulumi.Resource], driver: aws.eks.Addon) -> None:
        prefix, child = f"{self._name}-{dataset.name}", pulumi.ResourceOptions(parent=self)
        region = eks.ref.region
        tags = self._aws_tags(eks, dataset.name)
        bucket_name, made = self._s3_bucket(prefix, dataset, region, tags)
        fsx = dataset.fsx_settings()
        rw = dataset.access is DatasetAccess.READ_WRITE
        repository = pulumi.Output.concat("s3://", bucket_name)

        sg = aws.ec2.SecurityGroup(
            f"{prefix}-lustre-sg",
            aws.ec2.SecurityGroupArgs(
                description=f"FSx for Lustre of dataset {dataset.name}: Lustre from the cluster's nodes",
                vpc_id=eks.vpc_id,
                region=region,
                ingress=_lustre_rules(aws.ec2.SecurityGroupIngressArgs, eks.cluster_security_group_id),
                egress=_lustre_rules(aws.ec2.SecurityGroupEgressArgs, eks.cluster_security_group_id),
                tags=tags,
            ),
            opts=child,
        )
        for low, high in LUSTRE_PORTS:
            # The clients (nodes, in the cluster security group) take Lustre traffic from the file system.
            aws.vpc.SecurityGroupIngressRule(
                f"{prefix}-lustre-{low}-to-nodes",
                aws.vpc.SecurityGroupIngressRuleArgs(
                    security_group_id=eks.cluster_security_group_id,
                    referenced_security_group_id=sg.id,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    region=region,
                    description=f"Lustre from dataset {dataset.name}'s file system",
                ),
                opts=child,
            )
        kms_key_id: pulumi.Input[str] | None = fsx.kms_key_id
        persistent = fsx.deployment_type is FsxDeploymentType.PERSISTENT_2
        if persistent and kms_key_id is None:
            key = aws.kms.Key(
                f"{prefix}-fsx-key",
                aws.kms.KeyArgs(
                    description=f"Encrypts the FSx for Lustre file system of dataset {dataset.name}",
                    enable_key_rotation=True,
                    deletion_window_in_days=30,
                    region=region,
                    tags=tags,
                ),
                opts=pulumi.ResourceOptions(parent=self, protect=dataset.deletion_protection),
            )
            kms_key_id = key.arn
        file_system = aws.fsx.LustreFileSystem(
            f"{prefix}-fsx",
            aws.fsx.LustreFileSystemArgs(
                storage_capacity=fsx.storage_capacity_gib,
                deployment_type=fsx.deployment_type.value,
                per_unit_storage_throughput=fsx.throughput,
                subnet_ids=eks.private_subnet_ids.apply(lambda ids: ids[0]),  # one subnet: FSx for Lustre is single-AZ
                security_group_ids=[sg.id],
                kms_key_id=kms_key_id if persistent else None,
                file_system_type_version="2.15",
                data_compression_type="LZ4",
                # SCRATCH_2 has no data repository associations: the file system links the bucket itself.
                import_path=None if persistent else repository,
                export_path=None if persistent or not rw else repository,
                auto_import_policy=None if persistent else "NEW_CHANGED_DELETED",
                region=region,
                tags=tags,
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=dataset.deletion_protection, depends_on=made),
        )
        if persistent:
            aws.fsx.DataRepositoryAssociation(
                f"{prefix}-s3-link",
                aws.fsx.DataRepositoryAssociationArgs(
                    file_system_id=file_system.id,
                    file_system_path="/",
                    data_repository_path=repository,
                    batch_import_meta_data_on_create=True,
                    delete_data_in_filesystem=False,
                    s3=aws.fsx.DataRepositoryAssociationS3Args(
                        auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(events=list(_S3_EVENTS)),
                        auto_export_policy=aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(events=list(_S3_EVENTS)) if rw else None,
                    ),
                    region=region,
                    tags=tags,
                ),
                opts=child,
            )
        self.volume_handles[dataset.name] = file_system.id
        capacity = f"{fsx.storage_capacity_gib}Gi"
        for mount in dataset.tenants:
            csi = csi_source(
                FSX_CSI_DRIVER,
                file_system.id,
                {"dnsname": file_system.dns_name, "mountname": file_system.mount_name},
                dataset.tenant_access(mount.tenant),
            )
            self._volume_and_claim(dataset, mount.tenant, csi, capacity, ["flock"], [driver, namespaces[mount.tenant]])

    def _s3_bucket(
        self, prefix: str, dataset: DatasetArgs, region: str, tags: pulumi.Output[dict[str, str]]
    ) -> tuple[pulumi.Output[str], list[pulumi.Resource]]:
        """The dataset's S3 bucket: created (KMS-encrypted, public access blocked, protected), or the existing one's name."""
        if not dataset.bucket.create:
            name = pulumi.Output.from_input(dataset.bucket.name)
            self.buckets[dataset.name] = name
            return name, []
        bucket = aws.s3.Bucket(
            f"{prefix}-bucket",
            aws.s3.BucketArgs(
                bucket=dataset.bucket.name,
                force_destroy=False,
                region=region,
                tags=tags,
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=dataset.deletion_protection),
        )
        encryption = aws.s3.BucketServerSideEncryptionConfiguration(
            f"{prefix}-bucket-encryption",
            aws.s3.BucketServerSideEncryptionConfigurationInitArgs(
                bucket=bucket.bucket,
                region=region,
                rules=[
                    aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                        apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                            sse_algorithm="aws:kms"
                        ),
                        bucket_key_enabled=True,
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        block = aws.s3.BucketPublicAccessBlock(
            f"{prefix}-public-access-block",
            aws.s3.BucketPublicAccessBlockArgs(
                bucket=bucket.bucket,
                block_public_acls=True,
                block_public_policy=True,
                ignore_public_acls=True,
                restrict_public_buckets=True,
                region=region,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.buckets[dataset.name] = bucket.bucket
        return bucket.bucket, [bucket, encryption, block]

    # --- GKE ------------------------------------------------------------------------------------

    def _on_gke(
        self, dataset: DatasetArgs, gke: GpuGkeCluster, namespaces: Mapping[str, pulumi.Resource], service_accounts: Mapping[str, Sequence[str]]
    ) -> None:
        prefix, child = f"{self._name}-{dataset.name}", pulumi.ResourceOptions(parent=self)
        project = gke.cluster.project
        after: list[pulumi.Resource] = [gke.cluster]
        if dataset.bucket.create:
            bucket = gcp.storage.Bucket(
                f"{prefix}-bucket",
                gcp.storage.BucketArgs(
                    name=dataset.bucket.name,
                    project=project,
                    location=gke.cluster.location.apply(_region_of),
                    uniform_bucket_level_access=True,
                    public_access_prevention="enforced",
                    force_destroy=False,
                    labels={_DATASET_TAG: dataset.name},
                ),
                opts=pulumi.ResourceOptions(parent=self, protect=dataset.deletion_protection),
            )
            bucket_name: pulumi.Output[str] = bucket.name
            after.append(bucket)
        else:
            bucket_name = pulumi.Output.from_input(dataset.bucket.name)
        self.buckets[dataset.name] = bucket_name
        self.volume_handles[dataset.name] = bucket_name
        number = gcp.organizations.get_project_output(project_id=project).number
        gcs = dataset.gcs_fuse_settings()
        for mount in dataset.tenants:
            access = dataset.tenant_access(mount.tenant)
            role = "roles/storage.objectViewer" if access is DatasetAccess.READ_ONLY else "roles/storage.objectUser"
            grants = []
            for ksa in service_accounts.get(mount.tenant, DEFAULT_SERVICE_ACCOUNTS):

                def member(v: list[Any], tenant: str = mount.tenant, sa: str = ksa) -> str:
                    return workload_identity_member(str(v[0]), v[1], tenant, sa)

                grants.append(
                    gcp.storage.BucketIAMMember(
                        f"{prefix}-{mount.tenant}-{ksa}-access",
                        gcp.storage.BucketIAMMemberArgs(
                            bucket=bucket_name,
                            role=role,
                            member=pulumi.Output.all(number, project).apply(member),
                        ),
                        opts=child,
                    )
                )
            csi = csi_source(GCSFUSE_CSI_DRIVER, bucket_name, None, access)
            self._volume_and_claim(dataset, mount.tenant, csi, GCSFUSE_CAPACITY, gcs.mount_options, [*after, *grants, namespaces[mount.tenant]])

    # --- both -----------------------------------------------------------------------------------

    def _volume_and_claim(
        self,
        dataset: DatasetArgs,
        tenant: str,
        csi: k8s.core.v1.CSIPersistentVolumeSourceArgs,
        capacity: str,
        mount_options: Sequence[str],
        after: list[pulumi.Resource],
    ) -> None:
        prefix = f"{self._name}-{dataset.name}-{tenant}"
        metadata, spec = volume_args(dataset, tenant, csi, capacity, mount_options)
        volume = k8s.core.v1.PersistentVolume(f"{prefix}-volume", metadata=metadata, spec=spec, opts=pulumi.ResourceOptions(parent=self, depends_on=after))
        metadata, claim_spec = claim_args(dataset, tenant, capacity)
        k8s.core.v1.PersistentVolumeClaim(
            f"{prefix}-claim", metadata=metadata, spec=claim_spec, opts=pulumi.ResourceOptions(parent=self, depends_on=[volume, *after])
        )
        self.claims.setdefault(dataset.name, []).append(f"{tenant}/{dataset.claim}")
        if tenant in self._pod_defaults:
            (mount,) = [m for m in SharedDatasetsArgs(datasets=[dataset]).tenant_mounts(self._cloud)[tenant]]
            k8s.apiextensions.CustomResource(
                f"{prefix}-pod-default",
                api_version="kubeflow.org/v1alpha1",
                kind="PodDefault",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=dataset.claim, namespace=tenant, labels=metadata.labels),
                spec=pod_default_spec(dataset, mount, pod_default_label(dataset)),
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )


def _region_of(location: str) -> str:
    """A GKE location's region, upper-case as Cloud Storage names locations (us-central1-b -> US-CENTRAL1)."""
    parts = location.split("-")
    return "-".join(parts[:2]).upper()


def _cloud_cluster(cluster: object) -> EksCluster | GpuGkeCluster:
    """The cloud's cluster component behind ``cluster`` (an EKS provisioner's GPU pools stand for their EksCluster)."""
    if isinstance(cluster, EksGpuPools):
        # Either EKS provisioner (SpotFailoverEksNodeGroups, KarpenterNodePools) stands for its EksCluster.
        eks = cluster.eks_cluster
        if eks is None:
            kind = type(cluster).__name__
            raise input_error("cluster", f"cluster: build {kind} with cluster=<EksCluster> (not its ref), or pass the EksCluster")
        return eks
    if isinstance(cluster, (EksCluster, GpuGkeCluster)):
        return cluster
    if type(cluster).__name__ == "ExistingCluster":
        raise input_error(
            "cluster",
            "cluster: SharedDatasets makes cloud resources tied to the cluster (FSx for Lustre in its VPC on EKS, Workload Identity "
            "grants in its project on GKE), which only a cluster component the program creates provides; an ExistingCluster has none",
        )
    raise input_error("cluster", f"cluster: expected {CLUSTER_COMPONENTS} (got {a_type(cluster)})")


_Rule = TypeVar("_Rule")


def _lustre_rules(rule: Callable[..., _Rule], nodes: pulumi.Input[str]) -> list[_Rule]:
    """The file system's security-group rules of one direction (``rule``: the ingress or the egress Args, the
    same rule both ways): Lustre's ports, with itself and with the cluster's nodes (security group ``nodes``)."""
    return [rule(protocol="tcp", from_port=low, to_port=high, self=True, security_groups=[nodes], description="Lustre") for low, high in LUSTRE_PORTS]
