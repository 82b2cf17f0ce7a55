"""Bring your own network: GKE project, network and subnetwork, and an existing EKS VPC with
its subnets and extra security groups, given as values or as Outputs of resources made in the
same program. Known values are checked; an Output's checks are reported as not made."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp
import pytest
from pydantic import ValidationError

from gpu_platform.components import EksCluster, EksClusterArgs, ExistingVpcArgs, GpuGkeCluster, GpuGkeClusterArgs
from gpu_platform.components.core.models import checks_not_made
from gpu_platform.infra.testing import preview_program, run_components
from tests.conftest import PROJECT_DIR, Engine, settled_tree
from tests.factories import eks, gke

EXAMPLE = PROJECT_DIR / "examples" / "byo-network"
VPC = "vpc-0a1b2c3d4e5f60718"
SUBNETS = {"ap-northeast-2a": "subnet-0a1b2c3d4e5f60711", "ap-northeast-2c": "subnet-0a1b2c3d4e5f60712"}
PUBLIC = {"ap-northeast-2a": "subnet-0a1b2c3d4e5f60721", "ap-northeast-2c": "subnet-0a1b2c3d4e5f60722"}


def existing(**overrides: Any) -> dict[str, Any]:
    return {"vpc_id": VPC, "private_subnet_ids": dict(SUBNETS), "public_subnet_ids": dict(PUBLIC), **overrides}


def eks_args(**overrides: Any) -> EksClusterArgs:
    """The factory's cluster with ``overrides`` (which may hold Outputs, so not deep-copied); an
    existing VPC brings its own zones."""
    base = {**eks(), **overrides}
    if "vpc" in overrides:
        base.pop("zones", None)
    return EksClusterArgs.model_validate(base)


def problem(error: pytest.ExceptionInfo[ValidationError]) -> tuple[tuple[Any, ...], str]:
    first = error.value.errors()[0]
    return first["loc"], first["msg"]


# --- GKE: project, network, subnetwork -------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("project", "my-project"),
        ("project", "example.com:ml-platform"),
        ("network", "shared-vpc"),
        ("network", "projects/host-project/global/networks/shared-vpc"),
        ("network", "https://www.googleapis.com/compute/v1/projects/host-project/global/networks/shared-vpc"),
        ("subnetwork", "gpu-subnet"),
        ("subnetwork", "projects/host-project/regions/us-central1/subnetworks/gpu-subnet"),
    ],
)
def test_gke_takes_known_names_and_self_links(key: str, value: str) -> None:
    assert getattr(GpuGkeClusterArgs.model_validate(gke(**{key: value})), key) == value


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("project", "My Project", "is not a GCP project id"),
        ("project", "123456789012", "is not a GCP project id"),
        ("network", "Shared_VPC", "is not a VPC network name or self link"),
        ("network", "projects/p/regions/us-central1/subnetworks/s", "is not a VPC network name or self link"),
        ("subnetwork", "projects/p/global/networks/n", "is not a subnetwork name or self link"),
        ("subnetwork", "projects/p/regions/europe-west4/subnetworks/s", "is in region europe-west4, not the cluster's region us-central1"),
        ("network", 42, "Input should be a valid string (or a Pulumi Output of one)"),
    ],
)
def test_gke_refuses_a_malformed_or_misplaced_network_naming_the_key(key: str, value: Any, message: str) -> None:
    with pytest.raises(ValidationError) as error:
        GpuGkeClusterArgs.model_validate(gke(**{key: value}))
    where, msg = problem(error)
    assert where == (key,) and message in msg
    assert len(error.value.errors()) == 1  # one line, not one per member of "string or Output"


@pulumi.runtime.test
def test_gke_runs_on_a_network_subnetwork_and_project_made_in_the_same_program(engine: Engine) -> pulumi.Output[Any]:
    network = gcp.compute.Network("net", gcp.compute.NetworkArgs(auto_create_subnetworks=False))
    subnetwork = gcp.compute.Subnetwork("subnet", gcp.compute.SubnetworkArgs(network=network.id, region="us-central1", ip_cidr_range="10.0.0.0/20"))
    project = pulumi.Output.from_input("ml-host-project")
    args = GpuGkeClusterArgs.model_validate({**gke(), "project": project, "network": network.name, "subnetwork": subnetwork.name})
    cluster = GpuGkeCluster("c", args)

    def check(_: Any) -> None:
        (made,) = engine.of_type("gcp:container/cluster:Cluster")
        assert (made.inputs["network"], made.inputs["subnetwork"], made.inputs["project"]) == ("net", "subnet", "ml-host-project")
        assert made.inputs["workloadIdentityConfig"]["workloadPool"] == "ml-host-project.svc.id.goog"
        assert {r.inputs["project"] for r in engine.of_type("gcp:container/nodePool:NodePool")} == {"ml-host-project"}
        assert engine.resource("c-nodes").inputs["project"] == "ml-host-project"
        assert checks_not_made(args) == [
            "args.project: an Output, so its form (a GCP project id) is not checked before deploy",
            "args.network: an Output, so its form (a network name or self link) is not checked before deploy",
            "args.subnetwork: an Output, so its form and region (a subnetwork name, or a self link in the cluster's region) is not checked before deploy",
        ]

    return settled_tree(cluster).apply(check)


def test_known_values_leave_no_check_unmade() -> None:
    assert checks_not_made(GpuGkeClusterArgs.model_validate(gke(network="shared-vpc", subnetwork="gpu-subnet"))) == []
    assert checks_not_made(eks_args(vpc=existing(), security_group_ids=["sg-0a1b2c3d"])) == []


def test_each_check_an_output_kept_from_being_made_is_a_warning_naming_the_component_and_key() -> None:
    def build() -> None:
        network = gcp.compute.Network("net", gcp.compute.NetworkArgs(auto_create_subnetworks=False))
        GpuGkeCluster("ml", GpuGkeClusterArgs.model_validate({**gke(), "project": "my-project", "network": network.name}))

    plan = run_components(build)
    assert plan.warnings == ["GpuGkeCluster ml: args.network: an Output, so its form (a network name or self link) is not checked before deploy"]


# --- EKS: an existing VPC ---------------------------------------------------------------------


def test_an_existing_vpc_gives_the_zones_and_nothing_else_is_needed() -> None:
    a = eks_args(vpc=existing(public_subnet_ids={}))
    assert a.configured_zones == ["ap-northeast-2a", "ap-northeast-2c"] and a.zones is None
    assert a.vpc is not None and a.vpc.public_subnet_ids == {}
    assert a.security_group_ids == [] and eks_args().vpc is None


@pytest.mark.parametrize(
    ("overrides", "where", "message"),
    [
        ({"vpc": existing(vpc_id="vpc-123")}, ("vpc", "vpc_id"), "is not a VPC id"),
        (
            {"vpc": existing(private_subnet_ids={"ap-northeast-2a": "subnet-0a1b2c3d", "ap-northeast-2c": "sn-1"})},
            ("vpc", "private_subnet_ids", "ap-northeast-2c"),
            "is not a subnet id",
        ),
        ({"vpc": existing(private_subnet_ids={"ap-northeast-2a": "subnet-0a1b2c3d"})}, ("vpc", "private_subnet_ids"), "at least 2 items"),
        (
            {"vpc": existing(private_subnet_ids={"2a": "subnet-0a1b2c3d", "2c": "subnet-0a1b2c3e"})},
            ("vpc", "private_subnet_ids"),
            "is not an availability zone",
        ),
        (
            {"vpc": existing(public_subnet_ids={"ap-northeast-2a": SUBNETS["ap-northeast-2a"]})},
            ("vpc", "public_subnet_ids", "ap-northeast-2a"),
            "is already listed as private_subnet_ids[ap-northeast-2a]",
        ),
        (
            {"vpc": existing(private_subnet_ids={"us-west-2a": "subnet-0a1b2c3d", "us-west-2b": "subnet-0a1b2c3e"}, public_subnet_ids={})},
            ("vpc", "private_subnet_ids", "us-west-2a"),
            "is not in region ap-northeast-2",
        ),
        ({"vpc": existing(), "vpc_cidr": "10.1.0.0/16"}, ("vpc_cidr",), "applies to a VPC the component creates"),
        ({"vpc": existing(), "nat_gateways": "per_zone"}, ("nat_gateways",), "applies to a VPC the component creates"),
        ({"vpc": existing(), "zone_count": 2}, ("zone_count",), "applies to a VPC the component creates"),
        ({"vpc": existing(), "zones": ["ap-northeast-2a", "ap-northeast-2b"]}, ("zones",), "differ from the zones of vpc.private_subnet_ids"),
        ({"security_group_ids": ["sg-xyz"]}, ("security_group_ids", 0), "is not a security group id"),
        ({"security_group_ids": [f"sg-0a1b2c3{i}" for i in range(6)]}, ("security_group_ids",), "at most 5 items"),
    ],
)
def test_eks_refuses_a_malformed_or_contradictory_vpc_naming_the_key(overrides: dict[str, Any], where: tuple[Any, ...], message: str) -> None:
    base = eks(**overrides)
    if "vpc" in overrides and "zones" not in overrides:
        base.pop("zones")
    with pytest.raises(ValidationError) as error:
        EksClusterArgs.model_validate(base)
    loc, msg = problem(error)
    assert loc == where and message in msg, (loc, msg)


@pulumi.runtime.test
def test_eks_runs_in_a_vpc_made_in_the_same_program_and_creates_no_network(engine: Engine) -> pulumi.Output[Any]:
    vpc = aws.ec2.Vpc("mine", aws.ec2.VpcArgs(cidr_block="10.20.0.0/16"))
    private = {
        zone: aws.ec2.Subnet(f"mine-{zone[-1]}", aws.ec2.SubnetArgs(vpc_id=vpc.id, availability_zone=zone, cidr_block=f"10.20.{i * 16}.0/20"))
        for i, zone in enumerate(["ap-northeast-2a", "ap-northeast-2c"])
    }
    group = aws.ec2.SecurityGroup("vpn", aws.ec2.SecurityGroupArgs(vpc_id=vpc.id))
    args = eks_args(
        vpc=ExistingVpcArgs(vpc_id=vpc.id, private_subnet_ids={z: s.id for z, s in private.items()}),
        security_group_ids=[group.id, "sg-0a1b2c3d"],
        deletion_protection=False,
    )
    cluster = EksCluster("c", args)
    ids = [s.id for s in private.values()]

    def check(values: list[Any]) -> None:
        vpc_id, sub_a, sub_c, group_id, out_vpc, out_private, out_public = values
        made = {r.type for r in engine.recorded if r.parent and r.parent.endswith("::c")}
        for kind in (
            "aws:ec2/vpc:Vpc",
            "aws:ec2/subnet:Subnet",
            "aws:ec2/natGateway:NatGateway",
            "aws:ec2/internetGateway:InternetGateway",
            "aws:ec2/routeTable:RouteTable",
            "aws:ec2/eip:Eip",
        ):
            assert kind not in made, f"the component made a {kind} in a VPC it was given"
        (eks_cluster,) = engine.of_type("aws:eks/cluster:Cluster")
        assert eks_cluster.inputs["vpcConfig"]["subnetIds"] == [sub_a, sub_c]
        assert eks_cluster.inputs["vpcConfig"]["securityGroupIds"] == [group_id, "sg-0a1b2c3d"]
        (system,) = engine.of_type("aws:eks/nodeGroup:NodeGroup")
        assert system.inputs["subnetIds"] == [sub_a, sub_c]  # nodes in the private subnets, in zone order
        assert (out_vpc, out_private, out_public) == (vpc_id, [sub_a, sub_c], [])
        assert cluster.zones == ["ap-northeast-2a", "ap-northeast-2c"]
        assert checks_not_made(args) == [
            "args.vpc.vpc_id: an Output, so its form (vpc-...) is not checked before deploy",
            "args.vpc.private_subnet_ids[ap-northeast-2a]: an Output, so its form (subnet-...) is not checked before deploy",
            "args.vpc.private_subnet_ids[ap-northeast-2c]: an Output, so its form (subnet-...) is not checked before deploy",
            "args.security_group_ids[0]: an Output, so its form (sg-...) is not checked before deploy",
        ]

    return pulumi.Output.all(vpc.id, *ids, group.id, cluster.vpc_id, cluster.private_subnet_ids, cluster.public_subnet_ids, settled_tree(cluster)).apply(
        lambda v: check(v[:-1])
    )


def test_the_gpu_offering_check_asks_about_the_zones_of_the_given_subnets() -> None:
    plan = run_components(lambda: EksCluster("c", eks_args(vpc=existing()), gpu_instance_types=["g6.xlarge"]))
    assert plan.plan.notices == [
        "zones ap-northeast-2a, ap-northeast-2c were not checked for g6.xlarge offline; "
        "`gpu-platform preflight eks <stack>` checks them with AWS credentials, and `pulumi preview` does"
    ]


# --- the example program ----------------------------------------------------------------------


def test_the_byo_network_example_previews_with_both_clusters_on_its_own_networks() -> None:
    plan = preview_program(EXAMPLE)
    plan.assert_no_violations()
    gke_cluster = plan.of_type("gcp:container/cluster:Cluster")[0].inputs
    assert (gke_cluster["network"], gke_cluster["subnetwork"]) == ("ml-net", "ml-subnet")
    eks_cluster = plan.of_type("aws:eks/cluster:Cluster")[0].inputs
    assert eks_cluster["vpcConfig"]["subnetIds"] == ["ml-private-a-id", "ml-private-b-id", "ml-public-a-id", "ml-public-b-id"]
    assert eks_cluster["vpcConfig"]["securityGroupIds"] == ["ml-api-from-vpn-id"]
    assert plan.outputs["eksVpcId"] == "ml-vpc-id"
    assert [r.name for r in plan.of_type("aws:ec2/vpc:Vpc")] == ["ml-vpc"]  # the program's, and no other
    assert any(w.startswith("GpuGkeCluster ml-gke: args.network: an Output") for w in plan.warnings)
    assert any(w.startswith("EksCluster ml-eks: args.vpc.vpc_id: an Output") for w in plan.warnings)
