"""Karpenter as the EKS provisioner: its settings, the NodePool plan from the typed classes, the
component's resources under mocks, and the refusals of a stack mixing the provisioners' settings."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest
from pydantic import ValidationError

from gpu_platform.components import EksCluster, EksClusterArgs, KarpenterNodePools, KarpenterNodePoolsArgs, SpotFailoverEksNodeGroupsArgs
from gpu_platform.components.core.labels import (
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    KARPENTER_CAPACITY_LABEL,
    KARPENTER_DISCOVERY_TAG,
    KARPENTER_NODEPOOL_LABEL,
    ZONE_LABEL,
)
from gpu_platform.components.eks.plan import class_node_groups
from gpu_platform.components.karpenter.args import (
    Provisioner,
)
from gpu_platform.components.karpenter.plan import node_overlays
from gpu_platform.components.karpenter.resources import INTERRUPTION_EVENTS
from tests.conftest import Engine, settled_tree
from tests.factories import eks, eks_node_groups, gpu_class

KARPENTER = {"provisioner": "karpenter"}


def karpenter_args(**overrides: Any) -> SpotFailoverEksNodeGroupsArgs:
    return SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(**{**KARPENTER, **overrides}))


# --- settings: defaults and validators ---------------------------------------------------


# --- refusals: the other provisioner's settings -------------------------------------------


# --- the plan: NodePools from the typed classes ------------------------------------------------


# --- the component under mocks --------------------------------------------------------------


def build(**groups: Any) -> tuple[EksCluster, KarpenterNodePools, SpotFailoverEksNodeGroupsArgs]:
    args = karpenter_args(**groups)
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks()), gpu_instance_types=args.instance_types(), karpenter_discovery=True)
    pools = KarpenterNodePools("c-gpu", KarpenterNodePoolsArgs.of(args), cluster=cluster)
    return cluster, pools, args


def done(cluster: EksCluster, pools: KarpenterNodePools, check: Any) -> pulumi.Output[Any]:
    return pulumi.Output.all(settled_tree(cluster, pools), cluster.kubeconfig).apply(lambda _: check())


@pulumi.runtime.test
def test_node_pools_carry_the_typed_limits_taints_labels_zones_and_capacity(engine: Engine) -> pulumi.Output[Any]:
    cluster, pools, args = build()

    def check() -> None:
        made = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in engine.of_type("kubernetes:karpenter.sh/v1:NodePool")}
        assert set(made) == {"small-spot", "small-on-demand", "large-spot", "large-on-demand"}
        for cls in args.classes:
            for group in class_node_groups(cls):
                spec = made[group.name]
                requirements = {r["key"]: r["values"] for r in spec["template"]["spec"]["requirements"]}
                assert requirements[KARPENTER_CAPACITY_LABEL] == [group.capacity.value]
                assert requirements[INSTANCE_TYPE_LABEL] == cls.instance_types
                assert requirements[ZONE_LABEL] == ["ap-northeast-2a", "ap-northeast-2c"]
                assert spec["template"]["metadata"]["labels"] == cls.node_labels(group.capacity_label)
                assert spec["template"]["spec"]["taints"] == [{"key": t.key, "value": t.value, "effect": t.effect.value} for t in cls.node_taints()]
                shape = cls.instance_shape
                assert spec["limits"][GPU_RESOURCE] == str(shape.gpu_count * group.max_nodes)
                assert spec["limits"]["cpu"] == str(shape.vcpus * group.max_nodes)
                assert spec["template"]["spec"]["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": cls.name}
                assert spec["disruption"] == args.karpenter.disruption.spec()
        classes = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in engine.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")}
        assert classes["small"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
        assert classes["small"]["subnetSelectorTerms"] == [{"tags": {KARPENTER_DISCOVERY_TAG: "c"}}]
        assert classes["small"]["securityGroupSelectorTerms"] == [{"tags": {KARPENTER_DISCOVERY_TAG: "c"}}]
        assert classes["small"]["blockDeviceMappings"] == [
            {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "100Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}
        ]
        # Discovery tags on the private subnets (not the public ones) and the cluster security group.
        for subnet in engine.of_type("aws:ec2/subnet:Subnet"):
            assert (subnet.inputs["tags"].get(KARPENTER_DISCOVERY_TAG) == "c") == ("private" in subnet.name)
        (sg_tag,) = engine.of_type("aws:ec2/tag:Tag")
        assert (sg_tag.inputs["key"], sg_tag.inputs["value"]) == (KARPENTER_DISCOVERY_TAG, "c")
        # The classes' shapes, in the zones the NodePools launch in (the EksCluster's) and its region.
        zones = ("ap-northeast-2a", "ap-northeast-2c")
        assert pools.pool_shapes()[1:] == [s.in_zones(zones, 2, "ap-northeast-2") for s in args.pool_shapes()]
        assert all(s.zone_names() == zones for s in pools.pool_shapes())

    return done(cluster, pools, check)


@pulumi.runtime.test
def test_controller_names_the_cluster_and_the_queue_and_runs_on_the_system_group(engine: Engine) -> pulumi.Output[Any]:
    cluster, pools, _ = build()

    def check() -> None:
        releases = {r.name: r.inputs for r in engine.of_type("kubernetes:helm.sh/v3:Release")}
        controller, crds = releases["c-gpu-karpenter"], releases["c-gpu-karpenter-crd"]
        # OCI charts by full reference, no repositoryOpts: Helm has no index to look a name up in an OCI registry.
        assert (controller["chart"], controller["version"], controller["skipCrds"]) == ("oci://public.ecr.aws/karpenter/karpenter", "1.14.1", True)
        assert (crds["chart"], crds["version"]) == ("oci://public.ecr.aws/karpenter/karpenter-crd", "1.14.1")
        assert "repositoryOpts" not in controller and "repositoryOpts" not in crds
        (queue,) = engine.of_type("aws:sqs/queue:Queue")
        assert controller["values"]["settings"] == {"clusterName": "c", "interruptionQueue": queue.inputs["name"]}
        assert controller["values"]["nodeSelector"]["eks.amazonaws.com/nodegroup"] == "system"
        role = next(r for r in engine.of_type("aws:iam/role:Role") if r.name == "c-gpu-controller-role")
        trust = json.loads(role.inputs["assumeRolePolicy"])
        assert list(trust["Statement"][0]["Condition"]["StringEquals"].values())[0] == "system:serviceaccount:kube-system:karpenter"
        (entry,) = engine.of_type("aws:eks/accessEntry:AccessEntry")
        assert entry.inputs["type"] == "EC2_LINUX"
        rules = {
            r.name.removeprefix("c-gpu-").removesuffix("-rule"): json.loads(r.inputs["eventPattern"])
            for r in engine.of_type("aws:cloudwatch/eventRule:EventRule")
        }
        assert {k: (v["source"][0], v["detail-type"][0]) for k, v in rules.items()} == INTERRUPTION_EVENTS
        (daemonset,) = engine.of_type("kubernetes:apps/v1:DaemonSet")
        term = daemonset.inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][
            0
        ]
        assert term["matchExpressions"][0]["key"] == KARPENTER_NODEPOOL_LABEL
        assert sorted(term["matchExpressions"][0]["values"]) == sorted(pools.node_pools)

    return done(cluster, pools, check)


SHARED = {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}


def shared_classes() -> list[dict[str, Any]]:
    """The seed's classes with small (p3.2xlarge, 1 V100) time-sliced four ways and large left whole."""
    return [gpu_class(gpu_sharing=SHARED), gpu_class(name="large", instance_types=["p3.8xlarge"], max_nodes=2)]


