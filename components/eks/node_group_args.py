"""SpotFailoverEksNodeGroupsArgs and its parts: GPU classes, the autoscaler's settings and the priority expander, checked against each other (every tier matches a group, on-demand below its spot twin, spot groups on distinct priorities)."""

from __future__ import annotations

import functools
import itertools
import re
from enum import StrEnum
from typing import Annotated, Any

import re2
import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from gpu_platform.components.catalog.gpus import AwsInstanceType, aws_shape, shape_checked
from gpu_platform.components.core.durations import GoDuration
from gpu_platform.components.core.kube import ChartVersion, PinnedImage
from gpu_platform.components.core.labels import (
    AWS_ACCELERATOR_LABEL,
    CAPACITY_LABEL,
    CLASS_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    POOL_ROLE_LABEL,
    SCHEDULER_LABEL,
)
from gpu_platform.components.core.models import ARGS_CONFIG, PlannedOnce, check_min_max, field_error, unique
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.eks.plan import (
    NodeGroupPlan,
    asg_name_pattern,
    class_node_groups,
    class_shape,
    example_asg_name,
)
from gpu_platform.components.karpenter.args import KarpenterSettings, Provisioner
from gpu_platform.components.karpenter.plan import NodePoolPlan, plan_node_pools, provisioner_problems
from gpu_platform.components.pools.ladders import (
    CapacityRung,
    RungKind,
    eks_ladder_problems,
    ladder_text,
    named_ladder,
    strategy_of,
)
from gpu_platform.components.pools.shapes import (
    GPU_TAINT,
    CapacityStrategy,
    CapacityType,
    LabelMap,
    MachineShapeArgs,
    NodePoolShape,
    Taint,
    pool_taints,
)
from gpu_platform.components.pools.sharing import GpuSharing, mig_sharing_problem

__all__ = [
    "ACCELERATOR_LABEL",
    "AmiType",
    "ClassRole",
    "ClusterAutoscalerSettings",
    "Expander",
    "GpuClassArgs",
    "KarpenterNodePoolsArgs",
    "NodeGroupPlan",
    "PriorityExpander",
    "PriorityTier",
    "SpotFailoverEksNodeGroupsArgs",
    "asg_name_pattern",
]

ACCELERATOR_LABEL = AWS_ACCELERATOR_LABEL
"""The cluster autoscaler's GPU label on AWS (labels.AWS_ACCELERATOR_LABEL)."""
AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"
AUTOSCALER_CHART = "cluster-autoscaler"
AUTOSCALER_REPO = "https://kubernetes.github.io/autoscaler"
_GROUP_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # the refusal says why; RE2 would also log it to stderr


@functools.cache
def re2_pattern(pattern: str) -> Any:
    """``pattern`` compiled by RE2, the syntax of the autoscaler's Go regexp (no lookaround,
    backreferences, atomic groups or possessive quantifiers); ValueError when RE2 refuses it."""
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(f"pattern {pattern!r} is not RE2, which the autoscaler uses: {reason}") from None


def _re2_compiles(pattern: str) -> bool:
    try:
        re2_pattern(pattern)
    except ValueError:
        return False
    return True


class AmiType(StrEnum):
    """EKS-optimised GPU AMIs."""

    AL2023_x86_64_NVIDIA = "AL2023_x86_64_NVIDIA"
    """Amazon Linux 2023 with the NVIDIA driver and container toolkit (the device plugin is installed by this component)."""
    BOTTLEROCKET_x86_64_NVIDIA = "BOTTLEROCKET_x86_64_NVIDIA"
    """Bottlerocket with the NVIDIA driver and its own device plugin."""
    AL2_x86_64_GPU = "AL2_x86_64_GPU"
    """Amazon Linux 2 GPU AMI (legacy; EKS 1.32 and older only)."""

    @property
    def ships_device_plugin(self) -> bool:
        return self is AmiType.BOTTLEROCKET_x86_64_NVIDIA


AL2_VERSIONS = frozenset({"1.28", "1.29", "1.30", "1.31", "1.32"})
"""EKS versions with Amazon Linux 2 AMIs: 1.32 is the last (AL2 AMIs ended on 2025-11-26)."""


