"""Shared datasets: the Args (defaults, validators), the stack's refusals (one line each), the component
on both clouds under mocks, and the shipped dev stacks whose Dask workers mount a dataset."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest
import yaml
from pydantic import ValidationError

from gpu_platform.components import DaskOperator, DaskOperatorArgs, EksCluster, GpuGkeCluster, SpotFailoverEksNodeGroups
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.labels import GCSFUSE_VOLUMES_ANNOTATION
from gpu_platform.components.datasets.args import (
    SharedDatasetsArgs,
)
from gpu_platform.components.datasets.shared_datasets import SharedDatasets, workload_identity_member
from gpu_platform.components.gke.args import GpuGkeClusterArgs
from gpu_platform.infra.preview.engine import PLACEHOLDER_ACCOUNT
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from tests.conftest import Engine, settled, settled_tree, shipped_plan
from tests.factories import eks_stack, gke, stack

TENANTS = [
    {"name": "team-a", "gpu_quota": 4, "notebook": {"gpus": 1}},
    {"name": "team-b", "gpu_quota": 4, "shared_cluster": {"min_workers": 0, "max_workers": 2}},
]


def dataset(**overrides: Any) -> dict[str, Any]:
    value: dict[str, Any] = {"name": "reference", "bucket": {"name": "acme-reference-data"}, "tenants": ["team-a"]}
    value.update(overrides)
    return value


def refusal(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate(config)
    return format_validation_error(info.value, StackConfig, "gpu-platform")


def gke_config(*datasets: dict[str, Any], **gke_overrides: Any) -> dict[str, Any]:
    return {**stack(**gke_overrides), "dask": {"tenants": TENANTS}, "shared_datasets": {"datasets": list(datasets)}}


def eks_config(*datasets: dict[str, Any]) -> dict[str, Any]:
    return {**eks_stack(), "dask": {"tenants": TENANTS}, "shared_datasets": {"datasets": list(datasets)}}


# --- Args: defaults -----------------------------------------------------------------------------


# --- Args: validators ---------------------------------------------------------------------------


# --- the stack: one line per problem, before anything is registered ---------------------------


def test_stack_refuses_a_dataset_mounted_by_a_tenant_that_does_not_exist() -> None:
    assert refusal(gke_config(dataset(tenants=["team-a", "team-z"]))) == [
        "gpu-platform:shared_datasets.datasets[0].tenants[1]: dataset reference is mounted by tenant team-z, which is no "
        'Dask tenant nor Kubeflow profile of this stack (tenants: team-a, team-b); add it or remove the mount (got "team-z")'
    ]


def test_stack_refuses_a_read_write_mount_of_a_read_only_dataset() -> None:
    (line,) = refusal(eks_config(dataset(tenants=[{"tenant": "team-a", "access": "read_write"}])))
    assert line.startswith(
        "gpu-platform:shared_datasets.datasets[0].tenants[0].access: tenant team-a mounts dataset reference read_write, but the dataset is read_only"
    )


def test_stack_refuses_bucket_names_of_the_other_cloud_and_the_other_clouds_settings_all_at_once() -> None:
    lines = refusal(eks_config(dataset(bucket={"name": "acme_reference"}, gcs_fuse={})))
    assert lines == [
        "gpu-platform:shared_datasets.datasets[0].bucket.name: an S3 bucket name is 3 to 63 lowercase letters, digits, dots and "
        'hyphens, starting and ending with a letter or digit (cloud aws) (got "acme_reference")',
        "gpu-platform:shared_datasets.datasets[0].gcs_fuse: gcs_fuse is GKE's Cloud Storage FUSE; on aws FSx for Lustre serves "
        'the bucket (fsx): remove it (got "set")',
    ]
    (line,) = refusal(gke_config(dataset(fsx={})))
    assert line.startswith("gpu-platform:shared_datasets.datasets[0].fsx: fsx is FSx for Lustre on EKS")


def test_stack_turns_on_gkes_cloud_storage_fuse_driver_for_datasets_and_refuses_it_off() -> None:
    assert StackConfig.model_validate(gke_config(dataset())).gke.gcs_fuse_csi_driver is True
    assert StackConfig.model_validate({**stack(), "dask": {"tenants": TENANTS}}).gke.gcs_fuse_csi_driver is False
    (line,) = refusal(gke_config(dataset(), gcs_fuse_csi_driver=False))
    assert line.startswith("gpu-platform:gke.gcs_fuse_csi_driver: shared datasets on gcp are mounted by GKE's Cloud Storage FUSE CSI driver")


def test_kubeflow_profiles_are_tenants_a_dataset_may_name() -> None:
    def config(tenant: str) -> dict[str, Any]:
        # The factory's EKS classes carry no training pool: that stays refused, the dataset line varies.
        return {
            **eks_stack(),
            "shared_datasets": {"datasets": [dataset(tenants=[tenant])]},
            "kubeflow": {"install": {"tenants": [{"name": "ds-team", "owner": "a@example.com", "gpus": 2}]}},
        }

    assert not [line for line in refusal(config("ds-team")) if "shared_datasets" in line]
    (line,) = [line for line in refusal(config("ds-teams")) if "shared_datasets" in line]
    assert "mounted by tenant ds-teams, which is no Dask tenant nor Kubeflow profile of this stack (tenants: ds-team)" in line


# --- pure mapping ---------------------------------------------------------------------------------


def test_workload_identity_member_is_the_gke_principal_of_one_service_account() -> None:
    assert workload_identity_member("123", "acme", "team-a", "default") == (
        "principal://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/acme.svc.id.goog/subject/ns/team-a/sa/default"
    )


# --- the component, under mocks -------------------------------------------------------------------


def _gke_platform(datasets: list[dict[str, Any]]) -> tuple[GpuGkeCluster, DaskOperator, SharedDatasets]:
    config = StackConfig.model_validate(gke_config(*datasets))
    assert config.gke is not None and config.dask is not None and config.shared_datasets is not None
    cluster = GpuGkeCluster("c", config.gke)
    mounts = config.shared_datasets.tenant_mounts(Cloud.GCP)
    dask = DaskOperator("d", config.dask, cluster=cluster, datasets=mounts)
    shared = SharedDatasets("s", config.shared_datasets, cluster=cluster, namespaces=dask.namespaces, service_accounts={"team-a": ("default", "rapids-dask")})
    return cluster, dask, shared


@pulumi.runtime.test
def test_gke_dataset_is_a_private_bucket_granted_to_the_tenants_service_accounts(engine: Engine) -> pulumi.Output[Any]:
    _, dask, shared = _gke_platform([dataset(access="read_write", tenants=["team-a", {"tenant": "team-b", "access": "read_only"}])])

    def check(_: Any) -> None:
        assert engine.resource("c-cluster").inputs["addonsConfig"] == {"gcsFuseCsiDriverConfig": {"enabled": True}}
        bucket = engine.resource("s-reference-bucket")
        assert bucket.inputs["publicAccessPrevention"] == "enforced" and bucket.inputs["uniformBucketLevelAccess"] is True
        assert bucket.inputs["location"] == "US-CENTRAL1" and bucket.inputs["forceDestroy"] is False
        roles = {r.name: (r.inputs["role"], r.inputs["member"]) for r in engine.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")}
        assert roles == {
            "s-reference-team-a-default-access": ("roles/storage.objectUser", workload_identity_member("000000000000", "test-project", "team-a", "default")),
            "s-reference-team-a-rapids-dask-access": (
                "roles/storage.objectUser",
                workload_identity_member("000000000000", "test-project", "team-a", "rapids-dask"),
            ),
            "s-reference-team-b-default-access": ("roles/storage.objectViewer", workload_identity_member("000000000000", "test-project", "team-b", "default")),
        }
        volume = engine.resource("s-reference-team-a-volume").inputs
        assert volume["metadata"]["name"] == "team-a-dataset-reference"
        assert volume["spec"]["csi"] == {"driver": "gcsfuse.csi.storage.gke.io", "volumeHandle": "acme-reference-data"}
        assert volume["spec"]["accessModes"] == ["ReadWriteMany"] and volume["spec"]["mountOptions"] == ["implicit-dirs"]
        assert volume["spec"]["claimRef"] == {"namespace": "team-a", "name": "dataset-reference"}
        claim = engine.resource("s-reference-team-b-claim").inputs
        assert claim["metadata"] == {**claim["metadata"], "name": "dataset-reference", "namespace": "team-b"}
        assert claim["spec"]["volumeName"] == "team-b-dataset-reference" and claim["spec"]["accessModes"] == ["ReadOnlyMany"]
        assert engine.resource("s-reference-team-b-volume").inputs["spec"]["csi"]["readOnly"] is True
        notebook = engine.resource("d-team-a-notebook").inputs["spec"]["template"]
        assert notebook["metadata"]["annotations"] == {GCSFUSE_VOLUMES_ANNOTATION: "true"}
        (container,) = notebook["spec"]["containers"]
        assert {"name": "dataset-reference", "mountPath": "/datasets/reference"} in container["volumeMounts"]
        assert {"name": "dataset-reference", "persistentVolumeClaim": {"claimName": "dataset-reference"}} in notebook["spec"]["volumes"]
        # team-b's shared DaskCluster mounts it read-only, its workers annotated for the FUSE sidecar.
        worker = engine.resource("d-team-b-shared-cluster").inputs["spec"]["worker"]
        assert worker["metadata"]["annotations"] == {GCSFUSE_VOLUMES_ANNOTATION: "true"}
        assert worker["spec"]["containers"][0]["volumeMounts"] == [{"name": "dataset-reference", "mountPath": "/datasets/reference", "readOnly": True}]
        spec = yaml.safe_load(engine.resource("d-team-b-dask-cluster-spec").inputs["data"]["cluster.yaml"])
        assert spec["spec"]["worker"]["spec"]["volumes"] == [
            {"name": "dataset-reference", "persistentVolumeClaim": {"claimName": "dataset-reference", "readOnly": True}}
        ]

    return pulumi.Output.all(settled_tree(dask), settled_tree(shared), shared.claims).apply(check)


@pulumi.runtime.test
def test_gke_existing_bucket_is_not_created_and_the_tenant_gets_the_default_account(engine: Engine) -> pulumi.Output[Any]:
    config = StackConfig.model_validate(gke_config(dataset(bucket={"name": "their-data", "create": False}, tenants=["team-b"])))
    assert config.gke is not None and config.dask is not None and config.shared_datasets is not None
    cluster = GpuGkeCluster("c", config.gke)
    dask = DaskOperator("d", config.dask, cluster=cluster)
    shared = SharedDatasets("s", config.shared_datasets, cluster=cluster, namespaces=dask.namespaces)

    def check(values: list[Any]) -> None:
        assert engine.of_type("gcp:storage/bucket:Bucket") == []
        (grant,) = engine.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
        assert grant.inputs["bucket"] == "their-data" and grant.inputs["member"].endswith("/subject/ns/team-b/sa/default")
        assert values[1] == {"reference": "their-data"}
        assert values[2] == {"reference": ["team-b/dataset-reference"]}

    return pulumi.Output.all(settled_tree(shared), shared.buckets, shared.claims).apply(check)


def _eks_platform(datasets: list[dict[str, Any]]) -> tuple[EksCluster, DaskOperator, SharedDatasets]:
    config = StackConfig.model_validate(eks_config(*datasets))
    assert config.eks is not None and config.eks_node_groups is not None and config.dask is not None and config.shared_datasets is not None
    cluster = EksCluster("c", config.eks, gpu_instance_types=config.eks_node_groups.instance_types())
    gpu = SpotFailoverEksNodeGroups("g", config.eks_node_groups, cluster=cluster)
    dask = DaskOperator("d", config.dask, cluster=gpu, datasets=config.shared_datasets.tenant_mounts(Cloud.AWS))
    shared = SharedDatasets("s", config.shared_datasets, cluster=gpu, namespaces=dask.namespaces)
    return cluster, dask, shared


@pulumi.runtime.test
def test_eks_dataset_is_lustre_linked_to_an_encrypted_private_bucket(engine: Engine) -> pulumi.Output[Any]:
    _, dask, shared = _eks_platform([dataset(tenants=["team-a", "team-b"], fsx={"per_unit_storage_throughput": 250, "storage_capacity_gib": 2400})])

    def check(_: Any) -> None:
        bucket = engine.resource("s-reference-bucket")
        assert bucket.inputs["bucket"] == "acme-reference-data" and bucket.inputs["forceDestroy"] is False
        (rule,) = engine.resource("s-reference-bucket-encryption").inputs["rules"]
        assert rule["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "aws:kms"}
        block = engine.resource("s-reference-public-access-block").inputs
        assert all(block[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"))
        fs = engine.resource("s-reference-fsx").inputs
        assert (fs["deploymentType"], fs["perUnitStorageThroughput"], fs["storageCapacity"]) == ("PERSISTENT_2", 250, 2400)
        assert fs["kmsKeyId"] == f"arn:aws:kms:ap-northeast-2:{PLACEHOLDER_ACCOUNT}:key/s-reference-fsx-key"
        assert engine.resource("s-reference-fsx-key").inputs["enableKeyRotation"] is True
        private = [r.name for r in engine.of_type("aws:ec2/subnet:Subnet") if "private" in r.name]
        assert fs["subnetIds"] == f"{private[0]}-id"  # one private subnet: FSx for Lustre is single-AZ
        assert "importPath" not in fs and "autoImportPolicy" not in fs
        sg = engine.resource("s-reference-lustre-sg").inputs
        assert [(r["fromPort"], r["toPort"], r["protocol"], r["self"]) for r in sg["ingress"]] == [(988, 988, "tcp", True), (1018, 1023, "tcp", True)]
        to_nodes = sorted(
            (r.inputs["fromPort"], r.inputs["toPort"])
            for r in engine.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
            if r.name.startswith("s-")
        )
        assert to_nodes == [(988, 988), (1018, 1023)]
        link = engine.resource("s-reference-s3-link").inputs
        assert link["dataRepositoryPath"] == "s3://acme-reference-data" and link["fileSystemPath"] == "/"
        assert link["s3"] == {"autoImportPolicy": {"events": ["NEW", "CHANGED", "DELETED"]}}  # read_only: nothing exported
        addon = engine.resource("s-aws-fsx-csi-driver").inputs
        assert addon["addonName"] == "aws-fsx-csi-driver" and addon["serviceAccountRoleArn"] == f"arn:aws:iam::{PLACEHOLDER_ACCOUNT}:role/s-fsx-csi-role"
        trust = json.loads(engine.resource("s-fsx-csi-role").inputs["assumeRolePolicy"])
        (subject,) = [v for k, v in trust["Statement"][0]["Condition"]["StringEquals"].items() if k.endswith(":sub")]
        assert subject == "system:serviceaccount:kube-system:fsx-csi-controller-sa"
        # Static volumes need no AWS call of the driver: its role is allowed nothing (no attachment, no inline policy).
        iam_grants = {"aws:iam/rolePolicyAttachment:RolePolicyAttachment", "aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"}
        assert [r.name for r in engine.recorded if r.type in iam_grants and r.name.startswith("s-")] == []
        assert "managedPolicyArns" not in engine.resource("s-fsx-csi-role").inputs
        volume = engine.resource("s-reference-team-b-volume").inputs
        assert volume["spec"]["csi"] == {
            "driver": "fsx.csi.aws.com",
            "volumeHandle": "s-reference-fsx-id",
            "readOnly": True,
            "volumeAttributes": {"dnsname": "s-reference-fsx-id.fsx.ap-northeast-2.amazonaws.com", "mountname": "0ff1ine0"},
        }
        assert volume["spec"]["capacity"] == {"storage": "2400Gi"} and volume["spec"]["accessModes"] == ["ReadOnlyMany"]
        assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain" and volume["spec"]["storageClassName"] == ""
        worker = engine.resource("d-team-b-shared-cluster").inputs["spec"]["worker"]
        assert "metadata" not in worker  # no FUSE sidecar on EKS
        assert {"name": "dataset-reference", "persistentVolumeClaim": {"claimName": "dataset-reference", "readOnly": True}} in worker["spec"]["volumes"]

    return pulumi.Output.all(settled_tree(dask), settled_tree(shared)).apply(check)


@pulumi.runtime.test
def test_eks_scratch_read_write_dataset_links_the_bucket_on_the_file_system(engine: Engine) -> pulumi.Output[Any]:
    _, _, shared = _eks_platform(
        [dataset(access="read_write", bucket={"name": "their-data", "create": False}, fsx={"deployment_type": "SCRATCH_2"}, deletion_protection=False)]
    )

    def check(_: Any) -> None:
        fs = engine.resource("s-reference-fsx").inputs
        assert fs["deploymentType"] == "SCRATCH_2" and "perUnitStorageThroughput" not in fs and "kmsKeyId" not in fs
        assert (fs["importPath"], fs["exportPath"], fs["autoImportPolicy"]) == ("s3://their-data", "s3://their-data", "NEW_CHANGED_DELETED")
        names = engine.names()
        assert "s-reference-s3-link" not in names and "s-reference-fsx-key" not in names and "s-reference-bucket" not in names
        claim = engine.resource("s-reference-team-a-claim").inputs
        assert claim["spec"]["accessModes"] == ["ReadWriteMany"]

    return settled_tree(shared).apply(check)


@pulumi.runtime.test
def test_stateful_parts_are_protected_by_deletion_protection(engine: Engine) -> pulumi.Output[Any]:
    _, _, shared = _eks_platform([dataset()])

    def check(_: Any) -> None:
        for name in ("s-reference-bucket", "s-reference-fsx", "s-reference-fsx-key"):
            assert engine.resource(name).protect is True, name
        assert engine.resource("s-reference-s3-link").protect is False

    return settled_tree(shared).apply(check)


@pulumi.runtime.test
def test_fails_when_a_mounting_tenant_has_no_namespace_before_anything_is_registered(engine: Engine) -> pulumi.Output[Any]:
    config = StackConfig.model_validate(gke_config(dataset(tenants=["team-a"])))
    assert config.gke is not None and config.shared_datasets is not None
    cluster = GpuGkeCluster("c", config.gke)
    with pytest.raises(pulumi.InputPropertyError) as error:
        SharedDatasets("s", config.shared_datasets, cluster=cluster, namespaces={})
    assert error.value.property_path == "args.datasets[0].tenants[0]"
    assert "mounted by tenant team-a, which is no Dask tenant" in error.value.reason
    with pytest.raises(pulumi.InputPropertyError, match="cluster: expected a cluster component"):
        SharedDatasets("s2", config.shared_datasets, cluster="c")  # type: ignore[arg-type]
    return settled(cluster).apply(lambda _: _assert_nothing_named("s", engine))


def _assert_nothing_named(prefix: str, engine: Engine) -> None:
    assert not [n for n in engine.names() if n == prefix or n.startswith(f"{prefix}-")]


@pulumi.runtime.test
def test_dask_operator_refuses_mounts_for_tenants_it_does_not_have(engine: Engine) -> pulumi.Output[Any]:
    mounts = SharedDatasetsArgs.model_validate({"datasets": [dataset(tenants=["team-z"])]}).tenant_mounts(Cloud.GCP)
    args = DaskOperatorArgs.model_validate({"tenants": TENANTS})
    cluster = GpuGkeCluster("c", GpuGkeClusterArgs.model_validate(gke()))
    with pytest.raises(pulumi.InputPropertyError) as error:
        DaskOperator("d", args, cluster=cluster, datasets=mounts)
    assert error.value.property_path == "datasets" and "team-z" in error.value.reason
    return settled(cluster).apply(lambda _: _assert_nothing_named("d", engine))


# --- the shipped dev stacks: a tenant's Dask workers mount the dataset ---------------------------


@pytest.mark.parametrize(
    ("stack_name", "driver", "handle"),
    [
        ("dev-eks", "fsx.csi.aws.com", "dev-eks-datasets-reference-fsx-id"),
        ("dev-gke", "gcsfuse.csi.storage.gke.io", "rapids-dev-gke-reference-data"),
    ],
)
def test_shipped_dev_stacks_mount_the_dataset_in_team_bs_dask_workers(stack_name: str, driver: str, handle: str) -> None:
    plan = shipped_plan(stack_name)
    by_name = {r.name: r for r in plan.resources}
    worker = by_name[f"{stack_name}-dask-team-b-shared-cluster"].inputs["spec"]["worker"]
    (volume,) = [v for v in worker["spec"]["volumes"] if v["name"] == "dataset-reference"]
    claim_name = volume["persistentVolumeClaim"]["claimName"]
    (container,) = worker["spec"]["containers"]
    assert {"name": "dataset-reference", "mountPath": "/datasets/reference", "readOnly": True} in container["volumeMounts"]
    claims = [
        r
        for r in plan.resources
        if r.type == "kubernetes:core/v1:PersistentVolumeClaim" and r.inputs["metadata"]["namespace"] == "team-b" and r.inputs["metadata"]["name"] == claim_name
    ]
    (claim,) = claims
    volumes = [
        r for r in plan.resources if r.type == "kubernetes:core/v1:PersistentVolume" and r.inputs["metadata"]["name"] == claim.inputs["spec"]["volumeName"]
    ]
    (pv,) = volumes
    # The claim binds to this volume: pre-bound both ways, same access mode, no StorageClass, capacity enough.
    assert pv.inputs["spec"]["claimRef"] == {"namespace": "team-b", "name": claim_name}
    assert pv.inputs["spec"]["accessModes"] == claim.inputs["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert pv.inputs["spec"]["storageClassName"] == claim.inputs["spec"]["storageClassName"] == ""
    assert pv.inputs["spec"]["capacity"]["storage"] == claim.inputs["spec"]["resources"]["requests"]["storage"]
    assert pv.inputs["spec"]["csi"]["driver"] == driver and pv.inputs["spec"]["csi"]["volumeHandle"] == handle
    if driver.startswith("gcsfuse"):
        assert worker["metadata"]["annotations"] == {GCSFUSE_VOLUMES_ANNOTATION: "true"}


# --- public API: the type token and the children's roles ------------------------------------------

FROZEN_CHILDREN_EKS = [
    "aws:ec2/securityGroup:SecurityGroup reference-lustre-sg",
    "aws:eks/addon:Addon aws-fsx-csi-driver",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation reference-s3-link",
    "aws:fsx/lustreFileSystem:LustreFileSystem reference-fsx",
    "aws:iam/role:Role fsx-csi-role",
    "aws:kms/key:Key reference-fsx-key",
    "aws:s3/bucket:Bucket reference-bucket",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock reference-public-access-block",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration reference-bucket-encryption",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule reference-lustre-1018-to-nodes",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule reference-lustre-988-to-nodes",
    "kubernetes:core/v1:PersistentVolume reference-team-a-volume",
    "kubernetes:core/v1:PersistentVolumeClaim reference-team-a-claim",
]
"""SharedDatasets' children on EKS (one dataset, one tenant): renaming one replaces a bucket or a file system."""


