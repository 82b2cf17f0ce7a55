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
both clouds. A stack with ``existing_cluster`` creates no cluster: an ExistingCluster (a provider on
the cluster's kubeconfig, the pools the stack describes) is the ``cluster=`` of the same parts.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from gpu_platform.components import (
    ClusterComponent,
    DaskOperator,
    DcgmExporter,
    EksCluster,
    ExistingCluster,
    GpuGkeCluster,
    Headlamp,
    KarpenterNodePools,
    KarpenterNodePoolsArgs,
    KubeflowInstall,
    Kueue,
    PrometheusStack,
    SpotFailoverEksNodeGroups,
)
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.dask.args import SERVICE_ACCOUNT as DASK_SERVICE_ACCOUNT
from gpu_platform.components.datasets.args import SharedDatasetsArgs
from gpu_platform.components.datasets.shared_datasets import SharedDatasets
from gpu_platform.components.inference.service import GpuInferenceService
from gpu_platform.components.karpenter.args import Provisioner
from gpu_platform.components.kubeflow.args import Edition
from gpu_platform.components.load_balancer.args import iam_policy_url
from gpu_platform.components.load_balancer.controller import AwsLoadBalancerController
from gpu_platform.components.monitoring.prometheus_args import MetricSource
from gpu_platform.infra.stack.errors import ConfigError
from gpu_platform.infra.stack.model import CapacityCheck, StackConfig

__all__ = [
    "Platform",
    "build",
    "compose_addons",
    "compose_datasets",
    "compose_inference",
    "compose_load_balancer",
    "compose_monitoring",
    "load_balancer_policy",
    "scraped_later",
]

KUBEFLOW_PROFILE_ACCOUNT = "default-editor"
"""The account a Kubeflow profile's notebooks and pipeline steps run as (the profile controller makes it)."""


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
    # Read before anything is registered: a policy that cannot be had stops the run with one line.
    policy = load_balancer_policy(config)
    pulumi.export("cloud", config.cloud.value)
    pulumi.export("environment", config.environment.value)
    cluster: ClusterComponent
    controller: AwsLoadBalancerController | None = None
    if config.existing_cluster is not None:
        # A cluster made elsewhere: only the Kubernetes layer, on the pools the stack describes.
        kubeconfig = config.existing_cluster_kubeconfig
        existing = ExistingCluster(
            stack,
            config.existing_cluster,
            kubeconfig=None if kubeconfig is None else pulumi.Output.secret(kubeconfig.get_secret_value()),
        )
        pulumi.export("existingCluster", existing.kind)
        pulumi.export("pools", existing.pool_names)
        monitoring = compose_monitoring(stack, config, existing)
        compose_addons(stack, config, existing, monitoring)
        return Platform(config, existing, monitoring)
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
            # The same classes and tiers as NodePools: Karpenter provisions them (components/karpenter/node_pools.py).
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
            controller = compose_load_balancer(stack, config, eks, policy)
            compose_addons(stack, config, pools, monitoring, ingress_controller=controller)
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
        controller = compose_load_balancer(stack, config, eks, policy)
        # The node groups stand for the cluster with its GPUs: add-ons wait for the nodes, CoreDNS and
        # the StorageClass their claims name, and are placed on the system node group and the GPU classes.
        cluster = gpu
    compose_addons(stack, config, cluster, monitoring, ingress_controller=controller)
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


def load_balancer_policy(config: StackConfig) -> str | None:
    """The AWS Load Balancer Controller's published IAM policy when the stack installs the controller, read from
    the pinned upstream sources (infra/preview/upstream.py: --upstream offline, fetched and digest-checked
    online); ConfigError (one line) when it cannot be had."""
    from gpu_platform.infra.preview.upstream import SourceError, upstream_file

    alb = config.load_balancer_controller
    if alb is None:
        return None
    try:
        return upstream_file(iam_policy_url(alb.chart_version))
    except SourceError as exc:
        raise ConfigError([f"gpu-platform:aws_load_balancer_controller: the controller's IAM policy: {exc}"]) from None


def compose_load_balancer(stack: str, config: StackConfig, eks: EksCluster, policy: str | None) -> AwsLoadBalancerController | None:
    """The AWS Load Balancer Controller on ``eks`` when the stack installs it (``policy``: load_balancer_policy's),
    whichever provisioner the GPU classes have: the ALB Ingresses (Kubeflow's UI, the inference service) wait for it."""
    if (alb := config.load_balancer_controller) is None or policy is None:
        return None
    controller = AwsLoadBalancerController(f"{stack}-alb-controller", alb, cluster=eks, iam_policy=policy)
    pulumi.export("loadBalancerControllerRoleArn", controller.role_arn)
    return controller


def compose_inference(
    stack: str,
    config: StackConfig,
    cluster: ClusterComponent,
    monitoring: PrometheusStack | None,
    ingress_controller: AwsLoadBalancerController | None,
) -> GpuInferenceService | None:
    """The stack's GPU inference service (gpu-platform:inference), its alert shipped with the monitoring stack."""
    if config.inference is None:
        return None
    service = GpuInferenceService(
        f"{stack}-inference",
        config.inference,
        cluster=cluster,
        ingress_controller=None if ingress_controller is None else ingress_controller.release,
        prometheus_rule_crd=None if monitoring is None else monitoring.release,
    )
    pulumi.export("inferenceService", service.service_address)
    return service


