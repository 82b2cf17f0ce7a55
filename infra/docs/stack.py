"""The stack config reference (docs/reference/stack-config.md) and Pulumi.yaml's typed `config:` section,
from the one stack config model (infra/stack/model.py) and the simulator's settings."""

from __future__ import annotations

import enum
from typing import Any

import yaml
from pydantic_core import PydanticUndefined

from gpu_platform.infra.docs.markdown import GENERATED
from gpu_platform.infra.docs.models import model_tables, reachable_models
from gpu_platform.infra.stack.model import StackConfig

__all__ = ["config_reference", "pulumi_config_section", "render_pulumi_yaml"]


def config_reference() -> str:
    """docs/reference/stack-config.md: a table for StackConfig and every model it contains, then the
    simulator's settings, workload files and price tables."""
    lines = [
        "# Stack config reference",
        "",
        GENERATED,
        "",
        "Every key a stack file (`stacks/Pulumi.<stack>.yaml`) may set, with its type, default, allowed values and "
        "description. The same models are the components' Args, so this is also the Args reference for programs that "
        "import the components ([component reference](components.md), which lists every component's Args).",
        "",
        "Stack files set these keys under the `gpu-platform:` namespace "
        "(`gpu-platform:cloud`, `gpu-platform:gke`, ...). Nested keys are snake_case, as in Python. "
        "*allowed* lists the closed sets and bounds a value is checked against; the rules between keys "
        "are in the descriptions.",
        "",
    ]
    lines += model_tables(reachable_models(StackConfig))
    from gpu_platform.infra.simulate.prices import PriceTable
    from gpu_platform.infra.simulate.settings import ModelSettings
    from gpu_platform.infra.simulate.workloads import DeepDive, WorkloadFile

    lines += [
        "## `gpu-platform simulate`: model settings, workload files, price tables",
        "",
        "`--set model.<key>=<value>` (and `--sweep`) set the simulator's ModelSettings, e.g. "
        "`model.autoscaler.scan_interval=5s` or `model.node.gpu_ready=uniform(1m, 2m)`; any other key is a stack key "
        "from the tables above (`gke.gpu_pools[t4].autoscaling.min_nodes=2`). A workload file (`--workload FILE`) is a "
        "WorkloadFile; a price table (`--prices FILE`) a PriceTable. DeepDive documents the deep-dive workload.",
        "",
    ]
    seen: list[Any] = []
    for root in (ModelSettings, WorkloadFile, DeepDive, PriceTable):
        seen += [m for m in reachable_models(root) if m not in seen]
    lines += model_tables(seen)
    return "\n".join(lines).rstrip() + "\n"


def _scalar_type(annotation: Any) -> str | None:
    if isinstance(annotation, type) and issubclass(annotation, bool):
        return "boolean"
    if isinstance(annotation, type) and issubclass(annotation, int):
        return "integer"
    if isinstance(annotation, type) and issubclass(annotation, str):
        return "string"  # includes str enums
    return None


def pulumi_config_section() -> dict[str, Any]:
    """Pulumi.yaml `config:` entries for StackConfig's scalar keys."""
    section: dict[str, Any] = {}
    for name, field in StackConfig.model_fields.items():
        kind = _scalar_type(field.annotation)
        if kind is None:
            continue
        entry: dict[str, Any] = {"type": kind, "description": field.description}
        if field.default is not PydanticUndefined:
            default = field.default
            entry["default"] = default.value if isinstance(default, enum.Enum) else default
        section[name] = entry
    return section


def render_pulumi_yaml(current: str) -> str:
    """Pulumi.yaml with its `config:` section generated, the rest as it is."""
    note = (
        "# The typed config section is generated from infra/stack/model.py (gpu-platform docs --write).\n"
        "# Object keys (gke, ...) are not declared here: Pulumi types scalars and arrays only;\n"
        "# the stack config model validates them and docs/reference/stack-config.md documents them.\n"
    )
    head = current.split("\nconfig:", 1)[0].split("\n" + note.splitlines()[0], 1)[0].rstrip("\n")
    body = yaml.safe_dump({"config": pulumi_config_section()}, sort_keys=False, width=100)
    return f"{head}\n{note}{body}"