@pulumi.runtime.test
def test_type_token_and_child_names_are_frozen(engine: Engine) -> pulumi.Output[Any]:
    _, _, shared = _eks_platform([dataset()])

    def check(_: Any) -> None:
        (me,) = [r for r in engine.recorded if r.name == "s"]
        assert me.type == "gpu-platform:shared_datasets:SharedDatasets"
        children = sorted(f"{r.type} {r.name.removeprefix('s-')}" for r in engine.recorded if r.parent == me.urn)
        assert children == FROZEN_CHILDREN_EKS

    return settled_tree(shared).apply(check)


@pulumi.runtime.test
def test_kubeflow_profiles_get_a_pod_default_that_mounts_the_dataset(engine: Engine) -> pulumi.Output[Any]:
    import pulumi_kubernetes as k8s

    args = SharedDatasetsArgs.model_validate({"datasets": [dataset(tenants=["ds-team", "team-a"])]})
    cluster = GpuGkeCluster("c", GpuGkeClusterArgs.model_validate({**gke(), "gcs_fuse_csi_driver": True}))
    profile = k8s.core.v1.Namespace("ds-team", metadata=k8s.meta.v1.ObjectMetaArgs(name="ds-team"))
    dask_ns = k8s.core.v1.Namespace("team-a", metadata=k8s.meta.v1.ObjectMetaArgs(name="team-a"))
    shared = SharedDatasets(
        "s",
        args,
        cluster=cluster,
        namespaces={"ds-team": profile, "team-a": dask_ns},
        service_accounts={"ds-team": ["default-editor"]},
        pod_defaults=["ds-team"],
    )

    def check(_: Any) -> None:
        pod_default = engine.resource("s-reference-ds-team-pod-default").inputs
        assert (pod_default["apiVersion"], pod_default["kind"]) == ("kubeflow.org/v1alpha1", "PodDefault")
        assert pod_default["metadata"]["namespace"] == "ds-team" and pod_default["metadata"]["name"] == "dataset-reference"
        assert pod_default["spec"]["selector"] == {"matchLabels": {"gpu-platform.io/dataset-reference": "true"}}
        assert pod_default["spec"]["volumes"] == [{"name": "dataset-reference", "persistentVolumeClaim": {"claimName": "dataset-reference", "readOnly": True}}]
        assert pod_default["spec"]["annotations"] == {GCSFUSE_VOLUMES_ANNOTATION: "true"}
        assert "s-reference-team-a-pod-default" not in engine.names()  # a Dask tenant mounts through its specs
        (grant,) = [r for r in engine.of_type("gcp:storage/bucketIAMMember:BucketIAMMember") if "ds-team" in r.name]
        assert grant.inputs["member"].endswith("/subject/ns/ds-team/sa/default-editor")

    return settled_tree(shared).apply(check)


