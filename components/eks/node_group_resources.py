"""SpotFailoverEksNodeGroups' mapping to provider resources: ASG tags for the autoscaler's node templates, its IAM policies, its chart values and the NVIDIA device plugin DaemonSet."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpu_platform.components.core.kube import helm_release
from gpu_platform.components.core.labels import (
    CLASS_LABEL,
    EKS_CAPACITY_LABEL,
    EKS_NODEGROUP_LABEL,
    GPU_RESOURCE,
    GPU_TEMPLATE_TAG,
    NODE_TEMPLATE_PREFIX,
    PART_OF_LABEL,
)
from gpu_platform.components.eks.node_group_args import (
    AUTOSCALER_SERVICE_ACCOUNT,
    DEVICE_PLUGIN_CHART,
    DEVICE_PLUGIN_REPOSITORY,
    ClusterAutoscalerSettings,
    GpuClassArgs,
    SpotFailoverEksNodeGroupsArgs,
    autoscaler_image,
)
from gpu_platform.components.eks.plan import NodeGroupPlan
from gpu_platform.components.pools.ladders import RungKind
from gpu_platform.components.pools.sharing import GpuSharing, GpuSharingStrategy

__all__ = [
    "asg_tags",
    "launch_template_args",
    "autoscaler_iam_policy",
    "autoscaler_values",
    "device_plugin_daemonset",
    "device_plugin_sharing_values",
    "sharing_config",
]


def asg_tags(cls: GpuClassArgs, group: NodeGroupPlan, cluster_name: str) -> dict[str, str]:
    """The ASG tags the autoscaler needs to discover a group and build its node template while it has no nodes."""
    tags = {
        "k8s.io/cluster-autoscaler/enabled": "true",
        f"k8s.io/cluster-autoscaler/{cluster_name}": "owned",
    }
    labels = {
        **cls.node_labels(group.capacity_label),
        EKS_CAPACITY_LABEL: group.eks_capacity_type,
        EKS_NODEGROUP_LABEL: group.name,
    }
    for key, value in labels.items():
        tags[f"{NODE_TEMPLATE_PREFIX}/label/{key}"] = value
    for taint in cls.node_taints():
        tags[f"{NODE_TEMPLATE_PREFIX}/taint/{taint.key}"] = f"{taint.value}:{taint.effect.value}"
    tags[GPU_TEMPLATE_TAG] = str(cls.advertised_gpus)  # shared GPUs counted, so scale-from-zero fits them
    tags[f"{NODE_TEMPLATE_PREFIX}/resources/ephemeral-storage"] = f"{cls.disk_size_gib}Gi"
    return tags


def launch_template_args(cls: GpuClassArgs, group: NodeGroupPlan) -> aws.ec2.LaunchTemplateArgs:
    """The launch template of a reservation or capacity block rung's managed node group (NodeGroupPlan.
    needs_launch_template): its capacity reservation specification (the named reservation as target, launching
    into it only, so a full reservation fails the launch; or any open one, else on-demand capacity), a capacity block's market type (capacity-block) and its one instance type (EKS's "Create a managed node
    group with Capacity Blocks for ML"), and the root volume, which a group launched from a template takes from the
    template instead of disk_size (Bottlerocket keeps images on its data volume /dev/xvdb, the others on /dev/xvda)."""
    rung = group.rung
    if rung.reservation is None:
        reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(capacity_reservation_preference="open")
    else:
        # Only the reservation: when it has no free instance the launch fails, and the autoscaler moves on to the next rung.
        reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_preference="capacity-reservations-only",
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=rung.reservation
            ),
        )
    block = rung.kind is RungKind.CAPACITY_BLOCK
    device = "/dev/xvdb" if cls.ami_type.ships_device_plugin else "/dev/xvda"
    return aws.ec2.LaunchTemplateArgs(
        description=f"{group.name}: {rung} ({group.eks_capacity_type} managed node group)",
        capacity_reservation_specification=reservation,
        instance_market_options=aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block") if block else None,
        instance_type=cls.instance_types[0] if block else None,
        block_device_mappings=[
            aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name=device,
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=cls.disk_size_gib, volume_type="gp3", encrypted="true", delete_on_termination="true"
                ),
            )
        ],
        tags={CLASS_LABEL: cls.name},
    )


READ_ACTIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "autoscaling:DescribeTags",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
    "eks:DescribeNodegroup",
)
MUTATING_ACTIONS = ("autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup")


def autoscaler_iam_policy(cluster_name: str) -> dict[str, Any]:
    """Least privilege: reads on every resource (they take no resource scoping), writes only on
    ASGs tagged as this cluster's (EKS tags its managed node groups' ASGs so)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "Read", "Effect": "Allow", "Action": list(READ_ACTIONS), "Resource": "*"},
            {
                "Sid": "ScaleOwnGroups",
                "Effect": "Allow",
                "Action": list(MUTATING_ACTIONS),
                "Resource": "*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}": "owned"}},
            },
        ],
    }