class ClassRole(StrEnum):
    """What a GPU class is for."""

    GPU = "gpu"
    """Workers and training steps."""
    SCHEDULER = "scheduler"
    """The cheap pool Dask schedulers prefer (label dedicated=scheduler)."""


EksClassTaints = Annotated[list[Taint], pool_taints(GPU_TAINT.key)]
"""A GPU class's own taints: not the GPU taint, which the component adds."""


class GpuClassArgs(PlannedOnce, BaseModel):
    """A GPU class: instance types of one shape, bought rung by rung of its capacity ladder (spot, on-demand, reservations, capacity blocks)."""

    model_config = ARGS_CONFIG

    name: str = Field(min_length=1, max_length=30)
    """Class name; node groups (and NodePools) are <name>-<rung>: <name>-spot, <name>-on-demand, <name>-reserved, <name>-block. Required."""
    instance_types: list[str] = Field(min_length=1, max_length=20)
    """GPU instance types, all of one shape (vCPUs, memory, GPU model and count). Required."""
    shape: MachineShapeArgs | None = None
    """The instance types' one shape (vcpus, memory_gib, gpus, gpu_type as EC2 names the GPU), stated for types the catalog does not know (p5en, p6-b200): every type the catalog knows must match it. Default: none (the catalog's)."""
    max_nodes: Int = Field(ge=1, le=1000)
    """Most nodes of each node group of the class; bounds the spend. Required."""
    min_nodes: Int = Field(default=0, ge=0, le=1000)
    """Fewest nodes of the first node group (0 scales to zero when idle; every fallback group always keeps 0). Default: 0."""
    fallback_max_nodes: Int | None = Field(default=None, ge=1, le=1000)
    """spot_then_on_demand, or a capacity_ladder of more than one rung: most nodes of each fallback group (every rung after the first). Default: none (max_nodes)."""
    capacity: CapacityStrategy = CapacityStrategy.SPOT_THEN_ON_DEMAND
    """on_demand, spot, or spot_then_on_demand (a spot group first, an on-demand twin as fallback). Default: spot_then_on_demand."""
    capacity_ladder: list[CapacityRung] | None = Field(default=None, min_length=1, max_length=6)
    """The class's capacity as an ordered ladder of rungs, in place of capacity: reservation (an On-Demand Capacity Reservation's id cr-..., or none for any open one, which ends the ladder), capacity_block (its reservation id), spot and on_demand, in any order; one node group (or NodePool) per rung, tried in the ladder's order. flex_start is GKE's and is refused. A ladder a capacity names ([spot, on_demand]) plans exactly as that capacity (see the capacity ladders guide). Default: none (the ladder capacity names)."""
    role: ClassRole = ClassRole.GPU
    """gpu, or scheduler (labelled dedicated=scheduler for Dask schedulers). Default: gpu."""
    ami_type: AmiType = AmiType.AL2023_x86_64_NVIDIA
    """Node AMI. Default: AL2023_x86_64_NVIDIA."""
    disk_size_gib: Int = Field(default=100, ge=20, le=16384)
    """Root volume in GiB (RAPIDS images are large); also the ephemeral-storage the autoscaler assumes. Default: 100."""
    labels: LabelMap = Field(default_factory=dict)
    """Extra Kubernetes labels on the nodes. Default: {}."""
    taints: EksClassTaints = Field(default_factory=list)
    """Extra taints (the GPU taint is always added). Default: []."""
    gpu_sharing: GpuSharing | None = None
    """Time-slicing (TIME_SHARING) or MPS through the NVIDIA device plugin's config, as on GKE: each GPU is advertised max_shared_clients_per_gpu times, and the cluster autoscaler's node template (or, with provisioner karpenter, a NodeOverlay with Karpenter's alpha NodeOverlay gate on) says GPUs x that. Not with Bottlerocket (its own device plugin does not read this config). Default: none (one container per GPU)."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _GROUP_NAME.match(value) or value.endswith("-"):
            raise ValueError(f"{value!r} is not a valid class name: lowercase letters, digits and '-', starting with a letter")
        return value

    @model_validator(mode="after")
    def _ladder(self) -> GpuClassArgs:
        if self.capacity_ladder is None:
            return self
        if "capacity" in self.model_fields_set:
            raise field_error(
                "GpuClassArgs",
                "capacity_ladder",
                f"capacity_ladder replaces capacity; set one of them (got capacity {self.capacity.value} and capacity_ladder {ladder_text(self.capacity_ladder)})",
                ladder_text(self.capacity_ladder),
            )
        if ladder_problems := eks_ladder_problems(self.capacity_ladder):
            raise ValidationError.from_exception_data(
                "GpuClassArgs",
                [
                    InitErrorDetails(type=PydanticCustomError("invalid_combination", message), loc=("capacity_ladder", *loc), input=value)
                    for loc, message, value in ladder_problems
                ],
            )
        return self

    @model_validator(mode="after")
    def _one_shape(self) -> GpuClassArgs:
        shape_checked(self, lambda: aws_shape(self.instance_types, self.shape, gpu=True))
        return self

    @model_validator(mode="after")
    def _bounds(self) -> GpuClassArgs:
        check_min_max(self, "min_nodes", "max_nodes")
        if self.fallback_max_nodes is not None and len(self.ladder) < 2:
            got = f"capacity {self.capacity.value}" if self.capacity_ladder is None else f"capacity_ladder {ladder_text(self.capacity_ladder)}"
            raise field_error(
                "GpuClassArgs",
                "fallback_max_nodes",
                f"fallback_max_nodes applies to capacity spot_then_on_demand or a capacity_ladder of more than one rung only (got {got})",
                self.fallback_max_nodes,
            )
        return self

    @model_validator(mode="after")
    def _sharing(self) -> GpuClassArgs:
        if self.gpu_sharing is None:
            return self
        if self.ami_type.ships_device_plugin:
            raise field_error(
                "GpuClassArgs",
                "gpu_sharing",
                f"gpu_sharing needs the device plugin this component installs; ami_type {self.ami_type.value} ships its "
                "own, which does not read it: use AL2023_x86_64_NVIDIA",
                self.gpu_sharing.strategy.value,
            )
        # EKS classes take whole GPUs (no MIG setting): the one rule's other half is GKE's.
        if problem := mig_sharing_problem(self.gpu_sharing, None):
            raise field_error("GpuClassArgs", "gpu_sharing", problem, self.gpu_sharing.strategy.value)
        return self

    @property
    def ladder(self) -> tuple[CapacityRung, ...]:
        """The rungs the class buys, in order: capacity_ladder, or the ladder capacity names (ladders.named_ladder), so a
        named ladder plans byte for byte as its capacity."""
        return tuple(self.capacity_ladder) if self.capacity_ladder is not None else named_ladder(self.capacity)

    @property
    def strategy(self) -> CapacityStrategy:
        """The capacity strategy nearest the class's ladder, for readers that know only strategies: capacity, or the
        one its capacity_ladder names (ladders.strategy_of)."""
        return self.capacity if self.capacity_ladder is None else strategy_of(self.capacity_ladder)

    @property
    def advertised_gpus(self) -> int:
        """GPUs a node of the class advertises (nvidia.com/gpu): its GPUs, times the clients per GPU when shared
        (the class's shape's one count, NodePoolShape.schedulable_gpus_per_node)."""
        return self.planned_shape.schedulable_gpus_per_node

    @property
    def instance_shape(self) -> AwsInstanceType:
        """The class's one shape: the catalog's, or the one stated."""
        return aws_shape(self.instance_types, self.shape, gpu=True)

    @functools.cached_property
    def planned_node_groups(self) -> tuple[NodeGroupPlan, ...]:
        """The class's node groups in the order the autoscaler should try them (eks_plan.class_node_groups),
        planned once for these Args: the validators, the stack's plan, the components and preflight read this one."""
        return tuple(class_node_groups(self))

    def node_groups(self) -> list[NodeGroupPlan]:
        """The class's node groups in the order the autoscaler should try them (``planned_node_groups``)."""
        return list(self.planned_node_groups)

    @functools.cached_property
    def planned_shape(self) -> NodePoolShape:
        """The class as workloads see it (eks_plan.class_shape), planned once for these Args."""
        return class_shape(self)

    def node_labels(self, capacity: str) -> dict[str, str]:
        """Labels every node of one of the class's groups carries, generated (never copied between groups); ``capacity``:
        the group's capacity label value (NodeGroupPlan.capacity_label: spot, on-demand, reserved, capacity-block)."""
        labels = {
            POOL_ROLE_LABEL: self.role.value,
            CLASS_LABEL: self.name,
            CAPACITY_LABEL: capacity,
            ACCELERATOR_LABEL: self.instance_shape.accelerator_label or "",
            **self.labels,
        }
        if self.role is ClassRole.SCHEDULER:
            labels[SCHEDULER_LABEL[0]] = SCHEDULER_LABEL[1]
        if self.gpu_sharing is not None:
            labels[DEVICE_PLUGIN_CONFIG_LABEL] = self.name  # the chart's config manager picks config.map[<name>]
        return labels

    def node_taints(self) -> list[Taint]:
        return [GPU_TAINT, *self.taints]


