"""EksCluster's pure helpers: which zones offer the GPU instance types, the kubeconfig, and the IAM trust policies (IRSA and AWS services)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

from gpu_platform.components.core.kube import exec_kubeconfig

__all__ = ["assume_role_policy", "eks_kubeconfig", "irsa_trust_policy", "zones_offering"]


def zones_offering(offerings: Sequence[tuple[str, str]], instance_types: Sequence[str], zones: Sequence[str] | None) -> list[str]:
    """Which zones offer every instance type; raises ValueError naming each typed zone that does not.

    ``offerings`` holds (zone, instance type) pairs as ec2:DescribeInstanceTypeOfferings
    returns them with LocationType availability-zone.
    """
    offered: dict[str, set[str]] = {}
    for zone, itype in offerings:
        offered.setdefault(zone, set()).add(itype)
    wanted = set(instance_types)
    if zones is None:
        return sorted(z for z, types in offered.items() if wanted <= types)
    problems = []
    for zone in zones:
        missing = sorted(wanted - offered.get(zone, set()))
        if missing:
            problems.append(f"zone {zone} does not offer {', '.join(missing)}")
    if problems:
        good = sorted(z for z, types in offered.items() if wanted <= types)
        raise ValueError("; ".join(problems) + f"; zones that offer every GPU instance type: {', '.join(good) or 'none'}")
    return list(zones)


def eks_kubeconfig(cluster_name: str, region: str, endpoint: str, ca_data: str) -> str:
    """A kubeconfig whose user runs `aws eks get-token` (the AWS CLI's exec credential plugin)."""
    return exec_kubeconfig(
        cluster_name,
        endpoint,
        ca_data,
        {
            "command": "aws",
            "args": ["--region", region, "eks", "get-token", "--cluster-name", cluster_name, "--output", "json"],
            "interactiveMode": "Never",
        },
    )


def irsa_trust_policy(oidc_provider_arn: str, issuer: str, namespace: str, service_account: str) -> dict[str, Any]:
    """IRSA: only ``namespace``/``service_account`` of the cluster whose OIDC ``issuer`` (no
    https://) this is may assume the role, and only for STS."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": oidc_provider_arn},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                        f"{issuer}:aud": "sts.amazonaws.com",
                    }
                },
            }
        ],
    }


def irsa_role(
    name: str,
    description: str,
    oidc_provider_arn: pulumi.Input[str],
    issuer: pulumi.Input[str],
    namespace: str,
    service_account: str,
    opts: pulumi.ResourceOptions,
    tags: pulumi.Input[dict[str, str]] | None = None,
) -> aws.iam.Role:
    """The IAM role one service account of the cluster assumes through IRSA (irsa_trust_policy); ``issuer``
    with or without its https:// (the OIDC provider's URL or its bare issuer)."""
    return aws.iam.Role(
        name,
        aws.iam.RoleArgs(
            description=description,
            assume_role_policy=pulumi.Output.all(oidc_provider_arn, issuer).apply(
                lambda v: json.dumps(irsa_trust_policy(v[0], v[1].removeprefix("https://"), namespace, service_account))
            ),
            tags=tags,
        ),
        opts=opts,
    )


SECRETS_KEY_ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey")
"""What the cluster role needs on the key that envelope-encrypts Secrets (as terraform-aws-eks grants)."""


def secrets_key_policy(key_arn: str) -> str:
    """The cluster role's inline policy on the Secrets key."""
    return json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": list(SECRETS_KEY_ACTIONS), "Resource": key_arn}]})


def assume_role_policy(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
        }
    )
