"""AwsLoadBalancerControllerArgs: the AWS Load Balancer Controller's release, its IAM policy's upstream
home, and the Ingress classes the platform's Ingresses use (alb on EKS, gce on GKE)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field, field_validator

from gpu_platform.components.core.kube import ChartRepository, DnsSubdomain, kube_system_account_problem
from gpu_platform.components.core.models import ARGS_CONFIG
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.monitoring.prometheus_args import ClusterKind

__all__ = [
    "CONTROLLER_CHART",
    "CONTROLLER_NAMESPACE",
    "CONTROLLER_RELEASES",
    "CONTROLLER_REPOSITORY",
    "AwsLoadBalancerControllerArgs",
    "LoadBalancer",
    "iam_policy_name",
    "iam_policy_url",
]

CONTROLLER_CHART = "aws-load-balancer-controller"
"""The chart's name in aws/eks-charts."""
CONTROLLER_REPOSITORY = "https://aws.github.io/eks-charts"
"""The chart repository the release names."""
CONTROLLER_NAMESPACE = "kube-system"
"""Where the controller runs (as its install guide has it)."""
CONTROLLER_RELEASES = {"3.5.0": "v3.5.0"}
"""Chart versions this component is checked against, and the controller's git tag each installs: the IAM
policy the controller needs is published in its repository at that tag (docs/install/iam_policy.json)."""


def iam_policy_url(chart_version: str) -> str:
    """Where the controller of ``chart_version`` publishes its IAM policy (the lock pins its sha256)."""
    tag = CONTROLLER_RELEASES[chart_version]
    return f"https://raw.githubusercontent.com/kubernetes-sigs/aws-load-balancer-controller/{tag}/docs/install/iam_policy.json"


def iam_policy_name(chart_version: str) -> str:
    """The policy file's name in the upstream sources, beside the chart archive."""
    return f"{CONTROLLER_CHART}-{chart_version}.iam_policy.json"


class LoadBalancer(StrEnum):
    """The cloud load balancer an Ingress asks for, by its IngressClass."""

    ALB = "alb"
    """An AWS Application Load Balancer, provisioned by the AWS Load Balancer Controller (EKS)."""
    GCE = "gce"
    """GKE's external Application Load Balancer, provisioned by GKE's own Ingress controller (GKE)."""

    @classmethod
    def of(cls, kind: ClusterKind) -> LoadBalancer:
        """The cluster's own: alb on EKS, gce on GKE."""
        return cls.ALB if kind is ClusterKind.EKS else cls.GCE

    @property
    def cluster_kind(self) -> ClusterKind:
        """The cluster kind that offers it."""
        return ClusterKind.EKS if self is LoadBalancer.ALB else ClusterKind.GKE


class AwsLoadBalancerControllerArgs(BaseModel):
    """Inputs of AwsLoadBalancerController: the pinned chart and how many controller replicas run."""

    model_config = ARGS_CONFIG

    chart_version: str = "3.5.0"
    """aws-load-balancer-controller chart version; one of CONTROLLER_RELEASES (its IAM policy is pinned with it). Default: 3.5.0."""
    repository: ChartRepository = CONTROLLER_REPOSITORY
    """Chart repository. Default: https://aws.github.io/eks-charts."""
    replicas: Int = Field(default=2, ge=1, le=5)
    """Controller replicas (one leads; the others take over and serve the webhooks). Default: 2."""
    service_account: DnsSubdomain = "aws-load-balancer-controller"
    """The controller's ServiceAccount in kube-system, which its IAM role trusts. Default: aws-load-balancer-controller."""

    @field_validator("service_account")
    @classmethod
    def _own_account(cls, value: str) -> str:
        if problem := kube_system_account_problem(value):
            raise ValueError(problem)
        return value

    @field_validator("chart_version")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in CONTROLLER_RELEASES:
            raise ValueError(f"chart_version {value} has no pinned IAM policy here; use {' or '.join(CONTROLLER_RELEASES)}")
        return value
