"""SpotFailoverEksNodeGroups: EKS GPU node groups that take spot capacity first and fall
back to on-demand, scaling from zero, driven by the cluster autoscaler's priority expander.

Per GPU class and capacity type one managed node group (desired size left to the
autoscaler), GPU-tainted and labelled, with the ASG tags that let the autoscaler scale it
from zero; the cluster autoscaler as a pinned Helm release with a least-privilege IRSA
role; the ``cluster-autoscaler-priority-expander`` ConfigMap, derived from the classes or
given as a typed list of tiers; and the NVIDIA device plugin where the AMI lacks it.

How the failover works: when a GPU pod is pending, the autoscaler asks the priority
expander which node group to grow; it picks the spot group (higher priority). If AWS has
no spot capacity the group's scaling activity fails and the autoscaler gives up on it
early (it may read DescribeScalingActivities) or after ``max_node_provision_time``,
backs the group off and grows the next tier: the on-demand twin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import check_live
from gpu_platform.components.core.kube import helm_release
from gpu_platform.components.core.labels import (
    CLASS_LABEL,
    GPU_TEMPLATE_TAG,
    MANAGED_LABELS,
    PRIORITY_CONFIGMAP,
)
from gpu_platform.components.core.models import input_error, input_errors
from gpu_platform.components.eks.cluster import EksCluster, EksClusterRef
from gpu_platform.components.eks.gpu_pools import EksGpuPools, join_eks_cluster
from gpu_platform.components.eks.node_group_args import (
    ACCELERATOR_LABEL,
    AUTOSCALER_CHART,
    AUTOSCALER_REPO,
    AUTOSCALER_SERVICE_ACCOUNT,
    AmiType,
    ClassRole,
    ClusterAutoscalerSettings,
    Expander,
    GpuClassArgs,
    PriorityExpander,
    PriorityTier,
    SpotFailoverEksNodeGroupsArgs,
    ami_problem,
    asg_name_pattern,
    autoscaler_image,
)
from gpu_platform.components.eks.node_group_resources import (
    asg_tags,
    autoscaler_iam_policy,
    autoscaler_values,
    device_plugins,
    launch_template_args,
)
from gpu_platform.components.eks.plan import NodeGroupPlan
from gpu_platform.components.eks.resources import irsa_role
from gpu_platform.components.monitoring.prometheus_args import MetricSource
from gpu_platform.components.pools.ladders import RungKind
from gpu_platform.components.pools.shapes import PoolPlacement

__all__ = [
    "ACCELERATOR_LABEL",
    "AmiType",
    "ClassRole",
    "ClusterAutoscalerSettings",
    "Expander",
    "GpuClassArgs",
    "PriorityExpander",
    "PriorityTier",
    "SpotFailoverEksNodeGroups",
    "SpotFailoverEksNodeGroupsArgs",
    "asg_name_pattern",
]


class SpotFailoverEksNodeGroups(pulumi.ComponentResource, EksGpuPools):
    """GPU node groups with spot-first, on-demand-fallback autoscaling from zero.

    Built with ``cluster=<EksCluster>``, it stands for that cluster with its GPU node groups: pass it as
    ``cluster=`` to the add-ons that run on GPU nodes (DcgmExporter, DaskOperator, KubeflowInstall,
    GpuUtilizationAutoscaler), which take the cluster's provider and wait for the node groups.
    """

    node_groups: dict[str, aws.eks.NodeGroup]
    """Every node group, by name (<class>-spot, <class>-on-demand)."""
    autoscaler_role_arn: pulumi.Output[str]
    """The autoscaler's IRSA role."""
    priority_configmap: k8s.core.v1.ConfigMap | None
    """The priority expander's ConfigMap; None when priority is not in the expander chain."""
    placements: dict[str, PoolPlacement]
    """How a pod lands on each class (node selector and tolerations), by class name."""
    expander: PriorityExpander
    """The priority tiers in force."""

    def __init__(
        self,
        name: str,
        args: SpotFailoverEksNodeGroupsArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: EksCluster | EksClusterRef,
        service_monitor_crd: pulumi.Resource | None = None,
    ) -> None:
        """``cluster``: the EKS cluster: the EksCluster itself (its provider is added to ``opts``), or its
        ``ref`` (or your own cluster's EksClusterRef; ``opts.providers`` must then hold its Kubernetes provider).
        ``service_monitor_crd``: what installs the ServiceMonitor CRD (PrometheusStack.release); given, the
        autoscaler's chart ships its ServiceMonitor and waits for it, so its metrics (cluster_autoscaler_*) are
        scraped. Default: none (no ServiceMonitor)."""
        # Refused before anything is registered.
        self._cluster, cluster, opts = self._joined(cluster, opts, service_monitor_crd)
        self._scrapes = frozenset({MetricSource.CLUSTER_AUTOSCALER}) if service_monitor_crd is not None else frozenset()
        self._refuse_bad_versions(args, cluster)
        super().__init__("gpu-platform:spot_failover_eks_node_groups:SpotFailoverEksNodeGroups", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        settings = args.autoscaler
        self.expander = args.effective_expander()

        self.node_groups = {}
        for cls in args.classes:
            for planned in cls.node_groups():
                self.node_groups[planned.name] = self._node_group(name, cls, planned, cluster, child)

        role, policy = self._autoscaler_role(name, settings, cluster, child)
        self.autoscaler_role_arn = role.arn

        self.priority_configmap = self._priority_configmap(name, settings, child) if Expander.PRIORITY in settings.expanders else None
        self._autoscaler_release(name, settings, cluster, role, policy, service_monitor_crd)

        shared = [c for c in args.classes if c.gpu_sharing is not None]
        device_plugins(
            name,
            args,
            sorted(g.name for c in args.classes if not c.ami_type.ships_device_plugin and c.gpu_sharing is None for g in c.node_groups()),
            [g.name for c in shared for g in c.node_groups()],
            child,
        )

        self._pool_shapes = args.pool_shapes() if self._cluster is None else self._cluster.in_zones(args.pool_shapes())
        self.placements = {s.name: s.placement for s in self._pool_shapes}
        self.register_outputs(
            {
                "nodeGroups": list(self.node_groups),
                "autoscalerRoleArn": self.autoscaler_role_arn,
                "priorities": self.expander.configmap_text(),
            }
        )

    @staticmethod
    def _refuse_bad_versions(args: SpotFailoverEksNodeGroupsArgs, cluster: EksClusterRef) -> None:
        """The autoscaler image and every class's AMI type suit the cluster's Kubernetes version."""
        try:
            autoscaler_image(args.autoscaler, cluster.version)
        except ValueError as exc:
            raise input_error("args.autoscaler.image", str(exc)) from None
        if problems := [
            (("args", "classes", i, "ami_type"), f"class {cls.name}: {problem}")
            for i, cls in enumerate(args.classes)
            if (problem := ami_problem(cls, cluster.version))
        ]:
            raise input_errors(problems)

    def _node_group(
        self,
        name: str,
        cls: GpuClassArgs,
        planned: NodeGroupPlan,
        cluster: EksClusterRef,
        child: pulumi.ResourceOptions,
    ) -> aws.eks.NodeGroup:
        """One managed node group of a class (one rung of its ladder), then the tags of its ASG the autoscaler reads. A
        reservation or capacity block rung's group is launched from its launch template ``<name>-<group>-launch-template``
        (launch_template_args), which holds the root volume in place of disk_size and a capacity block's instance type."""
        group, minimum, maximum = planned.name, planned.min_nodes, planned.max_nodes
        template = (
            aws.ec2.LaunchTemplate(f"{name}-{group}-launch-template", launch_template_args(cls, planned), opts=child) if planned.needs_launch_template else None
        )
        node_group = aws.eks.NodeGroup(
            f"{name}-{group}",
            aws.eks.NodeGroupArgs(
                cluster_name=cluster.name,
                region=cluster.region,
                node_group_name=group,
                node_role_arn=cluster.node_role_arn,
                subnet_ids=cluster.subnet_ids,
                # A capacity block's launch template names its one instance type, which the group may then not repeat.
                instance_types=None if template is not None and planned.rung.kind is RungKind.CAPACITY_BLOCK else list(cls.instance_types),
                capacity_type=planned.eks_capacity_type,
                ami_type=cls.ami_type.value,
                disk_size=None if template is not None else cls.disk_size_gib,
                launch_template=(
                    aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version=template.latest_version.apply(str)) if template is not None else None
                ),
                scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=minimum, max_size=maximum, desired_size=minimum),
                update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
                labels=cls.node_labels(planned.capacity_label),
                taints=[
                    # EKS spells effects as GKE does (NO_SCHEDULE).
                    aws.eks.NodeGroupTaintArgs(key=t.key, value=t.value, effect=t.effect.gke)
                    for t in cls.node_taints()
                ],
                tags={CLASS_LABEL: cls.name, GPU_TEMPLATE_TAG: str(cls.planned_shape.gpus_per_node)},  # the plan's physical GPUs, which the policy pack reads
            ),
            # The autoscaler owns the size; a deploy must not reset it.
            opts=pulumi.ResourceOptions(
                parent=self,
                ignore_changes=["scalingConfig.desiredSize"],
                depends_on=[r for r in (cluster.cluster_resource, *cluster.node_prerequisites) if r],
            ),
        )
        asg = node_group.resources.apply(_asg_name)
        for key, value in asg_tags(cls, planned, cluster.name).items():
            slug = re.sub(r"[^a-z0-9]+", "-", key.removeprefix("k8s.io/cluster-autoscaler/").lower()).strip("-")
            aws.autoscaling.Tag(
                f"{name}-{group}-tag-{slug}",
                aws.autoscaling.TagArgs(
                    autoscaling_group_name=asg,
                    region=cluster.region,
                    tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                ),
                opts=child,
            )
        return node_group

    @staticmethod
    def _autoscaler_role(
        name: str, settings: ClusterAutoscalerSettings, cluster: EksClusterRef, child: pulumi.ResourceOptions
    ) -> tuple[aws.iam.Role, aws.iam.RolePolicy]:
        """The autoscaler's IRSA role and its inline policy."""
        role = irsa_role(
            f"{name}-autoscaler-role",
            f"cluster-autoscaler of {cluster.name} (IRSA)",
            cluster.oidc_provider_arn,
            cluster.oidc_issuer,
            settings.namespace,
            AUTOSCALER_SERVICE_ACCOUNT,
            child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-autoscaler-role-policy",
            aws.iam.RolePolicyArgs(role=role.id, policy=json.dumps(autoscaler_iam_policy(cluster.name))),
            opts=child,
        )
        return role, policy

    def _priority_configmap(self, name: str, settings: ClusterAutoscalerSettings, child: pulumi.ResourceOptions) -> k8s.core.v1.ConfigMap:
        """The priority expander's ConfigMap (the expander's priorities)."""
        return k8s.core.v1.ConfigMap(
            f"{name}-priority-expander",
            k8s.core.v1.ConfigMapInitArgs(
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=PRIORITY_CONFIGMAP,
                    namespace=settings.namespace,
                    labels=dict(MANAGED_LABELS),
                ),
                data={"priorities": self.expander.configmap_text()},
            ),
            opts=child,
        )

    def _autoscaler_release(
        self,
        name: str,
        settings: ClusterAutoscalerSettings,
        cluster: EksClusterRef,
        role: aws.iam.Role,
        policy: aws.iam.RolePolicy,
        service_monitor_crd: pulumi.Resource | None,
    ) -> None:
        """The cluster-autoscaler Helm release."""
        helm_release(
            f"{name}-autoscaler",
            chart=AUTOSCALER_CHART,
            version=settings.chart_version,
            repository=AUTOSCALER_REPO,
            namespace=settings.namespace,
            values=autoscaler_values(settings, cluster.name, cluster.region, role.arn, cluster.version, service_monitor=service_monitor_crd is not None),
            release_name="cluster-autoscaler",
            # The priority ConfigMap must exist when the autoscaler starts, its role may act, and its
            # ServiceMonitor needs the CRD.
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[r for r in (self.priority_configmap, policy, *cluster.controllers_ready, service_monitor_crd) if r],
            ),
        )

    @staticmethod
    def _joined(
        cluster: Any, opts: pulumi.ResourceOptions | None, service_monitor_crd: Any
    ) -> tuple[EksCluster | None, EksClusterRef, pulumi.ResourceOptions | None]:
        """The live inputs checked: the EksCluster (when given), its ref, and ``opts`` with its provider."""
        joined = join_eks_cluster(cluster, opts)
        check_live(
            "service_monitor_crd", service_monitor_crd, (pulumi.Resource,), "the resource that installs the ServiceMonitor CRD (PrometheusStack.release)"
        )
        return joined

    def ready(self) -> list[pulumi.Resource]:
        """What the cluster waits for (when built with the EksCluster) and every node group."""
        return [*(self._cluster.ready() if self._cluster is not None else []), *self.node_groups.values()]

    def metric_sources(self) -> frozenset[MetricSource]:
        """The cluster autoscaler when its ServiceMonitor ships (service_monitor_crd given)."""
        return self._scrapes


def _asg_name(resources: Sequence[aws.eks.outputs.NodeGroupResource]) -> str:
    """The name of a managed node group's Auto Scaling group, which EKS reports for every group (the provider types it optional)."""
    groups = resources[0].autoscaling_groups
    if not groups or groups[0].name is None:
        raise ValueError("the EKS node group reports no Auto Scaling group")
    return groups[0].name
