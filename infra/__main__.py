"""The gpu-platform Pulumi program: read config -> compose components -> export outputs.

`pulumi up` runs this file; so does the offline `gpu-platform preview <stack>`, under a
recording mock engine, unchanged.
"""

import pulumi

from components import GpuGkeCluster
from infra.config import Cloud, load_stack_config
from infra.platform import ClusterTarget, compose_addons

config = load_stack_config()  # raises ConfigError before any resource is registered
stack = pulumi.get_stack()
pulumi.export("cloud", config.cloud.value)
pulumi.export("environment", config.environment.value)

if config.cloud is Cloud.GCP:
    assert config.gke is not None  # the config model requires it for gcp
    cluster = GpuGkeCluster(stack, config.gke)
    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("endpoint", cluster.endpoint)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export("nodePools", list(cluster.node_pools))
    pulumi.export("computeClasses", cluster.compute_classes)
    target = ClusterTarget(cluster.provider, list(cluster.node_pools.values()), config.gke.pool_shapes())

compose_addons(stack, config, target)
