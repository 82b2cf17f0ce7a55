"""EksCluster under the recording mock engine: its VPC, cluster, storage, kubeconfig and the zones it
looks up, read back as the engine sees them."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import kubernetes_validate
import pulumi
import pytest
import yaml

from gpu_platform.components import EksCluster, EksClusterArgs
from gpu_platform.infra.preview.engine import RecordingMocks
from tests.components.eks.test_node_groups import build, done
from tests.conftest import Engine, settled_tree
from tests.factories import eks


@pulumi.runtime.test
def test_vpc_has_a_public_and_a_private_subnet_per_zone(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build()

    def check() -> None:
        subnets = engine.of_type("aws:ec2/subnet:Subnet")
        assert [s.name for s in subnets] == ["c-private-a", "c-private-c", "c-public-a", "c-public-c"]
        for s in subnets:
            assert s.inputs["tags"]["kubernetes.io/cluster/c"] == "shared"
        private = [s for s in subnets if "private" in s.name]
        assert [s.inputs["availabilityZone"] for s in private] == ["ap-northeast-2a", "ap-northeast-2c"]
        assert all(s.inputs["tags"]["kubernetes.io/role/internal-elb"] == "1" for s in private)
        cidrs = [s.inputs["cidrBlock"] for s in subnets]
        assert len(set(cidrs)) == 4 and all(c.startswith("10.0.") for c in cidrs)
        assert len(engine.of_type("aws:ec2/natGateway:NatGateway")) == 1  # single by default
        assert cluster.zones == ["ap-northeast-2a", "ap-northeast-2c"]

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_six_zones_fit_the_smallest_vpc_range(engine: Engine) -> pulumi.Output[Any]:
    """The most zones (6) in the smallest range (/20): twelve subnets, disjoint, inside the VPC."""
    zones = [f"us-east-1{z}" for z in "abcdef"]
    cluster, gpu = build({"region": "us-east-1", "zones": zones, "vpc_cidr": "10.8.0.0/20"})

    def check() -> None:
        vpc = ipaddress.IPv4Network("10.8.0.0/20")
        blocks = [ipaddress.IPv4Network(s.inputs["cidrBlock"]) for s in engine.of_type("aws:ec2/subnet:Subnet")]
        assert len(blocks) == 12 and all(b.subnet_of(vpc) and b.prefixlen == 24 for b in blocks)
        assert not any(a.overlaps(b) for i, a in enumerate(blocks) for b in blocks[i + 1 :])

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_per_zone_nat_gateways(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build({"nat_gateways": "per_zone"})

    def check() -> None:
        nats = engine.of_type("aws:ec2/natGateway:NatGateway")
        assert [n.name for n in nats] == ["c-nat-a", "c-nat-c"]
        routes = {r.name: r.inputs["routes"][0]["natGatewayId"] for r in engine.of_type("aws:ec2/routeTable:RouteTable") if "private" in r.name}
        assert routes == {"c-private-a-rt": "c-nat-a-id", "c-private-c-rt": "c-nat-c-id"}

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_cluster_version_endpoint_protection_and_irsa(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build(
        {"version": "1.33", "endpoint": {"public_access_cidrs": ["198.51.100.0/24"]}},
        autoscaler={"image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.2"},
    )

    def check() -> None:
        eks_cluster = engine.resource("c-cluster")
        assert eks_cluster.inputs["version"] == "1.33"
        assert eks_cluster.inputs["vpcConfig"]["publicAccessCidrs"] == ["198.51.100.0/24"]
        assert eks_cluster.inputs["vpcConfig"]["endpointPrivateAccess"] is True
        assert eks_cluster.inputs["deletionProtection"] is True and eks_cluster.protect
        assert eks_cluster.inputs["accessConfig"]["authenticationMode"] == "API"
        assert eks_cluster.inputs["enabledClusterLogTypes"] == ["api", "audit", "authenticator"]
        oidc = engine.resource("c-oidc")
        assert oidc.inputs["clientIdLists"] == ["sts.amazonaws.com"]
        assert oidc.inputs["url"].startswith("https://oidc.eks.ap-northeast-2.amazonaws.com/id/")
        addons = sorted(a.inputs["addonName"] for a in engine.of_type("aws:eks/addon:Addon"))
        assert addons == ["aws-ebs-csi-driver", "coredns", "eks-pod-identity-agent", "kube-proxy", "vpc-cni"]
        assert engine.resource("c-system").urn in engine.resource("c-coredns").depends_on  # CoreDNS needs nodes
        assert engine.resource("c-system").urn not in engine.resource("c-vpc-cni").depends_on
        # The VPC CNI's network policy agent enforces the tenants' NetworkPolicies.
        assert json.loads(engine.resource("c-vpc-cni").inputs["configurationValues"]) == {"enableNetworkPolicy": "true"}
        assert "configurationValues" not in engine.resource("c-coredns").inputs
        # Nodes need the CNI to become Ready: every node group waits for it.
        for group in ("c-system", *(f"c-gpu-{g}" for g in gpu.node_groups)):
            assert engine.resource("c-vpc-cni").urn in engine.resource(group).depends_on, group
        system = engine.resource("c-system")
        assert system.inputs["capacityType"] == "ON_DEMAND" and system.inputs["instanceTypes"] == ["m6i.large"]
        assert system.inputs["scalingConfig"] == {"desiredSize": 2, "maxSize": 4, "minSize": 2}
        assert "taints" not in system.inputs
        policies = sorted(p.inputs["policyArn"].rsplit("/", 1)[1] for p in engine.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment"))
        assert policies == sorted(
            [
                "AmazonEBSCSIDriverPolicy",
                "AmazonEC2ContainerRegistryReadOnly",
                "AmazonEKSClusterPolicy",
                "AmazonEKS_CNI_Policy",
                "AmazonEKSWorkerNodePolicy",
            ]
        )
        # The autoscaler's release waits for somewhere to run and for cluster DNS.
        release = engine.resource("c-gpu-autoscaler")
        assert {engine.resource("c-system").urn, engine.resource("c-coredns").urn} <= set(release.depends_on)

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_block_storage_is_the_ebs_csi_driver_and_a_default_gp3_class(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build()

    def check() -> None:
        driver = engine.resource("c-aws-ebs-csi-driver")
        role = engine.resource("c-ebs-csi-role")
        assert driver.inputs["serviceAccountRoleArn"] == "arn:aws:iam::123456789012:role/c-ebs-csi-role"
        assert engine.resource("c-system").urn in driver.depends_on  # its controller runs on nodes
        (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
        issuer = "oidc.eks.ap-northeast-2.amazonaws.com/id/0FFL1NE0000000000000000000000000"
        assert statement["Condition"]["StringEquals"] == {
            f"{issuer}:sub": "system:serviceaccount:kube-system:ebs-csi-controller-sa",
            f"{issuer}:aud": "sts.amazonaws.com",
        }
        attachment = engine.resource("c-ebs-csi-role-policy").inputs
        assert attachment["policyArn"] == "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
        storage = engine.resource("c-gp3-storage-class")
        kubernetes_validate.validate(storage.inputs, "1.34", strict=True)
        assert storage.inputs["metadata"] == {"name": "gp3", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}
        assert storage.inputs["provisioner"] == "ebs.csi.aws.com"
        assert storage.inputs["parameters"] == {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"}
        assert (storage.inputs["volumeBindingMode"], storage.inputs["allowVolumeExpansion"]) == ("WaitForFirstConsumer", True)
        assert driver.urn in storage.depends_on

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_block_storage_can_be_left_out_or_renamed(engine: Engine) -> pulumi.Output[Any]:
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks(block_storage={"enabled": False}, network_policy=False)), gpu_instance_types=["g4dn.xlarge"])
    other = EksCluster(
        "d",
        EksClusterArgs.model_validate(eks(block_storage={"storage_class": "ebs-gp3", "default_class": False, "encrypted": False})),
        gpu_instance_types=["g4dn.xlarge"],
    )

    def check(_: Any) -> None:
        assert "configurationValues" in engine.resource("d-vpc-cni").inputs
        assert "aws-ebs-csi-driver" not in [a.inputs["addonName"] for a in engine.of_type("aws:eks/addon:Addon") if a.name.startswith("c-")]
        (storage,) = engine.of_type("kubernetes:storage.k8s.io/v1:StorageClass")
        assert storage.name == "d-ebs-gp3-storage-class" and storage.inputs["metadata"] == {"name": "ebs-gp3"}
        assert storage.inputs["parameters"]["encrypted"] == "false"
        assert cluster.storage_class is None
        assert "configurationValues" not in engine.resource("c-vpc-cni").inputs  # network_policy: false

    return settled_tree(cluster, other).apply(check)


@pulumi.runtime.test
def test_kubeconfig_is_a_secret_exec_config(engine: Engine) -> pulumi.Output[Any]:
    cluster, _ = build()

    def check(kubeconfig: str) -> None:
        config = yaml.safe_load(kubeconfig)
        user = config["users"][0]["user"]["exec"]
        assert user["command"] == "aws"
        assert user["args"] == ["--region", "ap-northeast-2", "eks", "get-token", "--cluster-name", "c", "--output", "json"]
        assert config["clusters"][0]["cluster"]["server"] == "https://203.0.113.10"
        assert config["clusters"][0]["cluster"]["certificate-authority-data"]
        provider = engine.resource("c-k8s")
        assert provider.inputs["kubeconfig"]["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"

    return pulumi.Output.all(settled_tree(cluster), cluster.kubeconfig).apply(lambda v: check(v[1]))


class Offerings(RecordingMocks):
    """AWS as the seed met it: ap-northeast-2b offers none of the GPU types."""

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        assert args.token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings"
        offered = {"ap-northeast-2a", "ap-northeast-2c", "ap-northeast-2d"}
        filters = {f["name"]: f["values"] for f in args.args["filters"]}
        zones = [z for z in filters.get("location", sorted(offered | {"ap-northeast-2b"})) if z in offered]
        pairs = [(z, t) for z in zones for t in filters["instance-type"]]
        return {"locations": [z for z, _ in pairs], "instanceTypes": [t for _, t in pairs]}


@pytest.fixture
def offerings() -> Engine:
    mocks = Offerings()
    monitor = Engine(mocks)
    pulumi.runtime.set_mocks(mocks, project="gpu-platform", stack="test", preview=False, monitor=monitor)
    return monitor


def test_fails_when_a_zone_offers_no_gpu_instances(offerings: Engine) -> None:
    with pytest.raises(pulumi.InputPropertyError) as info:
        EksCluster(
            "c",
            EksClusterArgs.model_validate(eks(zones=["ap-northeast-2a", "ap-northeast-2b"])),
            gpu_instance_types=["g4dn.xlarge"],
        )
    assert info.value.property_path == "args.zones"
    assert info.value.reason == ("zone ap-northeast-2b does not offer g4dn.xlarge; zones that offer every GPU instance type: ap-northeast-2a")
    assert offerings.recorded == []  # refused before anything was registered


@pulumi.runtime.test
def test_zones_are_looked_up_when_not_given(offerings: Engine) -> pulumi.Output[Any]:
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks(zones=None, zone_count=2)), gpu_instance_types=["g4dn.xlarge"])
    assert cluster.zones == ["ap-northeast-2a", "ap-northeast-2c"]  # 2b offers none; two zones asked for
    return settled_tree(cluster).apply(
        lambda _: (
            sorted(s.inputs["availabilityZone"] for s in offerings.of_type("aws:ec2/subnet:Subnet"))
            == ["ap-northeast-2a", "ap-northeast-2a", "ap-northeast-2c", "ap-northeast-2c"]
            or pytest.fail("subnets not in the looked-up zones")
        )
    )


@pulumi.runtime.test
def test_the_cluster_resource_and_its_identifiers_are_outputs(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build()

    def check(values: list[Any]) -> None:
        arn, ca, issuer, security_group, public = values
        (eks_cluster,) = engine.of_type("aws:eks/cluster:Cluster")
        assert eks_cluster.name == "c-cluster"
        assert arn.startswith("arn:aws:eks:ap-northeast-2:") and arn.endswith(":cluster/c")
        assert ca and issuer.startswith("https://oidc.eks.ap-northeast-2.amazonaws.com/id/")
        assert security_group.startswith("sg-")
        public_subnets = sorted(s.name for s in engine.of_type("aws:ec2/subnet:Subnet") if "public" in s.name)
        assert sorted(p.removesuffix("-id") for p in public) == public_subnets

    outputs = pulumi.Output.all(
        cluster.cluster_arn,
        cluster.certificate_authority_data,
        cluster.oidc_issuer_url,
        cluster.cluster_security_group_id,
        cluster.public_subnet_ids,
    )
    return pulumi.Output.all(done(cluster, gpu, lambda: None), outputs).apply(lambda v: check(v[1]))
