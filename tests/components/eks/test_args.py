"""EKS stack config: every validator refuses a bad value, naming the key and what is allowed,
and the priority expander's tiers order the seed's groups as the autoscaler will read them.

The configs go through StackConfig, as a stack file's would, and are checked on the line
the user sees: ``gpu-platform:<key path>: <message> (got <value>)``.
"""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest
from pydantic import ValidationError

from gpu_platform.components import (
    EbsStorageArgs,
    EksClusterArgs,
    EksEndpointAccess,
    SystemNodeGroupArgs,
)
from gpu_platform.infra.stack.errors import ConfigError, format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from gpu_platform.infra.stack.read import config_for_engine, load_stack_config
from tests.factories import eks, eks_node_groups, eks_stack, gpu_class, prod_eks_raw

SEED_TIERS = [
    {"priority": 50, "patterns": ["^eks-small-spot-"]},
    {"priority": 40, "patterns": ["^eks-small-on-demand-"]},
    {"priority": 30, "patterns": ["^eks-large-spot-"]},
    {"priority": 20, "patterns": ["^eks-large-on-demand-"]},
]


def refusal(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate(config)
    return format_validation_error(info.value, StackConfig, "gpu-platform")


def with_change(path: str, value: Any) -> dict[str, Any]:
    """The valid EKS stack with one value changed; ``path`` is dotted, list indexes as numbers."""
    config = eks_stack()
    parts = path.split(".")
    node: Any = config
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    last = parts[-1]
    if last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return config


BAD = [
    # (changed key, value, reported key, fragment of the message)
    ("eks.version", "1.3", "eks.version", "quote it"),
    ("eks.version", "2.0", "eks.version", "from 1.28 to 1.39"),
    ("eks.zones", ["ap-northeast-2a"], "eks.zones", "at least two zones"),
    ("eks.zones", ["ap-northeast-2a", "ap-northeast-2a"], "eks.zones", "lists a zone twice"),
    ("eks.zones", ["apne2-az1", "apne2-az3"], "eks.zones", "is not an availability zone"),
    ("eks.addons", [{"name": "vpc-cni"}, {"name": "aws-ebs-csi-driver"}], "eks.addons[1].name", "aws-ebs-csi-driver comes with block_storage"),
    ("eks.block_storage.storage_class", "GP3", "eks.block_storage.storage_class", "is not a DNS subdomain"),
    (
        "eks_node_groups.autoscaler.image",
        "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0",
        "eks_node_groups.autoscaler.image",
        "image registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0 is the autoscaler of Kubernetes 1.35, the cluster runs 1.34: use the release of the cluster's minor version",
    ),
    (
        "eks_node_groups.classes.0.ami_type",
        "AL2_x86_64_GPU",
        "eks_node_groups.classes[0].ami_type",
        "EKS publishes no Amazon Linux 2 AMIs for Kubernetes 1.34 (the last is 1.32)",
    ),
    (
        "monitoring.prometheus.storage_class",
        "standard-rwo",
        "monitoring.prometheus.storage_class",
        "no StorageClass standard-rwo in this stack: the EKS cluster provides gp3 (eks.block_storage.storage_class) and gp2",
    ),
    (
        "eks.block_storage",
        {"default_class": False},
        "monitoring.prometheus.storage_class",
        "storage_class is required: eks.block_storage.default_class is false",
    ),
    ("monitoring.prometheus.namespace", "kube-monitoring", "monitoring.prometheus.namespace", "namespace kube-monitoring belongs to Kubernetes"),
    ("eks.zones", [f"us-east-1{z}" for z in "abcdefg"], "eks.zones", "at most 6 zones, as zone_count (got 7)"),
    ("eks.zones", ["ap-northeast-2a", "us-west-2b"], "eks.zones[1]", "is not in region ap-northeast-2"),
    ("eks.region", "Seoul", "eks.region", "is not an AWS region"),
    ("eks.cluster_name", "-rapids", "eks.cluster_name", "is not a valid EKS cluster name"),
    ("eks.vpc_cidr", "10.0.0.0/8", "eks.vpc_cidr", "must be a /16 to /20"),
    ("eks.vpc_cidr", "10.0.0.1/16", "eks.vpc_cidr", "is not an IPv4 network"),
    ("eks.zone_count", 1, "eks.zone_count", "greater than or equal to 2"),
    ("eks.nat_gateways", "none", "eks.nat_gateways", "'single' or 'per_zone'"),
    ("eks.endpoint", {"public": False, "private": False}, "eks.endpoint.public", "nothing could reach the API"),
    ("eks.endpoint", {"public": False, "public_access_cidrs": ["10.0.0.0/8"]}, "eks.endpoint.public_access_cidrs", "public endpoint only"),
    ("eks.endpoint", {"public_access_cidrs": ["10.0.0.0/33"]}, "eks.endpoint.public_access_cidrs", "not an IPv4 network"),
    ("eks.system_node_group", {"instance_types": ["g4dn.xlarge"]}, "eks.system_node_group.instance_types", "not a known CPU instance type"),
    ("eks.system_node_group", {"instance_types": ["m6i.large", "m6i.xlarge"]}, "eks.system_node_group.instance_types", "share one shape"),
    ("eks.system_node_group", {"min_nodes": 5, "max_nodes": 3}, "eks.system_node_group.min_nodes", "above max_nodes 3"),
    ("eks.addons", [{"name": "coredns"}, {"name": "coredns"}], "eks.addons", "lists an add-on twice"),
    ("eks.log_types", ["everything"], "eks.log_types[0]", "'api'"),
    ("eks.version", "1.33", "eks.version", "does not match kubernetes_version 1.34"),
    ("eks_node_groups.classes.0.instance_types", ["g4dn.xlarge", "g4dn.12xlarge"], "eks_node_groups.classes[0].instance_types", "must share one shape"),
    ("eks_node_groups.classes.0.instance_types", ["m5.large"], "eks_node_groups.classes[0].instance_types", "not a known GPU instance type"),
    ("eks_node_groups.classes.0.instance_types", ["p9.huge"], "eks_node_groups.classes[0].instance_types", "not a known GPU instance type"),
    ("eks_node_groups.classes.0.instance_types", ["p3.2xlarge", "p3.2xlarge"], "eks_node_groups.classes[0].instance_types", "lists a type twice"),
    ("eks_node_groups.classes.0.name", "Small", "eks_node_groups.classes[0].name", "not a valid class name"),
    ("eks_node_groups.classes.1.name", "small", "eks_node_groups.classes", "lists a name twice"),
    ("eks_node_groups.classes.0.min_nodes", 9, "eks_node_groups.classes[0].min_nodes", "above max_nodes 4"),
    ("eks_node_groups.classes.0.max_nodes", 0, "eks_node_groups.classes[0].max_nodes", "greater than or equal to 1"),
    (
        "eks_node_groups.classes.0",
        gpu_class(capacity="spot", fallback_max_nodes=2),
        "eks_node_groups.classes[0].fallback_max_nodes",
        "spot_then_on_demand or a capacity_ladder of more than one rung only (got capacity spot)",
    ),
    ("eks_node_groups.classes.0.taints", [{"key": "nvidia.com/gpu", "value": "present"}], "eks_node_groups.classes[0].taints", "managed by the component"),
    ("eks_node_groups.classes.0.taints", [{"key": "dedicated", "value": ""}], "eks_node_groups.classes[0].taints[0].value", "at least 1 character"),
    ("eks_node_groups.classes.0.ami_type", "AL2_x86_64", "eks_node_groups.classes[0].ami_type", "AL2023_x86_64_NVIDIA"),
    (
        "eks_node_groups.classes.0.labels",
        {"eks.amazonaws.com/capacityType": "SPOT"},
        "eks_node_groups.classes[0].labels.eks.amazonaws.com/capacityType",
        "which the kubelet, the cloud or Karpenter manages",
    ),
    ("eks_node_groups.autoscaler", {"max_node_provision_time": "7 minutes"}, "eks_node_groups.autoscaler.max_node_provision_time", "not a Go duration"),
    ("eks_node_groups.autoscaler", {"node_group_backoff_reset_timeout": "1d"}, "eks_node_groups.autoscaler.node_group_backoff_reset_timeout", "no d"),
    ("eks_node_groups.autoscaler", {"expanders": ["least-waste", "priority"]}, "eks_node_groups.autoscaler.expanders", "priority must come first"),
    ("eks_node_groups.autoscaler", {"expanders": ["priority", "priority"]}, "eks_node_groups.autoscaler.expanders", "lists an expander twice"),
    ("eks_node_groups.autoscaler", {"expanders": ["price"]}, "eks_node_groups.autoscaler.expanders[0]", "'priority'"),
    ("eks_node_groups.autoscaler", {"chart_version": "9.x"}, "eks_node_groups.autoscaler.chart_version", "one exact release"),
    ("eks_node_groups.device_plugin_image", "nvcr.io/nvidia/k8s-device-plugin", "eks_node_groups.device_plugin_image", "must carry a version tag"),
    (
        "eks_node_groups.priority_expander",
        {"tiers": [*SEED_TIERS, {"priority": 50, "patterns": [".*"]}]},
        "eks_node_groups.priority_expander.tiers",
        "priority 50 is given to two tiers",
    ),
    (
        "eks_node_groups.priority_expander",
        {"tiers": [{"priority": 5, "patterns": ["eks-(small"]}]},
        "eks_node_groups.priority_expander.tiers[0].patterns",
        "pattern 'eks-(small' is not RE2, which the autoscaler uses: missing ): eks-(small",
    ),
    (
        "eks_node_groups.priority_expander",
        {"tiers": [{"priority": 5, "patterns": ["eks-(?!large)"]}]},
        "eks_node_groups.priority_expander.tiers[0].patterns",
        "invalid perl operator: (?!",
    ),
    # Python's re accepts these; Go's RE2 does not.
    (
        "eks_node_groups.priority_expander",
        {"tiers": [{"priority": 5, "patterns": ["eks-(?>small)"]}]},
        "eks_node_groups.priority_expander.tiers[0].patterns",
        "invalid perl operator: (?>",
    ),
    (
        "eks_node_groups.priority_expander",
        {"tiers": [{"priority": 5, "patterns": ["eks-[a-z]++"]}]},
        "eks_node_groups.priority_expander.tiers[0].patterns",
        "bad repetition operator: ++",
    ),
    (
        "eks_node_groups.priority_expander",
        {"tiers": [{"priority": 5, "patterns": ["on-demand\\Z"]}]},
        "eks_node_groups.priority_expander.tiers[0].patterns",
        "invalid escape sequence: \\Z",
    ),
    ("eks_node_groups.priority_expander", {"tiers": SEED_TIERS[:3]}, "eks_node_groups.priority_expander.tiers", "node group large-on-demand"),
    (
        "eks_node_groups.priority_expander",
        {"tiers": [*SEED_TIERS, {"priority": 1, "patterns": ["^eks-medium-"]}]},
        "eks_node_groups.priority_expander.tiers[4].patterns",
        "matches no node group",
    ),
    (
        "eks_node_groups.priority_expander",
        {"tiers": [{"priority": 10, "patterns": ["small-spot", "large-spot"]}, {"priority": 60, "patterns": ["on-demand"]}]},
        "eks_node_groups.priority_expander.tiers",
        "on-demand group small-on-demand has priority 60, not below its spot twin small-spot (10)",
    ),
    (
        "eks_node_groups.priority_expander",
        {"tiers": [{"priority": 10, "patterns": [".*"]}]},
        "eks_node_groups.priority_expander.tiers",
        "not below its spot twin",
    ),
    ("eks_node_groups.priority_expander", {"tiers": []}, "eks_node_groups.priority_expander.tiers", "at least 1 item"),
    (
        "eks_node_groups.priority_expander",
        {"tiers": [{"priority": 50, "patterns": ["-spot-"]}, {"priority": 10, "patterns": ["-on-demand-"]}]},
        "eks_node_groups.priority_expander.tiers",
        "spot groups small-spot, large-spot share priority 50: the autoscaler can cycle among them without reaching on-demand",
    ),
    ("eks_node_groups.other_node_groups", ["small-spot"], "eks_node_groups.other_node_groups", "small-spot is a node group of this component's classes"),
    ("eks_node_groups.other_node_groups", ["System"], "eks_node_groups.other_node_groups[0]", "String should match pattern"),
]


@pytest.mark.parametrize(("path", "value", "key", "fragment"), BAD, ids=[f"{b[0]}={b[1]!s:.40}" for b in BAD])
def test_fails_when_an_eks_value_is_wrong(path: str, value: Any, key: str, fragment: str) -> None:
    lines = refusal(with_change(path, value))
    matching = [line for line in lines if line.startswith(f"gpu-platform:{key}: ")]
    assert matching, f"no problem reported at {key}; got {lines}"
    assert any(fragment in line for line in matching), f"{fragment!r} not in {matching}"
    assert all(line.endswith(")") and "(got " in line for line in matching)


def test_at_least_twenty_distinct_bad_eks_configs() -> None:
    assert len({(b[0], str(b[1])) for b in BAD}) >= 20


def test_fails_when_aws_sections_are_missing_or_misplaced() -> None:
    assert refusal({"cloud": "aws", "eks": eks()}) == [
        "gpu-platform:eks_node_groups: eks_node_groups is required when cloud is aws (or existing_cluster, for a cluster the stack does not create) (got null)"
    ]
    from tests.factories import gke

    assert refusal({**eks_stack(), "gke": gke()}) == ['gpu-platform:gke: gke applies to cloud gcp, not aws; remove it (got "set")']
    assert refusal({**eks_stack(), "monitoring": {"dcgm_exporter": {"node_selection": "gke"}}}) == [
        'gpu-platform:monitoring.dcgm_exporter.node_selection: node_selection gke does not match cloud aws; use eks (got "gke")'
    ]


SYSTEM_TIER = {"priority": 1, "patterns": ["^eks-system-"]}


# --- what load_stack_config adds: the aws provider's config ---------------------------------


def lines_for(values: dict[str, object], stack: str = "test") -> list[str]:
    values = {"gpu-platform:monitoring": {"enabled": False}, **values}
    pulumi.runtime.set_all_config(config_for_engine(values), [])
    pulumi.runtime.settings._set_stack(stack)
    try:
        with pytest.raises(ConfigError) as info:
            load_stack_config()
    finally:
        pulumi.runtime.settings._set_stack("test")
    return info.value.lines


def test_fails_when_no_region_is_configured() -> None:
    cluster = eks()
    del cluster["region"]
    assert lines_for({"gpu-platform:cloud": "aws", "gpu-platform:eks": cluster, "gpu-platform:eks_node_groups": eks_node_groups()}) == [
        "aws:region: required when gpu-platform:eks.region is not set (got nothing)"
    ]


def test_fails_when_zones_are_outside_the_provider_region() -> None:
    cluster = eks()
    del cluster["region"]
    assert lines_for(
        {"aws:region": "us-west-2", "gpu-platform:cloud": "aws", "gpu-platform:eks": cluster, "gpu-platform:eks_node_groups": eks_node_groups()}
    ) == [
        'gpu-platform:eks.zones[0]: zone ap-northeast-2a is not in region us-west-2 (got "ap-northeast-2a")',
        'gpu-platform:eks.zones[1]: zone ap-northeast-2c is not in region us-west-2 (got "ap-northeast-2c")',
    ]


def test_fails_when_an_existing_vpcs_zones_are_outside_the_provider_region() -> None:
    cluster = eks(
        vpc={
            "vpc_id": "vpc-0a1b2c3d",
            "private_subnet_ids": {"ap-northeast-2a": "subnet-0a1b2c3d", "us-west-2b": "subnet-0a1b2c3e"},
        }
    )
    del cluster["region"], cluster["zones"]
    assert lines_for(
        {"aws:region": "us-west-2", "gpu-platform:cloud": "aws", "gpu-platform:eks": cluster, "gpu-platform:eks_node_groups": eks_node_groups()}
    ) == ['gpu-platform:eks.vpc.private_subnet_ids[ap-northeast-2a]: zone ap-northeast-2a is not in region us-west-2 (got "ap-northeast-2a")']


def test_fails_when_the_stack_name_cannot_name_the_cluster() -> None:
    assert lines_for(
        {"gpu-platform:cloud": "aws", "gpu-platform:eks": eks(), "gpu-platform:eks_node_groups": eks_node_groups()},
        stack="org/dev.eks",
    ) == [
        "gpu-platform:eks.cluster_name: required, since the stack name 'org/dev.eks' is not a valid EKS cluster name "
        "(letters, digits, '-' and '_') (got nothing)"
    ]


# --- documented defaults described in words ----------------------------------------------------


def test_eks_cluster_defaults() -> None:
    args = EksClusterArgs()
    assert args.cluster_name is None and args.region is None and args.zones is None
    assert args.endpoint == EksEndpointAccess() and args.endpoint.public and args.endpoint.private
    assert not args.endpoint.restricted
    assert [a.name for a in args.addons] == ["vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"]
    assert all(a.version is None for a in args.addons)
    assert [t.value for t in args.log_types] == ["api", "audit", "authenticator"]
    assert args.system_node_group == SystemNodeGroupArgs()
    assert args.block_storage == EbsStorageArgs()
    storage = args.block_storage
    assert (storage.enabled, storage.version, storage.storage_class, storage.default_class, storage.encrypted) == (True, None, "gp3", True, True)


def test_system_node_group_defaults() -> None:
    group = SystemNodeGroupArgs()
    assert (group.name, group.instance_types, group.min_nodes, group.max_nodes, group.disk_size_gib) == (
        "system",
        ["m6i.large"],
        2,
        4,
        50,
    )


def test_eks_stack_config_round_trips() -> None:
    config = StackConfig.model_validate(copy.deepcopy(eks_stack()))
    assert config.eks is not None and config.eks.zones == ["ap-northeast-2a", "ap-northeast-2c"]
    assert config.eks_node_groups is not None and config.eks_node_groups.instance_types() == ["p3.2xlarge", "p3.8xlarge"]


def test_kubeflow_claims_name_the_stacks_storage_class() -> None:
    """prod-eks's Kubeflow volumes use the cluster's gp3 class; any other name binds nothing on EKS."""
    raw = prod_eks_raw()
    assert StackConfig.model_validate(copy.deepcopy(raw)).kubeflow.install.storage_class == "gp3"  # type: ignore[union-attr]
    raw["kubeflow"]["install"]["storage_class"] = "gp2"  # EKS's own, migrated to the CSI driver
    assert StackConfig.model_validate(copy.deepcopy(raw)).kubeflow.install.storage_class == "gp2"  # type: ignore[union-attr]
    raw["kubeflow"]["install"]["storage_class"] = "io2"
    (line,) = refusal(raw)
    assert line.startswith("gpu-platform:kubeflow.install.storage_class: no StorageClass io2 in this stack: the EKS cluster provides gp3")
    raw["eks"]["block_storage"] = {"enabled": False}  # bring your own driver and classes
    assert StackConfig.model_validate(raw).kubeflow.install.storage_class == "io2"  # type: ignore[union-attr]


def test_storage_and_namespace_rules_follow_what_the_stack_installs() -> None:
    raw = copy.deepcopy(prod_eks_raw())
    # Without monitoring, no Prometheus claim asks for a class.
    raw["eks"]["block_storage"] = {"default_class": False}
    raw["monitoring"] = {"enabled": False}
    assert StackConfig.model_validate(copy.deepcopy(raw)).eks.block_storage.default_class is False  # type: ignore[union-attr]
    # The platform edition's upstream claims (Katib, workspaces) name no class: the default must exist.
    raw["kubeflow"]["install"].update(edition="platform", dex_user_email="ml-admin@example.com")
    del raw["kubeflow"]["install"]["release"]  # a kubeflow/pipelines tag: the platform pins kubeflow/manifests
    (line,) = refusal(copy.deepcopy(raw))
    assert line.startswith("gpu-platform:eks.block_storage.default_class: the Kubeflow platform edition's upstream claims name no StorageClass")
    # Two components' own namespaces: the later setting is refused.
    raw = copy.deepcopy(prod_eks_raw())
    raw["monitoring"]["prometheus"] = {**raw["monitoring"].get("prometheus", {}), "namespace": "kubeflow"}
    (line,) = refusal(raw)
    assert line == 'gpu-platform:monitoring.prometheus.namespace: namespace kubeflow is already Kubeflow (pipelines)\'s; choose another name (got "kubeflow")'
    # dcgm-exporter in Prometheus's namespace: both components create that Namespace.
    raw = copy.deepcopy(prod_eks_raw())
    prometheus_ns = StackConfig.model_validate(copy.deepcopy(raw)).monitoring.prometheus.namespace
    raw["monitoring"]["dcgm_exporter"] = {**(raw["monitoring"].get("dcgm_exporter") or {"node_selection": "eks"}), "namespace": prometheus_ns}
    (line,) = refusal(copy.deepcopy(raw))
    assert line == (
        f"gpu-platform:monitoring.dcgm_exporter.namespace: namespace {prometheus_ns} is already the monitoring stack's; "
        f'choose another name (got "{prometheus_ns}")'
    )
    raw = copy.deepcopy(prod_eks_raw())
    raw["dask"]["namespace"] = "default"
    (line,) = refusal(raw)
    assert line == 'gpu-platform:dask.namespace: namespace default belongs to Kubernetes; choose another name (got "default")'


@pytest.mark.parametrize(
    ("change", "why"),
    [({"network_policy": False}, "eks.network_policy is false"), ({"addons": [{"name": "kube-proxy"}]}, "eks.addons has no vpc-cni, whose agent enforces it")],
)
def test_fails_when_dask_isolation_would_not_be_enforced(change: dict[str, Any], why: str) -> None:
    raw = prod_eks_raw()
    raw["eks"].update(change)
    # One line per isolated tenant, each at its own key, in one run.
    assert refusal(copy.deepcopy(raw)) == [
        f"gpu-platform:dask.tenants[{i}].isolated: tenant {t['name']} is isolated by a NetworkPolicy this cluster would not "
        f"enforce ({why}); turn enforcement on, or set isolated: false to run without isolation (got true)"
        for i, t in enumerate(raw["dask"]["tenants"])
        if t.get("isolated", True)
    ]
    assert len(raw["dask"]["tenants"]) > 1
    for t in raw["dask"]["tenants"]:
        t["isolated"] = False
    assert StackConfig.model_validate(raw).dask is not None
