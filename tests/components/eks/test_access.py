"""EKS access entries, the bootstrap admin and envelope encryption of Secrets."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest
from pydantic import ValidationError

from gpu_platform.components import EksCluster, EksClusterArgs
from gpu_platform.components.eks.args import AccessScope, EksAccessEntryArgs, EksAccessPolicy
from tests.conftest import Engine, settled_tree
from tests.factories import eks

ADMIN_ROLE = "arn:aws:iam::123456789012:role/platform-admins"
TEAM_ROLE = "arn:aws:iam::123456789012:role/team-a"
KEY = "arn:aws:kms:ap-northeast-2:123456789012:key/0c1f2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"


def args(**overrides: Any) -> EksClusterArgs:
    return EksClusterArgs.model_validate(eks(**overrides))


def test_defaults_encrypt_secrets_with_a_created_key_and_keep_the_bootstrap_admin() -> None:
    a = args()
    assert a.secrets_encryption.enabled is True and a.secrets_encryption.kms_key_arn is None
    assert a.bootstrap_creator_admin is True and a.access_entries == []
    entry = EksAccessEntryArgs(principal_arn=TEAM_ROLE, policies=[EksAccessPolicy.VIEW])
    assert (entry.scope, entry.namespaces, entry.kubernetes_groups, entry.slug) == (AccessScope.CLUSTER, [], [], "team-a")
    assert EksAccessPolicy.ADMIN.arn == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminPolicy"


@pytest.mark.parametrize(
    ("entries", "extra", "where", "message"),
    [
        (
            [{"principal_arn": "arn:aws:iam::12:role/x", "policies": ["AmazonEKSViewPolicy"]}],
            {},
            ("access_entries", 0, "principal_arn"),
            "is not an IAM role or user ARN",
        ),
        ([{"principal_arn": TEAM_ROLE, "policies": ["AmazonEKSRootPolicy"]}], {}, ("access_entries", 0, "policies", 0), "Input should be"),
        ([{"principal_arn": TEAM_ROLE, "policies": []}], {}, ("access_entries", 0, "policies"), "at least 1"),
        (
            [{"principal_arn": TEAM_ROLE, "policies": ["AmazonEKSViewPolicy", "AmazonEKSViewPolicy"]}],
            {},
            ("access_entries", 0, "policies"),
            "policies lists a policy twice",
        ),
        (
            [{"principal_arn": TEAM_ROLE, "policies": ["AmazonEKSEditPolicy"], "scope": "namespace"}],
            {},
            ("access_entries", 0, "namespaces"),
            "needs namespaces",
        ),
        (
            [{"principal_arn": TEAM_ROLE, "policies": ["AmazonEKSEditPolicy"], "namespaces": ["team-a"]}],
            {},
            ("access_entries", 0, "namespaces"),
            "apply to scope namespace only",
        ),
        (
            [{"principal_arn": TEAM_ROLE, "policies": ["AmazonEKSClusterAdminPolicy"], "scope": "namespace", "namespaces": ["a"]}],
            {},
            ("access_entries", 0, "policies"),
            "applies to the whole cluster",
        ),
        ([{"principal_arn": TEAM_ROLE, "policies": ["AmazonEKSViewPolicy"]}] * 2, {}, ("access_entries",), "lists a principal twice"),
        ([], {"bootstrap_creator_admin": False}, ("bootstrap_creator_admin",), "leaves the cluster without an admin"),
        ([], {"secrets_encryption": {"kms_key_arn": "alias-without-arn"}}, ("secrets_encryption", "kms_key_arn"), "is not a KMS key ARN"),
    ],
)
def test_fails_on_a_bad_access_entry_or_key(entries: list[Any], extra: dict[str, Any], where: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ValidationError) as error:
        args(access_entries=entries, **extra)
    problem = error.value.errors()[0]
    assert problem["loc"] == where and message in problem["msg"]


def test_an_admin_entry_lets_the_bootstrap_admin_go() -> None:
    a = args(bootstrap_creator_admin=False, access_entries=[{"principal_arn": ADMIN_ROLE, "policies": ["AmazonEKSClusterAdminPolicy"]}])
    assert a.access_entries[0].policies == [EksAccessPolicy.CLUSTER_ADMIN]


@pulumi.runtime.test
def test_entries_become_access_entries_and_scoped_policy_associations(engine: Engine) -> pulumi.Output[Any]:
    cluster = EksCluster(
        "c",
        args(
            bootstrap_creator_admin=False,
            access_entries=[
                {"principal_arn": ADMIN_ROLE, "policies": ["AmazonEKSClusterAdminPolicy"]},
                {
                    "principal_arn": TEAM_ROLE,
                    "policies": ["AmazonEKSEditPolicy", "AmazonEKSViewPolicy"],
                    "scope": "namespace",
                    "namespaces": ["team-a"],
                    "kubernetes_groups": ["team-a-devs"],
                },
            ],
        ),
    )

    def check(_: Any) -> None:
        (eks_cluster,) = engine.of_type("aws:eks/cluster:Cluster")
        assert eks_cluster.inputs["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is False
        entries = {r.name: r.inputs for r in engine.of_type("aws:eks/accessEntry:AccessEntry")}
        assert entries["c-access-team-a"]["principalArn"] == TEAM_ROLE
        assert entries["c-access-team-a"]["kubernetesGroups"] == ["team-a-devs"]
        links = {r.name: r.inputs for r in engine.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")}
        assert set(links) == {"c-access-platform-admins-cluster-admin", "c-access-team-a-edit", "c-access-team-a-view"}
        assert links["c-access-platform-admins-cluster-admin"]["accessScope"] == {"type": "cluster"}
        assert links["c-access-team-a-edit"]["accessScope"] == {"type": "namespace", "namespaces": ["team-a"]}
        assert links["c-access-team-a-view"]["policyArn"] == EksAccessPolicy.VIEW.arn
        assert set(cluster.access_entries) == {ADMIN_ROLE, TEAM_ROLE}

    return settled_tree(cluster).apply(check)


@pulumi.runtime.test
def test_secrets_are_encrypted_with_a_created_rotating_key(engine: Engine) -> pulumi.Output[Any]:
    cluster = EksCluster("c", args())

    def check(values: list[Any]) -> None:
        (key,) = engine.of_type("aws:kms/key:Key")
        assert key.name == "c-secrets-key" and key.inputs["enableKeyRotation"] is True and key.protect
        (eks_cluster,) = engine.of_type("aws:eks/cluster:Cluster")
        assert eks_cluster.inputs["encryptionConfig"]["resources"] == ["secrets"]
        assert eks_cluster.inputs["encryptionConfig"]["provider"]["keyArn"] == values[1]
        # EKS refuses a key its cluster role cannot use: the role is granted it before the cluster is made.
        (grant,) = engine.of_type("aws:iam/rolePolicy:RolePolicy")
        statement = json.loads(grant.inputs["policy"])["Statement"][0]
        assert statement["Resource"] == values[1]
        assert set(statement["Action"]) == {"kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey"}
        assert grant.urn in eks_cluster.depends_on

    return pulumi.Output.all(settled_tree(cluster), cluster.secrets_key_arn).apply(check)


@pulumi.runtime.test
def test_a_given_key_is_used_and_none_is_created(engine: Engine) -> pulumi.Output[Any]:
    cluster = EksCluster("c", args(secrets_encryption={"kms_key_arn": KEY}, deletion_protection=False))
    off = EksCluster("d", args(cluster_name="d", secrets_encryption={"enabled": False}, deletion_protection=False))

    def check(_: Any) -> None:
        assert not engine.of_type("aws:kms/key:Key")
        grants = {r.name: json.loads(r.inputs["policy"]) for r in engine.of_type("aws:iam/rolePolicy:RolePolicy")}
        assert set(grants) == {"c-cluster-role-secrets-key"}  # the given key, and none with encryption off
        assert grants["c-cluster-role-secrets-key"]["Statement"][0]["Resource"] == KEY
        by_name = {r.name: r for r in engine.of_type("aws:eks/cluster:Cluster")}
        assert by_name["c-cluster"].inputs["encryptionConfig"]["provider"]["keyArn"] == KEY
        assert "encryptionConfig" not in by_name["d-cluster"].inputs
        assert off.secrets_key_arn is None

    return pulumi.Output.all(settled_tree(cluster), settled_tree(off)).apply(check)
