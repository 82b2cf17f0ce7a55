"""GpuInferenceServiceArgs: the GPU inference API of the EKS DCGM + GPU HPA guide as typed inputs: the
model server's image and pods, the GPU pool they run on, the Ingress in front of them, the replica bounds
of their GPU-utilisation HPA and when the alert on a pinned HPA fires."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, model_validator

from gpu_platform.components.core.kube import ComponentNamespace, DnsLabel, IngressHost, PinnedImage, PrometheusDuration, UrlPath
from gpu_platform.components.core.models import ARGS_CONFIG, check_min_max, field_error
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.dask.args import CPU_PATTERN, MEMORY_PATTERN, fit_problems, notebook_pool
from gpu_platform.components.load_balancer.args import LoadBalancer
from gpu_platform.components.monitoring.prometheus_args import GPU_CUSTOM_METRICS, ClusterKind
from gpu_platform.components.pools.shapes import NodePoolShape
from gpu_platform.components.pools.sharing import shared_request_problem

__all__ = ["GpuInferenceServiceArgs", "InferenceIngressArgs", "SATURATION_ALERT"]

SATURATION_ALERT = "GpuInferenceAtMaxReplicas"
"""The alert that fires when the service's HPA has held its maximum replicas for ``saturated_for``."""

Problem = tuple[tuple[str | int, ...], str, Any]

_GCE_HINTS = {"certificate_arn": " (GKE takes certificates from a ManagedCertificate)", "internal": ""}


