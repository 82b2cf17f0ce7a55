"""What every stack puts on its cluster once the cluster exists, whatever the cloud.

The program builds the cloud's cluster (GKE or EKS) and describes it as a
``ClusterTarget``: the Kubernetes provider, the resources the add-ons must wait for and
the configured pools. ``compose_addons`` then installs the cloud-neutral parts
(monitoring, Dask, Kubeflow, ...) the stack config asks for, the same way on both clouds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components import DaskOperator, DcgmExporter, KubeflowInstall, NodePoolShape, PrometheusStack
from gpu_platform.components.prometheus_args import MetricSource, MonitoredCluster
from gpu_platform.infra.config import CapacityCheck, Cloud, StackConfig

__all__ = ["ClusterTarget", "compose_addons", "compose_monitoring", "monitored_cluster"]


@dataclass
class ClusterTarget:
    """A cluster the add-ons deploy onto."""

    provider: k8s.Provider
    """The Kubernetes provider of the cluster."""
    ready: list[pulumi.Resource]
    """What must exist before workloads are scheduled (the node pools or node groups)."""
    pools: list[NodePoolShape] = field(default_factory=list)
    """Every configured pool, as workloads see it."""

    def pool(self, role: str) -> list[NodePoolShape]:
        """The pools of one role (system, gpu, scheduler)."""
        return [p for p in self.pools if p.role == role]

    def options(self) -> pulumi.ResourceOptions:
        """Resource options for a component that runs on the cluster."""
        return pulumi.ResourceOptions(providers=[self.provider], depends_on=list(self.ready))


def monitored_cluster(config: StackConfig) -> MonitoredCluster:
    """The cluster as the stack's Prometheus sees it: its kind and what the program deploys that it scrapes.

    dcgm-exporter when configured (GKE's managed DCGM metrics go to Cloud Monitoring, not here); on EKS the
    cluster autoscaler, whose chart ships a ServiceMonitor once monitoring is on (the program passes
    PrometheusStack.release to SpotFailoverEksNodeGroups); GKE's autoscaler runs in the control plane.
    """
    sources = set()
    if config.monitoring.dcgm_exporter is not None:
        sources.add(MetricSource.DCGM_EXPORTER)
    if config.cloud is Cloud.AWS:
        sources.add(MetricSource.CLUSTER_AUTOSCALER)
    kind = config.cloud.kind
    return MonitoredCluster(kind=kind, sources=frozenset(sources))


def compose_monitoring(stack: str, config: StackConfig, target: ClusterTarget) -> PrometheusStack | None:
    """Prometheus, Grafana and the adapter, when the stack config asks for monitoring (before what it scrapes:
    their ServiceMonitors need its CRDs)."""
    if not config.monitoring.enabled:
        return None
    assert config.grafana_admin_password is not None  # load_stack_config requires it
    monitoring = PrometheusStack(
        f"{stack}-monitoring",
        config.monitoring.prometheus,
        grafana_admin_password=pulumi.Output.secret(config.grafana_admin_password.get_secret_value()),
        opts=target.options(),
        cluster=monitored_cluster(config),
    )
    pulumi.export("prometheusUrl", monitoring.prometheus_url)
    pulumi.export("grafanaServiceName", monitoring.grafana_service_name)
    return monitoring


def compose_addons(stack: str, config: StackConfig, target: ClusterTarget, monitoring: PrometheusStack | None) -> None:
    """Install and export the add-ons the stack config asks for; ``monitoring`` from compose_monitoring."""
    if monitoring is not None and config.monitoring.dcgm_exporter is not None:
        DcgmExporter(
            f"{stack}-dcgm", config.monitoring.dcgm_exporter, opts=target.options(), service_monitor_crd=monitoring.release
        )
    if config.kubeflow is not None:
        kubeflow = config.kubeflow
        if kubeflow.capacity_check is CapacityCheck.WARN and (problem := kubeflow.capacity_problem(target.pools)):
            pulumi.log.warn(f"gpu-platform:kubeflow: {problem}")
        dex_hash = config.kubeflow_dex_password_hash
        install = KubeflowInstall(
            f"{stack}-kubeflow",
            kubeflow.install,
            training_pools=target.pools,
            dex_password_hash=None if dex_hash is None else pulumi.Output.secret(dex_hash.get_secret_value()),
            opts=target.options(),
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
        dask = DaskOperator(
            f"{stack}-dask", config.dask, opts=target.options(), pools=target.pools
        )
        pulumi.export("daskTenants", list(dask.namespaces))
        pulumi.export("daskNotebooks", dask.notebook_services)
        pulumi.export("daskClusterSpec", dask.cluster_spec)
