"""Kubeflow guardrails: pipeline storage that survives the install."""

from __future__ import annotations

from collections.abc import Iterator

from gpu_platform.components.kubeflow.args import ARTIFACT_CLAIMS, DATABASE_CLAIMS, PIPELINE_STORAGE_TYPE
from gpu_platform.policies.rules.base import Resource, ResourceRule, RuleConfig


def check_pipeline_storage_retained(r: Resource, config: RuleConfig) -> Iterator[str]:
    """The claims the KubeflowInstall transform sizes must be Pulumi-protected.

    The policy engine shows a resource's protect flag, not retainOnDelete; the transform
    sets both. The claims are children of a remote kustomize component, so this fires in
    `pulumi preview --policy-pack` (not in the offline preview, where they are not registered).
    """
    if r.type != PIPELINE_STORAGE_TYPE:
        return
    name = str((r.props.get("metadata") or {}).get("name") or "")
    if name in ARTIFACT_CLAIMS | DATABASE_CLAIMS and not r.protect:
        kind = "artifact store" if name in ARTIFACT_CLAIMS else "metadata database"
        yield f"the Kubeflow Pipelines {kind} claim {name} is not protected: deleting it deletes every run's data"


RULES = [
    ResourceRule(
        "pipeline-storage-retained",
        "Kubeflow Pipelines' artifact store and metadata database claims are protected and outlive the install.",
        "Keep KubeflowInstall keep_volumes_on_delete true (its transform protects the claims and retains them on delete).",
        check_pipeline_storage_retained,
    ),
]
