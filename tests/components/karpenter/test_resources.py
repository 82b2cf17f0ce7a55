"""Karpenter's mapping (components/karpenter/resources.py): the controller's IAM policy scoped to the cluster,
the interruption queue's policy, the node classes and the disruption budgets as Karpenter reads them."""

from __future__ import annotations

from gpu_platform.components.karpenter.args import (
    KarpenterSettings,
)
from gpu_platform.components.karpenter.resources import controller_policy, queue_policy
from tests.components.karpenter.test_node_pools import karpenter_args
from tests.factories import gpu_class


def test_controller_policy_is_scoped_to_the_cluster() -> None:
    policy = controller_policy("c", "us-west-2", "arn:aws:sqs:us-west-2:1:c", "arn:aws:iam::1:role/n", "arn:aws:eks:us-west-2:1:cluster/c")
    statements = {s["Sid"]: s for s in policy["Statement"]}
    # Every write is conditioned on the cluster's ownership tag or a named resource.
    for sid in ("AllowScopedEC2LaunchTemplateAccessActions", "AllowScopedDeletion", "AllowScopedResourceTagging"):
        assert statements[sid]["Condition"]["StringEquals"]["aws:ResourceTag/kubernetes.io/cluster/c"] == "owned"
    assert statements["AllowScopedEC2InstanceActionsWithTags"]["Condition"]["StringEquals"]["aws:RequestTag/eks:eks-cluster-name"] == "c"
    assert statements["AllowPassingInstanceRole"]["Resource"] == "arn:aws:iam::1:role/n"
    assert statements["AllowInterruptionQueueActions"]["Resource"] == "arn:aws:sqs:us-west-2:1:c"
    assert statements["AllowAPIServerEndpointDiscovery"]["Resource"] == "arn:aws:eks:us-west-2:1:cluster/c"
    assert statements["AllowRegionalReadActions"]["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-west-2"}}
    unconditioned = {s["Sid"] for s in policy["Statement"] if s["Resource"] == "*" and "Condition" not in s}
    assert unconditioned == {"AllowPricingReadActions"}  # pricing:GetProducts takes no resource


def test_queue_accepts_eventbridge_and_refuses_plain_http() -> None:
    allow, deny = queue_policy("arn:q")["Statement"]
    assert allow["Principal"] == {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]} and allow["Action"] == "sqs:SendMessage"
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_bottlerocket_keeps_images_on_its_data_volume() -> None:
    from gpu_platform.components.karpenter.resources import node_class_spec

    args = karpenter_args(classes=[gpu_class(ami_type="BOTTLEROCKET_x86_64_NVIDIA", disk_size_gib=300)])
    spec = node_class_spec(args.classes[0], KarpenterSettings(ami_version="v1.50.0"), "c", "role", {})
    assert spec["amiSelectorTerms"] == [{"alias": "bottlerocket@v1.50.0"}]
    (os_volume, data) = spec["blockDeviceMappings"]
    assert (os_volume["deviceName"], "rootVolume" in os_volume) == ("/dev/xvda", False)
    assert (data["deviceName"], data["rootVolume"], data["ebs"]["volumeSize"]) == ("/dev/xvdb", True, "300Gi")


def test_the_controller_may_find_and_launch_into_reservations_only_when_a_ladder_names_them() -> None:
    """The published policy's capacity reservation read (ec2:DescribeCapacityReservations) and launch resource
    (capacity-reservation/*), added when a class has a reservation or capacity block rung; the policy is otherwise
    unchanged (the shipped stacks' plans stay byte for byte)."""
    arns = ("arn:aws:sqs:us-west-2:1:c", "arn:aws:iam::1:role/n", "arn:aws:eks:us-west-2:1:cluster/c")
    plain = {s["Sid"]: s for s in controller_policy("c", "us-west-2", *arns)["Statement"]}
    reserved = {s["Sid"]: s for s in controller_policy("c", "us-west-2", *arns, reserved=True)["Statement"]}
    assert set(reserved["AllowRegionalReadActions"]["Action"]) - set(plain["AllowRegionalReadActions"]["Action"]) == {"ec2:DescribeCapacityReservations"}
    added = set(reserved["AllowScopedEC2InstanceAccessActions"]["Resource"]) - set(plain["AllowScopedEC2InstanceAccessActions"]["Resource"])
    assert added == {"arn:aws:ec2:us-west-2:*:capacity-reservation/*"}
    assert {k: v for k, v in reserved.items() if k not in ("AllowRegionalReadActions", "AllowScopedEC2InstanceAccessActions")} == {
        k: v for k, v in plain.items() if k not in ("AllowRegionalReadActions", "AllowScopedEC2InstanceAccessActions")
    }


def test_a_class_ladder_s_reservations_are_its_node_class_s_selector_terms() -> None:
    from gpu_platform.components.karpenter.resources import node_class_spec

    ladder = [{"kind": "capacity_block", "reservation": "cr-0a1b2c3d4e5f60718"}, {"kind": "spot"}, {"kind": "reservation"}]
    args = karpenter_args(classes=[gpu_class(name="h100", instance_types=["p5.48xlarge"], capacity_ladder=ladder), gpu_class()])
    h100, small = (node_class_spec(c, KarpenterSettings(), "c", "role", {}) for c in args.classes)
    assert h100["capacityReservationSelectorTerms"] == [{"id": "cr-0a1b2c3d4e5f60718"}, {"instanceMatchCriteria": "open"}]
    assert "capacityReservationSelectorTerms" not in small
