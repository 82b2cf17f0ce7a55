"""GpuGkeCluster: a GKE cluster for shared GPU work, with typed GPU node pools.

Regional or zonal; the default node pool is removed and every pool is declared here:
a small system pool for controllers, any number of GPU pools (on-demand, spot, or spot
with an on-demand fallback that a custom ComputeClass orders), and optionally the cheap
scheduler pool the Dask scheduler prefers. Nodes run as a dedicated least-privilege
service account with Workload Identity.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import ClusterComponent
from gpu_platform.components.core.labels import MANAGED_LABELS
from gpu_platform.components.core.models import input_error, report_checks_not_made
from gpu_platform.components.gke.args import (
    ARTIFACT_REGISTRY_READER,
    IMAGE_STREAMING_ROLE,
    NODE_ROLES,
    AuthorizedNetwork,
    AutoscalingProfile,
    ControlPlaneAccess,
    DiskType,
    GpuDriverVersion,
    GpuGkeClusterArgs,
    GpuNodePoolArgs,
    GpuSharing,
    GpuSharingStrategy,
    ImageType,
    LocationPolicy,
    ReleaseChannel,
    SchedulerPoolArgs,
    SystemPoolArgs,
    valid_cluster_name,
)
from gpu_platform.components.gke.plan import PlannedPool
from gpu_platform.components.gke.resources import cluster_args, compute_class_spec, gke_kubeconfig, node_pool_args
from gpu_platform.components.monitoring.prometheus_args import ClusterKind, MetricSource
from gpu_platform.components.pools.shapes import (
    NodePoolShape,
    PoolPlacement,
)

__all__ = [
    "AuthorizedNetwork",
    "AutoscalingProfile",
    "ControlPlaneAccess",
    "DiskType",
    "GpuDriverVersion",
    "GpuGkeCluster",
    "GpuGkeClusterArgs",
    "GpuNodePoolArgs",
    "GpuSharing",
    "GpuSharingStrategy",
    "ImageType",
    "LocationPolicy",
    "ReleaseChannel",
    "SchedulerPoolArgs",
    "SystemPoolArgs",
]


class GpuGkeCluster(pulumi.ComponentResource, ClusterComponent):
    """A GKE cluster with typed GPU node pools, a least-privilege node identity and a Kubernetes provider.

    Pass it as ``cluster=`` to the add-ons (PrometheusStack, DcgmExporter, DaskOperator, KubeflowInstall,
    GpuUtilizationAutoscaler): they take its provider, wait for its node pools and place pods on
    ``pool_shapes()``.
    """

    cluster_name: pulumi.Output[str]
    """The GKE cluster's name."""
    endpoint: pulumi.Output[str]
    """The control plane's IP address."""
    kubeconfig: pulumi.Output[str]
    """A kubeconfig (gke-gcloud-auth-plugin exec form); a Pulumi secret."""
    provider: k8s.Provider
    """A Kubernetes provider for downstream components."""
    node_service_account_email: pulumi.Output[str]
    """The nodes' service account."""
    node_pools: dict[str, gcp.container.NodePool]
    """Every node pool, by GKE pool name."""
    compute_classes: dict[str, str]
    """ComputeClass name of each GPU pool of more than one capacity rung (spot_then_on_demand, a capacity_ladder), by pool name."""
    placements: dict[str, PoolPlacement]
    """How a pod lands on each declared pool (by pool name as configured)."""
    cluster: gcp.container.Cluster
    """The GKE cluster resource itself (for depends_on, or any attribute not exported here)."""
    cluster_id: pulumi.Output[str]
    """The cluster's id (projects/<project>/locations/<location>/clusters/<name>)."""
    ca_certificate: pulumi.Output[str]
    """The cluster's CA certificate, base64 (what a kubeconfig's certificate-authority-data holds)."""
    workload_identity_pool: pulumi.Output[str]
    """The Workload Identity pool (<project>.svc.id.goog) Kubernetes service accounts map into."""
    compute_class_resources: dict[str, k8s.apiextensions.CustomResource]
    """The ComputeClass objects, by pool name (depend on them before scheduling onto a class)."""

    def __init__(
        self,
        name: str,
        args: GpuGkeClusterArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        project, cluster_name = _project_and_cluster_name(name, args)
        super().__init__("gpu-platform:gpu_gke_cluster:GpuGkeCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        report_checks_not_made(self, name, args)

        apis = _enabled_apis(name, args, project, child)
        account, bindings = _node_service_account(name, args, project, cluster_name, child)
        nat = _cloud_nat(name, args, project, child)

        cluster = gcp.container.Cluster(
            f"{name}-cluster",
            cluster_args(args, cluster_name=cluster_name, project=project, service_account=account.email),
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.deletion_protection,
                depends_on=[*apis, *bindings, *nat],
                # The default pool's settings stop mattering once it is removed.
                ignore_changes=["nodeConfig", "initialNodeCount"],
            ),
        )

        planned = args.plan
        self._pool_shapes = [p.shape for p in planned]
        self.placements = {p.args.name: p.shape.placement for p in planned}
        self.node_pools = {}
        created = self._register_node_pools(name, args, planned, cluster, project, account.email)
        self.compute_classes = {p.args.name: p.compute_class for p in planned if p.compute_class is not None}

        self.cluster = cluster
        self.cluster_id = cluster.id
        self.ca_certificate = cluster.master_auth.cluster_ca_certificate
        self.workload_identity_pool = cluster.workload_identity_config.workload_pool
        self.cluster_name = cluster.name
        self.endpoint = cluster.endpoint
        self.node_service_account_email = account.email
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, cluster.endpoint, cluster.master_auth.cluster_ca_certificate).apply(lambda v: gke_kubeconfig(v[0], v[1], v[2]))
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            k8s.ProviderArgs(kubeconfig=self.kubeconfig),
            opts=child,
        )

        self.compute_class_resources = self._compute_class_resources(name, planned, created)

        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "endpoint": self.endpoint,
                "kubeconfig": self.kubeconfig,
                "nodeServiceAccountEmail": self.node_service_account_email,
                "nodePools": list(self.node_pools),
                "computeClasses": self.compute_classes,
                "clusterId": self.cluster_id,
                "caCertificate": self.ca_certificate,
                "workloadIdentityPool": self.workload_identity_pool,
            }
        )

    def _register_node_pools(
        self,
        name: str,
        args: GpuGkeClusterArgs,
        planned: tuple[PlannedPool, ...],
        cluster: gcp.container.Cluster,
        project: pulumi.Input[str],
        service_account: pulumi.Output[str],
    ) -> dict[str, list[gcp.container.NodePool]]:
        """Every planned GKE node pool, into ``self.node_pools``; returns them by pool spec name."""
        created: dict[str, list[gcp.container.NodePool]] = {}
        for pool in planned:
            for node_pool in pool.node_pools:
                self.node_pools[node_pool.gke_name] = gcp.container.NodePool(
                    f"{name}-{node_pool.gke_name}",
                    node_pool_args(
                        pool=pool.args,
                        gke_name=node_pool.gke_name,
                        cluster=cluster,
                        project=project,
                        location=args.location,
                        service_account=service_account,
                        rung=node_pool.rung,
                        labels=pool.labels,
                        taints=list(pool.taints),
                        gpu=pool.gpu,
                        bounds=node_pool.bounds,
                        initial_nodes=node_pool.initial_nodes,
                    ),
                    opts=pulumi.ResourceOptions(
                        parent=self,
                        # initial_node_count forces replacement; the autoscaler owns the count afterwards.
                        ignore_changes=["initialNodeCount"],
                    ),
                )
                created.setdefault(pool.args.name, []).append(self.node_pools[node_pool.gke_name])
        return created

    def _compute_class_resources(
        self, name: str, planned: tuple[PlannedPool, ...], created: dict[str, list[gcp.container.NodePool]]
    ) -> dict[str, k8s.apiextensions.CustomResource]:
        """The ComputeClass of every pool of more than one capacity rung, after its node pools."""
        resources: dict[str, k8s.apiextensions.CustomResource] = {}
        for pool in planned:
            if pool.compute_class is None:
                continue
            # CustomResource takes its fields as keywords (its Args class is not accepted).
            resources[pool.args.name] = k8s.apiextensions.CustomResource(
                f"{name}-{pool.args.name}-compute-class",
                api_version="cloud.google.com/v1",
                kind="ComputeClass",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=pool.compute_class, labels=dict(MANAGED_LABELS)),
                spec=compute_class_spec([p.gke_name for p in pool.node_pools], pool.gpu.migrate_back_to_spot),  # type: ignore[union-attr]
                opts=pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=created[pool.args.name]),
            )
        return resources

    @property
    def cloud(self) -> ClusterKind:
        """gke."""
        return ClusterKind.GKE

    def pool_shapes(self) -> list[NodePoolShape]:
        """The system pool, the scheduler pool and the GPU pools as workloads see them (the plan's, as
        ``GpuGkeClusterArgs.pool_shapes()``)."""
        return list(self._pool_shapes)

    def ready(self) -> list[pulumi.Resource]:
        """Every node pool."""
        return list(self.node_pools.values())

    def metric_sources(self) -> frozenset[MetricSource]:
        """Nothing: GKE's autoscaler runs in the control plane, GKE's managed DCGM metrics go to Cloud Monitoring."""
        return frozenset()


