"""The EKS GPU classes' Args (components/eks/node_group_args.py): the autoscaler's settings and release, the priority
expander's tiers and the ConfigMap text they give, the class defaults and the AMI rules."""

from __future__ import annotations

import re

import pytest
import yaml
from pydantic import ValidationError

from gpu_platform.components import (
    ClusterAutoscalerSettings,
    SpotFailoverEksNodeGroupsArgs,
)
from gpu_platform.components.eks.node_group_args import asg_name_pattern, example_asg_name
from gpu_platform.infra.stack.model import StackConfig
from tests.components.eks.test_args import SEED_TIERS, SYSTEM_TIER, refusal, with_change
from tests.factories import eks, eks_node_groups, eks_stack, gpu_class


def test_fails_when_the_expander_chain_has_no_priority_but_tiers_are_given() -> None:
    config = eks_stack(autoscaler={"expanders": ["least-waste"]}, priority_expander={"tiers": SEED_TIERS})
    assert refusal(config) == [
        "gpu-platform:eks_node_groups.autoscaler.expanders: priority_expander is set but the expander chain has no "
        'priority; put priority first (got "least-waste")'
    ]


def test_on_demand_above_spot_is_accepted_when_explicitly_allowed() -> None:
    tiers = [{"priority": 10, "patterns": ["small-spot"]}, {"priority": 5, "patterns": ["large-spot"]}, {"priority": 60, "patterns": ["on-demand"]}]
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(priority_expander={"tiers": tiers, "allow_on_demand_above_spot": True}))
    assert args.effective_expander().priority_of(example_asg_name("small-on-demand")) == 60


def test_a_tier_may_name_the_system_group() -> None:
    """In a stack the system group is one of the cluster's node groups: a tier for it alone is no typo."""
    config = with_change("eks_node_groups.priority_expander", {"tiers": [*SEED_TIERS, SYSTEM_TIER]})
    groups = StackConfig.model_validate(config).eks_node_groups
    assert groups is not None and groups.other_node_groups == ["system"]
    assert groups.effective_expander().priority_of(example_asg_name("system")) == 1
    # Renamed, the system group's tier follows the name; the old name is then a pattern for nothing.
    config["eks"]["system_node_group"] = {"name": "controllers"}
    (line,) = refusal(config)
    assert line.startswith("gpu-platform:eks_node_groups.priority_expander.tiers[4].patterns: pattern '^eks-system-' matches no node group (")
    assert "controllers)" in line
    config["eks_node_groups"]["priority_expander"]["tiers"][4] = {"priority": 1, "patterns": ["^eks-controllers-"]}
    assert StackConfig.model_validate(config).eks_node_groups.other_node_groups == ["controllers"]  # type: ignore[union-attr]


def test_the_component_alone_knows_only_the_groups_it_is_told_of() -> None:
    tiers = {"tiers": [*SEED_TIERS, SYSTEM_TIER]}
    with pytest.raises(ValidationError, match="pattern '\\^eks-system-' matches no node group"):
        SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(priority_expander=tiers))
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(priority_expander=tiers, other_node_groups=["system"]))
    assert args.other_node_groups == ["system"]
    assert SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups()).other_node_groups == []


def test_the_seed_tiers_are_accepted() -> None:
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(priority_expander={"tiers": SEED_TIERS}))
    assert [t.priority for t in args.effective_expander().tiers] == [50, 40, 30, 20]


def test_derived_priorities_are_the_seeds_order() -> None:
    """small above large, each spot group above its on-demand twin, every other group last."""
    args = SpotFailoverEksNodeGroupsArgs.model_validate(
        # Given large first: the order comes from the shapes, not from the list.
        eks_node_groups(classes=[gpu_class(name="large", instance_types=["p3.8xlarge"]), gpu_class()])
    )
    priorities = yaml.safe_load(args.effective_expander().configmap_text())
    assert list(priorities) == [50, 40, 30, 20, 1]
    for priority, group in zip([50, 40, 30, 20], ["small-spot", "small-on-demand", "large-spot", "large-on-demand"], strict=True):
        assert priorities[priority] == [asg_name_pattern(group)]
    assert priorities[1] == [".*"]