class PriorityTier(BaseModel):
    """One tier of the priority expander: node groups whose ASG name matches a pattern get this priority."""

    model_config = ARGS_CONFIG

    priority: Int = Field(ge=1, le=100000)
    """Higher wins. Required."""
    patterns: list[str] = Field(min_length=1)
    """Regexes matched (unanchored, Go RE2 syntax) against ASG names, which are eks-<nodegroup>-<uuid> for managed node groups. Required."""

    @field_validator("patterns")
    @classmethod
    def _compile(cls, value: list[str]) -> list[str]:
        for pattern in value:
            re2_pattern(pattern)
        return value


class PriorityExpander(PlannedOnce, BaseModel):
    """The cluster autoscaler's priority expander as ordered tiers."""

    model_config = ARGS_CONFIG

    tiers: list[PriorityTier] = Field(min_length=1)
    """The tiers; each priority once. Required."""
    allow_on_demand_above_spot: bool = False
    """Allow an on-demand group to rank at or above its spot twin (it then takes capacity first). Default: false."""

    @field_validator("tiers")
    @classmethod
    def _unique(cls, value: list[PriorityTier]) -> list[PriorityTier]:
        seen: set[int] = set()
        for tier in value:
            if tier.priority in seen:
                raise ValueError(f"priority {tier.priority} is given to two tiers; give each tier its own value")
            seen.add(tier.priority)
        return value

    def priority_of(self, asg_name: str) -> int | None:
        """The priority the autoscaler gives an ASG: the highest tier that matches it."""
        matching = [t.priority for t in self.tiers if any(re2_pattern(p).search(asg_name) for p in t.patterns)]
        return max(matching) if matching else None

    def configmap_text(self) -> str:
        """The ``priorities`` value: a YAML map of priority to patterns, highest first (``text``)."""
        return self.text

    @functools.cached_property
    def text(self) -> str:
        """The ``priorities`` value, written once for these tiers: the ConfigMap, the component's output and the
        stack's export hold this one."""
        tiers = sorted(self.tiers, key=lambda t: -t.priority)
        return yaml.safe_dump({t.priority: list(t.patterns) for t in tiers}, sort_keys=False)

    @classmethod
    def of_configmap_text(cls, text: str) -> PriorityExpander | None:
        """The tiers a ``priorities`` value declares (what the policy pack reads back from the ConfigMap), or None
        when it is not a map of integer priorities to pattern lists; patterns RE2 refuses are kept out."""
        try:
            parsed = yaml.safe_load(text or "") or {}
        except yaml.YAMLError:
            return None
        if not isinstance(parsed, dict):
            return None
        tiers = []
        for priority, patterns in parsed.items():
            if isinstance(priority, str) and priority.lstrip("-").isdigit():
                priority = int(priority)
            if not isinstance(priority, int) or not isinstance(patterns, list | None):
                return None
            patterns = patterns or []
            kept = [str(p) for p in patterns if _re2_compiles(str(p))]
            if kept:
                tiers.append(PriorityTier.model_construct(priority=priority, patterns=kept))
        return cls.model_construct(tiers=tiers)


