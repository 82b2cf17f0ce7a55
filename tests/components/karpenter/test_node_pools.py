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
    AWS_ACCELERATOR_LABEL,
    CAPACITY_LABEL,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    KARPENTER_CAPACITY_LABEL,
    KARPENTER_DISCOVERY_TAG,
    KARPENTER_NODEPOOL_LABEL,
    ZONE_LABEL,
)
from gpu_platform.components.eks.plan import class_node_groups
from gpu_platform.components.karpenter.args import (
    ConsolidationPolicy,
    DisruptionBudget,
    KarpenterDisruption,
    KarpenterSettings,
    Provisioner,
)
from gpu_platform.components.karpenter.plan import node_overlays, plan_node_pools
from gpu_platform.components.karpenter.resources import INTERRUPTION_EVENTS, controller_policy, queue_policy
from gpu_platform.components.monitoring.dcgm_resources import dcgm_values
from tests.conftest import Engine, settled_tree
from tests.factories import eks, eks_node_groups, gpu_class

KARPENTER = {"provisioner": "karpenter"}


def karpenter_args(**overrides: Any) -> SpotFailoverEksNodeGroupsArgs:
    return SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(**{**KARPENTER, **overrides}))


# --- settings: defaults and validators ---------------------------------------------------


def test_the_cluster_autoscaler_stays_the_default_provisioner() -> None:
    assert SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups()).provisioner is Provisioner.CLUSTER_AUTOSCALER


def test_karpenter_defaults() -> None:
    settings = KarpenterSettings()
    assert (settings.chart_version, settings.namespace, settings.ami_version) == ("1.14.1", "kube-system", "latest")
    disruption = settings.disruption
    assert disruption.consolidation_policy is ConsolidationPolicy.WHEN_EMPTY
    assert (disruption.consolidate_after, disruption.expire_after) == ("10m", "720h")
    assert disruption.budgets == [DisruptionBudget(nodes="10%")]
    assert disruption.spec() == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m", "budgets": [{"nodes": "10%"}]}
    assert DisruptionBudget().spec() == {"nodes": "10%"}


@pytest.mark.parametrize(("given", "missing"), [({"schedule": "0 8 * * *"}, "duration"), ({"duration": "8h"}, "schedule")])
def test_fails_when_a_budget_has_a_schedule_without_a_duration(given: dict[str, str], missing: str) -> None:
    with pytest.raises(ValidationError) as info:
        DisruptionBudget(**given)
    error = info.value.errors()[0]
    assert error["loc"] == (missing,) and f"but {missing} is not; set both or neither" in error["msg"]


@pytest.mark.parametrize(
    ("model", "field", "value"),
    [
        (DisruptionBudget, "nodes", "110%"),
        (DisruptionBudget, "nodes", "ten"),
        (DisruptionBudget, "duration", "30s"),
        (DisruptionBudget, "reasons", ["Empty", "Empty"]),
        (KarpenterDisruption, "consolidate_after", "1.5h"),
        (KarpenterDisruption, "expire_after", "30d"),
        (KarpenterDisruption, "budgets", []),
        (KarpenterDisruption, "consolidation_policy", "Balanced"),
        (KarpenterSettings, "ami_version", "v1;latest"),
        (KarpenterSettings, "namespace", "Kube_System"),
    ],
)
def test_fails_when_a_karpenter_setting_is_out_of_range(model: type, field: str, value: Any) -> None:
    extra = {"duration": "1h"} if field == "duration" else {}
    extra |= {"schedule": "@daily"} if field == "duration" else {}
    with pytest.raises(ValidationError) as info:
        model(**{field: value, **{k: v for k, v in extra.items() if k != field}})
    assert info.value.errors()[0]["loc"][0] == field