@pulumi.runtime.test
def test_karpenter_node_pools_serve_as_the_cluster_of_shared_datasets(engine: Engine) -> pulumi.Output[Any]:
    """Either EKS provisioner stands for its EksCluster (issue 34: Karpenter with datasets was refused as a
    cluster of the wrong kind): the same Lustre file system, volumes and claims as with the node groups."""
    from gpu_platform.components import KarpenterNodePools, KarpenterNodePoolsArgs

    raw = eks_config(dataset(tenants=["team-a"]))
    raw["eks_node_groups"] = {**raw["eks_node_groups"], "provisioner": "karpenter"}
    config = StackConfig.model_validate(raw)
    assert config.eks is not None and config.eks_node_groups is not None and config.dask is not None and config.shared_datasets is not None
    cluster = EksCluster("c", config.eks, gpu_instance_types=config.eks_node_groups.instance_types(), karpenter_discovery=True)
    pools = KarpenterNodePools("g", KarpenterNodePoolsArgs.of(config.eks_node_groups), cluster=cluster)
    dask = DaskOperator("d", config.dask, cluster=pools, datasets=config.shared_datasets.tenant_mounts(Cloud.AWS))
    shared = SharedDatasets("s", config.shared_datasets, cluster=pools, namespaces=dask.namespaces)

    def check(values: list[Any]) -> None:
        assert engine.resource("s-reference-fsx").inputs["deploymentType"] == "PERSISTENT_2"
        assert values[1] == {"reference": ["team-a/dataset-reference"]}

    return pulumi.Output.all(settled_tree(shared), shared.claims).apply(check)