class Expander(StrEnum):
    """Cluster autoscaler expanders (how it picks the node group to grow)."""

    PRIORITY = "priority"
    """The group of the highest tier of the priority expander's ConfigMap (spot before on-demand)."""
    LEAST_WASTE = "least-waste"
    """The group that leaves the least CPU and memory idle after the scale-up."""
    LEAST_NODES = "least-nodes"
    """The group that needs the fewest nodes for the pending pods."""
    MOST_PODS = "most-pods"
    """The group that schedules the most pending pods."""
    RANDOM = "random"
    """Any group that fits, at random."""


AUTOSCALER_REPOSITORY = "registry.k8s.io/autoscaling/cluster-autoscaler"
DEVICE_PLUGIN_CHART = "nvidia-device-plugin"
"""The NVIDIA device plugin's chart name in its repository."""
DEVICE_PLUGIN_REPOSITORY = "https://nvidia.github.io/k8s-device-plugin"
"""The NVIDIA device plugin's chart repository."""
AUTOSCALER_RELEASES = {"1.34": "v1.34.5", "1.35": "v1.35.0"}
"""The autoscaler release per Kubernetes minor (upstream supports the matching minor only);
1.35 is the chart's own image. Other minors set ``image``."""
_IMAGE_MINOR = re.compile(r":v?(1\.[0-9]+)\.[0-9]+")


