"""The generated parts of the README (its table of contents) and the READMEs of stacks/ and components/,
which point into the docs site's references."""

from __future__ import annotations

import re

from gpu_platform.infra.docs.markdown import GENERATED, anchor
from gpu_platform.infra.errors import CommandError

__all__ = ["TOC_END", "TOC_START", "components_readme", "render_readme", "stacks_readme", "table_of_contents"]

TOC_START = "<!-- toc:start -->"
TOC_END = "<!-- toc:end -->"


def table_of_contents(readme: str) -> str:
    """The README's ``##`` and ``###`` headings as a nested list of links (code blocks skipped)."""
    lines, fenced = [], False
    for line in readme.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        m = re.match(r"^(##|###) (.+)$", line)
        if m:
            indent = "  " if m.group(1) == "###" else ""
            lines.append(f"{indent}- [{m.group(2).strip()}](#{anchor(m.group(2))})")
    return "\n".join(lines) + "\n"


def render_readme(current: str) -> str:
    if TOC_START not in current or TOC_END not in current:
        raise CommandError(f"README.md lacks the table-of-contents markers ({TOC_START} and {TOC_END}); restore them")
    before, rest = current.split(TOC_START, 1)
    after = rest.split(TOC_END, 1)[1]
    return f"{before}{TOC_START}\n**Contents**\n\n{table_of_contents(current)}{TOC_END}{after}"


def stacks_readme() -> str:
    """stacks/README.md: what the folder holds, and where every key is documented."""
    return "\n".join(
        [
            "# Stack files",
            "",
            GENERATED,
            "",
            "One file per stack, `Pulumi.<stack>.yaml`, holding values only: the program is the same for every stack "
            "([create your own stack](../docs/getting-started/create-a-stack.md)). Every key a stack file may set, "
            "with its type, default and allowed values, is in the "
            "[stack config reference](../docs/reference/stack-config.md), generated from the stack config model.",
            "",
        ]
    )


def components_readme() -> str:
    """components/README.md: what the folder holds, and where every component is documented."""
    return "\n".join(
        [
            "# Components",
            "",
            GENERATED,
            "",
            "The importable library, `gpu_platform.components`: one folder per family (`core/`, `pools/`, `catalog/`, "
            "`gke/`, `eks/`, `karpenter/`, ...), each with its Args, plan, resources and component. Every component's "
            "import, type token, constructor, outputs and Args are in the "
            "[component reference](../docs/reference/components.md), and every machine type the components know in the "
            "[machine catalog](../docs/reference/catalog.md), both generated from the code.",
            "",
        ]
    )
