"""The gpu-platform program as a function: one validated StackConfig in, the platform out.

``build`` makes the stack's cluster (GpuGkeCluster; on EKS, EksCluster and the
SpotFailoverEksNodeGroups built with it), then what every stack puts on its cluster once the
cluster exists, whatever the cloud. infra/__main__.py reads the config once and calls it; the
offline preview runs that same file and takes the config and platform it made (never reading or
planning the stack again).

The program builds the cloud's cluster component (GpuGkeCluster; on EKS, EksCluster and the
SpotFailoverEksNodeGroups built with it) and passes it as ``cluster=`` to the cloud-neutral
parts (monitoring, Dask, Kubeflow, ...) the stack config asks for: they take its Kubernetes
provider, wait for its node pools or node groups and place pods on its pools, the same way on
both clouds.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from gpu_platform.components import (
    ClusterComponent,
    DaskOperator,
    DcgmExporter,
    EksCluster,
    GpuGkeCluster,
    KarpenterNodePools,
    KarpenterNodePoolsArgs,
    KubeflowInstall,
    PrometheusStack,
    SpotFailoverEksNodeGroups,
)
from gpu_platform.components.cloud import Cloud
from gpu_platform.components.karpenter_args import Provisioner
from gpu_platform.components.prometheus_args import MetricSource
from gpu_platform.infra.stack.model import CapacityCheck, StackConfig

__all__ = ["Platform", "build", "compose_addons", "compose_monitoring", "scraped_later"]


@dataclass(frozen=True)
class Platform:
    """What one run of the program made of one StackConfig."""

    config: StackConfig
    """The stack's config, read and validated once; its plan (``gke.plan``, ``eks_plan``) is the one plan."""
    cluster: ClusterComponent
    """What the add-ons were given as ``cluster=``: the GpuGkeCluster, or on EKS the node groups built with the EksCluster."""
    monitoring: PrometheusStack | None
    """The stack's Prometheus, when monitoring is enabled."""


def build(stack: str, config: StackConfig) -> Platform:
    """Register the stack's cluster and add-ons and export their outputs."""
    pulumi.export("cloud", config.cloud.value)
    pulumi.export("environment", config.environment.value)
    cluster: ClusterComponent
    if config.cloud is Cloud.GCP:
        assert config.gke is not None  # the config model requires it for gcp
        gke = GpuGkeCluster(stack, config.gke)
        pulumi.export("clusterName", gke.cluster_name)
        pulumi.export("endpoint", gke.endpoint)
        pulumi.export("kubeconfig", gke.kubeconfig)
        pulumi.export("nodePools", list(gke.node_pools))
        pulumi.export("computeClasses", gke.compute_classes)
        monitoring = compose_monitoring(stack, config, gke)
        cluster = gke
    else:
        assert config.eks is not None and config.eks_node_groups is not None  # required for aws
        karpenter = config.eks_node_groups.provisioner is Provisioner.KARPENTER
        eks = EksCluster(stack, config.eks, gpu_instance_types=config.eks_node_groups.instance_types(), karpenter_discovery=karpenter)
        # Monitoring first, on the system nodes (eks.ready()): the autoscaler's ServiceMonitor needs its CRD.
        monitoring = compose_monitoring(stack, config, eks)
        if karpenter:
            # The same classes and tiers as NodePools: Karpenter provisions them (components/karpenter_node_pools.py).
            plan = config.eks_plan
            assert plan is not None  # planned for every aws stack
            args = KarpenterNodePoolsArgs.of(config.eks_node_groups)
            pools = KarpenterNodePools(f"{stack}-gpu", args, cluster=eks, zones=plan.zones.names)
            pulumi.export("clusterName", eks.cluster_name)
            pulumi.export("endpoint", eks.endpoint)
            pulumi.export("kubeconfig", eks.kubeconfig)
            pulumi.export("zones", eks.zones)
            pulumi.export("nodePools", list(pools.node_pools))
            pulumi.export("interruptionQueue", pools.interruption_queue)
            compose_addons(stack, config, pools, monitoring)
            return Platform(config, pools, monitoring)
        gpu = SpotFailoverEksNodeGroups(
            f"{stack}-gpu",
            config.eks_node_groups,
            cluster=eks,
            service_monitor_crd=None if monitoring is None else monitoring.release,
        )
        pulumi.export("clusterName", eks.cluster_name)
        pulumi.export("endpoint", eks.endpoint)
        pulumi.export("kubeconfig", eks.kubeconfig)
        pulumi.export("zones", eks.zones)
        pulumi.export("nodeGroups", [config.eks.system_node_group.name, *gpu.node_groups])
        pulumi.export("autoscalerPriorities", gpu.expander.configmap_text())
        # The node groups stand for the cluster with its GPUs: add-ons wait for the nodes, CoreDNS and
        # the StorageClass their claims name, and are placed on the system node group and the GPU classes.
        cluster = gpu
    compose_addons(stack, config, cluster, monitoring)
    return Platform(config, cluster, monitoring)


