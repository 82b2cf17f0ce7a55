"""PrometheusStack: kube-prometheus-stack, prometheus-adapter with GPU custom metrics,
Grafana with GPU dashboards, and GPU alerts.

Prometheus picks up every ServiceMonitor/PodMonitor/PrometheusRule in the cluster, keeps
its data on a volume that outlives the release, and the adapter exposes DCGM GPU
utilisation per pod (and its 1-minute average) as custom metrics for autoscaling.
"""

from __future__ import annotations

from collections.abc import Collection

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import ClusterComponent, check_live, on_cluster
from gpu_platform.components.core.kube import component_namespace, helm_release
from gpu_platform.components.core.models import input_error
from gpu_platform.components.monitoring.prometheus_args import (
    GPU_CUSTOM_METRICS,
    AlertSettings,
    ClusterKind,
    MetricSource,
    MetricsPreset,
    MonitoredCluster,
    PrometheusStackArgs,
)
from gpu_platform.components.monitoring.prometheus_resources import adapter_values, gpu_alert_groups, platform_dashboard, stack_values

__all__ = [
    "AlertSettings",
    "ClusterKind",
    "MetricSource",
    "MonitoredCluster",
    "GPU_CUSTOM_METRICS",
    "MetricsPreset",
    "PrometheusStack",
    "PrometheusStackArgs",
]


class PrometheusStack(pulumi.ComponentResource):
    """kube-prometheus-stack + prometheus-adapter + GPU alerts and dashboards."""

    namespace: pulumi.Output[str]
    """The monitoring namespace."""
    prometheus_url: pulumi.Output[str]
    """In-cluster Prometheus URL (http://<release>-prometheus.<namespace>.svc:9090)."""
    grafana_service_name: pulumi.Output[str]
    """Grafana's service name in the namespace."""
    release: k8s.helm.v3.Release
    """The kube-prometheus-stack release, which installs the monitoring.coreos.com CRDs: whatever creates a
    ServiceMonitor, PodMonitor or PrometheusRule (a chart's included) depends on it."""
    adapter: k8s.helm.v3.Release
    """The prometheus-adapter release."""
    alerts: k8s.apiextensions.CustomResource
    """The PrometheusRule of the GPU alerts."""

    def __init__(
        self,
        name: str,
        args: PrometheusStackArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterComponent | MonitoredCluster,
        grafana_admin_password: pulumi.Input[str],
        scrapes: Collection[MetricSource] = (),
    ) -> None:
        """``cluster``: the cluster under the stack: a cluster component (GpuGkeCluster, EksCluster,
        SpotFailoverEksNodeGroups), whose kind decides the scrape targets, whose provider the stack uses,
        whose node pools or system nodes it waits for and whose own metric sources (the EKS autoscaler's)
        it scrapes; or a MonitoredCluster (kind and sources; other languages pass this).
        ``scrapes``: what else the program deploys that the stack scrapes (dcgm-exporter when a
        DcgmExporter follows): an alert ships only when every metric it reads is scraped. Default: nothing else."""
        placed = on_cluster(cluster, opts, descriptors=(MonitoredCluster,), required=True)
        check_live("grafana_admin_password", grafana_admin_password, (str,), "a string or a pulumi.Output[str] (pass a secret)", optional=False)
        try:
            extra = frozenset(MetricSource(s) for s in scrapes)
        except (TypeError, ValueError):
            raise input_error("scrapes", f"scrapes: expected MetricSource values ({', '.join(m.value for m in MetricSource)}) (got {scrapes!r})") from None
        monitored: MonitoredCluster
        if placed.component is not None:
            monitored = MonitoredCluster(kind=placed.component.cloud, sources=placed.component.metric_sources() | extra)
        else:
            monitored = placed.descriptor.model_copy(update={"sources": placed.descriptor.sources | extra}) if extra else placed.descriptor
        opts = placed.opts
        super().__init__("gpu-platform:prometheus_stack:PrometheusStack", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        namespace = component_namespace(name, args.namespace, child)
        ns = namespace.metadata.name
        admin = k8s.core.v1.Secret(
            f"{name}-grafana-admin",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="grafana-admin", namespace=ns),
            type="Opaque",
            string_data={"admin-user": "admin", "admin-password": pulumi.Output.secret(grafana_admin_password)},
            opts=child,
        )
        dashboard = k8s.core.v1.ConfigMap(
            f"{name}-platform-dashboard",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="gpu-platform-dashboard", namespace=ns, labels={"grafana_dashboard": "1"}),
            data={"gpu-platform.json": platform_dashboard()},
            opts=child,
        )
        self.release = helm_release(
            f"{name}-release",
            chart="kube-prometheus-stack",
            version=args.chart_version,
            repository=args.repository,
            namespace=ns,
            release_name=args.release_name,
            values=stack_values(args, monitored),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[admin, dashboard]),
        )
        self.adapter = helm_release(
            f"{name}-adapter",
            chart="prometheus-adapter",
            version=args.adapter_chart_version,
            repository=args.repository,
            namespace=ns,
            release_name=f"{args.release_name}-adapter",
            values=adapter_values(args),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
        )
        self.alerts = k8s.apiextensions.CustomResource(
            f"{name}-gpu-alerts",
            api_version="monitoring.coreos.com/v1",
            kind="PrometheusRule",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="gpu-platform-gpu-alerts", namespace=ns),
            spec={"groups": gpu_alert_groups(args.alerts, monitored.scraped)},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
        )

        self.namespace = ns
        self.prometheus_url = pulumi.Output.from_input(args.prometheus_url)
        self.grafana_service_name = pulumi.Output.from_input(args.grafana_service)
        self.register_outputs({"namespace": self.namespace, "prometheusUrl": self.prometheus_url, "grafanaServiceName": self.grafana_service_name})
