"""The gpu-platform Pulumi program: read config -> compose components -> export outputs.

`pulumi up -s <stack>` runs this file; so does the offline `gpu-platform preview <stack>`,
under a recording mock engine, unchanged.
"""

import pulumi

from components import DcgmExporter, GpuGkeCluster, PrometheusStack
from infra.config import Cloud, load_stack_config

config = load_stack_config()  # raises ConfigError before any resource is registered

if config.cloud is Cloud.GCP:
    assert config.gke is not None  # the config model requires it for gcp
    cluster = GpuGkeCluster(pulumi.get_stack(), config.gke)
    pulumi.export("cloud", config.cloud.value)
    pulumi.export("environment", config.environment.value)
    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("endpoint", cluster.endpoint)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export("nodePools", list(cluster.node_pools))
    pulumi.export("computeClasses", cluster.compute_classes)

    if config.monitoring.enabled:
        assert config.grafana_admin_password is not None  # load_stack_config requires it
        on_cluster = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=list(cluster.node_pools.values()))
        monitoring = PrometheusStack(
            f"{pulumi.get_stack()}-monitoring",
            config.monitoring.prometheus,
            grafana_admin_password=pulumi.Output.secret(config.grafana_admin_password.get_secret_value()),
            opts=on_cluster,
        )
        if config.monitoring.dcgm_exporter is not None:
            DcgmExporter(f"{pulumi.get_stack()}-dcgm", config.monitoring.dcgm_exporter, opts=on_cluster)
        pulumi.export("prometheusUrl", monitoring.prometheus_url)
        pulumi.export("grafanaServiceName", monitoring.grafana_service_name)
