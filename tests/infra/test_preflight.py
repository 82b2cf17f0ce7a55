"""`gpu-platform preflight eks`: EC2 answered by moto (its offerings and instance types are
recorded from AWS); Service Quotas' GetServiceQuota for EC2 answered by botocore's Stubber,
since moto 5.2 implements Service Quotas for the vpc service only."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from gpu_platform.components.catalog.gpus import AWS_INSTANCE_TYPES, AwsInstanceType
from gpu_platform.infra.preflight import QUOTAS, preflight_eks
from gpu_platform.infra.stack.model import StackConfig
from tests.factories import eks, eks_node_groups, gpu_class

REGION = "ap-northeast-2"


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name=REGION)


def quotas(values: dict[str, float], missing: tuple[str, ...] = ()) -> Any:
    """A Service Quotas client answering GetServiceQuota for the codes asked, in QUOTAS order."""
    client = boto3.client("service-quotas", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
    stub = Stubber(client)
    for code, value in values.items():
        params = {"ServiceCode": "ec2", "QuotaCode": code}
        if code in missing:
            stub.add_client_error("get_service_quota", "NoSuchResourceException", expected_params=params)
            stub.add_response("get_aws_default_service_quota", {"Quota": {"QuotaCode": code, "Value": value}}, params)
        else:
            stub.add_response("get_service_quota", {"Quota": {"QuotaCode": code, "Value": value}}, params)
    stub.activate()
    client.stub = stub
    return client


def stack(classes: list[dict[str, Any]], zones: list[str] | None = None) -> StackConfig:
    cluster = eks() if zones is None else eks(zones=zones)
    if zones == []:
        cluster = eks(zones=None)
    return StackConfig.model_validate({"cloud": "aws", "eks": cluster, "eks_node_groups": eks_node_groups(classes=classes), "monitoring": {"enabled": False}})


G_ON_DEMAND, G_SPOT = QUOTAS[("G", "on-demand")][0], QUOTAS[("G", "spot")][0]


def lines(findings: list[Any]) -> list[str]:
    return [str(f) for f in findings]


def test_a_sound_stack_passes(ec2: Any) -> None:
    config = stack([gpu_class(name="t4", instance_types=["g4dn.xlarge"], max_nodes=4)])
    client = quotas({G_ON_DEMAND: 64, G_SPOT: 64})
    out = lines(preflight_eks(config, REGION, ec2, client))
    client.stub.assert_no_pending_responses()
    assert out == [
        "ok: g4dn.xlarge is offered in ap-northeast-2a, ap-northeast-2b, ap-northeast-2c",
        "ok: zone ap-northeast-2a offers g4dn.xlarge",
        "ok: zone ap-northeast-2c offers g4dn.xlarge",
        "ok: class t4: g4dn.xlarge share one shape (4 vCPUs, 16 GiB, 1x T4)",
        "ok: Running On-Demand G and VT instances (L-DB2E81BA) in ap-northeast-2 is 64 vCPUs; the node groups need at most 16",
        "ok: All G and VT Spot Instance Requests (L-3819A6DF) in ap-northeast-2 is 64 vCPUs; the node groups need at most 16",
    ]


def test_fails_when_a_zone_lacks_the_gpu_type(ec2: Any) -> None:
    # EC2 (as moto records it) offers g5.xlarge in ap-northeast-2a, 2c and 2d, not 2b.
    config = stack([gpu_class(name="a10", instance_types=["g5.xlarge"], max_nodes=2)], zones=["ap-northeast-2a", "ap-northeast-2b"])
    out = lines(preflight_eks(config, REGION, ec2, quotas({G_ON_DEMAND: 64, G_SPOT: 64})))
    # The same verdict as EksCluster's own refusal at args.zones (components/eks/resources.zones_offering).
    assert (
        "error: eks.zones: zone ap-northeast-2b does not offer g5.xlarge; zones that offer every GPU instance type: "
        "ap-northeast-2a, ap-northeast-2c, ap-northeast-2d: its node groups could never get those nodes"
    ) in out
    assert "ok: zone ap-northeast-2a offers g5.xlarge" in out


def test_fails_when_no_zone_offers_a_type(ec2: Any) -> None:
    config = stack([gpu_class(name="a100", instance_types=["p4de.24xlarge"], max_nodes=1, capacity="on_demand")])
    out = lines(preflight_eks(config, REGION, ec2, quotas({QUOTAS[("P", "on-demand")][0]: 96})))
    assert "error: p4de.24xlarge is offered in no zone of ap-northeast-2; choose another type or region" in out
    assert any(line.startswith("error: eks.zones: zone ap-northeast-2a does not offer p4de.24xlarge") for line in out)


def test_a_type_unknown_in_the_region_is_a_finding_not_an_abort(ec2: Any) -> None:
    """moto's ap-northeast-2 has no p3 (DescribeInstanceTypes then refuses the whole call):
    prod-eks's classes are reported one line each, and the run goes on to the quotas."""
    config = stack(
        [
            gpu_class(name="small", instance_types=["p3.2xlarge"], max_nodes=2),
            gpu_class(name="t4", instance_types=["g4dn.xlarge"], max_nodes=2, capacity="on_demand"),
        ]
    )
    with pytest.raises(Exception, match="InvalidInstanceType"):
        ec2.describe_instance_types(InstanceTypes=["p3.2xlarge", "g4dn.xlarge"])
    codes = {G_ON_DEMAND: 8, QUOTAS[("P", "on-demand")][0]: 64, QUOTAS[("P", "spot")][0]: 64}  # in QUOTAS order
    out = lines(preflight_eks(config, REGION, ec2, quotas(codes)))
    assert "error: p3.2xlarge is offered in no zone of ap-northeast-2; choose another type or region" in out
    assert "ok: class t4: g4dn.xlarge share one shape (4 vCPUs, 16 GiB, 1x T4)" in out
    assert any("Running On-Demand P instances" in line for line in out)


