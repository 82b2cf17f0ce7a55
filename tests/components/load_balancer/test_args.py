"""AwsLoadBalancerControllerArgs (components/load_balancer/args.py): its documented defaults, the pinned releases and
their IAM policy's upstream home, and every validator."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gpu_platform.components.load_balancer.args import CONTROLLER_RELEASES, iam_policy_name, iam_policy_url
from gpu_platform.components.load_balancer.controller import AwsLoadBalancerControllerArgs


def test_controller_defaults() -> None:
    args = AwsLoadBalancerControllerArgs()
    assert (args.chart_version, args.repository, args.replicas, args.service_account) == (
        "3.5.0",
        "https://aws.github.io/eks-charts",
        2,
        "aws-load-balancer-controller",
    )
    assert CONTROLLER_RELEASES == {"3.5.0": "v3.5.0"}
    assert iam_policy_url("3.5.0") == ("https://raw.githubusercontent.com/kubernetes-sigs/aws-load-balancer-controller/v3.5.0/docs/install/iam_policy.json")
    assert iam_policy_name("3.5.0") == "aws-load-balancer-controller-3.5.0.iam_policy.json"


@pytest.mark.parametrize(
    ("value", "loc", "message"),
    [
        ({"chart_version": "3.4.0"}, ("chart_version",), "Value error, chart_version 3.4.0 has no pinned IAM policy here; use 3.5.0"),
        ({"replicas": 0}, ("replicas",), "Input should be greater than or equal to 1"),
        ({"replicas": 6}, ("replicas",), "Input should be less than or equal to 5"),
        ({"service_account": "Bad_Name"}, ("service_account",), None),
        ({"repository": "ftp://x"}, ("repository",), None),
        ({"namespace": "lb"}, ("namespace",), "Extra inputs are not permitted"),
    ],
)
def test_fails_when_a_controller_value_is_wrong(value: dict[str, Any], loc: tuple[str, ...], message: str | None) -> None:
    with pytest.raises(ValidationError) as error:
        AwsLoadBalancerControllerArgs.model_validate(value)
    (problem,) = error.value.errors()
    assert problem["loc"] == loc
    if message is not None:
        assert problem["msg"] == message