def scraped_later(config: StackConfig) -> frozenset[MetricSource]:
    """What the program deploys after the stack's Prometheus that it scrapes.

    dcgm-exporter when configured (GKE's managed DCGM metrics go to Cloud Monitoring, not here); on EKS the
    cluster autoscaler, whose chart ships a ServiceMonitor once monitoring is on (the program passes
    PrometheusStack.release to SpotFailoverEksNodeGroups); GKE's autoscaler runs in the control plane.
    """
    sources = set()
    if config.monitoring.dcgm_exporter is not None:
        sources.add(MetricSource.DCGM_EXPORTER)
    if config.cloud is Cloud.AWS and config.eks_node_groups is not None and config.eks_node_groups.provisioner is Provisioner.CLUSTER_AUTOSCALER:
        sources.add(MetricSource.CLUSTER_AUTOSCALER)
    return frozenset(sources)


def compose_monitoring(stack: str, config: StackConfig, cluster: ClusterComponent) -> PrometheusStack | None:
    """Prometheus, Grafana and the adapter on ``cluster``, when the stack config asks for monitoring (before
    what it scrapes: their ServiceMonitors need its CRDs)."""
    if not config.monitoring.enabled:
        return None
    assert config.grafana_admin_password is not None  # load_stack_config requires it
    monitoring = PrometheusStack(
        f"{stack}-monitoring",
        config.monitoring.prometheus,
        grafana_admin_password=pulumi.Output.secret(config.grafana_admin_password.get_secret_value()),
        cluster=cluster,
        scrapes=scraped_later(config),
    )
    pulumi.export("prometheusUrl", monitoring.prometheus_url)
    pulumi.export("grafanaServiceName", monitoring.grafana_service_name)
    return monitoring


def compose_addons(stack: str, config: StackConfig, cluster: ClusterComponent, monitoring: PrometheusStack | None) -> None:
    """Install and export the add-ons the stack config asks for on ``cluster`` (its every pool: on EKS the
    node groups built with the EksCluster); ``monitoring`` from compose_monitoring."""
    if monitoring is not None and config.monitoring.dcgm_exporter is not None:
        DcgmExporter(f"{stack}-dcgm", config.monitoring.dcgm_exporter, cluster=cluster, service_monitor_crd=monitoring.release)
    if config.kubeflow is not None:
        kubeflow = config.kubeflow
        if kubeflow.capacity_check is CapacityCheck.WARN and (problem := kubeflow.capacity_problem(cluster.pool_shapes())):
            pulumi.log.warn(f"gpu-platform:kubeflow: {problem}")
        dex_hash = config.kubeflow_dex_password_hash
        install = KubeflowInstall(
            f"{stack}-kubeflow",
            kubeflow.install,
            cluster=cluster,
            dex_password_hash=None if dex_hash is None else pulumi.Output.secret(dex_hash.get_secret_value()),
            oidc_client_secret=(
                None if config.kubeflow_oidc_client_secret is None
                else pulumi.Output.secret(config.kubeflow_oidc_client_secret.get_secret_value())
            ),
        )
        pulumi.export("kubeflowPipelinesEndpoint", install.pipelines_endpoint)
        pulumi.export("kubeflowUiService", install.ui_service)
        pulumi.export("kubeflowTrainingPlacement", install.training_placement)
        pulumi.export("kubeflowStorage", install.storage)
    if config.dask is not None:
        dask = DaskOperator(f"{stack}-dask", config.dask, cluster=cluster)
        pulumi.export("daskTenants", list(dask.namespaces))
        pulumi.export("daskNotebooks", dask.notebook_services)
        pulumi.export("daskClusterSpec", dask.cluster_spec)
