"""The policy rule reference (docs/reference/policies.md): every rule of the pack, from the RULES tables
of `policies/rules/`, with the settings its policy config takes."""

from __future__ import annotations

from gpu_platform.infra.docs.markdown import GENERATED, anchor, cell, table
from gpu_platform.infra.docs.models import allowed_values, default_value, type_name
from gpu_platform.policies.rules import RULES, ResourceRule

__all__ = ["policy_reference"]


def policy_reference() -> str:
    """One row per rule (its name, what it looks at, what it requires and the fix), then each rule's settings."""
    per_resource = sum(1 for r in RULES if isinstance(r, ResourceRule))
    lines = [
        "# Policy rules",
        "",
        GENERATED,
        "",
        f"The policy pack (`policies/`) has {len(RULES)} rules: {per_resource} judge one resource at a time, "
        f"{len(RULES) - per_resource} the whole stack. `pulumi preview --policy-pack policies` and "
        "`gpu-platform preview` run them all; every rule is mandatory unless the policy config says otherwise "
        "([the policy pack](../operating/policy-pack.md)).",
        "",
    ]
    rows = [(f"[`{r.name}`](#{anchor(r.name)})", "resource" if isinstance(r, ResourceRule) else "stack", cell(r.description), cell(r.fix)) for r in RULES]
    lines += table(("rule", "judges", "requires", "fix"), rows)
    lines += [
        "",
        "## Settings",
        "",
        "What each rule's entry in the policy config (`--policy-config FILE`, `pulumi preview --policy-pack-config`) "
        'may set: `{"<rule>": {"enforcementLevel": ..., <settings>}}`, or `{"all": "<level>"}` for every rule.',
        "",
    ]
    for r in RULES:
        lines += [f"### {r.name}", ""]
        fields = r.config.model_fields.items()
        lines += table(
            ("setting", "type", "default", "allowed", "description"),
            ((f"`{n}`", cell(type_name(f.annotation)), cell(default_value(f)), cell(allowed_values(f)), cell(f.description or "")) for n, f in fields),
        )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
