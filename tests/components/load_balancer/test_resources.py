"""The AWS Load Balancer Controller's mapping (components/load_balancer/resources.py): the chart values naming the
cluster, region and VPC, its IRSA ServiceAccount and placement, and the check of its IAM policy document."""

from __future__ import annotations

from gpu_platform.components.load_balancer.args import AwsLoadBalancerControllerArgs
from gpu_platform.components.load_balancer.resources import controller_values, policy_problem
from gpu_platform.components.pools.shapes import PoolPlacement, Taint
from tests.components.load_balancer.test_controller import POLICY


def test_values_name_the_cluster_region_vpc_and_the_irsa_account() -> None:
    placement = PoolPlacement({"role": "system"}, (Taint(key="dedicated", value="system"),))
    values = controller_values(AwsLoadBalancerControllerArgs(replicas=3), "c", "eu-west-1", "vpc-1", "arn:aws:iam::1:role/lb", placement)
    assert (values["clusterName"], values["region"], values["vpcId"], values["replicaCount"]) == ("c", "eu-west-1", "vpc-1", 3)
    assert values["serviceAccount"] == {
        "create": True,
        "name": "aws-load-balancer-controller",
        "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/lb"},
    }
    assert values["nodeSelector"] == {"role": "system"}
    assert values["tolerations"] == [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}]


def test_policy_problem() -> None:
    assert policy_problem(POLICY) is None
    assert policy_problem("{") is not None and policy_problem("{").startswith("not JSON (")  # type: ignore[union-attr]
    assert policy_problem('{"Statement": []}') == "not an IAM policy document (no Statement list)"
    assert policy_problem("[1]") == "not an IAM policy document (no Statement list)"
