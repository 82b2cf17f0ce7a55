"""Run the pack's rules without the policy engine: the offline preview and the tests.

Policy config uses the file format of `pulumi preview --policy-pack-config FILE`: a JSON
object whose keys are rule names (or "all") and whose values are an enforcement level or
an object of the rule's settings, e.g.
``{"all": "mandatory", "gpu-stack-budget": {"maxGpusPerStack": 256}}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from policies.rules import RULES, Enforcement, Resource, ResourceRule, RuleConfig

__all__ = ["Finding", "PolicyConfigError", "evaluate", "load_policy_config", "read_policy_config"]


@dataclass(frozen=True)
class Finding:
    rule: str
    enforcement: Enforcement
    resource: str
    message: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "enforcement": self.enforcement.value,
            "resource": self.resource,
            "message": self.message,
            "fix": self.fix,
        }


class PolicyConfigError(Exception):
    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def load_policy_config(data: dict[str, Any]) -> dict[str, RuleConfig]:
    """Typed settings for every rule; one line per problem on a bad file."""
    from infra.config import format_validation_error

    names = {rule.name: rule for rule in RULES}
    problems = [
        f"policy-config:{key}: unknown rule; rules: {', '.join(names)}" for key in data if key != "all" and key not in names
    ]
    default: dict[str, Any] = {}
    if "all" in data:
        default = {"enforcementLevel": data["all"]} if isinstance(data["all"], str) else dict(data["all"])
    configs: dict[str, RuleConfig] = {}
    for name, rule in names.items():
        own = data.get(name, {})
        settings = {**default, **({"enforcementLevel": own} if isinstance(own, str) else dict(own))}
        try:
            configs[name] = rule.config.model_validate(settings)
        except ValidationError as exc:
            prefix = f"policy-config:{name}"
            problems += [
                prefix + "." + line[len(prefix) + 1 :] for line in format_validation_error(exc, rule.config, prefix)
            ]
    if problems:
        raise PolicyConfigError(problems)
    return configs


def read_policy_config(path: Path | None) -> dict[str, RuleConfig]:
    if path is None:
        return load_policy_config({})
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise PolicyConfigError([f"{path}: cannot read ({exc.strerror})"]) from None
    except json.JSONDecodeError as exc:
        raise PolicyConfigError([f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}"]) from None
    if not isinstance(data, dict):
        raise PolicyConfigError([f"{path}: expected a JSON object of rule names to settings"])
    return load_policy_config(data)


def evaluate(resources: list[Resource], configs: dict[str, RuleConfig] | None = None) -> list[Finding]:
    """Every violation of every enabled rule over the stack's resources."""
    configs = configs or load_policy_config({})
    findings: list[Finding] = []
    for rule in RULES:
        config = configs[rule.name]
        if config.enforcementLevel is Enforcement.DISABLED:
            continue
        if isinstance(rule, ResourceRule):
            pairs = [(r.name, message) for r in resources for message in rule.check(r, config)]
        else:
            pairs = list(rule.check(resources, config))
        findings += [Finding(rule.name, config.enforcementLevel, name, message, rule.fix) for name, message in pairs]
    return findings
