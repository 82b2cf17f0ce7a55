"""Every rule of the pack, as pure functions over resources (see base.py)."""

from gpu_platform.policies.rules import gke, gpu, iam, karpenter, kubeflow, ladders, monitoring, storage, supply_chain, tenancy
from gpu_platform.policies.rules.base import Enforcement, Resource, ResourceRule, RuleConfig, StackRule, Violation

RULES: list[ResourceRule | StackRule] = [
    *gpu.RULES,
    *karpenter.RULES,
    *ladders.RULES,
    *gke.RULES,
    *supply_chain.RULES,
    *iam.RULES,
    *monitoring.RULES,
    *kubeflow.RULES,
    *tenancy.RULES,
    *storage.RULES,
]
"""The pack's rules, in report order. Names are unique and stable: policy config refers to them."""

__all__ = ["RULES", "Enforcement", "Resource", "ResourceRule", "RuleConfig", "StackRule", "Violation"]
