"""GpuInferenceService: the GPU inference API of the EKS DCGM + GPU HPA guide as one component.

A namespace; a Deployment of the model server on a typed GPU pool (placed by the pool's labels and
tolerations, from the cluster's one plan), requesting its GPUs; a Service; an Ingress on the cluster's
load balancer (an ALB through the AWS Load Balancer Controller on EKS, GKE's external Application Load
Balancer on GKE); the GPU-utilisation HPA (GpuUtilizationAutoscaler) on the DCGM metric the monitoring
stack's adapter serves; and, with the monitoring stack, a PrometheusRule that fires when the HPA has held
its maximum replicas for ``saturated_for`` (the service needs more GPUs than it may take).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import ClusterComponent, ClusterPools, check_live, on_cluster
from gpu_platform.components.core.kube import prefix_ingress_spec
from gpu_platform.components.core.labels import MANAGED_LABELS
from gpu_platform.components.core.models import input_error, input_errors
from gpu_platform.components.dask.args import pod_resources
from gpu_platform.components.dask.resources import toleration_args
from gpu_platform.components.inference.args import SATURATION_ALERT, GpuInferenceServiceArgs, InferenceIngressArgs
from gpu_platform.components.load_balancer.args import LoadBalancer
from gpu_platform.components.monitoring.gpu_utilization_args import GpuUtilizationAutoscalerArgs
from gpu_platform.components.monitoring.gpu_utilization_autoscaler import GpuUtilizationAutoscaler
from gpu_platform.components.pools.awaits import await_annotations
from gpu_platform.components.pools.shapes import PoolPlacement

__all__ = ["GpuInferenceService", "GpuInferenceServiceArgs", "InferenceIngressArgs", "saturation_rule"]

_APP_LABEL = "app.kubernetes.io/name"


def saturation_rule(args: GpuInferenceServiceArgs) -> dict[str, Any]:
    """The PrometheusRule group whose alert fires when the service's HPA has run at its maximum replicas for
    ``saturated_for`` (kube-state-metrics' HPA series, matched on the HPA's namespace and name)."""
    selector = f'namespace="{args.namespace}",horizontalpodautoscaler="{args.name}"'
    return {
        "name": f"gpu-inference-{args.namespace}-{args.name}",
        "rules": [
            {
                "alert": SATURATION_ALERT,
                "expr": (f"kube_horizontalpodautoscaler_status_current_replicas{{{selector}}} == kube_horizontalpodautoscaler_spec_max_replicas{{{selector}}}"),
                "for": args.saturated_for,
                "labels": {"severity": "warning"},
                "annotations": {
                    "summary": f"{args.namespace}/{args.name} has run at its maximum of {args.max_replicas} replicas for {args.saturated_for}",
                    "description": (
                        "The GPU utilisation HPA cannot add replicas: requests queue or slow down. Raise max_replicas "
                        "(and the GPU pool's maximum nodes) or make the model cheaper."
                    ),
                },
            }
        ],
    }


class GpuInferenceService(pulumi.ComponentResource):
    """A GPU model server behind a Service and an Ingress, scaled on GPU utilisation."""

    deployment: k8s.apps.v1.Deployment
    """The model server's Deployment."""
    service: k8s.core.v1.Service
    """Its Service (ClusterIP; the load balancer sends to the pods' IPs)."""
    ingress: k8s.networking.v1.Ingress | None
    """Its Ingress (class alb on EKS, gce on GKE); None without ``args.ingress``."""
    autoscaler: GpuUtilizationAutoscaler
    """The HPA on per-pod GPU utilisation."""
    alert: k8s.apiextensions.CustomResource | None
    """The PrometheusRule of GpuInferenceAtMaxReplicas; None without ``prometheus_rule_crd``."""
    service_address: pulumi.Output[str]
    """The Service's in-cluster address (<name>.<namespace>.svc:<port>)."""
    load_balancer: str | None
    """The Ingress's load balancer (alb or gce); None without an Ingress."""

    def __init__(
        self,
        name: str,
        args: GpuInferenceServiceArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterComponent | ClusterPools,
        ingress_controller: pulumi.Resource | None = None,
        prometheus_rule_crd: pulumi.Resource | None = None,
    ) -> None:
        """``cluster``: the cluster component the pods run on (GpuGkeCluster, or on EKS the
        SpotFailoverEksNodeGroups built with the EksCluster): its provider, its GPU pools' placement; or, from
        other languages, a ClusterPools (the cluster's kind and poolShapes; the provider in ``opts``).
        ``ingress_controller``: what acts on an ALB Ingress (AwsLoadBalancerController.release); the Ingress
        waits for it (the controller's webhooks must answer); on a cluster whose owner installed it (an
        ExistingCluster) the Ingress needs none. Default: none.
        ``prometheus_rule_crd``: what installs the PrometheusRule CRD (PrometheusStack.release); given, the
        saturation alert ships. Default: none (no alert).

        Raises pulumi.InputPropertyError(s) at ``args.<key>`` when the pool does not exist or the pods fit no node
        of it, or the Ingress's load balancer does not exist on this cluster, before anything is registered."""
        placed = on_cluster(cluster, opts, descriptors=(ClusterPools,), required=True)
        cloud = placed.cloud
        assert cloud is not None
        check_live("ingress_controller", ingress_controller, (pulumi.Resource,), "the AWS Load Balancer Controller (AwsLoadBalancerController.release)")
        check_live(
            "prometheus_rule_crd", prometheus_rule_crd, (pulumi.Resource,), "the resource that installs the PrometheusRule CRD (PrometheusStack.release)"
        )
        pools = placed.pool_shapes()
        problems = [(("args", *loc), message) for loc, message, _ in args.placement_problems(pools)]
        balancer = None
        if args.ingress is not None:
            balancer = args.ingress.resolved(cloud)
            problems += [(("args", "ingress", *loc), message) for loc, message, _ in args.ingress.cloud_problems(cloud)]
        if problems:
            raise input_errors(problems)
        owners = placed.component is not None and placed.component.has_own_ingress_controllers
        if balancer is LoadBalancer.ALB and ingress_controller is None and not owners:
            raise input_error(
                "ingress_controller",
                "ingress_controller: an ALB Ingress needs the AWS Load Balancer Controller; pass AwsLoadBalancerController(...).release",
            )
        pool = args.gpu_pool(pools)
        assert pool is not None
        super().__init__("gpu-platform:gpu_inference_service:GpuInferenceService", name, None, placed.opts)
        child = pulumi.ResourceOptions(parent=self)
        self.load_balancer = None if balancer is None else balancer.value

        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels=dict(MANAGED_LABELS)), opts=child
        )
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[namespace])
        selector = {_APP_LABEL: args.name}
        labels = {**MANAGED_LABELS, **selector}
        meta = k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=labels)
        # Replicas at the HPA's minimum that the pool's minimum nodes cannot hold wait for the autoscaler, not
        # `pulumi up`: the Deployment and the Service whose endpoints are its pods skip the provider's await (awaits.py).
        waits = await_annotations(pool, args.min_replicas * args.gpus) or None
        workload = k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=labels, annotations=waits)
        self.deployment = self._deployment(name, args, pool.placement, workload, selector, labels, in_ns)
        self.service = k8s.core.v1.Service(
            f"{name}-service",
            metadata=workload,
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=selector,
                ports=[k8s.core.v1.ServicePortArgs(name="http", port=args.port, target_port="http", protocol="TCP")],
            ),
            opts=in_ns,
        )
        self.ingress = None
        if args.ingress is not None and balancer is not None:
            after = [namespace, self.service, *([ingress_controller] if ingress_controller is not None else [])]
            self.ingress = self._ingress(name, args, args.ingress, balancer, meta, pulumi.ResourceOptions(parent=self, depends_on=after))
        self.autoscaler = GpuUtilizationAutoscaler(
            f"{name}-autoscaler",
            GpuUtilizationAutoscalerArgs(
                deployment=args.name,
                namespace=args.namespace,
                min_replicas=args.min_replicas,
                max_replicas=args.max_replicas,
                target_utilization_percent=args.target_utilization_percent,
                metric=args.metric,
            ),
            pulumi.ResourceOptions(parent=self, depends_on=[self.deployment]),
        )
        self.alert = None
        if prometheus_rule_crd is not None:
            self.alert = k8s.apiextensions.CustomResource(
                f"{name}-alert",
                api_version="monitoring.coreos.com/v1",
                kind="PrometheusRule",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{args.name}-saturation", namespace=args.namespace, labels=dict(MANAGED_LABELS)),
                spec={"groups": [saturation_rule(args)]},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace, prometheus_rule_crd]),
            )
        self.service_address = pulumi.Output.concat(self.service.metadata.name, f".{args.namespace}.svc:{args.port}")
        self.register_outputs({"serviceAddress": self.service_address, "loadBalancer": self.load_balancer})

    @staticmethod
    def _deployment(
        name: str,
        args: GpuInferenceServiceArgs,
        placement: PoolPlacement,
        meta: k8s.meta.v1.ObjectMetaArgs,
        selector: dict[str, str],
        labels: dict[str, str],
        opts: pulumi.ResourceOptions,
    ) -> k8s.apps.v1.Deployment:
        """The model server on the GPU pool; the HPA owns the replica count (none set here)."""
        probe = k8s.core.v1.ProbeArgs(http_get=k8s.core.v1.HTTPGetActionArgs(path=args.health_path, port="http"), period_seconds=10, failure_threshold=3)
        return k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=meta,
            spec=k8s.apps.v1.DeploymentSpecArgs(
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                    spec=k8s.core.v1.PodSpecArgs(
                        node_selector=dict(placement.node_selector) or None,
                        tolerations=toleration_args(placement.tolerations) or None,
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="server",
                                image=args.image,
                                command=list(args.command) or None,
                                args=list(args.args) or None,
                                ports=[k8s.core.v1.ContainerPortArgs(name="http", container_port=args.port)],
                                resources=k8s.core.v1.ResourceRequirementsArgs(**pod_resources(args.cpu, args.memory, args.gpus)),
                                readiness_probe=probe,
                                # A model loads for minutes: the kubelet waits for it before probing liveness.
                                startup_probe=k8s.core.v1.ProbeArgs(
                                    http_get=k8s.core.v1.HTTPGetActionArgs(path=args.health_path, port="http"),
                                    period_seconds=10,
                                    failure_threshold=60,
                                ),
                            )
                        ],
                    ),
                ),
            ),
            # The HPA owns spec.replicas.
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["spec.replicas"])),
        )

    @staticmethod
    def _ingress(
        name: str,
        args: GpuInferenceServiceArgs,
        ingress: InferenceIngressArgs,
        balancer: LoadBalancer,
        meta: k8s.meta.v1.ObjectMetaArgs,
        opts: pulumi.ResourceOptions,
    ) -> k8s.networking.v1.Ingress:
        """The Ingress: class alb with the annotations the AWS Load Balancer Controller reads, or GKE's gce."""
        if balancer is LoadBalancer.ALB:
            annotations = {
                "alb.ingress.kubernetes.io/scheme": "internal" if ingress.internal else "internet-facing",
                # The pods' IPs are the targets (VPC CNI): no NodePort hop.
                "alb.ingress.kubernetes.io/target-type": "ip",
                "alb.ingress.kubernetes.io/healthcheck-path": args.health_path,
                "alb.ingress.kubernetes.io/listen-ports": '[{"HTTPS":443}]' if ingress.certificate_arn else '[{"HTTP":80}]',
            }
            if ingress.certificate_arn:
                annotations["alb.ingress.kubernetes.io/certificate-arn"] = ingress.certificate_arn
            class_name: str | None = LoadBalancer.ALB.value
        else:
            # GKE's Ingress controller is chosen by this annotation on every GKE version (there is no gce IngressClass).
            annotations = {"kubernetes.io/ingress.class": LoadBalancer.GCE.value}
            class_name = None
        return k8s.networking.v1.Ingress(
            f"{name}-ingress",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=meta.labels, annotations=annotations),
            spec=prefix_ingress_spec(class_name, ingress.hostname, ingress.path, args.name, k8s.networking.v1.ServiceBackendPortArgs(name="http")),
            opts=opts,
        )
