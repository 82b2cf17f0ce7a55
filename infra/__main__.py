"""The gpu-platform Pulumi program: read config -> compose components -> export outputs.

`pulumi up` runs this file; so does the offline `gpu-platform preview <stack>`, under a
recording mock engine, unchanged.
"""

import pulumi

from gpu_platform.components import EksCluster, GpuGkeCluster, SpotFailoverEksNodeGroups
from gpu_platform.infra.stack.model import Cloud
from gpu_platform.infra.stack.read import load_stack_config
from gpu_platform.infra.platform import compose_addons, compose_monitoring

config = load_stack_config()  # raises ConfigError before any resource is registered
stack = pulumi.get_stack()
pulumi.export("cloud", config.cloud.value)
pulumi.export("environment", config.environment.value)

if config.cloud is Cloud.GCP:
    assert config.gke is not None  # the config model requires it for gcp
    # The production guardrails read the environment off the cluster (a label, a tag).
    cluster = GpuGkeCluster(stack, config.gke.model_copy(update={"environment": config.environment}))
    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("endpoint", cluster.endpoint)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export("nodePools", list(cluster.node_pools))
    pulumi.export("computeClasses", cluster.compute_classes)
    monitoring = compose_monitoring(stack, config, cluster)
    compose_addons(stack, config, cluster, monitoring)
else:
    assert config.eks is not None and config.eks_node_groups is not None  # required for aws
    eks = EksCluster(stack, config.eks.model_copy(update={"environment": config.environment}), gpu_instance_types=config.eks_node_groups.instance_types())
    # Monitoring first, on the system nodes (eks.ready()): the autoscaler's ServiceMonitor needs its CRD.
    monitoring = compose_monitoring(stack, config, eks)
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
    compose_addons(stack, config, gpu, monitoring)
