"""DaskOperator: Dask on Kubernetes for many tenants, RAPIDS-ready.

The dask-kubernetes operator (Helm chart, pinned; cluster-wide, or one namespaced
operator per tenant), and per tenant: a namespace, the ``rapids-dask`` ServiceAccount
with exactly the permissions ``KubeCluster`` needs (the RAPIDS deep-dive's Role), a GPU quota so no
tenant takes the whole pool, a LimitRange, optionally a RAPIDS notebook and a shared
DaskCluster with a DaskAutoscaler. An image prepuller DaemonSet puts the RAPIDS image on
every GPU node as it joins, so workers start in seconds.

``RapidsDaskClusterSpec`` builds the DaskCluster the RAPIDS deep-dive shows (``dask-cuda-worker``
workers with one GPU each, the scheduler preferring the cheap ``dedicated=scheduler``
pool) with ``dask_kubernetes.operator.make_cluster_spec``. The placed spec goes into every
tenant namespace as the ConfigMap ``dask-cluster-spec`` (key ``cluster.yaml``), mounted
into the tenant's notebook, whose image has no gpu-platform::

    import yaml
    from dask_kubernetes.operator import KubeCluster

    spec = yaml.safe_load(open("/etc/gpu-platform/dask/cluster.yaml"))
    cluster = KubeCluster(custom_cluster_spec=spec)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pydantic import ValidationError

from gpu_platform.components.core.cluster import ClusterComponent, check_pools, on_cluster
from gpu_platform.components.core.kube import helm_release
from gpu_platform.components.core.labels import GPU_QUOTA_KEY, GPU_RESOURCE, NAMESPACE_NAME_LABEL, TENANT_LABEL
from gpu_platform.components.core.models import input_error, input_errors
from gpu_platform.components.dask.args import (
    CLUSTER_SPEC_CONFIG_MAP,
    CLUSTER_SPEC_DIR,
    CLUSTER_SPEC_KEY,
    DASK_OPERATOR_CHART,
    DASK_REPO,
    GPU_NODE_LABELS,
    JUPYTER_PROXY_CONFIG,
    SERVICE_ACCOUNT,
    TENANT_ROLE_RULES,
    DaskNotebookArgs,
    DaskOperatorArgs,
    DaskTenantArgs,
    OperatorScope,
    RapidsDaskClusterSpec,
    SharedDaskClusterArgs,
    notebook_pool,
)
from gpu_platform.components.dask.resources import gpu_placement, managed_labels, operator_values, toleration_args
from gpu_platform.components.datasets.args import DatasetMount
from gpu_platform.components.datasets.resources import cluster_spec_with, pod_annotations, volume_mount_args
from gpu_platform.components.pools.awaits import await_annotations
from gpu_platform.components.pools.shapes import NodePoolShape, PoolPlacement

__all__ = [
    "CLUSTER_SPEC_CONFIG_MAP",
    "CLUSTER_SPEC_DIR",
    "CLUSTER_SPEC_KEY",
    "DaskNotebookArgs",
    "DaskOperator",
    "DaskOperatorArgs",
    "DaskTenantArgs",
    "OperatorScope",
    "RapidsDaskClusterSpec",
    "SharedDaskClusterArgs",
]


class DaskOperator(pulumi.ComponentResource):
    """The Dask operator and the tenants that use it."""

    namespaces: dict[str, k8s.core.v1.Namespace]
    """Each tenant's namespace, by tenant name."""
    releases: list[k8s.helm.v3.Release]
    """The operator release(s): one cluster-wide, or one per tenant."""
    cluster_spec: dict[str, Any]
    """The RAPIDS DaskCluster spec notebooks use (placed on this stack's pools)."""
    notebook_services: dict[str, pulumi.Output[str]]
    """The notebook Service's in-cluster address, by tenant."""

    def __init__(
        self,
        name: str,
        args: DaskOperatorArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        pools: Sequence[NodePoolShape] = (),
        cluster: ClusterComponent | None = None,
        datasets: Mapping[str, Sequence[DatasetMount]] | None = None,
    ) -> None:
        """``datasets``: the shared datasets each tenant's pods mount (workers, schedulers and the notebook), by
        tenant (SharedDatasetsArgs.tenant_mounts; SharedDatasets makes the claims). Default: none.
        ``cluster``: the cluster component it runs on (GpuGkeCluster, or on EKS the
        SpotFailoverEksNodeGroups built with the EksCluster): its provider, its node pools waited for,
        its ``pool_shapes()`` as ``pools``. ``pools``: the cluster's pools without a cluster component
        (StackConfig.pool_shapes(), or other languages' ``poolShapes`` outputs), for the scheduler's and
        workers' placement and what a node leaves to pods; not both.

        Raises pulumi.InputPropertyError (or InputPropertiesError) at ``args.<key>`` when a notebook or the
        workers fit no node of their pool, or at ``pools`` when the scheduler's does not, before anything
        is registered."""
        # Checked before the component registers: bad input changes nothing.
        placed = on_cluster(cluster, opts)
        pools = check_pools("pools", pools)
        if placed.component is not None:
            if pools:
                raise input_error("pools", "pools: the cluster component given as cluster= gives them; pass cluster= or pools=, not both")
            pools = placed.component.pool_shapes()
        opts = placed.opts
        datasets = dict(datasets or {})
        if unknown := sorted(set(datasets) - {t.name for t in args.tenants}):
            raise input_error(
                "datasets", f"datasets: mounts for {', '.join(unknown)}, which are no tenants of args.tenants; mount datasets for its tenants only"
            )
        self._datasets = datasets
        if problems := args.placement_problems(pools):
            raise input_errors([(("args", *loc), message) for loc, message, _ in problems])
        try:
            spec = RapidsDaskClusterSpec.for_pools(
                "rapids",
                pools,
                image=args.rapids_image,
                gpus_per_worker=args.worker_gpus,
                worker_cpu=args.worker_cpu,
                worker_memory=args.worker_memory,
            )
        except ValidationError as exc:
            raise input_error("pools", exc.errors()[0]["msg"]) from None
        super().__init__("gpu-platform:dask_operator:DaskOperator", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.cluster_spec = spec.to_dict()
        gpu_pools = [p for p in pools if p.gpus_per_node]
        self.namespaces = {}
        self.releases = []
        self.notebook_services = {}

        operator_ns = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels=managed_labels()),
            opts=child,
        )
        crd_holder: list[pulumi.Resource] = []
        if args.scope is OperatorScope.CLUSTER:
            self.releases.append(self._release(f"{name}-operator", args, operator_ns.metadata.name, None, [operator_ns]))
            crd_holder = list(self.releases)

        for tenant in args.tenants:
            ns = k8s.core.v1.Namespace(
                f"{name}-{tenant.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=tenant.name, labels={**managed_labels(), TENANT_LABEL: tenant.name}),
                opts=child,
            )
            self.namespaces[tenant.name] = ns
            if args.scope is OperatorScope.NAMESPACED:
                release = self._release(f"{name}-{tenant.name}-operator", args, ns.metadata.name, tenant.name, [ns])
                self.releases.append(release)
                crd_holder = [release]
            self._tenant(name, tenant, ns, spec, gpu_pools, crd_holder)
            if tenant.isolated:
                self._isolation(f"{name}-{tenant.name}", tenant, args.namespace if args.scope is OperatorScope.CLUSTER else None, ns)

        if args.prepull and gpu_pools:
            self._prepuller(name, args, gpu_pools, pulumi.ResourceOptions(parent=self, depends_on=[operator_ns]))

        self.register_outputs({"namespaces": list(self.namespaces), "notebookServices": self.notebook_services})

    def _release(
        self, resource: str, args: DaskOperatorArgs, namespace: pulumi.Input[str], watch: str | None, after: list[pulumi.Resource]
    ) -> k8s.helm.v3.Release:
        return helm_release(
            resource,
            chart=DASK_OPERATOR_CHART,
            version=args.chart_version,
            repository=DASK_REPO,
            namespace=namespace,
            values=operator_values(args, watch),
            release_name="dask-operator",
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )

    def _isolation(self, prefix: str, tenant: DaskTenantArgs, operator_namespace: str | None, ns: k8s.core.v1.Namespace) -> None:
        """Ingress to every pod of the tenant only from its own pods and, with a cluster-wide
        operator, the operator's namespace (it calls the schedulers to scale and retire workers)."""
        peers = [k8s.networking.v1.NetworkPolicyPeerArgs(pod_selector=k8s.meta.v1.LabelSelectorArgs())]
        if operator_namespace is not None:
            peers.append(
                k8s.networking.v1.NetworkPolicyPeerArgs(
                    namespace_selector=k8s.meta.v1.LabelSelectorArgs(match_labels={NAMESPACE_NAME_LABEL: operator_namespace})
                )
            )
        k8s.networking.v1.NetworkPolicy(
            f"{prefix}-isolation",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="tenant-isolation", namespace=tenant.name, labels=managed_labels()),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=k8s.meta.v1.LabelSelectorArgs(),
                policy_types=["Ingress"],
                ingress=[k8s.networking.v1.NetworkPolicyIngressRuleArgs(from_=peers)],
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[ns]),
        )

    def _tenant(
        self,
        name: str,
        tenant: DaskTenantArgs,
        ns: k8s.core.v1.Namespace,
        spec: RapidsDaskClusterSpec,
        gpu_pools: list[NodePoolShape],
        crds: list[pulumi.Resource],
    ) -> None:
        prefix = f"{name}-{tenant.name}"
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[ns])

        def meta(n: str) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=n, namespace=tenant.name, labels=managed_labels())

        k8s.core.v1.ServiceAccount(f"{prefix}-sa", metadata=meta(SERVICE_ACCOUNT), opts=in_ns)
        k8s.rbac.v1.Role(
            f"{prefix}-role",
            metadata=meta(SERVICE_ACCOUNT),
            rules=[k8s.rbac.v1.PolicyRuleArgs(api_groups=list(g), resources=list(r), verbs=list(v)) for g, r, v in TENANT_ROLE_RULES],
            opts=in_ns,
        )
        k8s.rbac.v1.RoleBinding(
            f"{prefix}-rolebinding",
            metadata=meta(SERVICE_ACCOUNT),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=SERVICE_ACCOUNT),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=SERVICE_ACCOUNT, namespace=tenant.name)],
            opts=in_ns,
        )
        hard = {GPU_QUOTA_KEY: str(tenant.gpu_quota)}
        if tenant.cpu_quota:
            hard["requests.cpu"] = tenant.cpu_quota
        if tenant.memory_quota:
            hard["requests.memory"] = tenant.memory_quota
        k8s.core.v1.ResourceQuota(f"{prefix}-gpu-quota", metadata=meta("gpu-quota"), spec=k8s.core.v1.ResourceQuotaSpecArgs(hard=hard), opts=in_ns)
        k8s.core.v1.LimitRange(
            f"{prefix}-limits",
            metadata=meta("defaults"),
            spec=k8s.core.v1.LimitRangeSpecArgs(
                limits=[
                    k8s.core.v1.LimitRangeItemArgs(
                        type="Container",
                        default_request={"cpu": tenant.default_cpu, "memory": tenant.default_memory},
                        default={"memory": tenant.default_memory},
                        # No GPU max here: the API server defaults a container's limit to the
                        # item's max when no default is set, so a max would hand every
                        # container that asks for no GPU that many. The quota bounds GPUs.
                    )
                ]
            ),
            opts=in_ns,
        )
        mounts = self._datasets.get(tenant.name, [])
        k8s.core.v1.ConfigMap(
            f"{prefix}-dask-cluster-spec",
            metadata=meta(CLUSTER_SPEC_CONFIG_MAP),
            # The placed spec the platform uses (with the tenant's datasets): notebooks load it without gpu-platform installed.
            data={CLUSTER_SPEC_KEY: yaml.safe_dump(cluster_spec_with(self.cluster_spec, mounts), sort_keys=False)},
            opts=in_ns,
        )
        if tenant.notebook is not None:
            self.notebook_services[tenant.name] = self._notebook(prefix, tenant, gpu_pools, in_ns)
        if tenant.shared_cluster is not None:
            shared = tenant.shared_cluster
            body = cluster_spec_with(spec.model_copy(update={"name": shared.name, "n_workers": shared.min_workers}).to_dict(), mounts)
            after = pulumi.ResourceOptions(parent=self, depends_on=[ns, *crds])
            k8s.apiextensions.CustomResource(
                f"{prefix}-{shared.name}-cluster",
                api_version=body["apiVersion"],
                kind=body["kind"],
                metadata=meta(shared.name),
                spec=body["spec"],
                opts=after,
            )
            k8s.apiextensions.CustomResource(
                f"{prefix}-{shared.name}-autoscaler",
                api_version="kubernetes.dask.org/v1",
                kind="DaskAutoscaler",
                metadata=meta(shared.name),
                spec={"cluster": shared.name, "minimum": shared.min_workers, "maximum": shared.max_workers},
                opts=after,
            )

    def _notebook(self, prefix: str, tenant: DaskTenantArgs, gpu_pools: list[NodePoolShape], opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
        nb = tenant.notebook
        assert nb is not None
        labels = {**managed_labels(), "app.kubernetes.io/name": "rapids-notebook"}

        def meta(n: str) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=n, namespace=tenant.name, labels=labels)

        k8s.core.v1.ConfigMap(
            f"{prefix}-proxy-config",
            metadata=meta("jupyter-server-proxy-config"),
            data={"jupyter_server_config.py": JUPYTER_PROXY_CONFIG},
            opts=opts,
        )
        placement = gpu_placement(gpu_pools) if nb.gpus else PoolPlacement({}, ())
        # A GPU notebook on a pool whose minimum nodes cannot hold it waits for the autoscaler: not `pulumi up` (awaits.py).
        waits = await_annotations(notebook_pool(gpu_pools, nb.gpus), nb.gpus) or None

        def workload(n: str) -> k8s.meta.v1.ObjectMetaArgs:
            return k8s.meta.v1.ObjectMetaArgs(name=n, namespace=tenant.name, labels=labels, annotations=waits)

        limits = {"cpu": nb.cpu, "memory": nb.memory}
        if nb.gpus:
            limits[GPU_RESOURCE] = str(nb.gpus)
        selector = {"app.kubernetes.io/name": "rapids-notebook", TENANT_LABEL: tenant.name}
        dataset_volumes, dataset_mounts = volume_mount_args(self._datasets.get(tenant.name, []))
        k8s.apps.v1.Deployment(
            f"{prefix}-notebook",
            metadata=workload("rapids-notebook"),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=1,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=selector),
                strategy=k8s.apps.v1.DeploymentStrategyArgs(type="Recreate"),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        labels={**labels, **selector}, annotations=pod_annotations(self._datasets.get(tenant.name, [])) or None
                    ),
                    spec=k8s.core.v1.PodSpecArgs(
                        service_account_name=SERVICE_ACCOUNT,
                        node_selector=dict(placement.node_selector) or None,
                        tolerations=toleration_args(placement.tolerations) or None,
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="notebook",
                                image=nb.image,
                                ports=[k8s.core.v1.ContainerPortArgs(name="notebook", container_port=8888)],
                                env=[
                                    # Dashboard links go through the notebook's jupyter-server-proxy.
                                    k8s.core.v1.EnvVarArgs(name="DASK_DISTRIBUTED__DASHBOARD__LINK", value="/proxy/{host}:{port}/status")
                                ],
                                resources=k8s.core.v1.ResourceRequirementsArgs(requests=dict(limits), limits=dict(limits)),
                                volume_mounts=[
                                    # A system config path: RAPIDS images run as user rapids
                                    # (home /home/rapids), never root, so ~/.jupyter is not /root's.
                                    k8s.core.v1.VolumeMountArgs(
                                        name="proxy-config",
                                        mount_path="/etc/jupyter/jupyter_server_config.py",
                                        sub_path="jupyter_server_config.py",
                                    ),
                                    k8s.core.v1.VolumeMountArgs(name="dask-cluster-spec", mount_path=CLUSTER_SPEC_DIR, read_only=True),
                                    *dataset_mounts,
                                ],
                            )
                        ],
                        volumes=[
                            k8s.core.v1.VolumeArgs(
                                name="proxy-config",
                                config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name="jupyter-server-proxy-config"),
                            ),
                            k8s.core.v1.VolumeArgs(
                                name="dask-cluster-spec",
                                config_map=k8s.core.v1.ConfigMapVolumeSourceArgs(name=CLUSTER_SPEC_CONFIG_MAP),
                            ),
                            *dataset_volumes,
                        ],
                    ),
                ),
            ),
            opts=opts,
        )
        service = k8s.core.v1.Service(
            f"{prefix}-notebook-service",
            metadata=workload("rapids-notebook"),  # its endpoints are the notebook's pod
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=selector,
                ports=[k8s.core.v1.ServicePortArgs(name="notebook", port=8888, target_port="notebook")],
            ),
            opts=opts,
        )
        return pulumi.Output.concat(service.metadata.name, f".{tenant.name}.svc:8888")

    def _prepuller(self, name: str, args: DaskOperatorArgs, gpu_pools: list[NodePoolShape], opts: pulumi.ResourceOptions) -> None:
        labels = {**managed_labels(), "app.kubernetes.io/name": "rapids-prepuller"}
        images = sorted({args.rapids_image, *(t.notebook.image for t in args.tenants if t.notebook)})
        taints = {(t.key, t.value, t.effect): t for p in gpu_pools for t in p.taints}
        k8s.apps.v1.DaemonSet(
            f"{name}-prepuller",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="rapids-prepuller", namespace=args.namespace, labels=labels),
            spec=k8s.apps.v1.DaemonSetSpecArgs(
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"app.kubernetes.io/name": "rapids-prepuller"}),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                    spec=k8s.core.v1.PodSpecArgs(
                        # GPU nodes only: GKE labels them with the accelerator, the EKS groups with theirs.
                        affinity=k8s.core.v1.AffinityArgs(
                            node_affinity=k8s.core.v1.NodeAffinityArgs(
                                required_during_scheduling_ignored_during_execution=k8s.core.v1.NodeSelectorArgs(
                                    node_selector_terms=[
                                        k8s.core.v1.NodeSelectorTermArgs(
                                            match_expressions=[k8s.core.v1.NodeSelectorRequirementArgs(key=label, operator="Exists")]
                                        )
                                        for label in GPU_NODE_LABELS
                                    ]
                                )
                            )
                        ),
                        tolerations=toleration_args(sorted(taints.values(), key=str)),
                        init_containers=[
                            k8s.core.v1.ContainerArgs(
                                name=f"pull-{i}",
                                image=image,
                                command=["sh", "-c", "true"],
                                resources=k8s.core.v1.ResourceRequirementsArgs(requests={"cpu": "10m", "memory": "16Mi"}),
                            )
                            for i, image in enumerate(images)
                        ],
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="pause",
                                image=args.pause_image,
                                resources=k8s.core.v1.ResourceRequirementsArgs(requests={"cpu": "1m", "memory": "8Mi"}, limits={"memory": "16Mi"}),
                            )
                        ],
                    ),
                ),
            ),
            opts=opts,
        )
