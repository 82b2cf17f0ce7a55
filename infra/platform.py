"""What every stack puts on its cluster once the cluster exists, whatever the cloud.

The program builds the cloud's cluster component (GpuGkeCluster; on EKS, EksCluster and the
SpotFailoverEksNodeGroups built with it) and passes it as ``cluster=`` to the cloud-neutral
parts (monitoring, Dask, Kubeflow, ...) the stack config asks for: they take its Kubernetes
provider, wait for its node pools or node groups and place pods on its pools, the same way on
both clouds.
"""

from __future__ import annotations

import pulumi

from gpu_platform.components import ClusterComponent, DaskOperator, DcgmExporter, KubeflowInstall, PrometheusStack
from gpu_platform.components.prometheus_args import MetricSource
from gpu_platform.components.cloud import Cloud
from gpu_platform.infra.stack.model import CapacityCheck, StackConfig

__all__ = ["compose_addons", "compose_monitoring", "scraped_later"]


def scraped_later(config: StackConfig) -> frozenset[MetricSource]:
    """What the program deploys after the stack's Prometheus that it scrapes.

    dcgm-exporter when configured (GKE's managed DCGM metrics go to Cloud Monitoring, not here); on EKS the
    cluster autoscaler, whose chart ships a ServiceMonitor once monitoring is on (the program passes
    PrometheusStack.release to SpotFailoverEksNodeGroups); GKE's autoscaler runs in the control plane.
    """
    sources = set()
    if config.monitoring.dcgm_exporter is not None:
        sources.add(MetricSource.DCGM_EXPORTER)
    if config.cloud is Cloud.AWS:
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
