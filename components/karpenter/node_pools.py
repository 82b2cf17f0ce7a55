"""KarpenterNodePools: the EKS GPU classes provisioned by Karpenter instead of the cluster autoscaler.

Built from the same SpotFailoverEksNodeGroupsArgs (``provisioner: karpenter``) as SpotFailoverEksNodeGroups:
per GPU class an EC2NodeClass (its AMI family's alias, subnets and security groups by the discovery tag,
its root volume) and per class and capacity tier a NodePool (``<class>-spot`` weighing more than
``<class>-on-demand``, karpenter_plan); the Karpenter controller (karpenter-crd and karpenter charts) on the
system node group with its least-privilege IRSA role; the node role with its EKS access entry; the
interruption queue fed by EventBridge (spot interruption, rebalance recommendation, instance state change,
scheduled change); and the NVIDIA device plugin on the NodePools whose AMI lacks it. A class that shares its
GPUs (gpu_sharing) gets the device plugin's chart with its sharing config, as under the cluster autoscaler,
and a NodeOverlay saying its nodes' nvidia.com/gpu is GPUs x clients (the controller's NodeOverlay feature
gate on), so Karpenter launches one node for that many shared-GPU pods and scales the class from zero.

How the failover works: a pending GPU pod is matched against the NodePools by weight, so its class's spot
pool is tried first. When EC2 has no spot capacity for it, Karpenter caches those offerings as unavailable
and the next scheduling pass finds the spot pool without offerings and launches from the on-demand pool.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import check_live
from gpu_platform.components.core.kube import helm_release
from gpu_platform.components.core.labels import KARPENTER_NODEPOOL_LABEL, MANAGED_LABELS, PHYSICAL_GPUS_ANNOTATION
from gpu_platform.components.core.models import input_error
from gpu_platform.components.eks.cluster import EksCluster, EksClusterRef
from gpu_platform.components.eks.gpu_pools import EksGpuPools, join_eks_cluster
from gpu_platform.components.eks.node_group_args import (
    KarpenterNodePoolsArgs,
    SpotFailoverEksNodeGroupsArgs,
)
from gpu_platform.components.eks.node_group_resources import device_plugins
from gpu_platform.components.eks.resources import assume_role_policy, irsa_role
from gpu_platform.components.karpenter.args import (
    KARPENTER_CHART,
    KARPENTER_CRD_CHART,
    KARPENTER_REPO,
    KARPENTER_SERVICE_ACCOUNT,
    KarpenterSettings,
    Provisioner,
)
from gpu_platform.components.karpenter.plan import NodePoolPlan, node_overlays, reservation_terms
from gpu_platform.components.karpenter.resources import (
    INTERRUPTION_EVENTS,
    KARPENTER_NODE_POLICIES,
    QUEUE_RETENTION_SECONDS,
    controller_policy,
    controller_values,
    event_pattern,
    node_class_spec,
    node_pool_spec,
    partition_of,
    queue_policy,
)
from gpu_platform.components.monitoring.prometheus_args import MetricSource
from gpu_platform.components.pools.shapes import PoolPlacement

__all__ = ["KarpenterNodePools", "KarpenterNodePoolsArgs"]


class KarpenterNodePools(pulumi.ComponentResource, EksGpuPools):
    """GPU classes provisioned by Karpenter: spot first, on-demand when spot runs out, from zero.

    Built with ``cluster=<EksCluster>``, it stands for that cluster with its GPU NodePools: pass it as
    ``cluster=`` to the add-ons that run on GPU nodes (DcgmExporter, DaskOperator, KubeflowInstall,
    GpuUtilizationAutoscaler), exactly as SpotFailoverEksNodeGroups.
    """

    node_pools: dict[str, k8s.apiextensions.CustomResource]
    """Every NodePool, by name (<class>-spot, <class>-on-demand)."""
    node_classes: dict[str, k8s.apiextensions.CustomResource]
    """Every EC2NodeClass, by class name."""
    node_overlays: dict[str, k8s.apiextensions.CustomResource]
    """The NodeOverlay of each class that shares its GPUs (GPUs x clients), by class name; none without sharing."""
    controller_role_arn: pulumi.Output[str]
    """The controller's IRSA role."""
    node_role_arn: pulumi.Output[str]
    """The role Karpenter's nodes run as (its access entry is EC2_LINUX)."""
    interruption_queue: pulumi.Output[str]
    """The interruption queue's name (the controller's settings.interruptionQueue)."""
    placements: dict[str, PoolPlacement]
    """How a pod lands on each class (node selector and tolerations), by class name."""
    plan: tuple[NodePoolPlan, ...]
    """The NodePools as planned (karpenter_plan.plan_node_pools), highest weight first."""

    def __init__(
        self,
        name: str,
        args: KarpenterNodePoolsArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: EksCluster | EksClusterRef,
        zones: tuple[str, ...] | None = None,
    ) -> None:
        """``cluster``: the EKS cluster (the EksCluster, or its ``ref`` with ``opts.providers`` holding its
        Kubernetes provider). ``zones``: the zones NodePools may launch in (the plan's). Default: none (the
        EksCluster's zones; with a ref, every zone of the discovered subnets)."""
        self._cluster, ref, opts = self._joined(cluster, opts, args)
        check_live("zones", zones, (tuple, list), "a tuple of zone names")
        super().__init__("gpu-platform:karpenter_node_pools:KarpenterNodePools", name, None, opts)
        settings = args.karpenter
        zones = tuple(zones) if zones is not None else (tuple(self._cluster.zones) if self._cluster is not None else None)
        self.plan = args.planned_node_pools
        partition = partition_of(ref.region)

        overlays = node_overlays(self.plan)

        node_role, access = self._node_role(name, ref, partition)
        queue = self._interruption_queue(name, ref)
        controller_role, crds, controller = self._controller_release(name, settings, ref, partition, node_role, access, queue, bool(overlays))
        self._node_resources(name, args, settings, ref, zones, node_role, crds, controller, overlays)

        self.controller_role_arn = controller_role.arn
        self.node_role_arn = node_role.arn
        self.interruption_queue = queue.name
        self._controller = controller
        shapes = args.pool_shapes()
        if zones is not None:
            # The classes in the zones their NodePools launch in (the plan's, else the EksCluster's).
            shapes = [s.in_zones(zones, len(zones), ref.region) for s in shapes]
        self._pool_shapes = shapes
        self.placements = {s.name: s.placement for s in self._pool_shapes}
        self.register_outputs(
            {
                "nodePools": list(self.node_pools),
                "nodeClasses": list(self.node_classes),
                "controllerRoleArn": self.controller_role_arn,
                "nodeRoleArn": self.node_role_arn,
                "interruptionQueue": self.interruption_queue,
            }
        )

    def _node_role(self, name: str, ref: EksClusterRef, partition: str) -> tuple[aws.iam.Role, aws.eks.AccessEntry]:
        """The role Karpenter's nodes run as (instance profiles are Karpenter's own, from the EC2NodeClass), its
        managed policies, and its EKS access entry."""
        child = pulumi.ResourceOptions(parent=self)
        node_role = aws.iam.Role(
            f"{name}-node-role",
            aws.iam.RoleArgs(description=f"Nodes Karpenter launches for {ref.name}", assume_role_policy=assume_role_policy("ec2.amazonaws.com")),
            opts=child,
        )
        for managed_policy in KARPENTER_NODE_POLICIES:
            aws.iam.RolePolicyAttachment(
                f"{name}-node-role-{managed_policy.lower().replace('_', '-')}",
                aws.iam.RolePolicyAttachmentArgs(role=node_role.name, policy_arn=f"arn:{partition}:iam::aws:policy/{managed_policy}"),
                opts=child,
            )
        access = aws.eks.AccessEntry(
            f"{name}-node-access",
            aws.eks.AccessEntryArgs(cluster_name=ref.name, region=ref.region, principal_arn=node_role.arn, type="EC2_LINUX"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[r for r in (ref.cluster_resource,) if r]),
        )
        return node_role, access

    def _interruption_queue(self, name: str, ref: EksClusterRef) -> aws.sqs.Queue:
        """The interruption queue, who may send to it, and the four EventBridge rules that feed it."""
        child = pulumi.ResourceOptions(parent=self)
        queue = aws.sqs.Queue(
            f"{name}-interruption-queue",
            aws.sqs.QueueArgs(name=ref.name, region=ref.region, message_retention_seconds=QUEUE_RETENTION_SECONDS, sqs_managed_sse_enabled=True),
            opts=child,
        )
        aws.sqs.QueuePolicy(
            f"{name}-interruption-queue-policy",
            aws.sqs.QueuePolicyArgs(queue_url=queue.url, region=ref.region, policy=queue.arn.apply(lambda arn: json.dumps(queue_policy(arn)))),
            opts=child,
        )
        for role in INTERRUPTION_EVENTS:
            rule = aws.cloudwatch.EventRule(
                f"{name}-{role}-rule",
                aws.cloudwatch.EventRuleArgs(
                    description=f"Karpenter interruption handling of {ref.name}: {INTERRUPTION_EVENTS[role][1]}",
                    region=ref.region,
                    event_pattern=json.dumps(event_pattern(role)),
                ),
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{role}-target",
                aws.cloudwatch.EventTargetArgs(rule=rule.name, region=ref.region, arn=queue.arn, target_id="KarpenterInterruptionQueueTarget"),
                opts=child,
            )
        return queue

    def _controller_release(
        self,
        name: str,
        settings: KarpenterSettings,
        ref: EksClusterRef,
        partition: str,
        node_role: aws.iam.Role,
        access: aws.eks.AccessEntry,
        queue: aws.sqs.Queue,
        node_overlay: bool,
    ) -> tuple[aws.iam.Role, pulumi.Resource, pulumi.Resource]:
        """The controller's role (IRSA, as the cluster autoscaler's) with its least-privilege policy, the CRD chart
        and the controller's chart on the system node group (``node_overlay``: its NodeOverlay gate on, for shared
        classes): (role, CRD release, controller release)."""
        child = pulumi.ResourceOptions(parent=self)
        reserved = any(reservation_terms(pool.cls) for pool in self.plan)
        controller_role = irsa_role(
            f"{name}-controller-role",
            f"Karpenter controller of {ref.name} (IRSA)",
            ref.oidc_provider_arn,
            ref.oidc_issuer,
            settings.namespace,
            KARPENTER_SERVICE_ACCOUNT,
            child,
        )
        cluster_arn = (
            ref.cluster_resource.arn if isinstance(ref.cluster_resource, aws.eks.Cluster) else f"arn:{partition}:eks:{ref.region}:*:cluster/{ref.name}"
        )
        policy = aws.iam.RolePolicy(
            f"{name}-controller-role-policy",
            aws.iam.RolePolicyArgs(
                role=controller_role.id,
                policy=pulumi.Output.all(queue.arn, node_role.arn, cluster_arn).apply(
                    lambda v: json.dumps(controller_policy(ref.name, ref.region, v[0], v[1], v[2], reserved=reserved))
                ),
            ),
            opts=child,
        )
        crds = helm_release(
            f"{name}-karpenter-crd",
            chart=KARPENTER_CRD_CHART,
            version=settings.chart_version,
            repository=KARPENTER_REPO,
            namespace=settings.namespace,
            values={},
            release_name="karpenter-crd",
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(ref.controllers_ready)),
        )
        system = self._cluster.pool_shapes()[0].placement.node_selector if self._cluster is not None else {}
        controller = helm_release(
            f"{name}-karpenter",
            chart=KARPENTER_CHART,
            version=settings.chart_version,
            repository=KARPENTER_REPO,
            namespace=settings.namespace,
            values=controller_values(settings, ref.name, queue.name, controller_role.arn, dict(system), node_overlay=node_overlay, reserved_capacity=reserved),
            release_name="karpenter",
            skip_crds=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[crds, policy, access, *ref.controllers_ready]),
        )
        return controller_role, crds, controller

    def _node_resources(
        self,
        name: str,
        args: KarpenterNodePoolsArgs,
        settings: KarpenterSettings,
        ref: EksClusterRef,
        zones: tuple[str, ...] | None,
        node_role: aws.iam.Role,
        crds: pulumi.Resource,
        controller: pulumi.Resource,
        overlays: list[dict[str, Any]],
    ) -> None:
        """Per class its EC2NodeClass, per planned NodePool the NodePool, per shared class its NodeOverlay, and the
        device plugins: into ``node_classes``, ``node_pools`` and ``node_overlays``."""
        child = pulumi.ResourceOptions(parent=self)
        tags = {**MANAGED_LABELS}
        self.node_classes = {}
        for cls in args.classes:
            self.node_classes[cls.name] = k8s.apiextensions.CustomResource(
                f"{name}-{cls.name}-node-class",
                api_version="karpenter.k8s.aws/v1",
                kind="EC2NodeClass",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=cls.name, labels=dict(MANAGED_LABELS)),
                spec=node_role.name.apply(functools.partial(node_class_spec, cls, settings, ref.name, tags=tags)),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[crds]),
            )
        self.node_pools = {
            pool.name: k8s.apiextensions.CustomResource(
                f"{name}-{pool.name}-node-pool",
                api_version="karpenter.sh/v1",
                kind="NodePool",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=pool.name,
                    labels=dict(MANAGED_LABELS),
                    annotations={PHYSICAL_GPUS_ANNOTATION: str(pool.physical_gpus)} if pool.physical_gpus else None,
                ),
                spec=node_pool_spec(pool, settings, zones),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[crds, self.node_classes[pool.cls.name], controller]),
            )
            for pool in self.plan
        }
        # Shared classes: Karpenter sizes their nodes by the overlay (GPUs x clients), which needs the CRD and the gate.
        self.node_overlays = {
            body["metadata"]["name"]: k8s.apiextensions.CustomResource(
                f"{name}-{body['metadata']['name']}-node-overlay",
                api_version=body["apiVersion"],
                kind=body["kind"],
                metadata=k8s.meta.v1.ObjectMetaArgs(name=body["metadata"]["name"], labels=dict(MANAGED_LABELS)),
                spec=body["spec"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[crds, controller]),
            )
            for body in overlays
        }
        device_plugins(
            name,
            args,
            sorted(p.name for p in self.plan if not p.cls.ami_type.ships_device_plugin and p.cls.gpu_sharing is None),
            [p.name for p in self.plan if p.cls.gpu_sharing is not None],
            child,
            group_label=KARPENTER_NODEPOOL_LABEL,
        )

    @staticmethod
    def _joined(cluster: Any, opts: pulumi.ResourceOptions | None, args: Any) -> tuple[EksCluster | None, EksClusterRef, pulumi.ResourceOptions | None]:
        """The live inputs checked (before anything is registered): the EksCluster (when given), its ref,
        and ``opts`` with its provider; ``args`` must choose Karpenter."""
        joined = join_eks_cluster(cluster, opts)
        if isinstance(args, SpotFailoverEksNodeGroupsArgs) and args.provisioner is not Provisioner.KARPENTER:
            raise input_error(
                "args.provisioner",
                f"args.provisioner: KarpenterNodePools provisions with Karpenter (got {args.provisioner.value}); "
                "set provisioner: karpenter, or build SpotFailoverEksNodeGroups",
            )
        return joined

    def ready(self) -> list[pulumi.Resource]:
        """What the cluster waits for (when built with the EksCluster), the controller and every NodePool:
        GPU nodes come when pods ask for them."""
        return [*(self._cluster.ready() if self._cluster is not None else []), self._controller, *self.node_pools.values()]

    def metric_sources(self) -> frozenset[MetricSource]:
        """Nothing besides kube-prometheus-stack's own targets (the cluster autoscaler's metrics do not exist here)."""
        return frozenset()
