"""EksCluster and SpotFailoverEksNodeGroups under the recording mock engine: every node group,
ASG tag, IAM statement and Kubernetes object they declare, read back as the engine sees it."""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

import kubernetes_validate
import pulumi
import pytest
import yaml

from gpu_platform.components import EksCluster, EksClusterArgs, SpotFailoverEksNodeGroups, SpotFailoverEksNodeGroupsArgs
from gpu_platform.components.eks.node_group_resources import MUTATING_ACTIONS, READ_ACTIONS
from gpu_platform.infra.preview.engine import RecordingMocks
from tests.conftest import Engine, settled_tree
from tests.factories import eks, eks_node_groups, gpu_class

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"


def build(
    cluster_overrides: dict[str, Any] | None = None, service_monitor_crd: pulumi.Resource | None = None, **groups: Any
) -> tuple[EksCluster, SpotFailoverEksNodeGroups]:
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(**groups))
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks(**(cluster_overrides or {}))), gpu_instance_types=args.instance_types())
    gpu = SpotFailoverEksNodeGroups(
        "c-gpu", args, opts=pulumi.ResourceOptions(providers=[cluster.provider]), cluster=cluster.ref, service_monitor_crd=service_monitor_crd
    )
    return cluster, gpu


def done(cluster: EksCluster, gpu: SpotFailoverEksNodeGroups, check: Any) -> pulumi.Output[Any]:
    """Settle every registration (ASG tags wait on node group outputs) before checking."""
    return pulumi.Output.all(settled_tree(cluster, gpu), cluster.kubeconfig).apply(lambda _: check())


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


