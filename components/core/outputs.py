"""A component's outputs, read from its annotated, docstring'd class attributes.

Every component declares its outputs the same way (DESIGN.md): an annotated class attribute
followed by its docstring. Python keeps such docstrings nowhere at run time, so they are read
from the class's source once. The same list feeds ``help()`` (appended to the class
docstring by `document_outputs`) and the outputs reference in the README
(``gpu-platform docs --write``), so the two cannot drift apart.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pulumi

__all__ = ["ComponentOutput", "attribute_docs", "class_statement", "component_outputs", "document_outputs"]

_HEADING = "Outputs:"


@dataclass(frozen=True)
class ComponentOutput:
    """One output of a component: the attribute, its annotation as written, and its docstring."""

    name: str
    type: str
    description: str


@cache
def _classes_in(filename: str) -> dict[str, ast.ClassDef]:
    """Every class statement of a source file by its qualified name (``Outer.Inner``, ``f.<locals>.C``).

    One parse per file: ``inspect.getsource`` would find each class by scanning every loaded module for the
    file and parsing the whole file again, per class, at every import of the package."""
    found: dict[str, ast.ClassDef] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(f"{prefix}{node.name}", node)
                walk(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                walk(node.body, f"{prefix}{node.name}.<locals>.")

    walk(ast.parse(Path(filename).read_text(encoding="utf-8")).body, "")
    return found


def class_statement(cls: type) -> ast.ClassDef | None:
    """The statement that defines ``cls`` in its module's source file; None without one (a class made in
    memory, or a module without a file)."""
    filename = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if not filename or not filename.endswith(".py"):
        return None
    try:
        return _classes_in(filename).get(cls.__qualname__)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _declared(cls: type) -> list[ComponentOutput]:
    """The outputs declared in ``cls``'s own body, in source order."""
    node = class_statement(cls)
    if node is None:  # no source (a frozen or generated class): nothing to read
        return []
    found: list[ComponentOutput] = []
    body = node.body
    for statement, following in zip(body, [*body[1:], None], strict=True):
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        name = statement.target.id
        if name.startswith("_"):
            continue
        description = ""
        if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant) and isinstance(following.value.value, str):
            description = " ".join(inspect.cleandoc(following.value.value).split())
        found.append(ComponentOutput(name, ast.unparse(statement.annotation), description))
    return found


def attribute_docs(cls: type) -> dict[str, str]:
    """The docstrings of a class's annotated attributes (a dataclass's fields), by name."""
    return {o.name: o.description for o in _declared(cls) if o.description}


@cache
def component_outputs(cls: type[pulumi.ComponentResource]) -> tuple[ComponentOutput, ...]:
    """Every output of a component class, its bases' first (a subclass's declaration wins)."""
    merged: dict[str, ComponentOutput] = {}
    for klass in reversed(cls.__mro__):
        if not issubclass(klass, pulumi.ComponentResource) or klass.__module__.startswith("pulumi"):
            continue
        for output in _declared(klass):
            merged.pop(output.name, None)
            merged[output.name] = output
    return tuple(merged.values())


def document_outputs(cls: type[pulumi.ComponentResource]) -> type[pulumi.ComponentResource]:
    """Append the outputs to ``cls.__doc__`` so ``help(cls)`` lists them. Idempotent."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    if f"\n{_HEADING}\n" in f"\n{doc}\n":
        return cls
    outputs = component_outputs(cls)  # type: ignore[arg-type]  # mypy#20409: a class is Hashable, mypy checks type[X] with X's unbound __hash__
    if not outputs:
        return cls
    lines = [doc, "", _HEADING]
    for output in outputs:
        lines.append(f"    {output.name} ({output.type}):")
        lines += [f"        {line}" for line in textwrap.wrap(output.description or "(undocumented)", 88)]
    cls.__doc__ = "\n".join(lines).strip() + "\n"
    return cls