def test_derived_priorities_rank_a_scheduler_class_first() -> None:
    """Dask schedulers only prefer their pool and the autoscaler ignores preferences when it
    picks a group to grow: ranked first, the scheduler group is grown for them, not t4-spot."""
    scheduler = gpu_class(name="scheduler", role="scheduler", instance_types=["g4dn.xlarge"], capacity="on_demand")
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(classes=[gpu_class(name="t4", instance_types=["g4dn.2xlarge"]), scheduler]))
    order = [t.patterns[0] for t in sorted(args.effective_expander().tiers, key=lambda t: -t.priority)]
    assert order == [asg_name_pattern("scheduler-on-demand"), asg_name_pattern("t4-spot"), asg_name_pattern("t4-on-demand"), ".*"]


def test_configmap_text_orders_the_generated_asg_names() -> None:
    """The ConfigMap value parsed back as YAML and matched, as the autoscaler does (unanchored
    search, highest matching priority), against ASG names of the form eks-<nodegroup>-<uuid>."""
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups())
    priorities = yaml.safe_load(args.effective_expander().configmap_text())
    assert all(isinstance(p, int) for p in priorities)

    def priority(asg: str) -> int:
        return max(p for p, patterns in priorities.items() if any(re.search(x, asg) for x in patterns))

    names = {g: example_asg_name(g) for g in ("small-spot", "small-on-demand", "large-spot", "large-on-demand")}
    assert all(re.fullmatch(r"eks-[a-z0-9-]+-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", n) for n in names.values())
    assert sorted(names, key=lambda g: -priority(names[g])) == ["small-spot", "small-on-demand", "large-spot", "large-on-demand"]
    assert priority("eks-system-00000000-0000-0000-0000-000000000000") == 1
    # A group's pattern does not take its twin's ASG.
    assert not re.search(asg_name_pattern("small-spot"), names["small-on-demand"])


def test_autoscaler_defaults_are_the_seeds_failover() -> None:
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups())
    assert args.autoscaler == ClusterAutoscalerSettings()
    settings = args.autoscaler
    assert [e.value for e in settings.expanders] == ["priority", "least-waste"]
    assert settings.extra_args()["expander"] == "priority,least-waste"
    assert settings.extra_args()["max-node-provision-time"] == "7m"
    assert settings.chart_version == "9.59.0"


def test_class_defaults() -> None:
    cls = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups()).classes[0]
    assert (cls.min_nodes, cls.capacity.value, cls.role.value, cls.ami_type.value, cls.disk_size_gib) == (
        0,
        "spot_then_on_demand",
        "gpu",
        "AL2023_x86_64_NVIDIA",
        100,
    )
    assert cls.fallback_max_nodes is None and cls.labels == {} and cls.taints == []


def test_the_autoscaler_is_the_release_of_the_clusters_minor() -> None:
    """Upstream supports an autoscaler with its own Kubernetes minor only: 1.34 gets v1.34.5
    (not the chart's v1.35.0), 1.35 the chart's; a minor with no pinned release must name one."""
    from gpu_platform.components.eks.node_group_resources import autoscaler_values

    settings = ClusterAutoscalerSettings()
    assert autoscaler_values(settings, "c", "r", "arn", "1.34")["image"] == {
        "repository": "registry.k8s.io/autoscaling/cluster-autoscaler",
        "tag": "v1.34.5",
    }
    assert autoscaler_values(settings, "c", "r", "arn", "1.35")["image"]["tag"] == "v1.35.0"
    assert "image" not in autoscaler_values(settings, "c", "r", "arn")  # a component alone: the chart's
    older = eks_stack(eks(version="1.33"))
    older["kubernetes_version"] = "1.33"
    (line,) = refusal(older)
    assert line == (
        "gpu-platform:eks_node_groups.autoscaler.image: no autoscaler release is pinned for Kubernetes 1.33 (pinned: 1.34, 1.35); "
        "set image to registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.<patch> (got null)"
    )
    older["eks_node_groups"]["autoscaler"] = {"image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.2"}
    assert StackConfig.model_validate(older).eks_node_groups.autoscaler.image.endswith(":v1.33.2")  # type: ignore[union-attr]


def test_amazon_linux_2_is_accepted_up_to_its_last_eks_version() -> None:
    config = with_change("eks_node_groups.classes.0.ami_type", "AL2_x86_64_GPU")
    config["eks"]["version"] = config["kubernetes_version"] = "1.32"
    config["eks_node_groups"]["autoscaler"] = {"image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.32.1"}
    groups = StackConfig.model_validate(config).eks_node_groups
    assert groups is not None and groups.classes[0].ami_type.value == "AL2_x86_64_GPU"
