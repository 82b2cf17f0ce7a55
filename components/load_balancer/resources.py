"""The AWS Load Balancer Controller's mapping: its chart values and the checks of its IAM policy document."""

from __future__ import annotations

import json
from typing import Any

from gpu_platform.components.load_balancer.args import AwsLoadBalancerControllerArgs
from gpu_platform.components.pools.shapes import PoolPlacement, tolerations

__all__ = ["controller_values", "policy_problem"]


def controller_values(
    args: AwsLoadBalancerControllerArgs, cluster_name: str, region: str, vpc_id: Any, role_arn: Any, placement: PoolPlacement
) -> dict[str, Any]:
    """Values of the aws-load-balancer-controller chart: the cluster, region and VPC it manages (named, not
    looked up from instance metadata, which IMDSv2's hop limit hides from pods), its IRSA ServiceAccount,
    and its pods on ``placement`` (the system node group)."""
    return {
        "clusterName": cluster_name,
        "region": region,
        "vpcId": vpc_id,
        "replicaCount": args.replicas,
        "serviceAccount": {
            "create": True,
            "name": args.service_account,
            "annotations": {"eks.amazonaws.com/role-arn": role_arn},
        },
        "nodeSelector": dict(placement.node_selector),
        "tolerations": tolerations(placement.tolerations),
    }


def policy_problem(document: str) -> str | None:
    """Why ``document`` is not an IAM policy document (JSON with a Statement list), or None."""
    try:
        parsed = json.loads(document)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg} at line {exc.lineno})"
    if not isinstance(parsed, dict) or not isinstance(parsed.get("Statement"), list) or not parsed["Statement"]:
        return "not an IAM policy document (no Statement list)"
    return None
