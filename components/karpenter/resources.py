"""KarpenterNodePools' mapping to provider resources: the controller's IAM policy and IRSA trust, the
interruption queue's policy and EventBridge rules, the chart values, and the EC2NodeClass and NodePool
specs of each GPU class.
"""

from __future__ import annotations

from typing import Any

from gpu_platform.components.core.labels import (
    CAPACITY_RESERVATION_ID_LABEL,
    CLASS_LABEL,
    INSTANCE_TYPE_LABEL,
    KARPENTER_CAPACITY_LABEL,
    KARPENTER_DISCOVERY_TAG,
    KARPENTER_NODEPOOL_LABEL,
    REGION_LABEL,
    ZONE_LABEL,
)
from gpu_platform.components.eks.node_group_args import GpuClassArgs
from gpu_platform.components.karpenter.args import KARPENTER_SERVICE_ACCOUNT, KarpenterSettings
from gpu_platform.components.karpenter.plan import NodePoolPlan, ami_alias, reservation_terms

__all__ = [
    "INTERRUPTION_EVENTS",
    "KARPENTER_NODE_POLICIES",
    "controller_policy",
    "controller_values",
    "event_pattern",
    "node_class_spec",
    "node_pool_spec",
    "partition_of",
    "queue_policy",
]

INTERRUPTION_EVENTS = {
    "spot-interruption": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "instance-state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "scheduled-change": ("aws.health", "AWS Health Event"),
}
"""The EventBridge rules feeding the interruption queue, by child-name role: (source, detail-type)."""

KARPENTER_NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)
"""The AWS managed policies of the role Karpenter's nodes run as (Karpenter's getting-started
KarpenterNodeRole; ECR pull-only is the narrower successor of ReadOnly)."""

QUEUE_RETENTION_SECONDS = 300
"""Interruption messages older than the two-minute spot warning are useless (Karpenter's own 300 s)."""