AUTOSCALER_SCRAPE_INTERVAL = "30s"
"""How often Prometheus scrapes the autoscaler (its counters feed NodeGroupScaleUpFailing's 15-minute window)."""


def autoscaler_values(
    settings: ClusterAutoscalerSettings,
    cluster_name: str,
    region: str,
    role_arn: Any,
    kubernetes_version: str | None = None,
    *,
    service_monitor: bool = False,
) -> dict[str, Any]:
    """Helm values of the cluster-autoscaler chart (its image that of ``kubernetes_version``; see autoscaler_image);
    ``service_monitor``: the chart's ServiceMonitor, in the autoscaler's namespace (the stack's Prometheus selects
    every ServiceMonitor in every namespace)."""
    values: dict[str, Any] = {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "fullnameOverride": "cluster-autoscaler",
        "rbac": {
            "serviceAccount": {
                "create": True,
                "name": AUTOSCALER_SERVICE_ACCOUNT,
                "annotations": {"eks.amazonaws.com/role-arn": role_arn},
            }
        },
        "extraArgs": settings.extra_args(),
        # The autoscaler must not evict itself while it removes the node it runs on.
        "podAnnotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
        "resources": {"requests": {"cpu": "100m", "memory": "300Mi"}, "limits": {"memory": "600Mi"}},
        "serviceMonitor": {
            "enabled": service_monitor,
            "namespace": settings.namespace,
            "interval": AUTOSCALER_SCRAPE_INTERVAL,
            # Our label; Helm merges it with the chart's default (release: prometheus-operator), and the
            # stack's Prometheus selects every ServiceMonitor whatever its labels.
            "selector": dict(PART_OF_LABEL),
        },
    }
    image = autoscaler_image(settings, kubernetes_version)
    if image is not None:
        repository, _, tag = image.rpartition(":")
        values["image"] = {"repository": repository, "tag": tag}
    return values


def device_plugin_daemonset(
    name: str, image: str, node_groups: list[str], opts: pulumi.ResourceOptions, *, group_label: str = EKS_NODEGROUP_LABEL
) -> k8s.apps.v1.DaemonSet:
    """The NVIDIA device plugin on the given node groups only (their nodes carry ``group_label``: the managed
    node group's, or Karpenter's NodePool label), tolerating every taint (it must run on each GPU node)."""
    labels = {"app.kubernetes.io/name": "nvidia-device-plugin", **PART_OF_LABEL}
    return k8s.apps.v1.DaemonSet(
        name,
        k8s.apps.v1.DaemonSetInitArgs(
            metadata=k8s.meta.v1.ObjectMetaArgs(name="nvidia-device-plugin", namespace="kube-system", labels=labels),
            spec=k8s.apps.v1.DaemonSetSpecArgs(
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                update_strategy=k8s.apps.v1.DaemonSetUpdateStrategyArgs(type="RollingUpdate"),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                    spec=k8s.core.v1.PodSpecArgs(
                        priority_class_name="system-node-critical",
                        tolerations=[k8s.core.v1.TolerationArgs(operator="Exists")],
                        affinity=k8s.core.v1.AffinityArgs(
                            node_affinity=k8s.core.v1.NodeAffinityArgs(
                                required_during_scheduling_ignored_during_execution=k8s.core.v1.NodeSelectorArgs(
                                    node_selector_terms=[
                                        k8s.core.v1.NodeSelectorTermArgs(
                                            match_expressions=[k8s.core.v1.NodeSelectorRequirementArgs(key=group_label, operator="In", values=node_groups)]
                                        )
                                    ]
                                )
                            )
                        ),
                        containers=[
                            k8s.core.v1.ContainerArgs(
                                name="nvidia-device-plugin",
                                image=image,
                                env=[k8s.core.v1.EnvVarArgs(name="FAIL_ON_INIT_ERROR", value="false")],
                                resources=k8s.core.v1.ResourceRequirementsArgs(requests={"cpu": "50m", "memory": "64Mi"}, limits={"memory": "256Mi"}),
                                security_context=k8s.core.v1.SecurityContextArgs(
                                    allow_privilege_escalation=False,
                                    capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
                                ),
                                volume_mounts=[k8s.core.v1.VolumeMountArgs(name="device-plugin", mount_path="/var/lib/kubelet/device-plugins")],
                            )
                        ],
                        volumes=[
                            k8s.core.v1.VolumeArgs(
                                name="device-plugin",
                                host_path=k8s.core.v1.HostPathVolumeSourceArgs(path="/var/lib/kubelet/device-plugins"),
                            )
                        ],
                    ),
                ),
            ),
        ),
        opts=opts,
    )


