"""AwsLoadBalancerController: the controller that turns Ingresses of class alb into AWS Application Load
Balancers (and Services of type LoadBalancer into NLBs), as the EKS DCGM + GPU HPA and the Kubeflow-on-EKS
guides install it.

The pinned aws-load-balancer-controller chart in kube-system, on the system node group, naming the cluster,
its region and VPC; its IRSA role, trusted by its ServiceAccount only, with the controller's own published
IAM policy (``iam_policy``: the document upstream publishes at the controller's release tag, which the
program reads from the pinned upstream sources, its digest checked). The controller finds the subnets of a
load balancer by their role tags (kubernetes.io/role/elb public, kubernetes.io/role/internal-elb private),
which EksCluster puts on the subnets it creates and `gpu-platform preflight eks` checks on brought ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import a_type, check_live, check_pools, on_cluster
from gpu_platform.components.core.kube import helm_release
from gpu_platform.components.core.labels import PoolRole
from gpu_platform.components.core.models import input_error
from gpu_platform.components.eks.cluster import EksCluster, EksClusterRef
from gpu_platform.components.eks.resources import irsa_role
from gpu_platform.components.load_balancer.args import (
    CONTROLLER_CHART,
    CONTROLLER_NAMESPACE,
    AwsLoadBalancerControllerArgs,
    LoadBalancer,
    iam_policy_url,
)
from gpu_platform.components.load_balancer.resources import controller_values, policy_problem
from gpu_platform.components.pools.shapes import NodePoolShape, PoolPlacement

__all__ = ["AwsLoadBalancerController", "AwsLoadBalancerControllerArgs", "LoadBalancer", "iam_policy_url"]


class AwsLoadBalancerController(pulumi.ComponentResource):
    """The AWS Load Balancer Controller on an EKS cluster, with its IAM role and policy."""

    release: k8s.helm.v3.Release
    """The controller's Helm release: an Ingress of class alb waits for it (its webhooks must answer)."""
    role_arn: pulumi.Output[str]
    """The controller's IRSA role."""
    policy_arn: pulumi.Output[str]
    """The IAM policy made from the controller's published policy document."""

    def __init__(
        self,
        name: str,
        args: AwsLoadBalancerControllerArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: EksCluster | EksClusterRef,
        iam_policy: pulumi.Input[str],
        vpc_id: pulumi.Input[str] | None = None,
        pools: Sequence[NodePoolShape] | None = None,
    ) -> None:
        """``cluster``: the EksCluster (its provider, VPC, OIDC provider and system node group); or its ``ref``
        (EksClusterRef, what other languages pass), with ``opts.providers`` holding its Kubernetes provider.
        ``iam_policy``: the controller's published IAM policy document (JSON) for ``args.chart_version``, from
        ``iam_policy_url(args.chart_version)``; a program reads it from its pinned upstream sources.
        ``vpc_id``: with an EksClusterRef, the cluster's VPC (EksCluster.vpc_id). Default: none (required with a ref;
        an EksCluster gives its own). ``pools``: with an EksClusterRef, the cluster's pools (EksCluster.pool_shapes());
        the controller runs on the system pool among them. Default: none (an EksCluster gives its own; else no placement)."""
        if not isinstance(cluster, (EksCluster, EksClusterRef)):
            raise input_error("cluster", f"cluster: expected an EksCluster or its ref (the controller needs its VPC and OIDC provider) (got {a_type(cluster)})")
        check_live("iam_policy", iam_policy, (str,), "the controller's IAM policy document (JSON text)", optional=False)
        if isinstance(iam_policy, str) and (problem := policy_problem(iam_policy)):
            raise input_error("iam_policy", f"iam_policy: {problem}; give the document at {iam_policy_url(args.chart_version)}")
        waits: list[pulumi.Resource] = []
        vpc: pulumi.Input[str]
        if isinstance(cluster, EksCluster):
            for keyword, value in (("vpc_id", vpc_id), ("pools", pools)):
                if value is not None:
                    raise input_error(keyword, f"{keyword}: the EksCluster given as cluster= gives it; pass it with an EksClusterRef only")
            opts = on_cluster(cluster, opts).opts
            ref, vpc, shapes = cluster.ref, cluster.vpc_id, cluster.pool_shapes()
            waits = list(ref.controllers_ready)  # the component's own wait does not hold its children back
        else:
            check_live("vpc_id", vpc_id, (str,), "the cluster's VPC id (EksCluster.vpc_id) with an EksClusterRef", optional=False)
            assert vpc_id is not None
            ref, vpc, waits = cluster, vpc_id, list(cluster.controllers_ready)
            shapes = [] if pools is None else check_pools("pools", pools)
        super().__init__("gpu-platform:aws_load_balancer_controller:AwsLoadBalancerController", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        role = irsa_role(
            f"{name}-role",
            f"AWS Load Balancer Controller of {ref.name} (IRSA)",
            ref.oidc_provider_arn,
            ref.oidc_issuer,
            CONTROLLER_NAMESPACE,
            args.service_account,
            child,
        )
        policy = aws.iam.Policy(
            f"{name}-policy",
            aws.iam.PolicyArgs(
                description=f"The AWS Load Balancer Controller's own IAM policy ({iam_policy_url(args.chart_version)})",
                policy=iam_policy,
            ),
            opts=child,
        )
        attachment = aws.iam.RolePolicyAttachment(f"{name}-role-policy", aws.iam.RolePolicyAttachmentArgs(role=role.name, policy_arn=policy.arn), opts=child)
        system = [p for p in shapes if p.role is PoolRole.SYSTEM]
        placement = system[0].placement if system else PoolPlacement({}, ())
        self.release = helm_release(
            f"{name}-release",
            chart=CONTROLLER_CHART,
            version=args.chart_version,
            repository=args.repository,
            namespace=CONTROLLER_NAMESPACE,
            values=controller_values(args, ref.name, ref.region, vpc, role.arn, placement),
            release_name=CONTROLLER_CHART,
            # The controller must be able to act when it starts, on the system nodes with CoreDNS.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[attachment, *waits]),
        )
        self.role_arn = role.arn
        self.policy_arn = policy.arn
        outputs: dict[str, Any] = {"roleArn": self.role_arn, "policyArn": self.policy_arn}
        self.register_outputs(outputs)