def test_looked_up_zones_are_reported(ec2: Any) -> None:
    config = stack([gpu_class(name="t4", instance_types=["g4dn.xlarge"], max_nodes=1)], zones=[])
    out = lines(preflight_eks(config, REGION, ec2, quotas({G_ON_DEMAND: 8, G_SPOT: 8})))
    assert "ok: zones looked up at deploy: ap-northeast-2a, ap-northeast-2b, ap-northeast-2c offer g4dn.xlarge" in out


def test_fails_when_the_gpu_vcpu_quota_is_too_small(ec2: Any) -> None:
    config = stack(
        [
            gpu_class(name="small", instance_types=["g4dn.xlarge"], max_nodes=4),
            gpu_class(name="large", instance_types=["g4dn.12xlarge"], max_nodes=2, fallback_max_nodes=1),
        ]
    )
    # Spot has the default quota of a new account applied; on-demand has none applied.
    client = quotas({G_ON_DEMAND: 64, G_SPOT: 32}, missing=(G_ON_DEMAND,))
    out = lines(preflight_eks(config, REGION, ec2, client))
    assert ("ok: Running On-Demand G and VT instances (L-DB2E81BA) in ap-northeast-2 is 64 vCPUs; the node groups need at most 64") in out  # 4 x 4 + 1 x 48
    assert (
        "error: All G and VT Spot Instance Requests (L-3819A6DF) in ap-northeast-2 is 32 vCPUs; the node groups may need 112 "
        "(small-spot 4x4 + large-spot 2x48): request an increase"
    ) in out