def ami_problem(cls: GpuClassArgs, kubernetes_version: str | None) -> str | None:
    """Why EKS has no AMI of ``cls.ami_type`` for ``kubernetes_version``, or None."""
    if cls.ami_type is AmiType.AL2_x86_64_GPU and kubernetes_version is not None and kubernetes_version not in AL2_VERSIONS:
        return (
            f"EKS publishes no Amazon Linux 2 AMIs for Kubernetes {kubernetes_version} (the last is 1.32); "
            "use AL2023_x86_64_NVIDIA or BOTTLEROCKET_x86_64_NVIDIA"
        )
    return None


def autoscaler_image(settings: ClusterAutoscalerSettings, kubernetes_version: str | None) -> str | None:
    """The autoscaler image for a cluster at ``kubernetes_version``: ``settings.image``, else the
    release of that minor; None leaves the chart's. ValueError when no release is known for the
    minor, or when ``settings.image`` is another minor's release."""
    if kubernetes_version is None:
        return settings.image
    if settings.image is not None:
        found = _IMAGE_MINOR.search(settings.image)
        if found and found.group(1) != kubernetes_version:
            raise ValueError(
                f"image {settings.image} is the autoscaler of Kubernetes {found.group(1)}, the cluster runs "
                f"{kubernetes_version}: use the release of the cluster's minor version ({AUTOSCALER_REPOSITORY}:v{kubernetes_version}.<patch>)"
            )
        return settings.image
    release = AUTOSCALER_RELEASES.get(kubernetes_version)
    if release is None:
        raise ValueError(
            f"no autoscaler release is pinned for Kubernetes {kubernetes_version} (pinned: {', '.join(AUTOSCALER_RELEASES)}); "
            f"set image to {AUTOSCALER_REPOSITORY}:v{kubernetes_version}.<patch>"
        )
    return f"{AUTOSCALER_REPOSITORY}:{release}"


