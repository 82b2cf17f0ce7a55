"""The EKS node groups' mapping (components/eks/node_group_resources.py): the ASG tags the autoscaler needs to
scale a group from zero, and its least-privilege IAM policy."""

from __future__ import annotations

from gpu_platform.components.core.labels import EKS_CAPACITY_LABEL, EKS_NODEGROUP_LABEL, GPU_TEMPLATE_TAG, NODE_TEMPLATE_PREFIX
from gpu_platform.components.eks.node_group_args import GpuClassArgs
from gpu_platform.components.eks.node_group_resources import MUTATING_ACTIONS, READ_ACTIONS, asg_tags, autoscaler_iam_policy
from gpu_platform.components.pools.shapes import CapacityType
from tests.factories import gpu_class


def test_asg_tags_let_the_autoscaler_discover_the_group_and_build_its_template() -> None:
    cls = GpuClassArgs.model_validate(gpu_class())  # p3.2xlarge: 1 V100
    tags = asg_tags(cls, CapacityType.SPOT, "small-spot", "c")
    assert tags["k8s.io/cluster-autoscaler/enabled"] == "true" and tags["k8s.io/cluster-autoscaler/c"] == "owned"
    assert tags[f"{NODE_TEMPLATE_PREFIX}/label/{EKS_CAPACITY_LABEL}"] == "SPOT"
    assert tags[f"{NODE_TEMPLATE_PREFIX}/label/{EKS_NODEGROUP_LABEL}"] == "small-spot"
    assert tags[GPU_TEMPLATE_TAG] == "1"
    assert tags[f"{NODE_TEMPLATE_PREFIX}/resources/ephemeral-storage"] == f"{cls.disk_size_gib}Gi"
    for taint in cls.node_taints():
        assert tags[f"{NODE_TEMPLATE_PREFIX}/taint/{taint.key}"] == f"{taint.value}:{taint.effect.value}"
    for key, value in cls.node_labels(CapacityType.SPOT).items():
        assert tags[f"{NODE_TEMPLATE_PREFIX}/label/{key}"] == value
    on_demand = asg_tags(cls, CapacityType.ON_DEMAND, "small-on-demand", "c")
    assert on_demand[f"{NODE_TEMPLATE_PREFIX}/label/{EKS_CAPACITY_LABEL}"] == "ON_DEMAND"


def test_a_shared_class_advertises_gpus_times_clients() -> None:
    shared = GpuClassArgs.model_validate(gpu_class(gpu_sharing={"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}))
    assert asg_tags(shared, CapacityType.SPOT, "small-spot", "c")[GPU_TEMPLATE_TAG] == "4"


def test_the_autoscaler_writes_only_to_the_cluster_s_own_groups() -> None:
    read, scale = autoscaler_iam_policy("c")["Statement"]
    assert read == {"Sid": "Read", "Effect": "Allow", "Action": list(READ_ACTIONS), "Resource": "*"}
    assert scale["Action"] == list(MUTATING_ACTIONS) == ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]
    assert scale["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/c": "owned"}}
    assert not set(READ_ACTIONS) & set(MUTATING_ACTIONS)