def sharing_config(sharing: GpuSharing) -> dict[str, Any]:
    """The device plugin's config (version v1) that advertises each GPU ``max_shared_clients_per_gpu`` times,
    by time-slicing or by MPS (the chart's config.map entry of a class)."""
    key = "timeSlicing" if sharing.strategy is GpuSharingStrategy.TIME_SHARING else "mps"
    return {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {key: {"resources": [{"name": GPU_RESOURCE, "replicas": sharing.max_shared_clients_per_gpu}]}},
    }


def device_plugin_sharing_values(classes: list[GpuClassArgs], node_groups: list[str], *, group_label: str = EKS_NODEGROUP_LABEL) -> dict[str, Any]:
    """Values of the nvidia-device-plugin chart for the classes that share GPUs: one config.map entry per
    class, named as the class (its nodes carry the label nvidia.com/device-plugin.config=<class>, which the
    chart's config manager reads), running on those classes' node groups only (their nodes carry
    ``group_label``: the managed node group's, or Karpenter's NodePool label), tolerating every taint."""
    import yaml

    return {
        "config": {
            "map": {c.name: yaml.safe_dump(sharing_config(c.gpu_sharing), sort_keys=False) for c in classes if c.gpu_sharing},
            "default": "",
        },
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": group_label, "operator": "In", "values": sorted(node_groups)}]},
                    ]
                }
            }
        },
        "tolerations": [{"operator": "Exists"}],
        "failOnInitError": False,
    }


def device_plugins(
    name: str,
    args: SpotFailoverEksNodeGroupsArgs,
    plain: list[str],
    shared: list[str],
    opts: pulumi.ResourceOptions,
    *,
    group_label: str = EKS_NODEGROUP_LABEL,
) -> None:
    """The NVIDIA device plugin on the GPU pools whose AMI does not ship it, as either EKS provisioner places
    it (``group_label``: the managed node group's label, or Karpenter's NodePool label): ``plain``, the pools
    of unshared classes, get the DaemonSet ``<name>-device-plugin``; ``shared``, the pools of classes that
    share GPUs, the device plugin's chart ``<name>-device-plugin-sharing`` with its config map holding each
    class's sharing (their nodes carry nvidia.com/device-plugin.config=<class>)."""
    if plain:
        device_plugin_daemonset(f"{name}-device-plugin", args.device_plugin_image, plain, opts, group_label=group_label)
    classes = [c for c in args.classes if c.gpu_sharing is not None]
    if classes:
        helm_release(
            f"{name}-device-plugin-sharing",
            chart=DEVICE_PLUGIN_CHART,
            version=args.device_plugin_chart_version,
            repository=DEVICE_PLUGIN_REPOSITORY,
            namespace="kube-system",
            values=device_plugin_sharing_values(classes, shared, group_label=group_label),
            release_name="nvidia-device-plugin-sharing",  # beside the DaemonSet nvidia-device-plugin of the other classes
            opts=opts,
        )