def test_fails_when_the_catalog_disagrees_with_ec2(ec2: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = AwsInstanceType("g4dn.xlarge", 4, 8 * 1024, "T4", 1, 16 * 1024)
    monkeypatch.setitem(AWS_INSTANCE_TYPES, "g4dn.xlarge", wrong)
    config = stack([gpu_class(name="t4", instance_types=["g4dn.xlarge"], max_nodes=1)])
    out = lines(preflight_eks(config, REGION, ec2, quotas({G_ON_DEMAND: 8, G_SPOT: 8})))
    assert (
        "error: class t4: EC2 reports g4dn.xlarge as (4, 16384, 'T4', 1) (vCPUs, MiB, GPU, GPUs), the catalog as "
        "(4, 8192, 'T4', 1): fix components/catalog/aws.py"
    ) in out


def test_an_existing_vpc_is_checked_subnet_by_subnet(ec2: Any) -> None:
    """Each listed subnet must exist, be in eks.vpc.vpc_id and in the zone it is keyed by: a
    subnet of another zone or VPC is an error naming its key."""
    vpc = ec2.create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]
    other = ec2.create_vpc(CidrBlock="10.40.0.0/16")["Vpc"]["VpcId"]

    def subnet(vpc_id: str, cidr: str, zone: str) -> str:
        return ec2.create_subnet(VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]

    a = subnet(vpc, "10.30.0.0/20", "ap-northeast-2a")
    c = subnet(vpc, "10.30.16.0/20", "ap-northeast-2c")
    elsewhere = subnet(other, "10.40.0.0/20", "ap-northeast-2a")
    wrong_zone = subnet(vpc, "10.30.32.0/20", "ap-northeast-2b")
    cluster = {
        **eks(),
        "vpc": {
            "vpc_id": vpc,
            "private_subnet_ids": {"ap-northeast-2a": a, "ap-northeast-2c": c},
            "public_subnet_ids": {"ap-northeast-2a": elsewhere, "ap-northeast-2c": wrong_zone, "ap-northeast-2d": "subnet-0000000000000000d"},
        },
    }
    cluster.pop("zones")
    config = StackConfig.model_validate(
        {
            "cloud": "aws",
            "eks": cluster,
            "monitoring": {"enabled": False},
            "eks_node_groups": eks_node_groups(classes=[gpu_class(name="t4", instance_types=["g4dn.xlarge"], max_nodes=4)]),
        }
    )
    out = lines(preflight_eks(config, REGION, ec2, quotas({G_ON_DEMAND: 64, G_SPOT: 64})))
    assert "ok: zone ap-northeast-2a offers g4dn.xlarge" in out  # the zones are the private subnets'
    assert f"ok: eks.vpc.private_subnet_ids[ap-northeast-2a]: subnet {a} is in {vpc}, zone ap-northeast-2a, 4091 free addresses" in out
    assert f"ok: eks.vpc.private_subnet_ids[ap-northeast-2c]: subnet {c} is in {vpc}, zone ap-northeast-2c, 4091 free addresses" in out
    assert f"error: eks.vpc.public_subnet_ids[ap-northeast-2a]: subnet {elsewhere} is in {other}, not eks.vpc.vpc_id {vpc}" in out
    assert (
        f"error: eks.vpc.public_subnet_ids[ap-northeast-2c]: subnet {wrong_zone} is in zone ap-northeast-2b, not ap-northeast-2c; key it by its own zone"
    ) in out
    assert "error: eks.vpc.public_subnet_ids[ap-northeast-2d]: subnet subnet-0000000000000000d does not exist in this account and region" in out


P5EN_SHAPE = {"vcpus": 192, "memory_gib": 2048, "gpus": 8, "gpu_type": "H200"}


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        (P5EN_SHAPE, "ok: class h200: p5en.48xlarge share one shape (192 vCPUs, 2048 GiB, 8x H200)"),
        (
            {**P5EN_SHAPE, "memory_gib": 1024},
            "error: class h200: EC2 reports p5en.48xlarge as (192, 2097152, 'H200', 8) (vCPUs, MiB, GPU, GPUs), the class's shape as "
            "(192, 1048576, 'H200', 8): correct eks_node_groups.classes[0].shape",
        ),
    ],
)
def test_a_stated_shape_is_checked_against_what_ec2_reports(ec2: Any, shape: dict[str, Any], expected: str) -> None:
    """A type the catalog does not know (p5en.48xlarge) is checked against EC2 as its stated shape; its
    P-family vCPU quota counts the stated vCPUs."""
    assert "p5en.48xlarge" not in AWS_INSTANCE_TYPES
    config = stack([gpu_class(name="h200", instance_types=["p5en.48xlarge"], max_nodes=1, shape=shape)])
    p_on_demand, p_spot = QUOTAS[("P", "on-demand")][0], QUOTAS[("P", "spot")][0]
    out = lines(preflight_eks(config, REGION, ec2, quotas({p_on_demand: 384, p_spot: 96})))
    assert expected in out
    assert (
        "error: All P Spot Instance Requests (L-7212CCBC) in ap-northeast-2 is 96 vCPUs; the node groups may need 192 "
        "(h200-spot 1x192): request an increase" in out
    )


