"""How every Args model is configured and how it reports an error: at a key path.

The lowest layer of the package: the components, the stack config (infra) and the policy
pack's config all format a location the same way, ``gke.gpu_pools[0].accelerator_count``.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Self

import pulumi
from pydantic import AfterValidator, BaseModel, ConfigDict, GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationError
from pydantic.fields import FieldInfo
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

__all__ = [
    "ARGS_CONFIG",
    "CheckedWhenKnown",
    "PlannedOnce",
    "StrInput",
    "cached_names",
    "check_min_max",
    "check_unique",
    "unique",
    "checks_not_made",
    "dotted_value",
    "field_error",
    "first_repeat",
    "input_error",
    "input_errors",
    "is_output",
    "key_path",
    "report_checks_not_made",
]

ARGS_CONFIG = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, defer_build=True)
"""The pydantic configuration every Args model uses (see DESIGN.md, component contract).

``defer_build`` builds a model's validator on first use rather than at import, so a
program pays only for the models it validates.
"""


class PlannedOnce:
    """For a model whose plans are ``functools.cached_property`` values (``GpuGkeClusterArgs.plan``,
    ``GpuClassArgs.planned_shape``, ``StackConfig.eks_plan``, ...): planned once per instance, and planned again
    for a copy whose values change. pydantic's ``model_copy`` copies the instance's ``__dict__``, cached values
    with the fields, so ``model_copy(update=...)`` kept the plan of the values it replaced; here it drops every
    cached value of the copy. A copy without ``update`` has the same values and keeps the same plans. Put it
    before BaseModel in the bases."""

    __slots__ = ()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update``, what was planned from the replaced values is planned again when read."""
        copied: Self = super().model_copy(update=update, deep=deep)  # type: ignore[misc]  # BaseModel's, next in the MRO
        if update:
            for name in cached_names(type(self)):  # type: ignore[arg-type]  # mypy#20409: a class is Hashable; mypy checks type[X] with its unbound __hash__
                copied.__dict__.pop(name, None)
        return copied


@functools.cache
def cached_names(cls: type) -> tuple[str, ...]:
    """The names of ``cls``'s ``functools.cached_property`` attributes, its bases' included."""
    return tuple(sorted({name for klass in cls.__mro__ for name, value in vars(klass).items() if isinstance(value, functools.cached_property)}))


def key_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """A location as the user wrote it: ``("gpu_pools", 0, "name")`` -> ``gpu_pools[0].name``; a map
    key given as a 1-tuple goes in brackets too: ``("vpc", ("us-west-2a",))`` -> ``vpc[us-west-2a]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, tuple) and part:
            out += f"[{part[0]}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def field_error(model: str, field: str | tuple[str | int, ...], message: str, value: Any) -> ValidationError:
    """A ValidationError located at ``field`` of the model being validated.

    Raised from a model validator, pydantic prefixes the enclosing location, so a
    cross-field rule reports the exact key (``gke.gpu_pools[0].accelerator_count``).
    ``field`` is a dotted name or a location tuple (with list indexes as ints).
    """
    loc = tuple(field.split(".")) if isinstance(field, str) else field
    return ValidationError.from_exception_data(
        model,
        [
            InitErrorDetails(
                type=PydanticCustomError("invalid_combination", message),
                loc=loc,
                input=value,
            )
        ],
    )


def dotted_value(model: Any, dotted: str) -> Any:
    """The value at a dotted key of ``model`` (``shape.vcpus``), for an error that names it."""
    value = model
    for part in dotted.split("."):
        value = getattr(value, part, None)
    return value


def input_error(path: str | tuple[Any, ...], reason: str) -> pulumi.InputPropertyError:
    """The error a component's constructor raises for a bad input: Pulumi's own, carrying the
    property path (``args.project``, ``grafana_admin_password``), which the engine and the
    offline preview report against that property."""
    where = path if isinstance(path, str) else key_path(path)
    return pulumi.InputPropertyError(where, reason)


def input_errors(problems: Sequence[tuple[str | tuple[Any, ...], str]]) -> pulumi.InputPropertyError | pulumi.InputPropertiesError:
    """One ``input_error`` for one problem; Pulumi's ``InputPropertiesError`` carrying every
    (path, reason) for several, so each is reported against its own property."""
    if len(problems) == 1:
        return input_error(*problems[0])
    details = [pulumi.InputPropertyErrorDetails(property_path=path if isinstance(path, str) else key_path(path), reason=reason) for path, reason in problems]
    return pulumi.InputPropertiesError(f"{len(details)} inputs are not valid", details)


def first_repeat(values: Sequence[Hashable]) -> int | None:
    """The index of the first value that already appeared earlier in ``values``, or None."""
    seen: set[Hashable] = set()
    for i, value in enumerate(values):
        if value in seen:
            return i
        seen.add(value)
    return None


def check_unique(values: Sequence[Hashable], field: str, item: str, why: str = "") -> None:
    """The one "unique names" rule: ValueError ``<field> lists <item> twice (a, b, a)[; why]``."""
    if first_repeat(values) is not None:
        listed = ", ".join(str(v) for v in values)
        raise ValueError(f"{field} lists {item} twice ({listed})" + (f"; {why}" if why else ""))


def unique(field: str, item: str, key: Callable[[Any], Hashable] = lambda v: v, why: str = "") -> AfterValidator:
    """check_unique as a field's Annotated validator: ``Annotated[list[X], unique("addons", "an add-on", key)]``."""

    def check(values: list[Any]) -> list[Any]:
        check_unique([key(v) for v in values], field, item, why)
        return values

    return AfterValidator(check)


