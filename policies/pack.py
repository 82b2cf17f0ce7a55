"""The CrossGuard policies: each rule of policies.rules wrapped for the policy engine."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpu_platform.policies.rules import RULES, Resource, ResourceRule, RuleConfig, StackRule

__all__ = ["build_policies"]


def _schema(config: type[RuleConfig]) -> PolicyConfigSchema | None:
    schema = config.model_json_schema()
    properties = {k: v for k, v in schema.get("properties", {}).items() if k != "enforcementLevel"}
    for value in properties.values():
        value.pop("title", None)
    return PolicyConfigSchema(properties=properties) if properties else None


def _config(rule: ResourceRule | StackRule, given: Any) -> RuleConfig:
    fields = set(rule.config.model_fields) - {"enforcementLevel"}
    return rule.config.model_validate({k: v for k, v in dict(given or {}).items() if k in fields})


def _described(rule: ResourceRule | StackRule) -> dict[str, Any]:
    """What both kinds of policy say about a rule; mandatory unless the policy config says otherwise."""
    return {
        "name": rule.name,
        "description": rule.description,
        "enforcement_level": EnforcementLevel.MANDATORY,
        "config_schema": _schema(rule.config),
        "remediation_steps": rule.fix,
    }


def _resource_policy(rule: ResourceRule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        resource = Resource(args.resource_type, args.name, args.urn, args.props, bool(args.opts.protect))
        for message in rule.check(resource, _config(rule, args.get_config())):
            report(f"{message}. Fix: {rule.fix}", None)

    return ResourceValidationPolicy(validate=validate, **_described(rule))


def _stack_policy(rule: StackRule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        resources = [Resource(r.resource_type, r.name, r.urn, r.props, bool(r.opts.protect)) for r in args.resources]
        urns = {r.name: r.urn for r in resources}
        for name, message in rule.check(resources, _config(rule, args.get_config())):
            report(f"{message}. Fix: {rule.fix}", urns.get(name))

    return StackValidationPolicy(validate=validate, **_described(rule))


def build_policies() -> list[Policy]:
    return [_resource_policy(r) if isinstance(r, ResourceRule) else _stack_policy(r) for r in RULES]
