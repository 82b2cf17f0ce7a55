"""The generated parts of the README and the site's home (the table of components) and the READMEs of
stacks/ and components/, which point into the docs site's references."""

from __future__ import annotations

from gpu_platform.infra.docs.components import component_table
from gpu_platform.infra.docs.markdown import GENERATED
from gpu_platform.infra.errors import CommandError

__all__ = ["COMPONENTS_END", "COMPONENTS_START", "components_readme", "render_index", "render_readme", "stacks_readme"]

COMPONENTS_START = "<!-- components:start -->"
COMPONENTS_END = "<!-- components:end -->"


def _with_component_table(current: str, name: str, reference: str) -> str:
    """``current`` with the table of every component between its markers, linking ``reference``."""
    if COMPONENTS_START not in current or COMPONENTS_END not in current:
        raise CommandError(f"{name} lacks the component table's markers ({COMPONENTS_START} and {COMPONENTS_END}); restore them")
    before, rest = current.split(COMPONENTS_START, 1)
    after = rest.split(COMPONENTS_END, 1)[1]
    return f"{before}{COMPONENTS_START}\n{component_table(reference)}{COMPONENTS_END}{after}"


def render_readme(current: str) -> str:
    """README.md with its table of components, one line each, linking the component reference."""
    return _with_component_table(current, "README.md", "docs/reference/components.md")


def render_index(current: str) -> str:
    """docs/index.md (the site's home) with the same table, its links relative to docs/."""
    return _with_component_table(current, "docs/index.md", "reference/components.md")


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
