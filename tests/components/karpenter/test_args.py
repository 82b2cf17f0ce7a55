"""Karpenter's settings (components/karpenter/args.py): the documented defaults, disruption budgets, and every
validator, including the settings Karpenter and the cluster autoscaler do not share."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gpu_platform.components import SpotFailoverEksNodeGroupsArgs
from gpu_platform.components.karpenter.args import (
    ConsolidationPolicy,
    DisruptionBudget,
    KarpenterDisruption,
    KarpenterSettings,
    Provisioner,
)
from tests.components.karpenter.test_node_pools import karpenter_args
from tests.factories import eks_node_groups, gpu_class


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


def test_a_scheduled_budget_renders_schedule_duration_and_reasons() -> None:
    budget = DisruptionBudget(nodes="0", schedule="0 8 * * mon-fri", duration="10h", reasons=["Empty"])
    assert budget.spec() == {"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "10h", "reasons": ["Empty"]}