def compose_addons(
    stack: str,
    config: StackConfig,
    cluster: ClusterComponent,
    monitoring: PrometheusStack | None,
    *,
    ingress_controller: AwsLoadBalancerController | None = None,
) -> None:
    """Install and export the add-ons the stack config asks for on ``cluster`` (its every pool: on EKS the
    node groups built with the EksCluster); ``monitoring`` from compose_monitoring; ``ingress_controller``: the
    AWS Load Balancer Controller when the stack installs it (ALB Ingresses wait for it)."""
    if monitoring is not None and config.monitoring.dcgm_exporter is not None:
        DcgmExporter(f"{stack}-dcgm", config.monitoring.dcgm_exporter, cluster=cluster, service_monitor_crd=monitoring.release)
    tenants: dict[str, pulumi.Resource] = {}  # each tenant's namespace (or what is made in it), by tenant
    datasets = config.shared_datasets if config.shared_datasets is not None and config.shared_datasets.datasets else None
    mounts = datasets.tenant_mounts(config.cloud) if datasets is not None else {}
    if config.kubeflow is not None:
        tenants.update(compose_kubeflow(stack, config, cluster, ingress_controller).tenant_quotas)
    if config.dask is not None:
        dask_tenants = {t.name for t in config.dask.tenants}
        dask = DaskOperator(
            f"{stack}-dask",
            config.dask,
            cluster=cluster,
            datasets={t: m for t, m in mounts.items() if t in dask_tenants} or None,
        )
        tenants.update(dask.namespaces)
        pulumi.export("daskTenants", list(dask.namespaces))
        pulumi.export("daskNotebooks", dask.notebook_services)
        pulumi.export("daskClusterSpec", dask.cluster_spec)
    if datasets is not None:
        compose_datasets(stack, config, datasets, cluster, tenants)
    if config.headlamp.enabled:
        headlamp = Headlamp(
            f"{stack}-headlamp",
            config.headlamp.args(config.tenant_namespaces()),
            cluster=cluster,
            opts=pulumi.ResourceOptions(depends_on=list(tenants.values())),
        )
        pulumi.export("headlampNamespace", headlamp.namespace)
    if config.queues is not None:
        queues = Kueue(
            f"{stack}-queues",
            config.queues,
            tenants=config.queue_tenants(),
            cluster=cluster,
            after=list(tenants.values()),
            service_monitor_crd=None if monitoring is None else monitoring.release,
        )
        pulumi.export("clusterQueues", queues.cluster_queues)
    if config.warm_capacity is not None and config.warm_capacity.enabled():
        from gpu_platform.components.warm.warm_capacity import WarmCapacity

        WarmCapacity(f"{stack}-warm", config.warm_capacity, cluster=cluster)
    compose_inference(stack, config, cluster, monitoring, ingress_controller)


def compose_kubeflow(
    stack: str, config: StackConfig, cluster: ClusterComponent, ingress_controller: AwsLoadBalancerController | None = None
) -> KubeflowInstall:
    """The stack's Kubeflow on ``cluster``, its credentials and Dex's secrets from the stack's secret config
    (the engine tests deploy it through this function too); ``ingress_controller`` acts on the UI's ALB Ingress."""
    assert config.kubeflow is not None
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
            None if config.kubeflow_oidc_client_secret is None else pulumi.Output.secret(config.kubeflow_oidc_client_secret.get_secret_value())
        ),
        ingress_controller=None if ingress_controller is None else ingress_controller.release,
        credentials={c: pulumi.Output.secret(value) for c, value in config.kubeflow_credentials().items()} or None,
    )
    pulumi.export("kubeflowPipelinesEndpoint", install.pipelines_endpoint)
    pulumi.export("kubeflowUiService", install.ui_service)
    pulumi.export("kubeflowTrainingPlacement", install.training_placement)
    pulumi.export("kubeflowStorage", install.storage)
    return install


def compose_datasets(
    stack: str, config: StackConfig, datasets: SharedDatasetsArgs, cluster: ClusterComponent, tenants: dict[str, pulumi.Resource]
) -> SharedDatasets:
    """The stack's shared datasets, their claims in the tenants' namespaces (``tenants``: each namespace's
    resource, by tenant); on GKE the grants go to the service accounts the tenants' pods run as."""
    accounts: dict[str, tuple[str, ...]] = {}
    if config.dask is not None:
        # Dask workers and schedulers run as the namespace's default account, the notebook as rapids-dask.
        accounts |= {t.name: ("default", DASK_SERVICE_ACCOUNT) for t in config.dask.tenants}
    if config.kubeflow is not None:
        profile_account = KUBEFLOW_PROFILE_ACCOUNT if config.kubeflow.install.edition is Edition.PLATFORM else "default"
        accounts |= {t.name: (profile_account,) for t in config.kubeflow.install.tenants}
    profiles = [t.name for t in config.kubeflow.install.tenants] if config.kubeflow is not None and config.kubeflow.install.edition is Edition.PLATFORM else []
    shared = SharedDatasets(
        f"{stack}-datasets",
        datasets,
        cluster=cluster,
        namespaces=tenants,
        service_accounts=accounts,
        pod_defaults=profiles,
    )
    pulumi.export("datasetBuckets", shared.buckets)
    pulumi.export("datasetClaims", shared.claims)
    return shared