class InferenceIngressArgs(BaseModel):
    """The Ingress in front of the inference Service: an AWS ALB (through the AWS Load Balancer
    Controller) on EKS, GKE's own external Application Load Balancer on GKE."""

    model_config = ARGS_CONFIG

    load_balancer: LoadBalancer | None = None
    """alb (EKS) or gce (GKE); an ALB on GKE or gce on EKS is refused. Default: none (the cluster's own: alb on EKS, gce on GKE)."""
    hostname: IngressHost | None = None
    """The host the rule answers for. Default: none (any host)."""
    path: UrlPath = "/"
    """The path prefix routed to the Service. Default: /."""
    internal: bool = False
    """alb: an internal ALB (reachable from the VPC only) instead of an internet-facing one. Default: false."""
    certificate_arn: str | None = Field(default=None, pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[A-Za-z0-9-]+$")
    """alb: an ACM certificate; the ALB then listens on HTTPS 443 only. Default: none (HTTP on 80)."""

    @model_validator(mode="after")
    def _alb_only(self) -> InferenceIngressArgs:
        if self.load_balancer is LoadBalancer.GCE:
            for key in ("internal", "certificate_arn"):
                if getattr(self, key) not in (None, False):
                    raise field_error(
                        "InferenceIngressArgs",
                        key,
                        f"{key} applies to load_balancer alb, not gce; remove it{_GCE_HINTS[key]}",
                        getattr(self, key),
                    )
        return self

    def resolved(self, kind: ClusterKind) -> LoadBalancer:
        """The load balancer on a cluster of ``kind``: the one typed, else the cluster's own."""
        return self.load_balancer if self.load_balancer is not None else LoadBalancer.of(kind)

    def cloud_problems(self, kind: ClusterKind) -> list[Problem]:
        """(key, message, value) when the load balancer does not exist on a cluster of ``kind``."""
        balancer = self.resolved(kind)
        if balancer.cluster_kind is kind:
            if balancer is LoadBalancer.GCE and (self.internal or self.certificate_arn):
                key = "internal" if self.internal else "certificate_arn"
                return [((key,), f"{key} applies to an ALB (eks), not gce on {kind.value}; remove it", getattr(self, key))]
            return []
        return [
            (
                ("load_balancer",),
                f"load_balancer {balancer.value} exists on {balancer.cluster_kind.value} clusters, not on {kind.value}; "
                f"use {LoadBalancer.of(kind).value} or leave load_balancer unset",
                balancer.value,
            )
        ]


class GpuInferenceServiceArgs(BaseModel):
    """Inputs of GpuInferenceService."""

    model_config = ARGS_CONFIG

    image: PinnedImage
    """The model server's image, with a version tag or digest (e.g. nvcr.io/nvidia/tritonserver:25.01-py3). Required."""
    command: list[str] = Field(default_factory=list)
    """The container's command. Default: [] (the image's entrypoint)."""
    args: list[str] = Field(default_factory=list)
    """The container's arguments. Default: [] (the image's)."""
    name: DnsLabel = "gpu-inference"
    """Name of the Deployment, Service, Ingress and HPA. Default: gpu-inference."""
    namespace: ComponentNamespace = "inference"
    """Namespace the component creates for the service. Default: inference."""
    port: Int = Field(default=8000, ge=1, le=65535)
    """The model server's HTTP port. Default: 8000 (Triton's HTTP port)."""
    health_path: UrlPath = "/v2/health/ready"
    """Readiness endpoint: the pods' readiness probe and the load balancer's health check. Default: /v2/health/ready (the Open Inference Protocol's, served by Triton and KServe runtimes)."""
    pool: str | None = None
    """The GPU pool (GKE) or GPU class (EKS) the pods run on, by name; its labels and taints place them. Default: none (the cluster's first GPU pool of role gpu)."""
    gpus: Int = Field(default=1, ge=1, le=16)
    """GPUs per pod. Default: 1."""
    cpu: str = Field(default="2", pattern=CPU_PATTERN)
    """CPU per pod (requests and limits). Default: 2."""
    memory: str = Field(default="8Gi", pattern=MEMORY_PATTERN)
    """Memory per pod (requests and limits). Default: 8Gi."""
    min_replicas: Int = Field(default=1, ge=1, le=1000)
    """Fewest replicas the HPA keeps. Default: 1."""
    max_replicas: Int = Field(default=4, ge=1, le=1000)
    """Most replicas the HPA may run (each holds ``gpus`` GPUs: this bounds the GPU spend). Default: 4."""
    target_utilization_percent: Int = Field(default=70, ge=1, le=100)
    """Average GPU utilisation per pod the HPA holds. Default: 70."""
    metric: str = "DCGM_FI_DEV_GPU_UTIL_AVG"
    """The custom metric the HPA scales on; one the adapter exposes. Default: DCGM_FI_DEV_GPU_UTIL_AVG."""
    ingress: InferenceIngressArgs | None = Field(default_factory=InferenceIngressArgs)
    """The Ingress in front of the Service; null for an in-cluster Service only. Default: the cluster's own load balancer (see InferenceIngressArgs)."""
    saturated_for: PrometheusDuration = "15m"
    """How long the HPA must hold max_replicas before GpuInferenceAtMaxReplicas fires. Default: 15m."""

    @model_validator(mode="after")
    def _bounds(self) -> GpuInferenceServiceArgs:
        check_min_max(self, "min_replicas", "max_replicas")
        if self.metric not in GPU_CUSTOM_METRICS:
            raise field_error(
                "GpuInferenceServiceArgs",
                "metric",
                f"metric {self.metric} is not exposed by the adapter rules; use {' or '.join(GPU_CUSTOM_METRICS)}",
                self.metric,
            )
        return self

    def gpu_pool(self, pools: Sequence[NodePoolShape]) -> NodePoolShape | None:
        """The pool the pods run on: ``pool`` by name, else the first GPU pool of role gpu; None when there is none."""
        if self.pool is None:
            return notebook_pool(pools, 1)
        return next((p for p in pools if p.name == self.pool), None)

    def placement_problems(self, pools: Sequence[NodePoolShape]) -> list[Problem]:
        """(key, message, value) when the pods fit no node of their pool, or their pool does not exist or has
        no GPUs (refused before anything is registered: such pods would stay Pending), or ask for more than one
        GPU of a pool whose GPUs are shared (the pool's shape says so: NodePoolShape.gpu_sharing)."""
        gpu_pools = [p for p in pools if p.gpus_per_node]
        offered = ", ".join(p.name for p in gpu_pools) or "none"
        pool = self.gpu_pool(pools)
        if pool is None:
            if self.pool is None:
                return [(("pool",), "the cluster has no GPU pool for the inference pods; add one", None)]
            return [(("pool",), f"no pool named {self.pool}; use a GPU pool of the cluster ({offered})", self.pool)]
        if not pool.gpus_per_node:
            return [(("pool",), f"pool {pool.name} has no GPUs; use a GPU pool ({offered})", pool.name)]
        if pool.queued_provisioning:
            return [
                (
                    ("pool",),
                    f"pool {pool.name} has queued_provisioning: its nodes come only for a ProvisioningRequest, so the inference "
                    f"pods can never land there; use a GPU pool without it ({', '.join(p.name for p in gpu_pools if not p.queued_provisioning) or 'none'})",
                    pool.name,
                )
            ]
        if pool.shares_gpus and (problem := shared_request_problem("an inference pod", self.gpus, pool.name)):
            return [(("gpus",), f"{problem}; use gpus 1 or a pool that does not share its GPUs", self.gpus)]
        if self.gpus > (per_node := pool.schedulable_gpus_per_node):
            return [(("gpus",), f"gpus {self.gpus} is more than a node of pool {pool.name} has ({per_node}); use at most {per_node}", self.gpus)]
        if (wanted := self.max_replicas * self.gpus) > (most := pool.max_schedulable_gpus):
            return [
                (
                    ("max_replicas",),
                    f"max_replicas {self.max_replicas} x gpus {self.gpus} = {wanted} GPUs, more than pool {pool.name} holds at its "
                    f"maximum ({pool.max_nodes} nodes x {per_node} = {most}); lower max_replicas or raise the pool's max_nodes",
                    self.max_replicas,
                )
            ]
        return [((key,), message, value) for key, message, value in fit_problems("the inference pods", ("cpu", self.cpu), ("memory", self.memory), pool)]