@pulumi.runtime.test
def test_two_node_groups_per_class_with_generated_labels(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build()

    def check() -> None:
        groups = {g.name: g.inputs for g in engine.of_type(NODE_GROUP) if g.name != "c-system"}
        assert sorted(groups) == ["c-gpu-large-on-demand", "c-gpu-large-spot", "c-gpu-small-on-demand", "c-gpu-small-spot"]
        for name, inputs in groups.items():
            spot = name.endswith("-spot")
            assert inputs["capacityType"] == ("SPOT" if spot else "ON_DEMAND")
            # The seed's on-demand groups carried spot labels: each group's labels are its own.
            assert inputs["labels"]["gpu-platform.io/capacity"] == ("spot" if spot else "on-demand")
            assert inputs["labels"]["k8s.amazonaws.com/accelerator"] == "nvidia-tesla-v100"
            assert inputs["taints"] == [{"effect": "NO_SCHEDULE", "key": "nvidia.com/gpu", "value": "present"}]
            assert inputs["amiType"] == "AL2023_x86_64_NVIDIA"
            assert inputs["scalingConfig"]["minSize"] == 0 and inputs["scalingConfig"]["desiredSize"] == 0
            assert inputs["subnetIds"] == ["c-private-a-id", "c-private-c-id"]
        assert groups["c-gpu-large-spot"]["instanceTypes"] == ["p3.8xlarge"]
        for g in engine.of_type(NODE_GROUP):
            assert g.ignore_changes == ["scalingConfig.desiredSize"]

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_every_asg_is_tagged_to_scale_from_zero(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build(
        classes=[gpu_class(taints=[{"key": "gpu-platform.io/workload", "value": "training"}], labels={"gpu-platform.io/workload": "training"})]
    )

    def check() -> None:
        tags: dict[str, dict[str, str]] = {}
        for t in engine.of_type(ASG_TAG):
            tags.setdefault(t.inputs["autoscalingGroupName"], {})[t.inputs["tag"]["key"]] = t.inputs["tag"]["value"]
            assert t.inputs["tag"]["propagateAtLaunch"] is False
        # Tagged on the ASG EKS made for each node group: eks-<nodegroup>-<uuid>.
        uuid = r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}"
        assert sorted(re.sub(uuid, "<uuid>", asg) for asg in tags) == ["eks-small-on-demand-<uuid>", "eks-small-spot-<uuid>"]
        spot = next(v for k, v in tags.items() if "small-spot" in k)
        template = "k8s.io/cluster-autoscaler/node-template"
        assert spot == {
            "k8s.io/cluster-autoscaler/enabled": "true",
            "k8s.io/cluster-autoscaler/c": "owned",
            f"{template}/label/gpu-platform.io/pool-role": "gpu",
            f"{template}/label/gpu-platform.io/gpu-class": "small",
            f"{template}/label/gpu-platform.io/capacity": "spot",
            f"{template}/label/k8s.amazonaws.com/accelerator": "nvidia-tesla-v100",
            f"{template}/label/gpu-platform.io/workload": "training",
            f"{template}/label/eks.amazonaws.com/capacityType": "SPOT",
            f"{template}/label/eks.amazonaws.com/nodegroup": "small-spot",
            f"{template}/taint/nvidia.com/gpu": "present:NoSchedule",
            f"{template}/taint/gpu-platform.io/workload": "training:NoSchedule",
            f"{template}/resources/nvidia.com/gpu": "1",
            f"{template}/resources/ephemeral-storage": "100Gi",
        }
        od = next(v for k, v in tags.items() if "small-on-demand" in k)
        assert od[f"{template}/label/eks.amazonaws.com/capacityType"] == "ON_DEMAND"
        assert od[f"{template}/label/gpu-platform.io/capacity"] == "on-demand"
        # Every taint carries a value, as the autoscaler's template parser needs.
        assert all(re.fullmatch(r"[^:=]+:(NoSchedule|PreferNoSchedule|NoExecute)", v) for k, v in spot.items() if "/taint/" in k)

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_autoscaler_iam_is_least_privilege_irsa(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build()

    def check() -> None:
        policy = json.loads(engine.resource("c-gpu-autoscaler-role-policy").inputs["policy"])
        actions = [a for s in policy["Statement"] for a in s["Action"]]
        assert all("*" not in a for a in actions), actions
        assert set(actions) == set(READ_ACTIONS) | set(MUTATING_ACTIONS)
        assert "autoscaling:DescribeScalingActivities" in actions  # early abort on failed spot activities
        for statement in policy["Statement"]:
            if set(statement["Action"]) & set(MUTATING_ACTIONS):
                assert set(statement["Action"]) <= set(MUTATING_ACTIONS)
                assert statement["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/c": "owned"}}
            else:
                assert "Condition" not in statement and all(a.split(":")[1].startswith(("Describe", "Get")) for a in statement["Action"])
        trust = json.loads(engine.resource("c-gpu-autoscaler-role").inputs["assumeRolePolicy"])
        (statement,) = trust["Statement"]
        assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
        assert statement["Principal"]["Federated"].endswith(":oidc-provider/c-oidc")
        conditions = statement["Condition"]["StringEquals"]
        issuer = "oidc.eks.ap-northeast-2.amazonaws.com/id/0FFL1NE0000000000000000000000000"
        assert conditions == {f"{issuer}:sub": "system:serviceaccount:kube-system:cluster-autoscaler", f"{issuer}:aud": "sts.amazonaws.com"}

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_autoscaler_release_configmap_and_device_plugin(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build(autoscaler={"max_node_provision_time": "7m"})

    def check() -> None:
        (release,) = engine.of_type("kubernetes:helm.sh/v3:Release")
        inputs = release.inputs
        assert (inputs["chart"], inputs["version"], inputs["namespace"]) == ("cluster-autoscaler", "9.59.0", "kube-system")
        assert inputs["repositoryOpts"]["repo"] == "https://kubernetes.github.io/autoscaler"
        values = inputs["values"]
        assert values["autoDiscovery"]["clusterName"] == "c" and values["awsRegion"] == "ap-northeast-2"
        assert values["rbac"]["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"].endswith(":role/c-gpu-autoscaler-role")
        args = values["extraArgs"]
        assert args["expander"] == "priority,least-waste" and args["max-node-provision-time"] == "7m"
        configmap = engine.resource("c-gpu-priority-expander")
        assert configmap.inputs["metadata"] == {
            "labels": {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "gpu-platform"},
            "name": "cluster-autoscaler-priority-expander",
            "namespace": "kube-system",
        }
        assert configmap.urn in release.depends_on  # present before the autoscaler starts
        assert list(yaml.safe_load(configmap.inputs["data"]["priorities"])) == [50, 40, 30, 20, 1]
        plugin = engine.resource("c-gpu-device-plugin").inputs
        terms = plugin["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == ["large-on-demand", "large-spot", "small-on-demand", "small-spot"]
        assert plugin["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_autoscaler_ships_its_service_monitor_after_the_crd(engine: Engine) -> pulumi.Output[Any]:
    crd = pulumi.CustomResource("kubernetes:helm.sh/v3:Release", "monitoring")  # what installs the ServiceMonitor CRD
    cluster, gpu = build(service_monitor_crd=crd)

    def check() -> None:
        release = engine.resource("c-gpu-autoscaler")
        assert release.inputs["values"]["serviceMonitor"] == {
            "enabled": True,
            "namespace": "kube-system",
            "interval": "30s",
            "selector": {"app.kubernetes.io/part-of": "gpu-platform"},
        }
        assert engine.resource("monitoring").urn in release.depends_on

    return pulumi.Output.all(done(cluster, gpu, check), crd.urn)


@pulumi.runtime.test
def test_autoscaler_ships_no_service_monitor_without_monitoring(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build()

    def check() -> None:
        assert engine.resource("c-gpu-autoscaler").inputs["values"]["serviceMonitor"]["enabled"] is False

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_bottlerocket_groups_get_no_device_plugin(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build(classes=[gpu_class(ami_type="BOTTLEROCKET_x86_64_NVIDIA")])

    def check() -> None:
        assert "c-gpu-device-plugin" not in engine.names()
        assert {g.inputs["amiType"] for g in engine.of_type(NODE_GROUP) if g.name != "c-system"} == {"BOTTLEROCKET_x86_64_NVIDIA"}

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_no_priority_configmap_without_the_priority_expander(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build(autoscaler={"expanders": ["least-waste"]})

    def check() -> None:
        assert gpu.priority_configmap is None
        assert "c-gpu-priority-expander" not in engine.names()

    return done(cluster, gpu, check)


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
def test_node_groups_refuse_an_autoscaler_of_another_minor_before_registering(engine: Engine) -> pulumi.Output[Any]:
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks(version="1.33")), gpu_instance_types=["p3.2xlarge", "p3.8xlarge"])
    with pytest.raises(pulumi.InputPropertyError) as error:
        SpotFailoverEksNodeGroups("c-gpu", SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups()), cluster=cluster.ref)
    assert error.value.property_path == "args.autoscaler.image"
    assert error.value.reason.startswith("no autoscaler release is pinned for Kubernetes 1.33")

    def check(_: Any) -> None:
        assert engine.recorded and not [r for r in engine.recorded if r.name.startswith("c-gpu")]

    return settled_tree(cluster).apply(check)


@pulumi.runtime.test
def test_node_groups_refuse_amazon_linux_2_past_1_32_before_registering(engine: Engine) -> pulumi.Output[Any]:
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks()), gpu_instance_types=["p3.2xlarge", "p3.8xlarge"])
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(classes=[gpu_class(ami_type="AL2_x86_64_GPU")]))
    with pytest.raises(pulumi.InputPropertyError) as error:
        SpotFailoverEksNodeGroups("c-gpu", args, cluster=cluster.ref)
    assert error.value.property_path == "args.classes[0].ami_type"
    assert error.value.reason.startswith("class small: EKS publishes no Amazon Linux 2 AMIs for Kubernetes 1.34")

    def check(_: Any) -> None:
        assert engine.recorded and not [r for r in engine.recorded if r.name.startswith("c-gpu")]

    return settled_tree(cluster).apply(check)


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
