"""AwsLoadBalancerController under the recording mock engine: its IRSA role trusted by its ServiceAccount only,
the IAM policy made of the document it is given, and the chart values naming the cluster, region and VPC; and
the subnet role tags EksCluster puts on the subnets it creates."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from gpu_platform.components import EksCluster, EksClusterArgs
from gpu_platform.components.load_balancer.args import iam_policy_url
from gpu_platform.components.load_balancer.controller import AwsLoadBalancerController, AwsLoadBalancerControllerArgs
from tests.conftest import Engine, settled, settled_tree
from tests.factories import eks

POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["elasticloadbalancing:DescribeLoadBalancers"], "Resource": "*"}],
    }
)
"""A policy document of the controller's form (the published one is read from the pinned sources in tests/infra)."""


def cluster() -> EksCluster:
    return EksCluster("c", EksClusterArgs.model_validate(eks()))


@pulumi.runtime.test
def test_the_controller_has_its_irsa_role_its_policy_and_the_cluster_in_its_values(engine: Engine) -> pulumi.Output[Any]:
    eks_cluster = cluster()
    controller = AwsLoadBalancerController("c-alb", AwsLoadBalancerControllerArgs(), cluster=eks_cluster, iam_policy=POLICY)

    def check(resolved: list[Any]) -> None:
        _, role_arn, vpc_id = resolved
        role = engine.resource("c-alb-role")
        trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
        assert len(trust) == 1 and trust[0]["Action"] == "sts:AssumeRoleWithWebIdentity"
        (sub,) = [v for k, v in trust[0]["Condition"]["StringEquals"].items() if k.endswith(":sub")]
        assert sub == "system:serviceaccount:kube-system:aws-load-balancer-controller"
        assert engine.resource("c-alb-policy").inputs["policy"] == POLICY
        attachment = engine.resource("c-alb-role-policy")
        assert attachment.inputs["role"] == "c-alb-role"
        release = engine.resource("c-alb-release")
        assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == (
            "aws-load-balancer-controller",
            "3.5.0",
            "kube-system",
        )
        values = release.inputs["values"]
        assert (values["clusterName"], values["region"], values["replicaCount"]) == ("c", "ap-northeast-2", 2)
        assert values["vpcId"] == vpc_id
        assert values["serviceAccount"] == {
            "create": True,
            "name": "aws-load-balancer-controller",
            "annotations": {"eks.amazonaws.com/role-arn": role_arn},
        }
        # On the system node group, like the cluster's other controllers.
        assert values["nodeSelector"] == eks_cluster.pool_shapes()[0].placement.node_selector
        assert attachment.urn in release.depends_on

    return pulumi.Output.all(settled_tree(eks_cluster, controller), controller.role_arn, eks_cluster.vpc_id).apply(check)


@pulumi.runtime.test
def test_the_subnets_the_cluster_creates_carry_the_load_balancer_role_tags(engine: Engine) -> pulumi.Output[Any]:
    eks_cluster = cluster()

    def check(_: Any) -> None:
        subnets = {s.name: s.inputs["tags"] for s in engine.of_type("aws:ec2/subnet:Subnet")}
        assert set(subnets) == {"c-public-a", "c-public-c", "c-private-a", "c-private-c"}
        for name, tags in subnets.items():
            role = {k: v for k, v in tags.items() if k.startswith("kubernetes.io/role/")}
            assert role == ({"kubernetes.io/role/elb": "1"} if "public" in name else {"kubernetes.io/role/internal-elb": "1"}), name

    return settled_tree(eks_cluster).apply(check)


@pytest.mark.parametrize(
    ("kwargs", "path", "reason"),
    [
        (
            {"iam_policy": "{not json"},
            "iam_policy",
            "iam_policy: not JSON (Expecting property name enclosed in double quotes at line 1); give the document at " + iam_policy_url("3.5.0"),
        ),
        (
            {"iam_policy": '{"Version": "2012-10-17"}'},
            "iam_policy",
            "iam_policy: not an IAM policy document (no Statement list); give the document at " + iam_policy_url("3.5.0"),
        ),
        ({"iam_policy": None}, "iam_policy", "iam_policy: expected the controller's IAM policy document (JSON text) (got nothing)"),
        ({"cluster": "c"}, "cluster", "cluster: expected an EksCluster or its ref (the controller needs its VPC and OIDC provider) (got a str)"),
        ({"vpc_id": "vpc-1"}, "vpc_id", "vpc_id: the EksCluster given as cluster= gives it; pass it with an EksClusterRef only"),
        ({"cluster": "ref"}, "vpc_id", "vpc_id: expected the cluster's VPC id (EksCluster.vpc_id) with an EksClusterRef (got nothing)"),
    ],
)
@pulumi.runtime.test
def test_fails_when_the_controller_gets_a_bad_live_input(engine: Engine, kwargs: dict[str, Any], path: str, reason: str) -> pulumi.Output[Any]:
    given: dict[str, Any] = {"iam_policy": POLICY, **kwargs}
    if "cluster" not in given:
        given["cluster"] = cluster()
    elif given["cluster"] == "ref":
        given["cluster"] = cluster().ref
    before = {r.name for r in engine.recorded}
    with pytest.raises(pulumi.InputPropertyError) as error:
        AwsLoadBalancerController("bad-alb", AwsLoadBalancerControllerArgs(), **given)
    assert (error.value.property_path, error.value.reason) == (path, reason)
    sentinel = pulumi.ComponentResource("test:index:Sentinel", "sentinel")

    def check(_: Any) -> None:
        assert not {n for n in engine.names() - before if n.startswith("bad-alb")}  # refused before registering

    return settled(sentinel).apply(check)