@pulumi.runtime.test
def test_a_shared_class_gets_its_overlay_the_gate_the_sharing_device_plugin_and_limits_in_shared_gpus(engine: Engine) -> pulumi.Output[Any]:
    cluster, pools, args = build(classes=shared_classes())

    def check() -> None:
        (overlay,) = engine.of_type("kubernetes:karpenter.sh/v1alpha1:NodeOverlay")
        assert overlay.name == "c-gpu-small-node-overlay" and list(pools.node_overlays) == ["small"]
        assert overlay.inputs["spec"] == node_overlays(pools.plan)[0]["spec"]
        assert {d.rsplit("::", 1)[-1] for d in overlay.depends_on} >= {"c-gpu-karpenter-crd", "c-gpu-karpenter"}  # CRD and gate first
        releases = {r.name: r.inputs for r in engine.of_type("kubernetes:helm.sh/v3:Release")}
        assert releases["c-gpu-karpenter"]["values"]["settings"]["featureGates"] == {"nodeOverlay": True}
        sharing = releases["c-gpu-device-plugin-sharing"]
        assert (sharing["chart"], sharing["version"]) == ("nvidia-device-plugin", "0.20.0")
        assert list(sharing["values"]["config"]["map"]) == ["small"]
        term = sharing["values"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
        assert term["matchExpressions"] == [{"key": KARPENTER_NODEPOOL_LABEL, "operator": "In", "values": ["small-on-demand", "small-spot"]}]
        # The plain DaemonSet serves the unshared class only (one device plugin per node).
        (daemonset,) = engine.of_type("kubernetes:apps/v1:DaemonSet")
        plain = daemonset.inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][
            0
        ]
        assert sorted(plain["matchExpressions"][0]["values"]) == ["large-on-demand", "large-spot"]
        made = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in engine.of_type("kubernetes:karpenter.sh/v1:NodePool")}
        # The shared class's nodes select its device-plugin config; its limits count shared GPUs, as the overlay does.
        assert made["small-spot"]["template"]["metadata"]["labels"]["nvidia.com/device-plugin.config"] == "small"
        assert made["small-spot"]["limits"][GPU_RESOURCE] == str(1 * 4 * 4)  # 4 nodes x 1 GPU x 4 clients
        assert made["large-spot"]["limits"][GPU_RESOURCE] == str(2 * 4)  # 2 nodes x 4 GPUs, unshared
        assert "nvidia.com/device-plugin.config" not in made["large-spot"]["template"]["metadata"]["labels"]

    return done(cluster, pools, check)


def test_fails_when_cluster_is_not_an_eks_cluster() -> None:
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups())
    with pytest.raises(pulumi.InputPropertyError) as info:
        KarpenterNodePools("x", args, cluster=object())  # type: ignore[arg-type]
    assert "cluster: expected an EksCluster" in str(info.value)


def test_karpenter_node_pools_args_default_to_karpenter_and_keep_what_was_set() -> None:
    assert KarpenterNodePoolsArgs.model_validate(eks_node_groups()).provisioner is Provisioner.KARPENTER
    given = karpenter_args(karpenter={"ami_version": "v1.50.0"})
    args = KarpenterNodePoolsArgs.of(given)
    assert args.karpenter.ami_version == "v1.50.0" and args.classes == given.classes
    with pytest.raises(ValidationError):  # the refusals hold for the component's own Args too
        KarpenterNodePoolsArgs.model_validate(eks_node_groups(priority_expander={"tiers": [{"priority": 1, "patterns": [".*"]}]}))
