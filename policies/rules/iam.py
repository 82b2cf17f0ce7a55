"""IAM guardrails: no wildcard actions in AWS policies, no basic roles on GCP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from gpu_platform.policies.rules.base import Resource, ResourceRule, RuleConfig

AWS_POLICY_TYPES = {
    "aws:iam/policy:Policy",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/userPolicy:UserPolicy",
    "aws:iam/groupPolicy:GroupPolicy",
}
GCP_ROLE_GRANTS = {
    "gcp:projects/iAMMember:IAMMember",
    "gcp:projects/iAMBinding:IAMBinding",
    "gcp:serviceaccount/iAMMember:IAMMember",
    "gcp:serviceaccount/iAMBinding:IAMBinding",
}
BASIC_ROLES = {"roles/owner", "roles/editor", "roles/viewer"}


def _statements(document: Any) -> list[dict[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError:
            return []
    statements = (document or {}).get("Statement") or []
    return [statements] if isinstance(statements, dict) else list(statements)


def check_wildcard_actions(r: Resource, config: RuleConfig) -> Iterator[str]:
    if r.type not in AWS_POLICY_TYPES:
        return
    for i, statement in enumerate(_statements(r.props.get("policy"))):
        if statement.get("Effect") != "Allow":
            continue
        actions = statement.get("Action") or []
        for action in [actions] if isinstance(actions, str) else actions:
            if action == "*" or action.endswith(":*"):
                yield f"statement {statement.get('Sid') or i} allows {action}; list the actions it needs"


def check_basic_roles(r: Resource, config: RuleConfig) -> Iterator[str]:
    if r.type in GCP_ROLE_GRANTS and r.props.get("role") in BASIC_ROLES:
        yield f"grants the basic role {r.props['role']}; grant a predefined role with only what is needed"


RULES = [
    ResourceRule(
        "iam-no-wildcard-actions",
        "AWS IAM policies (the autoscaler's among them) allow named actions only, never * or service:*.",
        "List the actions; scope mutating ones to this cluster's resources with a tag condition.",
        check_wildcard_actions,
    ),
    ResourceRule(
        "iam-no-basic-roles",
        "No basic GCP role (owner, editor, viewer) is granted.",
        "Grant predefined roles (e.g. roles/container.defaultNodeServiceAccount).",
        check_basic_roles,
    ),
]