def _project_and_cluster_name(name: str, args: GpuGkeClusterArgs) -> tuple[pulumi.Input[str], str]:
    """The GCP project (args, else the gcp:project config) and the GKE cluster name; refused before
    anything is registered."""
    project = args.project if args.project is not None else gcp.config.project
    if not project:
        raise input_error("args.project", "no GCP project; set GpuGkeClusterArgs.project or the gcp:project config")
    cluster_name = args.cluster_name or name
    if not valid_cluster_name(cluster_name):
        raise input_error(
            "args.cluster_name",
            f"the default (the component name {name!r}) is not a valid GKE cluster name; set cluster_name",
        )
    return project, cluster_name


def _enabled_apis(name: str, args: GpuGkeClusterArgs, project: pulumi.Input[str], child: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """The project services the cluster needs (enable_apis): GKE, and image streaming's when a pool streams."""
    apis: list[pulumi.Resource] = []
    if args.enable_apis:
        services = ["container.googleapis.com"]
        if args.uses_image_streaming:
            services.append("containerfilesystem.googleapis.com")
        for service in services:
            apis.append(
                gcp.projects.Service(
                    f"{name}-{service.split('.')[0]}-api",
                    gcp.projects.ServiceArgs(project=project, service=service, disable_on_destroy=False),
                    opts=child,
                )
            )
    return apis


def _node_service_account(
    name: str, args: GpuGkeClusterArgs, project: pulumi.Input[str], cluster_name: str, child: pulumi.ResourceOptions
) -> tuple[gcp.serviceaccount.Account, list[gcp.projects.IAMMember]]:
    """The nodes' dedicated service account and its project role bindings."""
    account_id = args.node_service_account_id or f"{cluster_name[:24].rstrip('-')}-nodes"
    account = gcp.serviceaccount.Account(
        f"{name}-nodes",
        gcp.serviceaccount.AccountArgs(
            project=project,
            account_id=account_id,
            display_name=f"GKE nodes of {cluster_name}",
        ),
        opts=child,
    )
    roles = list(NODE_ROLES)
    if args.artifact_registry_access:
        roles.append(ARTIFACT_REGISTRY_READER)
    if args.uses_image_streaming:
        roles.append(IMAGE_STREAMING_ROLE)
    roles += [r for r in args.extra_node_roles if r not in roles]
    member = account.email.apply(lambda email: f"serviceAccount:{email}")
    bindings = [
        gcp.projects.IAMMember(
            f"{name}-nodes-{role.rsplit('/', 1)[1].replace('.', '-').lower()}",
            gcp.projects.IAMMemberArgs(project=project, role=role, member=member),
            opts=child,
        )
        for role in roles
    ]
    return account, bindings


def _cloud_nat(name: str, args: GpuGkeClusterArgs, project: pulumi.Input[str], child: pulumi.ResourceOptions) -> list[pulumi.Resource]:
    """Cloud Router and NAT for private nodes' egress (cloud_nat)."""
    nat: list[pulumi.Resource] = []
    if args.cloud_nat:
        router = gcp.compute.Router(
            f"{name}-router",
            gcp.compute.RouterArgs(project=project, region=args.region, network=args.network),
            opts=child,
        )
        nat.append(
            gcp.compute.RouterNat(
                f"{name}-nat",
                gcp.compute.RouterNatArgs(
                    project=project,
                    region=args.region,
                    router=router.name,
                    nat_ip_allocate_option="AUTO_ONLY",
                    source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
                    log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
                ),
                opts=child,
            )
        )
    return nat