def test_a_scheduled_budget_renders_schedule_duration_and_reasons() -> None:
    budget = DisruptionBudget(nodes="0", schedule="0 8 * * mon-fri", duration="10h", reasons=["Empty"])
    assert budget.spec() == {"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "10h", "reasons": ["Empty"]}


# --- refusals: the other provisioner's settings -------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "loc", "start"),
    [
        ({"autoscaler": {"expanders": ["least-waste"]}}, ("autoscaler", "expanders"), "autoscaler.expanders is a cluster autoscaler setting"),
        (
            {"autoscaler": {"scale_down_unneeded_time": "1m"}},
            ("autoscaler", "scale_down_unneeded_time"),
            "autoscaler.scale_down_unneeded_time is a cluster autoscaler setting",
        ),
        (
            {"priority_expander": {"tiers": [{"priority": 10, "patterns": [".*"]}]}},
            ("priority_expander",),
            "priority_expander ranks the cluster autoscaler's node groups",
        ),
        (
            {"classes": [gpu_class(ami_type="AL2_x86_64_GPU")]},
            ("classes", 0, "ami_type"),
            "class small: Karpenter launches AL2023_x86_64_NVIDIA or BOTTLEROCKET_x86_64_NVIDIA",
        ),
    ],
)
def test_fails_when_karpenter_meets_a_cluster_autoscaler_setting(overrides: dict[str, Any], loc: tuple[Any, ...], start: str) -> None:
    with pytest.raises(ValidationError) as info:
        karpenter_args(**overrides)
    (error,) = info.value.errors()
    assert error["loc"] == loc and error["msg"].startswith(start)
    if loc[0] != "classes":
        assert error["msg"].endswith("remove it (Karpenter does not read it), or set provisioner: cluster_autoscaler")


def test_fails_when_karpenter_settings_are_given_to_the_cluster_autoscaler() -> None:
    with pytest.raises(ValidationError) as info:
        SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(karpenter={"ami_version": "latest"}))
    (error,) = info.value.errors()
    assert error["loc"] == ("karpenter",) and "set provisioner: karpenter, or remove them" in error["msg"]


def test_every_mixed_setting_is_its_own_line() -> None:
    with pytest.raises(ValidationError) as info:
        karpenter_args(autoscaler={"expanders": ["least-waste"], "max_node_provision_time": "3m"})
    assert [e["loc"] for e in info.value.errors()] == [("autoscaler", "expanders"), ("autoscaler", "max_node_provision_time")]


# --- the plan: NodePools from the typed classes ------------------------------------------------


def test_a_node_pool_per_node_group_of_the_plan_spot_weighing_more() -> None:
    args = karpenter_args(classes=[gpu_class(max_nodes=6, fallback_max_nodes=2), gpu_class(name="large", instance_types=["p3.8xlarge"], max_nodes=2)])
    pools = {p.name: p for p in plan_node_pools(args)}
    groups = {g.name: g for c in args.classes for g in class_node_groups(c)}
    assert set(pools) == set(groups)
    for name, pool in pools.items():
        assert (pool.capacity, pool.max_nodes) == (groups[name].capacity, groups[name].max_nodes)
    assert pools["small-spot"].weight > pools["small-on-demand"].weight
    assert pools["large-spot"].weight > pools["large-on-demand"].weight
    assert pools["small-on-demand"].weight > pools["large-spot"].weight  # small classes first, as the derived expander
    # Limits: the tier's maximum times the class's shape (p3.2xlarge: 8 vCPU, 61 GiB, 1 V100).
    assert pools["small-spot"].limits == {"cpu": "48", "memory": f"{62464 * 6}Mi", GPU_RESOURCE: "6"}
    assert pools["small-on-demand"].limits == {"cpu": "16", "memory": f"{62464 * 2}Mi", GPU_RESOURCE: "2"}


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
                assert spec["template"]["metadata"]["labels"] == cls.node_labels(group.capacity)
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


def test_a_shared_class_is_accepted_with_karpenter_and_overlaid_as_gpus_times_clients() -> None:
    args = karpenter_args(classes=shared_classes())
    (overlay,) = node_overlays(plan_node_pools(args))
    assert overlay == {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "small"},
        "spec": {
            "requirements": [
                {"key": KARPENTER_NODEPOOL_LABEL, "operator": "In", "values": ["small-on-demand", "small-spot"]},
                {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": ["p3.2xlarge"]},
            ],
            "capacity": {GPU_RESOURCE: "4"},  # 1 V100 x 4 clients
        },
    }
    assert node_overlays(plan_node_pools(karpenter_args())) == []  # no sharing, no overlay (and the gate stays off)


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


def test_dcgm_exporter_lands_on_karpenter_gpu_nodes() -> None:
    """dcgm-exporter's eks node selection requires the accelerator label; every GPU NodePool puts it on its nodes."""
    from gpu_platform.components.monitoring.dcgm_args import DcgmExporterArgs

    values = dcgm_values(DcgmExporterArgs(node_selection="eks"), "metrics")
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (expression,) = terms[0]["matchExpressions"]
    assert expression["key"] == AWS_ACCELERATOR_LABEL and expression["operator"] == "Exists"
    for pool in plan_node_pools(karpenter_args()):
        assert pool.labels[AWS_ACCELERATOR_LABEL] and pool.labels[CAPACITY_LABEL] == pool.capacity.value


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