def test_brought_subnets_need_the_load_balancer_role_tags(ec2: Any) -> None:
    """kubernetes.io/role/elb=1 on a public subnet and kubernetes.io/role/internal-elb=1 on a private one, by
    which the AWS Load Balancer Controller finds them: a missing or wrong tag is an error naming the key."""
    vpc = ec2.create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]

    def subnet(cidr: str, zone: str, tags: dict[str, str]) -> str:
        made = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
        if tags:
            ec2.create_tags(Resources=[made], Tags=[{"Key": k, "Value": v} for k, v in tags.items()])
        return made

    private_a = subnet("10.30.0.0/20", "ap-northeast-2a", {"kubernetes.io/role/internal-elb": "1"})
    private_c = subnet("10.30.16.0/20", "ap-northeast-2c", {"kubernetes.io/role/elb": "1"})  # the public subnets' tag
    public_a = subnet("10.30.32.0/20", "ap-northeast-2a", {"kubernetes.io/role/elb": "1"})
    public_c = subnet("10.30.48.0/20", "ap-northeast-2c", {"kubernetes.io/role/elb": "0"})
    cluster = {
        **eks(),
        "vpc": {
            "vpc_id": vpc,
            "private_subnet_ids": {"ap-northeast-2a": private_a, "ap-northeast-2c": private_c},
            "public_subnet_ids": {"ap-northeast-2a": public_a, "ap-northeast-2c": public_c},
        },
    }
    cluster.pop("zones")
    config = StackConfig.model_validate(
        {
            "cloud": "aws",
            "eks": cluster,
            "monitoring": {"enabled": False},
            "eks_node_groups": eks_node_groups(classes=[gpu_class(name="t4", instance_types=["g4dn.xlarge"], max_nodes=4)]),
        }
    )
    out = lines(preflight_eks(config, REGION, ec2, quotas({G_ON_DEMAND: 64, G_SPOT: 64})))
    tagged = [line for line in out if "kubernetes.io/role/" in line]
    assert tagged == [
        f"ok: eks.vpc.private_subnet_ids[ap-northeast-2a]: subnet {private_a} carries kubernetes.io/role/internal-elb=1 (internal load balancers)",
        f"error: eks.vpc.private_subnet_ids[ap-northeast-2c]: subnet {private_c} needs tag kubernetes.io/role/internal-elb=1, by which the "
        "AWS Load Balancer Controller finds subnets for internal load balancers (it has no such tag); tag it",
        f"ok: eks.vpc.public_subnet_ids[ap-northeast-2a]: subnet {public_a} carries kubernetes.io/role/elb=1 (internet-facing load balancers)",
        f"error: eks.vpc.public_subnet_ids[ap-northeast-2c]: subnet {public_c} needs tag kubernetes.io/role/elb=1, by which the "
        "AWS Load Balancer Controller finds subnets for internet-facing load balancers (it has kubernetes.io/role/elb=0); tag it",
    ]


# --- Reservations and capacity blocks a capacity ladder names (issue 38 item 3) ---------------------------
#
# moto 5.2 does not implement DescribeCapacityReservations: the tests answer it with botocore's Stubber, which
# checks each recorded answer against botocore's EC2 service model, and moto answers every other EC2 call.

BLOCK, ODCR = "cr-0b1c2d3e4f5a6b7c8", "cr-0123456789abcdef0"
START, END = datetime(2026, 12, 1, 11, 30, tzinfo=UTC), datetime(2026, 12, 8, 11, 30, tzinfo=UTC)


def described(
    reservation: str,
    *,
    kind: str = "default",
    state: str = "active",
    zone: str = "ap-northeast-2a",
    itype: str = "g5.xlarge",
    available: int = 2,
    total: int = 2,
    **more: Any,
) -> dict[str, Any]:
    """One CapacityReservations entry as DescribeCapacityReservations answers (a capacity block: kind capacity-block, its window)."""
    block = kind == "capacity-block"
    entry = {
        "CapacityReservationId": reservation,
        "OwnerId": "123456789012",
        "CapacityReservationArn": f"arn:aws:ec2:{REGION}:123456789012:capacity-reservation/{reservation}",
        "AvailabilityZoneId": "apne2-az1",
        "InstanceType": itype,
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": zone,
        "Tenancy": "default",
        "TotalInstanceCount": total,
        "AvailableInstanceCount": available,
        "EbsOptimized": True,
        "EphemeralStorage": False,
        "State": state,
        "StartDate": START if block else datetime(2026, 11, 2, 8, 0, tzinfo=UTC),
        "EndDateType": "limited" if block else "unlimited",
        "InstanceMatchCriteria": "targeted",
        "CreateDate": datetime(2026, 11, 2, 8, 0, tzinfo=UTC),
        "ReservationType": kind,
        **({"EndDate": END} if block else {}),
        **more,
    }
    return entry


