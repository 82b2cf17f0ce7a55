"""Karpenter as the EKS provisioner: the provisioner choice and Karpenter's typed settings.

An EKS stack's GPU classes (SpotFailoverEksNodeGroupsArgs.classes) are provisioned either by the
cluster autoscaler (managed node groups, the default) or by Karpenter (a NodePool per class and
capacity tier, an EC2NodeClass per class): ``provisioner`` chooses. These settings are Karpenter's
own: the controller's chart and the NodePools' disruption. What a node is (instance types, AMI
family, root volume, labels, taints, bounds) stays on the class, read by either provisioner.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, Field, field_validator, model_validator

from gpu_platform.components.core.durations import cron_problem
from gpu_platform.components.core.kube import ChartVersion
from gpu_platform.components.core.models import ARGS_CONFIG, field_error, unique

__all__ = [
    "KARPENTER_CHART",
    "KARPENTER_CRD_CHART",
    "KARPENTER_NAMESPACE",
    "KARPENTER_REPO",
    "KARPENTER_SERVICE_ACCOUNT",
    "ConsolidationPolicy",
    "DisruptionBudget",
    "DisruptionReason",
    "KarpenterDisruption",
    "KarpenterSettings",
    "Provisioner",
]

KARPENTER_CHART = "karpenter"
KARPENTER_CRD_CHART = "karpenter-crd"
KARPENTER_REPO = "oci://public.ecr.aws/karpenter"
"""Karpenter publishes both charts to this OCI registry only."""
KARPENTER_NAMESPACE = "kube-system"
"""The controller's namespace: Karpenter's EKS getting-started guide installs it in kube-system (since v0.33), which exists on every cluster."""
KARPENTER_SERVICE_ACCOUNT = "karpenter"
"""The controller's service account (the chart's fullname, set explicitly): the IRSA trust names it."""

_KARPENTER_DURATION = r"^(([0-9]+(s|m|h))+|Never)$"
"""consolidateAfter and expireAfter as the NodePool CRD accepts them (Go durations of s, m, h, or Never)."""


class Provisioner(StrEnum):
    """What provisions an EKS cluster's GPU nodes."""

    CLUSTER_AUTOSCALER = "cluster_autoscaler"
    """The cluster autoscaler growing a managed node group per class and capacity tier (priority expander: spot, then on-demand)."""
    KARPENTER = "karpenter"
    """Karpenter launching instances for a NodePool per class and capacity tier (weights: spot, then on-demand)."""


class ConsolidationPolicy(StrEnum):
    """Which nodes Karpenter's consolidation may remove or replace."""

    WHEN_EMPTY = "WhenEmpty"
    """Only nodes without workload pods (a GPU step or Dask worker is never moved to save money)."""
    WHEN_EMPTY_OR_UNDERUTILIZED = "WhenEmptyOrUnderutilized"
    """Also nodes whose pods fit elsewhere or on a cheaper replacement (pods are evicted and rescheduled)."""


class DisruptionReason(StrEnum):
    """The disruption methods a budget may be limited to (the NodePool CRD's enum)."""

    UNDERUTILIZED = "Underutilized"
    """Consolidation of nodes whose pods fit elsewhere (WhenEmptyOrUnderutilized)."""
    EMPTY = "Empty"
    """Consolidation of nodes without workload pods."""
    DRIFTED = "Drifted"
    """Replacement of nodes that no longer match their NodePool or EC2NodeClass (a new AMI, a changed spec)."""