class ClusterAutoscalerSettings(BaseModel):
    """The cluster autoscaler's behaviour, rendered to the chart's extraArgs."""

    model_config = ARGS_CONFIG

    chart_version: ChartVersion = "9.59.0"
    """cluster-autoscaler chart (kubernetes.github.io/autoscaler); its image is autoscaler 1.35.0. Default: 9.59.0."""
    image: PinnedImage | None = None
    """Autoscaler image; it must be the release of the cluster's Kubernetes minor. Default: none (that minor's pinned release: v1.34.5 for 1.34, v1.35.0 for 1.35; other minors must set it)."""
    namespace: str = Field(default="kube-system", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    """Namespace of the autoscaler and its priority ConfigMap. Default: kube-system."""
    expanders: Annotated[list[Expander], unique("expanders", "an expander", lambda e: e.value)] = Field(
        default_factory=lambda: [Expander.PRIORITY, Expander.LEAST_WASTE], min_length=1
    )
    """Expander chain; later ones break ties of earlier ones. Default: [priority, least-waste]."""
    max_node_provision_time: GoDuration = "7m"
    """How long a node group may take to bring up a node before the autoscaler tries the next tier (the Kubeflow-on-EKS guide's 7m; upstream 15m). Default: 7m."""
    scale_down_unneeded_time: GoDuration = "10m"
    """How long a node must be unneeded before it is removed. Default: 10m."""
    scale_down_delay_after_add: GoDuration = "10m"
    """Scale-down pause after a scale-up. Default: 10m."""
    scale_down_delay_after_failure: GoDuration = "3m"
    """Scale-down pause after a failed scale-down. Default: 3m."""
    balance_similar_node_groups: bool = True
    """Keep similar groups (same shape, other zones) at similar sizes. Default: true."""
    skip_nodes_with_system_pods: bool = False
    """Never remove nodes running kube-system pods (false lets GPU nodes with DaemonSets scale down). Default: false."""
    skip_nodes_with_local_storage: bool = False
    """Never remove nodes with pods using emptyDir (false: Dask spill space does not pin nodes). Default: false."""
    initial_node_group_backoff_duration: GoDuration = "5m"
    """Back-off after a group's scale-up fails (e.g. no spot capacity). Default: 5m."""
    max_node_group_backoff_duration: GoDuration = "30m"
    """Longest back-off of a failing group. Default: 30m."""
    node_group_backoff_reset_timeout: GoDuration = "3h"
    """Time without failures after which a group's back-off resets. Default: 3h."""

    def extra_args(self) -> dict[str, Any]:
        """The chart's extraArgs (rendered as --key=value)."""
        return {
            "expander": ",".join(e.value for e in self.expanders),
            "max-node-provision-time": self.max_node_provision_time,
            "scale-down-unneeded-time": self.scale_down_unneeded_time,
            "scale-down-delay-after-add": self.scale_down_delay_after_add,
            "scale-down-delay-after-failure": self.scale_down_delay_after_failure,
            "balance-similar-node-groups": self.balance_similar_node_groups,
            "skip-nodes-with-system-pods": self.skip_nodes_with_system_pods,
            "skip-nodes-with-local-storage": self.skip_nodes_with_local_storage,
            "initial-node-group-backoff-duration": self.initial_node_group_backoff_duration,
            "max-node-group-backoff-duration": self.max_node_group_backoff_duration,
            "node-group-backoff-reset-timeout": self.node_group_backoff_reset_timeout,
        }


class SpotFailoverEksNodeGroupsArgs(PlannedOnce, BaseModel):
    """Inputs of SpotFailoverEksNodeGroups."""

    model_config = ARGS_CONFIG

    classes: Annotated[list[GpuClassArgs], unique("classes", "a name", lambda c: c.name)] = Field(min_length=1)
    """GPU classes. Required (at least one)."""
    autoscaler: ClusterAutoscalerSettings = Field(default_factory=ClusterAutoscalerSettings)
    """The cluster autoscaler. Default: see ClusterAutoscalerSettings."""
    priority_expander: PriorityExpander | None = None
    """Tiers of the priority expander. Default: none (derived: scheduler classes first, for Dask schedulers, which only prefer their pool; then small GPU classes above large, each spot group above its on-demand twin; every other group last)."""
    device_plugin_chart_version: ChartVersion = "0.20.0"
    """Version of the NVIDIA device plugin chart installed on the classes that share their GPUs (gpu_sharing), its config map holding each such class's sharing. Default: 0.20.0."""
    device_plugin_image: PinnedImage = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    """NVIDIA device plugin, installed on groups whose AMI does not ship it. Default: nvcr.io/nvidia/k8s-device-plugin:v0.17.1."""
    other_node_groups: list[Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$", max_length=63)]] = Field(default_factory=list)
    """Managed node groups of the cluster outside this component (EksCluster's system group), which explicit tiers may name besides the classes' groups. Default: [] (a stack sets its system group)."""
    provisioner: Provisioner = Provisioner.CLUSTER_AUTOSCALER
    """What provisions the classes' nodes: cluster_autoscaler (managed node groups, SpotFailoverEksNodeGroups) or karpenter (NodePools, KarpenterNodePools). Default: cluster_autoscaler."""
    karpenter: KarpenterSettings = Field(default_factory=KarpenterSettings)
    """Karpenter's controller and disruption settings (provisioner karpenter only). Default: see KarpenterSettings."""

    @model_validator(mode="after")
    def _provisioner(self) -> SpotFailoverEksNodeGroupsArgs:
        """Settings of the other provisioner are refused, one line each, naming the key, the value and the fix."""
        problems = provisioner_problems(self)
        if len(problems) == 1:
            loc, message, value = problems[0]
            raise field_error("SpotFailoverEksNodeGroupsArgs", loc, message, value)
        if problems:
            raise ValidationError.from_exception_data(
                "SpotFailoverEksNodeGroupsArgs",
                [InitErrorDetails(type=PydanticCustomError("invalid_combination", m), loc=loc, input=v) for loc, m, v in problems],
            )
        return self

    @model_validator(mode="after")
    def _expander(self) -> SpotFailoverEksNodeGroupsArgs:
        model = "SpotFailoverEksNodeGroupsArgs"
        uses_priority = Expander.PRIORITY in self.autoscaler.expanders
        if self.priority_expander is not None and not uses_priority:
            raise field_error(
                model,
                ("autoscaler", "expanders"),
                "priority_expander is set but the expander chain has no priority; put priority first",
                ",".join(e.value for e in self.autoscaler.expanders),
            )
        if uses_priority and self.autoscaler.expanders[0] is not Expander.PRIORITY:
            raise field_error(
                model,
                ("autoscaler", "expanders"),
                "priority must come first in the expander chain, or spot would not be tried first",
                ",".join(e.value for e in self.autoscaler.expanders),
            )
        own = [g.name for c in self.classes for g in c.node_groups()]
        clash = sorted(set(own) & set(self.other_node_groups))
        if clash:
            raise field_error(
                model,
                "other_node_groups",
                f"{', '.join(clash)} is a node group of this component's classes, not another one",
                ",".join(self.other_node_groups),
            )
        if self.priority_expander is None:
            return self
        expander = self.priority_expander
        for group in own:
            if expander.priority_of(example_asg_name(group)) is None:
                raise field_error(
                    model,
                    ("priority_expander", "tiers"),
                    f"node group {group} (ASG {example_asg_name(group)}) matches no tier; add a pattern for it",
                    group,
                )
        every = [*own, *self.other_node_groups]
        for i, tier in enumerate(expander.tiers):
            for pattern in tier.patterns:
                if not any(re2_pattern(pattern).search(example_asg_name(g)) for g in every):
                    raise field_error(
                        model,
                        ("priority_expander", "tiers", i, "patterns"),
                        f"pattern {pattern!r} matches no node group ({', '.join(every)})",
                        pattern,
                    )
        for cls in self.classes:
            groups = cls.node_groups()
            for earlier, later in itertools.pairwise(groups):
                first, then = (expander.priority_of(example_asg_name(g.name)) or 0 for g in (earlier, later))
                if then < first:
                    continue
                if earlier.rung.kind is RungKind.SPOT and later.rung.kind is RungKind.ON_DEMAND:
                    if expander.allow_on_demand_above_spot:
                        continue
                    raise field_error(
                        model,
                        ("priority_expander", "tiers"),
                        f"on-demand group {later.name} has priority {then}, not below its spot twin {earlier.name} "
                        f"({first}); rank spot higher or set allow_on_demand_above_spot",
                        then,
                    )
                raise field_error(
                    model,
                    ("priority_expander", "tiers"),
                    f"group {later.name} (rung {later.rung}) has priority {then}, not below {earlier.name} (rung {earlier.rung}, "
                    f"{first}), which comes before it in class {cls.name}'s capacity_ladder; rank the groups in the ladder's order",
                    then,
                )
        # Spot groups sharing a priority: the autoscaler picks among them and, when spot runs out
        # in each, can cycle between them without ever reaching on-demand (FACTS: give each its own).
        spot_by_priority: dict[int, list[str]] = {}
        for planned in (g for c in self.classes for g in c.node_groups()):
            if planned.capacity is CapacityType.SPOT:
                priority = expander.priority_of(example_asg_name(planned.name))
                spot_by_priority.setdefault(priority or 0, []).append(planned.name)
        for priority, names in sorted(spot_by_priority.items(), reverse=True):
            if len(names) > 1:
                raise field_error(
                    model,
                    ("priority_expander", "tiers"),
                    f"spot groups {', '.join(names)} share priority {priority}: the autoscaler can cycle among them "
                    "without reaching on-demand; give each spot group its own tier",
                    priority,
                )
        return self

    def effective_expander(self) -> PriorityExpander:
        """The tiers in force: the given ones, or the derived order (``planned_expander``)."""
        return self.planned_expander

    @functools.cached_property
    def planned_expander(self) -> PriorityExpander:
        """The tiers in force, derived once for these Args: the given ones, or the derived order (as the Kubeflow-on-EKS guide: spot-small 50 >
        on-demand-small 40 > spot-large 30 > on-demand-large 20) with every other group at 1."""
        if self.priority_expander is not None:
            return self.priority_expander
        # Scheduler classes first. Dask schedulers only prefer their pool (so that they spill onto
        # GPU pools when it is full rather than capping how many Dask clusters can run), and the
        # autoscaler ignores preferences when it picks a group to grow: ranked first, the
        # scheduler group is the one grown for them, not a GPU spot group a reclaim would empty.
        groups = [g.name for c in self.classes_in_order() for g in c.node_groups()]
        tiers = [PriorityTier(priority=10 * (len(groups) + 1 - i), patterns=[asg_name_pattern(g)]) for i, g in enumerate(groups)]
        # Other node groups (the system group) stay available, below every GPU tier.
        tiers.append(PriorityTier(priority=1, patterns=[".*"]))
        return PriorityExpander(tiers=tiers)

    @functools.cached_property
    def planned_node_pools(self) -> tuple[NodePoolPlan, ...]:
        """The classes' Karpenter NodePools (karpenter_plan.plan_node_pools: names, weights, limits), planned once for
        these Args: KarpenterNodePools and the stack's plan (StackConfig.karpenter_plan) read this one."""
        return plan_node_pools(self)

    def classes_in_order(self) -> list[GpuClassArgs]:
        """The classes in the order their capacity is tried, the one order of the priority expander's derived tiers and
        of Karpenter's NodePool weights: scheduler classes first, then by the plan's GPUs and vCPUs per node
        (NodePoolShape), smaller first."""
        return sorted(self.classes, key=lambda c: (c.role is not ClassRole.SCHEDULER, c.planned_shape.gpus_per_node, c.planned_shape.vcpus))

    def instance_types(self) -> list[str]:
        return sorted({t for c in self.classes for t in c.instance_types})

    def priorities_in_force(self) -> PriorityExpander | None:
        """The priority expander's tiers when the expander chain uses it; None otherwise."""
        return self.effective_expander() if Expander.PRIORITY in self.autoscaler.expanders else None

    def pool_shapes(self) -> list[NodePoolShape]:
        """Every class as workloads see it (the plan's, eks_plan.class_shape; each class's ``planned_shape``)."""
        return [cls.planned_shape for cls in self.classes]


class KarpenterNodePoolsArgs(SpotFailoverEksNodeGroupsArgs):
    """Inputs of KarpenterNodePools: the same GPU classes and tiers as SpotFailoverEksNodeGroupsArgs, provisioned by Karpenter."""

    provisioner: Provisioner = Provisioner.KARPENTER
    """What provisions the classes' nodes; KarpenterNodePools takes karpenter only. Default: karpenter."""

    @classmethod
    def of(cls, args: SpotFailoverEksNodeGroupsArgs) -> KarpenterNodePoolsArgs:
        """The stack's eks_node_groups (provisioner karpenter) as KarpenterNodePools' Args: the settings it was given,
        validated again; its classes are the same (validated) objects, so what they planned is not planned again.
        Args that are KarpenterNodePoolsArgs already (a stack's eks_node_groups with provisioner karpenter) are
        returned as they are, with what they planned."""
        if isinstance(args, cls):
            return args
        given = args.model_dump(mode="json", exclude_unset=True, exclude={"classes"})
        return cls.model_validate({**given, "classes": list(args.classes)})