def partition_of(region: str) -> str:
    """The AWS partition of a region (aws, aws-cn, aws-us-gov)."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def controller_policy(cluster_name: str, region: str, queue_arn: str, node_role_arn: str, cluster_arn: str, *, reserved: bool = False) -> dict[str, Any]:
    """The controller's least-privilege policy, statement for statement Karpenter's published controller
    policy for 1.x (``KarpenterControllerPolicy`` in website/content/en/preview/getting-started/
    getting-started-with-karpenter/cloudformation.yaml of aws/karpenter-provider-aws; the docs page
    "Karpenter CloudFormation Setup" explains each statement): launches only from launch templates,
    and tags, terminates and deletes only instances, fleets, volumes, interfaces, launch templates and
    instance profiles tagged as this cluster's (``kubernetes.io/cluster/<name>: owned``,
    ``eks:eks-cluster-name``, ``karpenter.sh/nodepool`` / ``karpenter.k8s.aws/ec2nodeclass``); reads
    in this region only; the queue, the node role and the cluster by ARN. ``reserved``: a class's ladder names
    reservations or capacity blocks, so the controller may also find them (ec2:DescribeCapacityReservations) and
    launch into them (capacity-reservation/*), as the published policy allows. Default: false (neither)."""
    p = partition_of(region)
    ec2 = f"arn:{p}:ec2:{region}"
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    request_owned = {f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned", "aws:RequestTag/eks:eks-cluster-name": cluster_name}
    launched = [f"{ec2}:*:{kind}/*" for kind in ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")]
    profiles = f"arn:{p}:iam::*:instance-profile/*"
    region_tag = {f"aws:RequestTag/{REGION_LABEL}": region}

    def allow(sid: str, actions: str | list[str], resource: str | list[str], condition: dict[str, Any] | None = None) -> dict[str, Any]:
        statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resource}
        if condition:
            statement["Condition"] = condition
        return statement

    return {
        "Version": "2012-10-17",
        "Statement": [
            allow(
                "AllowScopedEC2InstanceAccessActions",
                ["ec2:RunInstances", "ec2:CreateFleet"],
                [f"{ec2}::image/*", f"{ec2}::snapshot/*", f"{ec2}:*:security-group/*", f"{ec2}:*:subnet/*"]
                + ([f"{ec2}:*:capacity-reservation/*"] if reserved else []),
            ),
            allow(
                "AllowScopedEC2LaunchTemplateAccessActions",
                ["ec2:RunInstances", "ec2:CreateFleet"],
                f"{ec2}:*:launch-template/*",
                {"StringEquals": owned, "StringLike": {f"aws:ResourceTag/{KARPENTER_NODEPOOL_LABEL}": "*"}},
            ),
            allow(
                "AllowScopedEC2InstanceActionsWithTags",
                ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
                launched,
                {"StringEquals": request_owned, "StringLike": {f"aws:RequestTag/{KARPENTER_NODEPOOL_LABEL}": "*"}},
            ),
            allow(
                "AllowScopedResourceCreationTagging",
                "ec2:CreateTags",
                launched,
                {
                    "StringEquals": {**request_owned, "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]},
                    "StringLike": {f"aws:RequestTag/{KARPENTER_NODEPOOL_LABEL}": "*"},
                },
            ),
            allow(
                "AllowScopedResourceTagging",
                "ec2:CreateTags",
                f"{ec2}:*:instance/*",
                {
                    "StringEquals": owned,
                    "StringLike": {f"aws:ResourceTag/{KARPENTER_NODEPOOL_LABEL}": "*"},
                    "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster_name},
                    "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]},
                },
            ),
            allow(
                "AllowScopedDeletion",
                ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
                [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
                {"StringEquals": owned, "StringLike": {f"aws:ResourceTag/{KARPENTER_NODEPOOL_LABEL}": "*"}},
            ),
            allow(
                "AllowRegionalReadActions",
                [
                    *(["ec2:DescribeCapacityReservations"] if reserved else []),
                    "ec2:DescribeImages",
                    "ec2:DescribeInstances",
                    "ec2:DescribeInstanceTypeOfferings",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplates",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSpotPriceHistory",
                    "ec2:DescribeSubnets",
                ],
                "*",
                {"StringEquals": {"aws:RequestedRegion": region}},
            ),
            allow("AllowSSMReadActions", "ssm:GetParameter", f"arn:{p}:ssm:{region}::parameter/aws/service/*"),
            allow("AllowPricingReadActions", "pricing:GetProducts", "*"),
            allow("AllowInterruptionQueueActions", ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"], queue_arn),
            allow(
                "AllowPassingInstanceRole",
                "iam:PassRole",
                node_role_arn,
                {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
            ),
            allow(
                "AllowScopedInstanceProfileCreationActions",
                "iam:CreateInstanceProfile",
                profiles,
                {
                    "StringEquals": {**request_owned, **region_tag},
                    "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            ),
            allow(
                "AllowScopedInstanceProfileTagActions",
                "iam:TagInstanceProfile",
                profiles,
                {
                    "StringEquals": {**owned, f"aws:ResourceTag/{REGION_LABEL}": region, **request_owned, **region_tag},
                    "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*", "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            ),
            allow(
                "AllowScopedInstanceProfileActions",
                ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
                profiles,
                {
                    "StringEquals": {**owned, f"aws:ResourceTag/{REGION_LABEL}": region},
                    "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            ),
            allow("AllowInstanceProfileReadActions", "iam:GetInstanceProfile", profiles),
            allow("AllowAPIServerEndpointDiscovery", "eks:DescribeCluster", cluster_arn),
        ],
    }


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """EventBridge (and SQS itself) may send to the interruption queue; nothing over plain HTTP."""
    return {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Sid": "AllowEventBridge",
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }


def event_pattern(role: str) -> dict[str, list[str]]:
    """The EventBridge pattern of one interruption rule (INTERRUPTION_EVENTS)."""
    source, detail_type = INTERRUPTION_EVENTS[role]
    return {"source": [source], "detail-type": [detail_type]}


def controller_values(
    settings: KarpenterSettings,
    cluster_name: str,
    queue_name: Any,
    role_arn: Any,
    system_selector: dict[str, str],
    *,
    node_overlay: bool = False,
    reserved_capacity: bool = False,
) -> dict[str, Any]:
    """Helm values of the karpenter chart: the cluster and the interruption queue, the IRSA service
    account, and the controller on the system node group (``system_selector``; the chart's own affinity
    keeps it off nodes Karpenter provisions). The CRDs come from the karpenter-crd release. ``node_overlay``:
    turn on the alpha NodeOverlay feature gate (settings.featureGates.nodeOverlay, the FEATURE_GATES
    NodeOverlay=true), which a shared class's overlay needs. Default: off (the chart's own). ``reserved_capacity``:
    state the ReservedCapacity gate on (beta, on by default in 1.14.1's chart), which reservation and capacity block
    rungs need. Default: left to the chart."""
    karpenter: dict[str, Any] = {"clusterName": cluster_name, "interruptionQueue": queue_name}
    gates = {"nodeOverlay": node_overlay, "reservedCapacity": reserved_capacity}
    if any(gates.values()):
        karpenter["featureGates"] = {gate: True for gate, on in gates.items() if on}
    return {
        "settings": karpenter,
        "serviceAccount": {
            "create": True,
            "name": KARPENTER_SERVICE_ACCOUNT,
            "annotations": {"eks.amazonaws.com/role-arn": role_arn},
        },
        "nodeSelector": {"kubernetes.io/os": "linux", **system_selector},
        "controller": {"resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}},
    }


def node_class_spec(cls: GpuClassArgs, settings: KarpenterSettings, cluster_name: str, node_role_name: Any, tags: dict[str, str]) -> dict[str, Any]:
    """The EC2NodeClass of a class: its AMI family's alias, subnets and security groups by the
    discovery tag, the node role, the root volume (disk_size_gib; Bottlerocket keeps images on its data
    volume /dev/xvdb, AL2023 on /dev/xvda), IMDSv2 only, the class tagged on its instances; the reservations and
    capacity blocks its ladder names (karpenter_plan.reservation_terms), when it names any."""
    discovery = [{"tags": {KARPENTER_DISCOVERY_TAG: cluster_name}}]
    ebs = {"volumeSize": f"{cls.disk_size_gib}Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
    if cls.ami_type.ships_device_plugin:  # Bottlerocket: a small OS volume and the data volume
        mappings = [
            {"deviceName": "/dev/xvda", "ebs": {**ebs, "volumeSize": "4Gi"}},
            {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": ebs},
        ]
    else:
        mappings = [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": ebs}]
    spec: dict[str, Any] = {
        "amiSelectorTerms": [{"alias": ami_alias(cls, settings.ami_version)}],
        "role": node_role_name,
        "subnetSelectorTerms": discovery,
        "securityGroupSelectorTerms": discovery,
        "blockDeviceMappings": mappings,
        "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1},
        "tags": {**tags, CLASS_LABEL: cls.name},
    }
    if terms := reservation_terms(cls):
        spec["capacityReservationSelectorTerms"] = terms
    return spec


def node_pool_spec(pool: NodePoolPlan, settings: KarpenterSettings, zones: tuple[str, ...] | None) -> dict[str, Any]:
    """The NodePool of one class rung: requirements from the class (its instance types, the plan's zones,
    the rung's capacity types and, for a named reservation or capacity block, its id), its node group's labels
    and taints, limits from the rung's maximum times the shape, the typed disruption and weight."""
    requirements = [
        {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": sorted(pool.cls.instance_types)},
        {"key": KARPENTER_CAPACITY_LABEL, "operator": "In", "values": pool.capacity_types},
    ]
    if pool.rung.reservation is not None:
        # The rung's own reservation (or capacity block) among those its EC2NodeClass selects.
        requirements.append({"key": CAPACITY_RESERVATION_ID_LABEL, "operator": "In", "values": [pool.rung.reservation]})
    if zones:
        requirements.append({"key": ZONE_LABEL, "operator": "In", "values": list(zones)})
    return {
        "template": {
            "metadata": {"labels": pool.labels},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": pool.cls.name},
                "requirements": requirements,
                "taints": [{"key": t.key, "value": t.value, "effect": t.effect.value} for t in pool.taints],
                "expireAfter": settings.disruption.expire_after,
            },
        },
        "disruption": settings.disruption.spec(),
        "limits": pool.limits,
        "weight": pool.weight,
    }