def check_min_max(model: BaseModel, low: str, high: str) -> None:
    """The one "min <= max" rule: a field_error at ``low`` when it is above ``high`` (None: unbounded)."""
    lo, hi = getattr(model, low), getattr(model, high)
    if lo is not None and hi is not None and lo > hi:
        raise field_error(type(model).__name__, low, f"{low} {lo} is above {high} {hi}; use at most {hi}", lo)


_WORDS = {str: "string", int: "integer", bool: "boolean"}


class _InputSchema:
    """Pydantic's schema for a value or a ``pulumi.Output`` of it: a known value is validated as
    ``inner``; an Output is taken as it is (its value is known only when the engine resolves it).
    A wrong type is one error, not one per union member."""

    def __init__(self, inner: type) -> None:
        self.inner = inner

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        known = handler.generate_schema(self.inner)
        return core_schema.union_schema(
            [known, core_schema.is_instance_schema(pulumi.Output)],
            custom_error_type=f"{self.inner.__name__}_type",
            custom_error_message=f"Input should be a valid {_WORDS.get(self.inner, self.inner.__name__)} (or a Pulumi Output of one)",
        )

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return handler(schema["choices"][0])  # what a stack file can hold: the known value


StrInput = Annotated[str | pulumi.Output[str], _InputSchema(str)]
"""A string, or an Output of one: a cloud identifier (a project, a network, a VPC or subnet id)
that may come from a resource made in the same program. Checks on its value are made when it
is a string and reported as not made when it is an Output (``checks_not_made``)."""


def is_output(value: Any) -> bool:
    """True for a value not known until deploy (a ``pulumi.Output``)."""
    return isinstance(value, pulumi.Output)


class CheckedWhenKnown:
    """Field metadata: the check a known value gets, named so that an Output in its place is
    reported as a check not made (``Annotated[StrInput, CheckedWhenKnown("...")]``)."""

    def __init__(self, check: str) -> None:
        self.check = check

    def __repr__(self) -> str:
        return f"CheckedWhenKnown({self.check!r})"


def _declared_checks(field: FieldInfo) -> list[str]:
    """The CheckedWhenKnown checks of a field: on the field, or on a member of its (optional) type."""
    found = [m.check for m in field.metadata if isinstance(m, CheckedWhenKnown)]

    def visit(annotation: Any) -> None:
        if typing.get_origin(annotation) is Annotated:
            found.extend(m.check for m in typing.get_args(annotation)[1:] if isinstance(m, CheckedWhenKnown))
            visit(typing.get_args(annotation)[0])
        elif typing.get_origin(annotation) in (typing.Union, types.UnionType):
            for member in typing.get_args(annotation):
                visit(member)

    visit(field.annotation)
    return list(dict.fromkeys(found))


def _parts(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every value inside lists and maps, with its location (map keys as 1-tuples)."""
    yield path, value
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _parts(item, (*path, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _parts(item, (*path, (key,)))


def checks_not_made(args: BaseModel, prefix: str = "args") -> list[str]:
    """One line per Output that stands where a check needs a known value, naming the key and the
    check: ``args.network: an Output, so that it is a network name ... is not checked before deploy``.

    Walks nested Args models; the checks are those the fields declare with ``CheckedWhenKnown``.
    """
    lines: list[str] = []

    def walk(model: BaseModel, path: tuple[Any, ...]) -> None:
        for name, field in type(model).model_fields.items():
            checks = _declared_checks(field)
            for where, item in _parts(getattr(model, name), (*path, name)):
                if is_output(item) and checks:
                    lines.append(f"{key_path(where)}: an Output, so {'; '.join(checks)} is not checked before deploy")
                elif isinstance(item, BaseModel):
                    walk(item, where)

    walk(args, (prefix,) if prefix else ())
    return lines


def report_checks_not_made(resource: pulumi.Resource, name: str, args: BaseModel) -> list[str]:
    """Warn, against the component, of every check an Output kept from being made (``pulumi
    preview`` shows the warnings; the offline preview prints them). Returns the lines, each
    naming the component: ``GpuGkeCluster team: args.network: an Output, so ...``."""
    lines = [f"{type(resource).__name__} {name}: {line}" for line in checks_not_made(args)]
    for line in lines:
        pulumi.log.warn(line, resource=resource)
    return lines
