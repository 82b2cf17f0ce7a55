"""The stack's load balancing: when the AWS Load Balancer Controller is installed, and the cross-field
rules of the inference service (its pool, its Ingress's load balancer on this cloud, the metric its HPA
needs). StackConfig calls these; they read the config and never import the model."""

from __future__ import annotations

from typing import Any

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.load_balancer.args import AwsLoadBalancerControllerArgs, LoadBalancer

__all__ = ["alb_ingresses", "load_balancer_controller", "load_balancing_problems"]

Problem = tuple[tuple[str | int, ...], str, Any]


def alb_ingresses(config: Any) -> list[str]:
    """The keys of the stack's settings that make an Ingress of class alb."""
    found = []
    if config.kubeflow is not None and config.kubeflow.install.ingress is not None:
        found.append("kubeflow.install.ingress")
    inference = config.inference
    if inference is not None and inference.ingress is not None and inference.ingress.resolved(config.cloud.kind) is LoadBalancer.ALB:
        found.append("inference.ingress")
    return found


def load_balancer_controller(config: Any) -> AwsLoadBalancerControllerArgs | None:
    """The controller the stack installs: the one set (aws_load_balancer_controller), else its defaults when an
    ALB Ingress needs it, else none. Only on AWS (elsewhere the setting is refused), and never on an existing
    cluster (its owner installs the controller; StackConfig refuses the setting there)."""
    if config.cloud is not Cloud.AWS or config.existing_cluster is not None:
        return None  # on an existing cluster, the ALB Ingresses use the controller installed with the cluster
    chosen: AwsLoadBalancerControllerArgs | None = config.aws_load_balancer_controller
    if chosen is not None:
        return chosen
    return AwsLoadBalancerControllerArgs() if alb_ingresses(config) else None


def load_balancing_problems(config: Any) -> list[Problem]:
    """One (key, message, value) per problem of the controller and inference settings."""
    problems: list[Problem] = []
    if config.aws_load_balancer_controller is not None and config.cloud is not Cloud.AWS:
        problems.append(
            (
                ("aws_load_balancer_controller",),
                f"the AWS Load Balancer Controller runs on EKS (cloud aws), not {config.cloud.value}; remove it",
                "set",
            )
        )
    inference = config.inference
    if inference is None:
        return problems
    if inference.ingress is not None:
        problems += [(("inference", "ingress", *loc), message, value) for loc, message, value in inference.ingress.cloud_problems(config.cloud.kind)]
    if config.gke is not None or config.eks_plan is not None or config.existing_cluster is not None:
        problems += [(("inference", *loc), message, value) for loc, message, value in inference.placement_problems(config.pool_shapes())]
    if not config.monitoring.enabled or config.monitoring.dcgm_exporter is None:
        problems.append(
            (
                ("inference",),
                f"the inference service's HPA scales on {inference.metric}, which the monitoring stack's adapter serves from "
                "dcgm-exporter; keep monitoring enabled and set monitoring.dcgm_exporter",
                "set",
            )
        )
    return problems
