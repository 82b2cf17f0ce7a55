"""Kueue: the platform's tenant queues on the cluster.

The pinned Kueue chart (API kueue.x-k8s.io/v1beta2) with its pod and deployment integrations
admitting the pods of the tenants' namespaces only (managedJobsNamespaceSelector), fair sharing on,
and the objects kueue_plan derives from the tenants and the pools: a ResourceFlavor per pool, the
platform's Cohort, a ClusterQueue per tenant and a LocalQueue ``default`` in each tenant namespace,
which Kueue gives every workload that names no queue (so Dask and pipeline pods need no change). Where a
pool has GKE's queued provisioning (DWS), the ProvisioningRequestConfig (class queued-provisioning.gke.io) and
the AdmissionCheck of Kueue's ProvisioningRequest controller, on the ClusterQueues for that pool's flavor only.
Where the stack has a Prometheus, the chart's ServiceMonitor has it scrape the controller's metrics
(pending workloads, admission wait, and the per-ClusterQueue quota gauges the Configuration turns on),
which `gpu-platform report` reads per tenant. (The chart's Role for service discovery binds kube-prometheus's
``prometheus-k8s`` account in ``metrics.prometheusNamespace``; kube-prometheus-stack's Prometheus needs
none of it: its ClusterRole lists endpoints in every namespace and may get /metrics.)
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from gpu_platform.components.core.cluster import ClusterComponent, check_live, on_cluster
from gpu_platform.components.core.kube import component_namespace, helm_release
from gpu_platform.components.core.labels import NAMESPACE_NAME_LABEL
from gpu_platform.components.core.models import input_errors
from gpu_platform.components.pools.shapes import NodePoolShape
from gpu_platform.components.queues.args import KUEUE_CHART, KUEUE_REPOSITORY, KueueArgs
from gpu_platform.components.queues.plan import QueuesPlan, QueueTenant, planned_queues

__all__ = ["Kueue", "KueueArgs", "manager_config", "release_values"]

FRAMEWORKS = ("batch/job", "pod", "deployment", "statefulset")
"""The integrations on: Jobs, plain pods (pipeline steps), Deployments (the Dask operator's scheduler and
worker Deployments) and StatefulSets; the chart's other defaults name CRDs this platform does not install."""


def managed_namespaces(namespaces: Sequence[str]) -> dict[str, Any]:
    """The label selector of the namespaces Kueue manages: the tenants' by name. Without tenants it selects none:
    the API server refuses ``In`` with no values, and the chart copies this selector into every webhook's
    ``namespaceSelector`` (kueue 0.19.2 templates/webhook/manifests.yaml), so an empty list would have the
    webhook configurations refused; every namespace carries its name label (the API server sets it), so
    ``DoesNotExist`` matches none."""
    if not namespaces:
        return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "DoesNotExist"}]}
    return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(namespaces)}]}