def answer(ec2: Any, *answers: tuple[str, dict[str, Any] | None]) -> Any:
    """``ec2`` (moto's) answers DescribeCapacityReservations for each id in turn from a Stubber: the entry, or
    None for EC2's InvalidCapacityReservationId.NotFound."""
    stubbed = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
    stub = Stubber(stubbed)
    for reservation, entry in answers:
        params = {"CapacityReservationIds": [reservation]}
        if entry is None:
            message = f"The capacity reservation ID '{reservation}' does not exist"
            stub.add_client_error("describe_capacity_reservations", "InvalidCapacityReservationId.NotFound", message, 400, expected_params=params)
        else:
            stub.add_response("describe_capacity_reservations", {"CapacityReservations": [entry]}, params)
    stub.activate()
    ec2.describe_capacity_reservations = stubbed.describe_capacity_reservations
    return stub


def laddered(ladder: list[dict[str, Any]], min_nodes: int = 1, itype: str = "g5.xlarge", zones: list[str] | None = None) -> StackConfig:
    cls = gpu_class(name="a10", instance_types=[itype], max_nodes=4, min_nodes=min_nodes, capacity_ladder=ladder)
    cls.pop("capacity", None)
    return stack([cls], zones=zones or ["ap-northeast-2a", "ap-northeast-2c"])


BLOCK_LADDER = [{"kind": "capacity_block", "reservation": BLOCK}, {"kind": "reservation", "reservation": ODCR}, {"kind": "spot"}, {"kind": "on_demand"}]
BLOCK_KEY = f"class a10: eks_node_groups.classes[0].capacity_ladder[0].reservation {BLOCK}"
ODCR_KEY = f"class a10: eks_node_groups.classes[0].capacity_ladder[1].reservation {ODCR}"
PLENTY_G = {G_ON_DEMAND: 64, G_SPOT: 64}


def reservation_lines(config: StackConfig, ec2: Any) -> list[str]:
    return [x for x in lines(preflight_eks(config, REGION, ec2, quotas(PLENTY_G))) if "capacity_ladder" in x]


def test_an_active_block_and_reservation_in_the_zones_with_room_pass(ec2: Any) -> None:
    stub = answer(
        ec2, (BLOCK, described(BLOCK, kind="capacity-block", available=1, total=1)), (ODCR, described(ODCR, zone="ap-northeast-2c", available=3, total=4))
    )
    assert reservation_lines(laddered(BLOCK_LADDER), ec2) == [
        f"ok: {BLOCK_KEY}: capacity block active (from 2026-12-01T11:30Z until 2026-12-08T11:30Z), 1 of 1 g5.xlarge available in "
        "ap-northeast-2a; the node groups consuming it keep 1 (a10-block 1)",
        f"ok: {ODCR_KEY}: capacity reservation active (from 2026-11-02T08:00Z, no end date), 3 of 4 g5.xlarge available in "
        "ap-northeast-2c; the node groups consuming it keep 0 (a10-reserved 0)",
    ]
    stub.assert_no_pending_responses()


def test_fails_when_the_reservation_does_not_exist(ec2: Any) -> None:
    answer(ec2, (BLOCK, described(BLOCK, kind="capacity-block")), (ODCR, None))
    assert reservation_lines(laddered(BLOCK_LADDER), ec2)[1] == (
        f"error: {ODCR_KEY}: EC2 knows no capacity reservation {ODCR} in this account and region (nor one shared with it): check the id"
    )


def test_fails_when_the_reservation_is_in_another_zone(ec2: Any) -> None:
    answer(ec2, (BLOCK, described(BLOCK, kind="capacity-block", zone="ap-northeast-2b")), (ODCR, described(ODCR)))
    assert reservation_lines(laddered(BLOCK_LADDER), ec2)[0] == (
        f"error: {BLOCK_KEY}: it is in ap-northeast-2b, not in eks.zones (ap-northeast-2a, ap-northeast-2c): the node group's subnets cannot launch into it"
    )


