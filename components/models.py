"""How every Args model is configured and how it reports an error: at a key path.

The lowest layer of the package: the components, the stack config (infra) and the policy
pack's config all format a location the same way, ``gke.gpu_pools[0].accelerator_count``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import pulumi
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

__all__ = [
    "ARGS_CONFIG",
    "check_min_max",
    "check_unique",
    "field_error",
    "first_repeat",
    "input_error",
    "input_errors",
    "key_path",
]

ARGS_CONFIG = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True, defer_build=True)
"""The pydantic configuration every Args model uses (see DESIGN.md, component contract).

``defer_build`` builds a model's validator on first use rather than at import, so a
program pays only for the models it validates.
"""


def key_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """A location as the user wrote it: ``("gpu_pools", 0, "name")`` -> ``gpu_pools[0].name``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def field_error(
    model: str, field: str | tuple[str | int, ...], message: str, value: Any
) -> ValidationError:
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


def input_error(path: str | tuple[Any, ...], reason: str) -> pulumi.InputPropertyError:
    """The error a component's constructor raises for a bad input: Pulumi's own, carrying the
    property path (``args.project``, ``grafana_admin_password``), which the engine and the
    offline preview report against that property."""
    where = path if isinstance(path, str) else key_path(path)
    return pulumi.InputPropertyError(where, reason)


def input_errors(problems: list[tuple[str | tuple[Any, ...], str]]) -> pulumi.InputPropertyError | pulumi.InputPropertiesError:
    """One ``input_error`` for one problem; Pulumi's ``InputPropertiesError`` carrying every
    (path, reason) for several, so each is reported against its own property."""
    if len(problems) == 1:
        return input_error(*problems[0])
    details = [
        pulumi.InputPropertyErrorDetails(property_path=path if isinstance(path, str) else key_path(path), reason=reason)
        for path, reason in problems
    ]
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


def check_min_max(model: BaseModel, low: str, high: str) -> None:
    """The one "min <= max" rule: a field_error at ``low`` when it is above ``high`` (None: unbounded)."""
    lo, hi = getattr(model, low), getattr(model, high)
    if lo is not None and hi is not None and lo > hi:
        raise field_error(type(model).__name__, low, f"{low} {lo} is above {high} {hi}; use at most {hi}", lo)
