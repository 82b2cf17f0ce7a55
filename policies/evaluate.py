"""Run the pack's rules without the policy engine: the offline preview and the tests.

Policy config uses the file format of `pulumi preview --policy-pack-config FILE`: a JSON
object whose keys are rule names (or "all") and whose values are an enforcement level or
an object of the rule's settings, e.g.
``{"all": "mandatory", "gpu-stack-budget": {"maxGpusPerStack": 256}}``.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, create_model

from gpu_platform.components.core.models import key_path
from gpu_platform.policies.rules import RULES, Enforcement, Resource, ResourceRule, RuleConfig

__all__ = ["Finding", "PolicyConfigError", "PolicyConfigFile", "evaluate", "load_policy_config", "read_policy_config"]


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


def _level_or_settings(value: Any) -> Any:
    """A rule's (or "all"'s) value: an enforcement level, or an object of settings."""
    if isinstance(value, str):
        if value not in set(Enforcement):
            raise ValueError("enforcement level must be advisory, mandatory or disabled")
        return {"enforcementLevel": value}
    if not isinstance(value, dict):
        raise ValueError(f"expected an enforcement level ({', '.join(e.value for e in Enforcement)}) or an object of settings")
    return value


def _file_model() -> type[BaseModel]:
    """The shape of a policy config file: "all" and one optional key per rule."""
    fields: dict[str, Any] = {
        name: (Annotated[config, BeforeValidator(_level_or_settings)], None)
        for name, config in [("all", RuleConfig), *((rule.name, rule.config) for rule in RULES)]
    }
    return create_model("PolicyConfigFile", __config__=ConfigDict(extra="forbid", frozen=True), **fields)


PolicyConfigFile = _file_model()
"""The file of ``pulumi preview --policy-pack-config``: {"all" | <rule>: <level> | {settings}}."""


def _show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _lines(exc: ValidationError) -> list[str]:
    """One line per problem, naming the key path in the file."""
    lines = []
    for error in exc.errors():
        loc = error["loc"]
        path = key_path(loc)
        if error["type"] == "extra_forbidden":
            if len(loc) == 1:
                known = ["all", *(rule.name for rule in RULES)]
                what, allowed = "unknown rule", f"rules: {', '.join(known[1:])}"
            else:
                known = sorted(PolicyConfigFile.model_fields[str(loc[0])].annotation.model_fields)  # type: ignore[union-attr]
                what, allowed = "unknown setting", f"settings: {', '.join(known)}"
            hint = difflib.get_close_matches(str(loc[-1]), known, n=1)
            message = f"{what}; " + (f"did you mean {hint[0]}? " if hint else "") + allowed
            lines.append(f"policy-config:{path}: {message}")
            continue
        message = error["msg"].removeprefix("Value error, ")
        if not loc:
            message = f"expected a JSON object of rule names to settings (got {_show(error['input'])})"
            lines.append(f"policy-config: {message}")
            continue
        line = f"policy-config:{path}: {message} (got {_show(error['input'])})"
        if line not in lines:
            lines.append(line)
    return lines


def load_policy_config(data: Any) -> dict[str, RuleConfig]:
    """Typed settings for every rule; PolicyConfigError with one line per problem on a bad file."""
    try:
        document = PolicyConfigFile.model_validate(data)
    except ValidationError as exc:
        raise PolicyConfigError(_lines(exc)) from None
    given = document.model_fields_set
    # The file's model is made from RULES when the module loads: its fields are read by name.
    default: RuleConfig | None = getattr(document, "all", None) if "all" in given else None
    configs: dict[str, RuleConfig] = {}
    for rule in RULES:
        own = getattr(document, rule.name) if rule.name in given else rule.config()
        level = own.enforcementLevel
        if "enforcementLevel" not in own.model_fields_set and default is not None:
            level = default.enforcementLevel
        configs[rule.name] = own.model_copy(update={"enforcementLevel": level})
    return configs


class _DuplicateKeyError(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique (json's default keeps the last of a repeated key)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def read_policy_config(path: Path | None) -> dict[str, RuleConfig]:
    """The policy config file at ``path`` (none: every rule's defaults)."""
    if path is None:
        return load_policy_config({})
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise PolicyConfigError([f"--policy-config {path}: cannot read ({exc.strerror or type(exc).__name__})"]) from None
    except UnicodeDecodeError as exc:
        raise PolicyConfigError(
            [f"--policy-config {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); save it as UTF-8 JSON"]
        ) from None
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKeyError as exc:
        raise PolicyConfigError([f"--policy-config {path}: key {exc.args[0]!r} appears twice in one object; keep one"]) from None
    except json.JSONDecodeError as exc:
        raise PolicyConfigError([f"--policy-config {path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"]) from None
    except RecursionError:
        raise PolicyConfigError([f"--policy-config {path}: invalid JSON: nested too deeply"]) from None
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
