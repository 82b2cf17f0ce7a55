"""SpotFailoverEksNodeGroups under the recording mock engine: every node group, ASG tag, IAM statement
and Kubernetes object it declares, read back as the engine sees it."""

from __future__ import annotations

import json
import re
from typing import Any

import pulumi
import pytest
import yaml

from gpu_platform.components import EksCluster, EksClusterArgs, SpotFailoverEksNodeGroups, SpotFailoverEksNodeGroupsArgs
from gpu_platform.components.eks.node_group_resources import MUTATING_ACTIONS, READ_ACTIONS
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
