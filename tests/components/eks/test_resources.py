"""EKS's mapping helpers (components/eks/resources.py): the zones that offer every GPU instance type, the exec
kubeconfig, the IRSA trust policy scoped to one service account, and the cluster role's policies."""

from __future__ import annotations

import json

import pytest
import yaml

from gpu_platform.components.eks.resources import (
    SECRETS_KEY_ACTIONS,
    assume_role_policy,
    eks_kubeconfig,
    irsa_trust_policy,
    secrets_key_policy,
    zones_offering,
)

OFFERINGS = [("a", "g4dn.xlarge"), ("a", "p3.2xlarge"), ("b", "g4dn.xlarge"), ("c", "g4dn.xlarge"), ("c", "p3.2xlarge")]


def test_zones_offering_looks_up_the_zones_that_offer_every_type() -> None:
    assert zones_offering(OFFERINGS, ["g4dn.xlarge", "p3.2xlarge"], None) == ["a", "c"]
    assert zones_offering(OFFERINGS, ["g4dn.xlarge"], None) == ["a", "b", "c"]


def test_zones_offering_keeps_given_zones_that_offer_every_type() -> None:
    assert zones_offering(OFFERINGS, ["g4dn.xlarge", "p3.2xlarge"], ["c", "a"]) == ["c", "a"]


def test_fails_when_a_given_zone_lacks_a_type_naming_the_zones_that_have_all() -> None:
    with pytest.raises(ValueError) as info:
        zones_offering(OFFERINGS, ["g4dn.xlarge", "p3.2xlarge"], ["a", "b", "d"])
    assert str(info.value) == (
        "zone b does not offer p3.2xlarge; zone d does not offer g4dn.xlarge, p3.2xlarge; zones that offer every GPU instance type: a, c"
    )
    with pytest.raises(ValueError, match="zones that offer every GPU instance type: none$"):
        zones_offering(OFFERINGS, ["p4d.24xlarge"], ["a"])


def test_kubeconfig_runs_aws_eks_get_token() -> None:
    config = yaml.safe_load(eks_kubeconfig("c", "ap-northeast-2", "https://x.eks.amazonaws.com", "Q0E="))
    (cluster,) = config["clusters"]
    assert cluster["cluster"]["server"] == "https://x.eks.amazonaws.com" and cluster["cluster"]["certificate-authority-data"] == "Q0E="
    (user,) = config["users"]
    exec_ = user["user"]["exec"]
    assert exec_["command"] == "aws"
    assert exec_["args"] == ["--region", "ap-northeast-2", "eks", "get-token", "--cluster-name", "c", "--output", "json"]
    assert exec_["interactiveMode"] == "Never"


def test_irsa_trusts_one_service_account_for_sts_only() -> None:
    policy = irsa_trust_policy("arn:aws:iam::1:oidc-provider/oidc.eks/id/X", "oidc.eks/id/X", "kube-system", "autoscaler")
    (statement,) = policy["Statement"]
    assert statement["Principal"] == {"Federated": "arn:aws:iam::1:oidc-provider/oidc.eks/id/X"}
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Condition"]["StringEquals"] == {
        "oidc.eks/id/X:sub": "system:serviceaccount:kube-system:autoscaler",
        "oidc.eks/id/X:aud": "sts.amazonaws.com",
    }


def test_the_cluster_role_policies() -> None:
    (key,) = json.loads(secrets_key_policy("arn:aws:kms:r:1:key/k"))["Statement"]
    assert key == {"Effect": "Allow", "Action": list(SECRETS_KEY_ACTIONS), "Resource": "arn:aws:kms:r:1:key/k"}
    assert {"kms:Encrypt", "kms:Decrypt"} <= set(SECRETS_KEY_ACTIONS)
    (assume,) = json.loads(assume_role_policy("eks.amazonaws.com"))["Statement"]
    assert assume == {"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}
