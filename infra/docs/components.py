"""The component reference (docs/reference/components.md) and the README's table of components: every
ComponentResource of `gpu_platform.components`, read from the classes the same way ``help()`` shows them."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from typing import Any

import pulumi
from pydantic import BaseModel

from gpu_platform import components
from gpu_platform.components.core.cluster import CLUSTER_COMPONENTS, ClusterComponent
from gpu_platform.components.core.outputs import class_statement, component_outputs
from gpu_platform.infra.docs.markdown import GENERATED, anchor, cell, table
from gpu_platform.infra.docs.models import model_tables, reachable_models

__all__ = ["all_components", "component_reference", "component_table", "import_path"]


def all_components() -> list[type[pulumi.ComponentResource]]:
    """Every component: those `gpu_platform.components` exports, in its order, then any other
    ComponentResource a module of the package defines, in module order."""
    exported = (getattr(components, name) for name in components.__all__)
    found = [c for c in exported if isinstance(c, type) and issubclass(c, pulumi.ComponentResource)]
    for info in pkgutil.walk_packages(components.__path__, f"{components.__name__}."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, pulumi.ComponentResource)
                and value.__module__ == module.__name__
                and not value.__name__.startswith("_")
                and value not in found
            ):
                found.append(value)
    return found


def import_path(cls: type[Any]) -> str:
    """Where a program imports the component from: the package when it exports it, else its module."""
    if cls.__name__ in components.__all__ and getattr(components, cls.__name__) is cls:
        return f"from gpu_platform.components import {cls.__name__}"
    return f"from {cls.__module__} import {cls.__name__}"


def _type_token(cls: type[Any]) -> str:
    """The token the component registers under, read from its ``super().__init__`` call (in the one parse of its
    file that its outputs are read from)."""
    statement = class_statement(cls)
    if statement is None:
        raise ValueError(f"{cls.__name__} has no source file to read its type token from")
    for node in ast.walk(statement):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__init__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            return node.args[0].value
    raise ValueError(f"{cls.__name__} registers no literal type token")


def _param(p: inspect.Parameter) -> str:
    if p.default is inspect.Parameter.empty:
        return p.name
    simple = p.default is None or isinstance(p.default, (bool, int, float, str)) or p.default == ()
    return f"{p.name}={p.default!r}" if simple else f"{p.name}=..."


def _doc(member: Any) -> str:
    return inspect.cleandoc(getattr(member, "__doc__", None) or "").replace("\n", " ")


def _summary(cls: type[Any]) -> str:
    return inspect.cleandoc(cls.__doc__ or "").split("\n\n", 1)[0].replace("\n", " ")


def _composition(cls: type[Any], keyword: dict[str, inspect.Parameter]) -> list[str]:
    """What a component gives as ``cluster=`` (a cluster component) and what its ``cluster=`` takes."""
    lines = []
    if issubclass(cls, ClusterComponent):
        lines.append(
            f"- As `cluster=` of the add-ons: kind (`cloud`) `{_doc(cls.cloud).rstrip('.')}`; pools (`pool_shapes()`): "
            f"{_doc(cls.pool_shapes)} Waits for (`ready()`): {_doc(cls.ready)} Scrapes (`metric_sources()`): "
            f"{_doc(cls.metric_sources)}"
        )
    if "cluster" in keyword and isinstance(keyword["cluster"].annotation, str):
        accepted = [a.strip() for a in keyword["cluster"].annotation.split("|") if a.strip() != "None"]
        shown = " or ".join(CLUSTER_COMPONENTS if a == "ClusterComponent" else f"`{a}`" for a in accepted)
        optional = " (optional)" if keyword["cluster"].default is not inspect.Parameter.empty else ""
        lines.append(f"- `cluster=`{optional}: {shown}")
    return lines


def _args_model(cls: type[Any]) -> type[BaseModel] | None:
    """The component's Args model, from the annotation of its constructor's ``args``."""
    args = inspect.signature(cls.__init__).parameters.get("args")
    model = args.annotation if args is not None else None
    if isinstance(model, str):
        model = getattr(components, model, None) or getattr(inspect.getmodule(cls), model, None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def component_reference() -> str:
    """docs/reference/components.md: per component its import, type token, constructor, live inputs and
    outputs; then the tables of every Args model the components take."""
    found = all_components()
    lines = [
        "# Component reference",
        "",
        GENERATED,
        "",
        f"The {len(found)} components. Every component is built the same way: "
        "`Component(name, args, opts=None, *, <live inputs>)`. "
        "`args` is a frozen pydantic model (its keys: [Args](#args) below; a stack file sets the same models, "
        "[stack config reference](stack-config.md)); live "
        "inputs are Pulumi resources, providers and secrets, keyword-only. Children are named "
        "`<name>-<role>` and parented to the component; outputs are attributes of the component object "
        "(`help(Component)` lists them too).",
        "",
        "Components compose by instance: a cluster component (`GpuGkeCluster`, `EksCluster`, or "
        "`SpotFailoverEksNodeGroups` built with `cluster=<EksCluster>`) passed as the keyword `cluster=` "
        "is what the add-ons run on. The add-on takes the cluster's Kubernetes provider (`provider`), waits "
        "for what its workloads need (`ready()`: the node pools or node groups), reads its kind (`cloud`: "
        "`gke` or `eks`) and places pods on its pools (`pool_shapes()`, what other languages read as the "
        "`poolShapes` output). Options given in `opts` are kept and take precedence. Other Pulumi languages "
        "pass the typed descriptors instead (`MonitoredCluster`, `poolShapes` lists). Anything else given "
        "as `cluster=` (or as any live input) is a `pulumi.InputPropertyError` naming the keyword and what it "
        "accepts, before anything is registered.",
        "",
    ]
    models: list[type[BaseModel]] = []
    for cls in found:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        model = _args_model(cls)
        lines += [f"## {cls.__name__}", "", _summary(cls), ""]
        lines.append(f"- Import: `{import_path(cls)}`")
        lines.append(f"- Type token: `{_type_token(cls)}`")
        if model is not None:
            lines.append(f"- Args: [{model.__name__}](#{model.__name__.lower()})")
            models += [m for m in reachable_models(model) if m not in models]
        shown = ", ".join(_param(p) for p in params if p.kind is not p.KEYWORD_ONLY)
        keyword = [p for p in params if p.kind is p.KEYWORD_ONLY]
        if keyword:
            shown += ", *, " + ", ".join(_param(p) for p in keyword)
        lines.append(f"- Constructor: `{cls.__name__}({shown})`")
        lines += _composition(cls, {p.name: p for p in keyword})
        lines += [""]
        lines += table(("output", "type", "description"), ((f"`{o.name}`", f"`{cell(o.type)}`", cell(o.description)) for o in component_outputs(cls)))  # type: ignore[arg-type]  # mypy#20409: a class is Hashable; mypy checks type[X] with its unbound __hash__
        lines.append("")
    lines += [
        "## Args",
        "",
        "Every model the components' `args` take, and the models inside them: each key with its type, default, "
        "allowed values and description. The rules between keys are the models' validators; the descriptions say them.",
        "",
    ]
    lines += model_tables(models)
    return "\n".join(lines).rstrip() + "\n"


def component_table(reference: str) -> str:
    """The README's table: one line per component, linking its section of the reference at ``reference``."""
    rows = []
    for cls in all_components():
        first = _summary(cls).split(". ")[0].rstrip(".")
        rows.append((f"[`{cls.__name__}`]({reference}#{anchor(cls.__name__)})", cell(first + ".")))
    return "\n".join(table(("component", "what it builds"), rows)) + "\n"
