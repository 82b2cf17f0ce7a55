"""IAM guardrails: no wildcard actions in AWS policies, no AWS managed full-access policies, no basic roles on GCP."""

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
AWS_POLICY_ATTACHMENTS = {
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": "policyArn",
    "aws:iam/userPolicyAttachment:UserPolicyAttachment": "policyArn",
    "aws:iam/groupPolicyAttachment:GroupPolicyAttachment": "policyArn",
    "aws:iam/policyAttachment:PolicyAttachment": "policyArn",
    "aws:iam/role:Role": "managedPolicyArns",
    "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive": "policyArns",
}
"""Where an AWS managed policy is attached, and the property holding its ARN (or ARNs)."""
BROAD_MANAGED_POLICIES = ("AdministratorAccess", "PowerUserAccess")
"""AWS managed policies that grant (nearly) every action, besides the ``*FullAccess`` ones."""


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


def _broad_managed_policy(arn: Any) -> str | None:
    """The name of an AWS managed policy granting a service's (or every service's) full access, else None."""
    if not isinstance(arn, str) or ":iam::aws:policy/" not in arn:
        return None
    name = arn.rsplit("/", 1)[-1]
    return name if name.endswith("FullAccess") or name in BROAD_MANAGED_POLICIES else None


def check_full_access_managed_policies(r: Resource, config: RuleConfig) -> Iterator[str]:
    key = AWS_POLICY_ATTACHMENTS.get(r.type)
    if key is None:
        return
    value = r.props.get(key)
    for arn in value if isinstance(value, list) else [value]:
        if (name := _broad_managed_policy(arn)) is not None:
            yield f"attaches the AWS managed policy {name}, which allows every action of its service(s)"


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
        "iam-no-full-access-managed-policies",
        "No AWS managed policy granting a service's full access (*FullAccess, AdministratorAccess, PowerUserAccess) is attached.",
        "Write a policy with the actions the workload calls, scoped to its resources (or none: see SharedDatasets' FSx CSI role).",
        check_full_access_managed_policies,
    ),
    ResourceRule(
        "iam-no-basic-roles",
        "No basic GCP role (owner, editor, viewer) is granted.",
        "Grant predefined roles (e.g. roles/container.defaultNodeServiceAccount).",
        check_basic_roles,
    ),
]
