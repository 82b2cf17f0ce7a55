"""Documentation generated from the code, so it is never written twice (`gpu-platform docs --write`;
`--check` fails when a generated file differs from what the code gives).

- README.md and docs/index.md (the site's home): the table of components, one line each (readme.py).
- docs/reference/stack-config.md: every key a stack file may set (stack.py).
- docs/reference/components.md: every component's import, type token, constructor, live inputs, outputs
  and Args (components.py).
- docs/reference/catalog.md: the machine catalog (catalog.py).
- docs/reference/policies.md: every rule of the policy pack and its settings (policies.py).
- docs/features/matrix.md: every pair of optional features on every provisioner, works or refused (matrix.py;
  tests/infra/test_feature_matrix.py proves the same cells through the program and the tools).
- docs/reference/cli.md: every command and flag, from the argparse parser; the command line hands its
  renderer in (infra/cli/docs.py), since no application imports the command line.
- stacks/README.md, components/README.md: what the folder holds, pointing at the references.
- Pulumi.yaml: the typed `config:` section (Pulumi types scalars and arrays only, so the object keys such
  as ``gke`` are documented in the stack config reference and validated by the model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpu_platform.infra.docs.catalog import catalog_reference
from gpu_platform.infra.docs.components import all_components, component_reference
from gpu_platform.infra.docs.markdown import GENERATED, anchor
from gpu_platform.infra.docs.matrix import matrix_page
from gpu_platform.infra.docs.models import reachable_models
from gpu_platform.infra.docs.policies import policy_reference
from gpu_platform.infra.docs.readme import components_readme, render_index, render_readme, stacks_readme
from gpu_platform.infra.docs.stack import config_reference, pulumi_config_section, render_pulumi_yaml
from gpu_platform.infra.errors import CommandError

__all__ = [
    "GENERATED",
    "REFERENCE",
    "all_components",
    "anchor",
    "catalog_reference",
    "component_reference",
    "config_reference",
    "generated_files",
    "policy_reference",
    "pulumi_config_section",
    "reachable_models",
    "sync_docs",
]

REFERENCE = Path("docs") / "reference"
"""Where the generated reference pages live in the project."""

Renderer = Callable[[str], str]
"""The wanted text of a generated file, given its current text ("" when it does not exist yet)."""


def generated_files(project_dir: Path) -> list[tuple[Path, Renderer]]:
    """Every file this module generates (the command line adds its own reference), with its renderer."""
    reference = project_dir / REFERENCE
    return [
        (project_dir / "README.md", render_readme),
        (project_dir / "docs" / "index.md", render_index),
        (reference / "stack-config.md", lambda _: config_reference()),
        (reference / "components.md", lambda _: component_reference()),
        (reference / "catalog.md", lambda _: catalog_reference()),
        (reference / "policies.md", lambda _: policy_reference()),
        (project_dir / "docs" / "features" / "matrix.md", lambda _: matrix_page(project_dir)),
        (project_dir / "stacks" / "README.md", lambda _: stacks_readme()),
        (project_dir / "components" / "README.md", lambda _: components_readme()),
        (project_dir / "Pulumi.yaml", render_pulumi_yaml),
    ]


def sync_docs(project_dir: Path, write: bool = False, pages: Sequence[tuple[Path, Renderer]] = ()) -> list[Path]:
    """The generated files that are out of date (rewritten when ``write``), ``pages`` included."""
    from gpu_platform.infra.output import file_target, write_outputs

    stale = []
    outputs: list[Any] = []
    edited = {project_dir / "README.md", project_dir / "docs" / "index.md", project_dir / "Pulumi.yaml"}  # generated in part: they must exist
    for path, render in [*generated_files(project_dir), *pages]:
        try:
            current = path.read_bytes().decode("utf-8") if path.exists() or path in edited else ""
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text (offset {exc.start})"
            raise CommandError(f"{path}: cannot read: {why}") from None
        wanted = render(current)
        if wanted != current:
            stale.append(path)
            if write:
                outputs.append((file_target("--write", str(path)), wanted.encode("utf-8")))
    if write:
        write_outputs(outputs)  # every file or none
    return stale