def manager_config(plan: QueuesPlan) -> dict[str, Any]:
    """The controller's Configuration (config.kueue.x-k8s.io/v1beta2): the chart's defaults as its values.yaml
    writes them, with the integrations, the tenants' namespaces, fair sharing and the quota gauges set."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # The per-ClusterQueue quota gauges (kueue_cluster_queue_resource_usage, _nominal_quota, ...), which
        # `gpu-platform report` reads per tenant; off in the chart's config (a commented line there).
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        # Only the tenants' namespaces: the platform's own (Kueue's, monitoring, the Dask operator's,
        # kubeflow with KFP's Deployments) and the system namespaces are never queued.
        "managedJobsNamespaceSelector": managed_namespaces(plan.namespaces),
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
    }


def release_values(plan: QueuesPlan, *, scraped: bool) -> dict[str, Any]:
    """The chart's values: the controller's Configuration, and, when the stack's Prometheus ``scraped`` Kueue,
    the chart's ServiceMonitor (enablePrometheus: the metrics Service's https port, /metrics, with the
    Prometheus service account's token, which kube-prometheus-stack's ClusterRole lets get /metrics)."""
    values: dict[str, Any] = {
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(manager_config(plan), sort_keys=False)},
    }
    if scraped:
        values["enablePrometheus"] = True
    return values


class Kueue(pulumi.ComponentResource):
    """Kueue with a ClusterQueue per tenant in one Cohort, a ResourceFlavor per pool and a LocalQueue ``default`` per tenant namespace."""

    namespace: pulumi.Output[str]
    """Kueue's namespace."""
    release: k8s.helm.v3.Release
    """The Kueue Helm release (it installs the CRDs)."""
    cluster_queues: list[str]
    """The ClusterQueues, one per tenant (named as the tenant)."""
    flavors: list[str]
    """The ResourceFlavors, one per pool."""
    admission_checks: list[str]
    """The AdmissionChecks: ``queued-provisioning`` when a pool has queued provisioning (GKE's DWS), else none."""
    plan: QueuesPlan
    """The objects declared, as kueue_plan derived them."""

    def __init__(
        self,
        name: str,
        args: KueueArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        tenants: Sequence[QueueTenant],
        cluster: ClusterComponent,
        after: Sequence[pulumi.Resource] = (),
        shared_gpus: Mapping[str, int] | None = None,
        service_monitor_crd: pulumi.Resource | None = None,
    ) -> None:
        """``tenants``: the Dask and Kubeflow tenants (kueue_plan.dask_queue_tenants, kubeflow_queue_tenants).
        ``cluster``: the cluster component whose pools the flavors stand for. ``after``: what creates the tenants'
        namespaces (the DaskOperator, the KubeflowInstall); the LocalQueues wait for it. Default: nothing.
        ``shared_gpus``: deprecated and ignored, removed in the next release: each pool's schedulable GPUs
        (sharing clients, MIG instances) come from the cluster's pool shapes (NodePoolShape.max_schedulable_gpus). ``service_monitor_crd``: what installs the
        ServiceMonitor CRD (PrometheusStack.release): given, the chart's ServiceMonitor (enablePrometheus) has the
        stack's Prometheus scrape Kueue's metrics Service, and the release waits for the CRD. Default: none (no
        ServiceMonitor; Kueue's metrics are served but not scraped)."""
        placed = on_cluster(cluster, opts, required=True)
        check_live(
            "service_monitor_crd",
            service_monitor_crd,
            (pulumi.Resource,),
            "the resource that installs the ServiceMonitor CRD (PrometheusStack.release) or None",
            optional=True,
        )
        if shared_gpus is not None:
            warnings.warn(
                "Kueue's shared_gpus is ignored and removed in the next release: the cluster's pool shapes carry each pool's GPU sharing",
                DeprecationWarning,
                stacklevel=2,
            )
        pools: list[NodePoolShape] = cluster.pool_shapes()
        plan = planned_queues(args, tenants, pools)
        if plan.problems:
            raise input_errors([(("args", *loc), message) for loc, message, _ in plan.problems])
        super().__init__("gpu-platform:kueue:Kueue", name, None, placed.opts)
        child = pulumi.ResourceOptions(parent=self)
        ns = component_namespace(name, args.namespace, child)
        self.release = helm_release(
            f"{name}-release",
            chart=KUEUE_CHART,
            version=args.chart_version,
            repository=KUEUE_REPOSITORY,
            namespace=ns.metadata.name,
            release_name="kueue",
            values=release_values(plan, scraped=service_monitor_crd is not None),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[r for r in (ns, service_monitor_crd) if r is not None]),
        )
        crds = pulumi.ResourceOptions(parent=self, depends_on=[self.release])
        roles = {
            "ResourceFlavor": "flavor",
            "ProvisioningRequestConfig": "provisioning-config",
            "AdmissionCheck": "admission-check",
            "Cohort": "cohort",
            "ClusterQueue": "queue",
        }
        for body in [*plan.flavors, *plan.provisioning_configs, *plan.admission_checks, plan.cohort, *plan.cluster_queues]:
            role = roles[body["kind"]]
            self._custom(f"{name}-{role}-{body['metadata']['name']}", body, crds)
        queued = pulumi.ResourceOptions(parent=self, depends_on=[self.release, *after])
        for body in plan.local_queues:
            self._custom(f"{name}-local-queue-{body['metadata']['namespace']}", body, queued)
        self.plan = plan
        self.namespace = ns.metadata.name
        self.cluster_queues = [q["metadata"]["name"] for q in plan.cluster_queues]
        self.flavors = [f["metadata"]["name"] for f in plan.flavors]
        self.admission_checks = [c["metadata"]["name"] for c in plan.admission_checks]
        self.register_outputs(
            {"namespace": self.namespace, "clusterQueues": self.cluster_queues, "flavors": self.flavors, "admissionChecks": self.admission_checks}
        )

    @staticmethod
    def _custom(name: str, body: dict[str, Any], opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
        metadata = body["metadata"]
        return k8s.apiextensions.CustomResource(
            name,
            api_version=body["apiVersion"],
            kind=body["kind"],
            metadata=k8s.meta.v1.ObjectMetaArgs(name=metadata["name"], namespace=metadata.get("namespace")),
            spec=body["spec"],
            opts=opts,
        )
