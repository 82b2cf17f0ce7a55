"""Pydantic models as reference tables: every field with its description, type, default and allowed
values, read from the model itself (the stack config reference, the components' Args, the simulator's
settings and the policy pack's settings all use these tables)."""

from __future__ import annotations

import enum
import types
import typing
from typing import Any

import pulumi
import yaml
from pydantic import BaseModel, TypeAdapter
from pydantic.fields import FieldInfo

from gpu_platform.infra.docs.markdown import cell, table

__all__ = ["allowed_values", "default_value", "model_tables", "reachable_models", "type_name"]


def reachable_models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """root and every model reachable from its fields, in first-seen order."""
    seen: list[type[BaseModel]] = []

    def visit(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.append(model)
        for field in model.model_fields.values():
            for sub in _nested(field.annotation):
                visit(sub)

    visit(root)
    return seen


def _nested(annotation: Any) -> list[type[BaseModel]]:
    origin = typing.get_origin(annotation)
    if origin is not None:
        return [m for arg in typing.get_args(annotation) for m in _nested(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _is_output_type(annotation: Any) -> bool:
    return annotation is pulumi.Output or typing.get_origin(annotation) is pulumi.Output


def type_name(annotation: Any) -> str:
    """The field's type as a reader names it; a model links to its table on the same page."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        names = [type_name(a) for a in args if a is not type(None) and not _is_output_type(a)]
        if any(_is_output_type(a) for a in args):
            names[-1] += " (in a program, also an Output)"
        text = " or ".join(names)
        return text + " or null" if type(None) in args else text
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is typing.Literal:
        return "str" if all(isinstance(a, str) for a in args) else "literal"
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"map of {type_name(args[0])} to {type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return f"{annotation.__name__} (enum)"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    if getattr(annotation, "__name__", None) == "Dist":
        return 'distribution: a duration ("90s") or uniform(a, b), exponential(mean), normal(mean, sd), lognormal(median, sigma)'
    return getattr(annotation, "__name__", str(annotation))


_BOUNDS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="), ("min_length", "length >="), ("max_length", "length <="))


def _constraints(annotation: Any, metadata: list[Any]) -> list[str]:
    """Bounds and patterns of the field and of the types it is built from, in the order found."""
    found: list[str] = []
    for meta in metadata:
        for attr, sign in _BOUNDS:
            value = getattr(meta, attr, None)
            if value is not None:
                found.append(f"{sign} {value}")
        pattern = getattr(meta, "pattern", None)
        if isinstance(pattern, str):
            found.append(f"matches `{pattern}`")
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *inner = typing.get_args(annotation)
        found += _constraints(base, [m for m in inner if not isinstance(m, FieldInfo)])
        for info in (m for m in inner if isinstance(m, FieldInfo)):
            found += _constraints(base, list(info.metadata))
    elif origin in (typing.Union, types.UnionType, list, dict):
        for arg in typing.get_args(annotation):
            found += [c for c in _constraints(arg, []) if c not in found]
    return found


def _choices(annotation: Any) -> list[str]:
    """The closed set of values the type allows (an enum's values, a Literal's), wherever it appears."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return [f"`{a}`" for a in typing.get_args(annotation)]
    if origin is not None:
        return [c for arg in typing.get_args(annotation) for c in _choices(arg)]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [f"`{m.value}`" for m in annotation]
    return []


def allowed_values(field: FieldInfo) -> str:
    """What the field accepts beyond its type: the closed set of values, and the bounds and patterns.
    Cross-field rules are the model's validators; the description says them."""
    parts = []
    choices = _choices(field.annotation)
    if choices:
        parts.append("one of " + ", ".join(choices))
    parts += _constraints(field.annotation, list(field.metadata))
    return "; ".join(parts) or "-"


def _plain(field: FieldInfo, value: Any) -> Any:
    """``value`` as the model writes it out in JSON (a distribution as its text, an enum as its value)."""
    annotation: Any = typing.Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    return TypeAdapter(annotation).dump_python(value, mode="json")


def default_value(field: FieldInfo) -> str:
    """The default the model applies when the key is left out, as the model holds it ("required" when
    there is none)."""
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "none"
    if isinstance(value, BaseModel):
        model = type(value)
        try:
            untouched = value == model()
        except Exception:  # noqa: BLE001 - a model with required fields has no empty form
            untouched = False
        if untouched:
            return f"the defaults of [{model.__name__}](#{model.__name__.lower()})"
    if isinstance(value, enum.Enum):
        return f"`{value.value}`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    if isinstance(value, (int, float)):
        return f"`{value}`"
    plain = _plain(field, value)
    if isinstance(plain, str):
        return f"`{plain}`"
    text = yaml.safe_dump(plain, default_flow_style=True, sort_keys=False, width=10_000).strip()
    return f"`{text}`"


def model_tables(models: list[type[BaseModel]]) -> list[str]:
    """One ``####`` section per model: its first docstring line and a table of its fields."""
    lines: list[str] = []
    for model in models:
        lines.append(f"#### {model.__name__}")
        lines.append("")
        doc = (model.__doc__ or "").strip().splitlines()[0] if model.__doc__ else ""
        if doc:
            lines += [doc, ""]
        rows = [
            (f"`{name}`", cell(type_name(field.annotation)), cell(default_value(field)), cell(allowed_values(field)), cell(field.description or ""))
            for name, field in model.model_fields.items()
        ]
        lines += table(("key", "type", "default", "allowed", "description"), rows)
        lines.append("")
    return lines
