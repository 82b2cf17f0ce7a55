"""Another team's GPU platform, composed from the gpu-platform components by instance.

The cluster component itself is the add-ons' ``cluster=``: they take its Kubernetes provider,
wait for its node pools (or node groups), read its kind and place pods on its
``pool_shapes()``. ``acme:cloud`` picks GKE or EKS (stacks ``gke`` and ``eks``); the team's
name comes from its own config namespace, ``acme``.

    gpu-platform preview --program examples/composed gke
    gpu-platform preview --program examples/composed eks
"""

import pulumi

from gpu_platform.components import (
    AutoscalingBounds,
    BoundsScope,
    CapacityStrategy,
    ClassRole,
    DaskOperator,
    DaskOperatorArgs,
    DaskTenantArgs,
    DcgmExporter,
    DcgmExporterArgs,
    EksCluster,
    EksClusterArgs,
    GpuClassArgs,
    GpuGkeCluster,
    GpuGkeClusterArgs,
    GpuNodePoolArgs,
    GpuUtilizationAutoscaler,
    GpuUtilizationAutoscalerArgs,
    Headlamp,
    HeadlampArgs,
    HeadlampTenantAccess,
    KarpenterNodePools,
    KarpenterNodePoolsArgs,
    KubeflowInstall,
    KubeflowInstallArgs,
    Kueue,
    KueueArgs,
    MetricSource,
    PrometheusStack,
    PrometheusStackArgs,
    SchedulerPoolArgs,
    SpotFailoverEksNodeGroups,
    SpotFailoverEksNodeGroupsArgs,
    TenantProfile,
)
from gpu_platform.components.queues.plan import dask_queue_tenants, kubeflow_queue_tenants

acme = pulumi.Config("acme")
team = acme.get("team") or "ml"
password = pulumi.Config().require_secret("grafana_admin_password")
training = {"gpu-platform.io/workload": "training"}
training_taint = {"key": "gpu-platform.io/workload", "value": "training", "effect": "NoSchedule"}

if acme.require("cloud") == "gcp":
    cluster = GpuGkeCluster(
        "ml",
        GpuGkeClusterArgs(
            location="us-central1",
            node_locations=["us-central1-b", "us-central1-c"],
            scheduler_pool=SchedulerPoolArgs(),
            gpu_pools=[
                GpuNodePoolArgs(
                    name="l4",
                    machine_type="g2-standard-8",
                    accelerator_type="nvidia-l4",
                    capacity=CapacityStrategy.SPOT_THEN_ON_DEMAND,
                    autoscaling=AutoscalingBounds(scope=BoundsScope.TOTAL, min_nodes=0, max_nodes=8),
                    labels=training,
                    taints=[training_taint],
                )
            ],
        ),
    )
    # dcgm-exporter follows, so the stack scrapes it: its GPU alerts ship.
    monitoring = PrometheusStack(
        "ml-monitoring",
        PrometheusStackArgs(),
        cluster=cluster,
        grafana_admin_password=password,
        scrapes=[MetricSource.DCGM_EXPORTER],
    )
    DcgmExporter("ml-dcgm", DcgmExporterArgs(node_selection="gke"), cluster=cluster, service_monitor_crd=monitoring.release)
    dask_args = DaskOperatorArgs(tenants=[DaskTenantArgs(name=team, gpu_quota=4)])
    dask = DaskOperator("ml-dask", dask_args, cluster=cluster)
    # The cluster UI: no cluster-admin token; the team's group views its namespace read-only.
    # Its RoleBinding lives in the team's namespace, which the Dask operator's tenant makes: after it.
    Headlamp(
        "ml-ui",
        HeadlampArgs(tenants=[HeadlampTenantAccess(namespace=team, group=f"{team}-viewers")]),
        cluster=cluster,
        opts=pulumi.ResourceOptions(depends_on=[dask]),
    )
    kubeflow_args = KubeflowInstallArgs(tenants=[TenantProfile(name=f"{team}-pipelines", owner=f"{team}-lead@example.com", gpus=4)])
    kubeflow = KubeflowInstall("ml-kubeflow", kubeflow_args, cluster=cluster)
    # Tenant queues: a ClusterQueue per Dask and Kubeflow tenant, a LocalQueue default in each namespace.
    pools = cluster.pool_shapes()
    Kueue(
        "ml-queues",
        KueueArgs(),
        tenants=dask_queue_tenants(dask_args, pools) + kubeflow_queue_tenants(kubeflow_args, pools),
        cluster=cluster,
        after=[dask, kubeflow],
    )
    pulumi.export("kubeconfig", cluster.kubeconfig)
else:
    karpenter = acme.get("provisioner") == "karpenter"
    eks = EksCluster("ml", EksClusterArgs(zones=["us-west-2a", "us-west-2b"]), karpenter_discovery=karpenter)
    # The node groups' autoscaler ships a ServiceMonitor and dcgm-exporter follows: both scraped
    # (Karpenter has no cluster autoscaler to scrape).
    monitoring = PrometheusStack(
        "ml-monitoring",
        PrometheusStackArgs(),
        cluster=eks,
        grafana_admin_password=password,
        scrapes=[MetricSource.DCGM_EXPORTER] if karpenter else [MetricSource.CLUSTER_AUTOSCALER, MetricSource.DCGM_EXPORTER],
    )
    classes = [
        GpuClassArgs(name="t4", instance_types=["g4dn.xlarge"], capacity=CapacityStrategy.SPOT_THEN_ON_DEMAND, max_nodes=4),
        GpuClassArgs(name="scheduler", role=ClassRole.SCHEDULER, instance_types=["g4dn.xlarge"], capacity=CapacityStrategy.ON_DEMAND, max_nodes=2),
    ]
    gpu: SpotFailoverEksNodeGroups | KarpenterNodePools
    if karpenter:
        # The same classes provisioned by Karpenter: a NodePool per class and tier (the stack eks-karpenter).
        gpu = KarpenterNodePools("ml-gpu", KarpenterNodePoolsArgs(classes=classes), cluster=eks)
    else:
        gpu = SpotFailoverEksNodeGroups(
            "ml-gpu",
            SpotFailoverEksNodeGroupsArgs(classes=classes),
            cluster=eks,  # the EksCluster itself: the node groups then stand for the cluster with its GPUs
            service_monitor_crd=monitoring.release,
        )
    DcgmExporter("ml-dcgm", DcgmExporterArgs(node_selection="eks"), cluster=gpu, service_monitor_crd=monitoring.release)
    dask_args = DaskOperatorArgs(tenants=[DaskTenantArgs(name=team, gpu_quota=4)])
    dask = DaskOperator("ml-dask", dask_args, cluster=gpu)
    Headlamp(
        "ml-ui",
        HeadlampArgs(tenants=[HeadlampTenantAccess(namespace=team, group=f"{team}-viewers")]),
        cluster=gpu,
        opts=pulumi.ResourceOptions(depends_on=[dask]),
    )
    Kueue("ml-queues", KueueArgs(), tenants=dask_queue_tenants(dask_args, gpu.pool_shapes()), cluster=gpu, after=[dask])
    # Its HorizontalPodAutoscaler lives in the team's namespace too.
    GpuUtilizationAutoscaler(
        "ml-inference",
        GpuUtilizationAutoscalerArgs(deployment="inference", namespace=team, max_replicas=4),
        cluster=gpu,
        opts=pulumi.ResourceOptions(depends_on=[dask]),
    )
    pulumi.export("kubeconfig", eks.kubeconfig)