class DisruptionBudget(BaseModel):
    """How many of a NodePool's nodes Karpenter may disrupt at once (voluntary disruption only)."""

    model_config = ARGS_CONFIG

    nodes: str = Field(default="10%", pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$")
    """A node count or a percentage of the pool's nodes ("0" blocks disruption while the budget is active). Default: 10% (Karpenter's own)."""
    schedule: str | None = Field(default=None, pattern=r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$")
    """Cron schedule (UTC) when the budget starts being active: five fields in range (minute 0-59, hour 0-23, day 1-31, month 1-12, weekday 0-6; names, ranges, lists and steps allowed) or a descriptor such as @daily; needs duration. Default: none (always active)."""
    duration: str | None = Field(default=None, pattern=r"^(([0-9]+(h|m))|([0-9]+h[0-9]+m))$")
    """How long the budget is active after each schedule start (hours and minutes, e.g. 8h or 1h30m); needs schedule. Default: none."""
    reasons: Annotated[list[DisruptionReason], unique("reasons", "a reason", lambda r: r.value)] = Field(default_factory=list)
    """The disruption methods the budget limits (Underutilized, Empty, Drifted). Default: [] (all of them)."""

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None and (problem := cron_problem(value)):
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _schedule_with_duration(self) -> DisruptionBudget:
        if (self.schedule is None) != (self.duration is None):
            given, missing = ("schedule", "duration") if self.duration is None else ("duration", "schedule")
            raise field_error("DisruptionBudget", missing, f"{given} is set but {missing} is not; set both or neither", getattr(self, given))
        return self

    def spec(self) -> dict[str, object]:
        """The budget as the NodePool's spec.disruption.budgets[] holds it."""
        out: dict[str, object] = {"nodes": self.nodes}
        if self.schedule is not None:
            out |= {"schedule": self.schedule, "duration": self.duration}
        if self.reasons:
            out["reasons"] = [r.value for r in self.reasons]
        return out


class KarpenterDisruption(BaseModel):
    """When Karpenter removes or replaces a GPU NodePool's nodes."""

    model_config = ARGS_CONFIG

    consolidation_policy: ConsolidationPolicy = ConsolidationPolicy.WHEN_EMPTY
    """WhenEmpty, or WhenEmptyOrUnderutilized (Karpenter's default, which evicts running GPU pods to pack nodes). Default: WhenEmpty."""
    consolidate_after: str = Field(default="10m", pattern=_KARPENTER_DURATION)
    """How long a node must be consolidatable before Karpenter acts (the cluster autoscaler's scale_down_unneeded_time default), or Never. Default: 10m."""
    budgets: list[DisruptionBudget] = Field(default_factory=lambda: [DisruptionBudget()], min_length=1, max_length=50)
    """Disruption budgets; the most restrictive active one applies. Default: [{nodes: 10%}]."""
    expire_after: str = Field(default="720h", pattern=_KARPENTER_DURATION)
    """Age at which a node is replaced (fresh AMI and patches), or Never. Default: 720h (Karpenter's own)."""

    def spec(self) -> dict[str, object]:
        """The NodePool's spec.disruption."""
        return {
            "consolidationPolicy": self.consolidation_policy.value,
            "consolidateAfter": self.consolidate_after,
            "budgets": [b.spec() for b in self.budgets],
        }


class KarpenterSettings(BaseModel):
    """The Karpenter controller and how its NodePools disrupt nodes (provisioner: karpenter)."""

    model_config = ARGS_CONFIG

    chart_version: ChartVersion = "1.14.1"
    """karpenter and karpenter-crd charts (oci://public.ecr.aws/karpenter), one version for both. Default: 1.14.1."""
    namespace: str = Field(default="kube-system", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    """Namespace of the controller (its IRSA trust names it): kube-system, where Karpenter's EKS guide installs it; the stack creates no other namespace for it. Default: kube-system."""

    @field_validator("namespace")
    @classmethod
    def _documented(cls, value: str) -> str:
        if value != KARPENTER_NAMESPACE:
            raise ValueError(
                f"Karpenter runs in {KARPENTER_NAMESPACE} (its EKS guide's namespace, which exists on every cluster); "
                f"nothing in this stack creates namespace {value}, so its objects would be refused: use {KARPENTER_NAMESPACE} or leave it out"
            )
        return value

    ami_version: str = Field(default="latest", pattern=r"^(latest|v[0-9]+(\.[0-9]+)*)$")
    """Version of the class's AMI family in the EC2NodeClass alias (al2023@<v>, bottlerocket@<v>; e.g. v20251120 for AL2023, v1.50.0 for Bottlerocket): pin it in production so a new AMI arrives as drift you chose. Default: latest."""
    disruption: KarpenterDisruption = Field(default_factory=KarpenterDisruption)
    """Consolidation, budgets and node expiry of every GPU NodePool. Default: see KarpenterDisruption."""