def test_zones_looked_up_at_deploy_are_the_ones_checked(ec2: Any) -> None:
    """No zones in the stack: EksCluster takes the first zone_count (3) zones that offer every type (g5.xlarge: 2a, 2c, 2d)."""
    cls = gpu_class(
        name="a10", instance_types=["g5.xlarge"], max_nodes=4, capacity_ladder=[{"kind": "reservation", "reservation": ODCR}, {"kind": "on_demand"}]
    )
    cls.pop("capacity", None)
    answer(ec2, (ODCR, described(ODCR, zone="ap-northeast-2b")))
    out = reservation_lines(stack([cls], zones=[]), ec2)
    assert out == [
        "error: class a10: eks_node_groups.classes[0].capacity_ladder[0].reservation cr-0123456789abcdef0: it is in ap-northeast-2b, not in "
        "the zones looked up at deploy (ap-northeast-2a, ap-northeast-2c, ap-northeast-2d): the node group's subnets cannot launch into it"
    ]


def test_fails_when_too_few_instances_are_available_for_the_minimum(ec2: Any) -> None:
    answer(ec2, (BLOCK, described(BLOCK, kind="capacity-block", available=1, total=2)), (ODCR, described(ODCR)))
    assert reservation_lines(laddered(BLOCK_LADDER, min_nodes=2), ec2)[0] == (
        f"error: {BLOCK_KEY}: 1 of 2 g5.xlarge available in ap-northeast-2a; the node groups consuming it keep 2 (a10-block 2): "
        "lower their min_nodes or enlarge the capacity block"
    )


def test_fails_when_a_block_is_outside_its_window_or_the_kind_or_type_differs(ec2: Any) -> None:
    """Scheduled (before its window) with a minimum to keep, expired, of another kind, or for another instance type."""
    answer(
        ec2,
        (BLOCK, described(BLOCK, kind="capacity-block", state="scheduled")),
        (ODCR, described(ODCR, kind="capacity-block", state="expired", itype="p5.48xlarge", Tenancy="dedicated")),
    )
    assert reservation_lines(laddered(BLOCK_LADDER), ec2) == [
        f"error: {BLOCK_KEY}: it is scheduled (from 2026-12-01T11:30Z until 2026-12-08T11:30Z), not active: node group a10-block keeps "
        "min_nodes 1, which cannot launch before it starts",
        f"error: {ODCR_KEY}: it is a capacity block, not what a reservation rung consumes: make the rung kind capacity_block",
        f"error: {ODCR_KEY}: it is expired (from 2026-12-01T11:30Z until 2026-12-08T11:30Z): only an active capacity block launches instances",
        f"error: {ODCR_KEY}: it holds p5.48xlarge, not the class's g5.xlarge",
        f"error: {ODCR_KEY}: it is for Linux/UNIX with dedicated tenancy; the node groups launch Linux/UNIX instances with default tenancy",
    ]


def test_a_scheduled_block_of_a_group_keeping_no_nodes_passes(ec2: Any) -> None:
    """A fallback group keeps no nodes: a block that has not started yet is reported with its window, not refused."""
    ladder = [{"kind": "spot"}, {"kind": "capacity_block", "reservation": BLOCK}]
    answer(ec2, (BLOCK, described(BLOCK, kind="capacity-block", state="scheduled")))
    assert reservation_lines(laddered(ladder), ec2) == [
        f"ok: class a10: eks_node_groups.classes[0].capacity_ladder[1].reservation {BLOCK}: capacity block scheduled (from 2026-12-01T11:30Z "
        "until 2026-12-08T11:30Z), 2 of 2 g5.xlarge available in ap-northeast-2a; the node groups consuming it keep 0 (a10-block 0)"
    ]


def test_a_refusal_to_describe_is_one_line_not_a_finding(ec2: Any) -> None:
    from gpu_platform.infra.preflight import CloudError

    stubbed = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
    stub = Stubber(stubbed)
    stub.add_client_error("describe_capacity_reservations", "UnauthorizedOperation", "You are not authorized to perform this operation.", 403)
    stub.activate()
    ec2.describe_capacity_reservations = stubbed.describe_capacity_reservations
    with pytest.raises(CloudError, match=r"^AWS refused DescribeCapacityReservations in ap-northeast-2: UnauthorizedOperation: You are not authorized"):
        preflight_eks(laddered(BLOCK_LADDER), REGION, ec2, quotas(PLENTY_G))
