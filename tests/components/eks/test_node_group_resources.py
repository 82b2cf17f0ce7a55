"""The EKS node groups' mapping (components/eks/node_group_resources.py): the ASG tags the autoscaler needs to
scale a group from zero, and its least-privilege IAM policy."""

from __future__ import annotations

from gpu_platform.components.core.labels import CAPACITY_LABEL, EKS_CAPACITY_LABEL, EKS_NODEGROUP_LABEL, GPU_TEMPLATE_TAG, NODE_TEMPLATE_PREFIX
from gpu_platform.components.eks.node_group_args import GpuClassArgs
from gpu_platform.components.eks.node_group_resources import MUTATING_ACTIONS, READ_ACTIONS, asg_tags, autoscaler_iam_policy, launch_template_args
from tests.factories import gpu_class


def test_asg_tags_let_the_autoscaler_discover_the_group_and_build_its_template() -> None:
    cls = GpuClassArgs.model_validate(gpu_class())  # p3.2xlarge: 1 V100
    spot, od = cls.node_groups()
    tags = asg_tags(cls, spot, "c")
    assert tags["k8s.io/cluster-autoscaler/enabled"] == "true" and tags["k8s.io/cluster-autoscaler/c"] == "owned"
    assert tags[f"{NODE_TEMPLATE_PREFIX}/label/{EKS_CAPACITY_LABEL}"] == "SPOT"
    assert tags[f"{NODE_TEMPLATE_PREFIX}/label/{EKS_NODEGROUP_LABEL}"] == "small-spot"
    assert tags[GPU_TEMPLATE_TAG] == "1"
    assert tags[f"{NODE_TEMPLATE_PREFIX}/resources/ephemeral-storage"] == f"{cls.disk_size_gib}Gi"
    for taint in cls.node_taints():
        assert tags[f"{NODE_TEMPLATE_PREFIX}/taint/{taint.key}"] == f"{taint.value}:{taint.effect.value}"
    for key, value in cls.node_labels("spot").items():
        assert tags[f"{NODE_TEMPLATE_PREFIX}/label/{key}"] == value
    on_demand = asg_tags(cls, od, "c")
    assert on_demand[f"{NODE_TEMPLATE_PREFIX}/label/{EKS_CAPACITY_LABEL}"] == "ON_DEMAND"
    assert on_demand[f"{NODE_TEMPLATE_PREFIX}/label/{EKS_NODEGROUP_LABEL}"] == "small-on-demand"


LADDER = [
    {"kind": "capacity_block", "reservation": "cr-0a1b2c3d4e5f60718"},
    {"kind": "reservation", "reservation": "cr-0123456789abcdef0"},
    {"kind": "on_demand"},
    {"kind": "reservation"},
]


def test_each_rung_s_asg_tags_carry_its_capacity_so_scale_from_zero_matches_its_nodes() -> None:
    cls = GpuClassArgs.model_validate(gpu_class(name="h100", instance_types=["p5.48xlarge"], capacity_ladder=LADDER))
    capacity = [
        (asg_tags(cls, g, "c")[f"{NODE_TEMPLATE_PREFIX}/label/{EKS_CAPACITY_LABEL}"], asg_tags(cls, g, "c")[f"{NODE_TEMPLATE_PREFIX}/label/{CAPACITY_LABEL}"])
        for g in cls.node_groups()
    ]
    assert capacity == [("CAPACITY_BLOCK", "capacity-block"), ("ON_DEMAND", "reserved"), ("ON_DEMAND", "on-demand"), ("ON_DEMAND", "reserved")]


def test_a_reservation_rung_s_launch_template_buys_its_reservation_only() -> None:
    """The capacity block's template: capacity-block market, its one instance type, its reservation only; the named
    ODCR's: its reservation only (a full one fails the launch, so the autoscaler moves on); any open one: open
    (else on-demand). Each holds the class's root volume, which a group launched from a template may not set."""
    cls = GpuClassArgs.model_validate(gpu_class(name="h100", instance_types=["p5.48xlarge"], disk_size_gib=200, capacity_ladder=LADDER))
    block, reserved, od, any_open = cls.node_groups()
    assert not od.needs_launch_template
    templates = [launch_template_args(cls, g) for g in (block, reserved, any_open)]
    specs = [t.capacity_reservation_specification for t in templates]
    assert [(s.capacity_reservation_preference, s.capacity_reservation_target and s.capacity_reservation_target.capacity_reservation_id) for s in specs] == [
        ("capacity-reservations-only", "cr-0a1b2c3d4e5f60718"),
        ("capacity-reservations-only", "cr-0123456789abcdef0"),
        ("open", None),
    ]
    assert templates[0].instance_market_options.market_type == "capacity-block" and templates[0].instance_type == "p5.48xlarge"
    assert templates[1].instance_market_options is None and templates[1].instance_type is None
    for template in templates:
        (root,) = template.block_device_mappings
        assert (root.device_name, root.ebs.volume_size, root.ebs.volume_type) == ("/dev/xvda", 200, "gp3")
    bottlerocket = GpuClassArgs.model_validate(
        gpu_class(name="h100", instance_types=["p5.48xlarge"], ami_type="BOTTLEROCKET_x86_64_NVIDIA", capacity_ladder=LADDER)
    )
    assert launch_template_args(bottlerocket, bottlerocket.node_groups()[0]).block_device_mappings[0].device_name == "/dev/xvdb"


def test_a_shared_class_advertises_gpus_times_clients() -> None:
    shared = GpuClassArgs.model_validate(gpu_class(gpu_sharing={"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}))
    assert asg_tags(shared, shared.node_groups()[0], "c")[GPU_TEMPLATE_TAG] == "4"


def test_the_autoscaler_writes_only_to_the_cluster_s_own_groups() -> None:
    read, scale = autoscaler_iam_policy("c")["Statement"]
    assert read == {"Sid": "Read", "Effect": "Allow", "Action": list(READ_ACTIONS), "Resource": "*"}
    assert scale["Action"] == list(MUTATING_ACTIONS) == ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]
    assert scale["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/c": "owned"}}
    assert not set(READ_ACTIONS) & set(MUTATING_ACTIONS)
