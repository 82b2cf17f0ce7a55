"""Typed quantities: Kubernetes spellings in, exact integers out.

CPU in millicores, memory in MiB (rounded up), durations in seconds, so capacity arithmetic
(the components' fit checks, plan-capacity, the simulator) stays exact.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainSerializer, TypeAdapter

from gpu_platform.components.core.durations import seconds
from gpu_platform.components.core.numbers import Int

__all__ = ["MiB", "Millicores", "Seconds", "format_duration", "to_mib", "to_millicores"]

_CPU = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m?)$")
_MEMORY_UNITS = {"Ki": Fraction(1, 1024), "Mi": Fraction(1), "Gi": Fraction(1024), "Ti": Fraction(1024 * 1024)}
_MEMORY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti)?$")


def _millicores(value: Any) -> Any:
    """1.5, "1.5", "1500m" -> 1500; a fraction of a millicore is refused, as Kubernetes does."""
    if isinstance(value, bool):
        return value
    text = str(value).strip()
    m = _CPU.match(text)
    if not m:
        raise ValueError('CPU must be cores ("1.5") or millicores ("1500m")')
    amount = Fraction(m.group(1)) * (1 if m.group(2) else 1000)
    if amount.denominator != 1:
        raise ValueError("CPU finer than one millicore is not a Kubernetes quantity")
    return int(amount)


def _mib(value: Any) -> Any:
    """4096, "4096Mi", "4Gi" -> MiB; a bare number is MiB. Rounded up to a whole MiB."""
    if isinstance(value, bool):
        return value
    text = str(value).strip()
    m = _MEMORY.match(text)
    if not m:
        raise ValueError('memory must be MiB (4096) or a quantity with Ki, Mi, Gi or Ti ("4Gi")')
    amount = Fraction(m.group(1)) * _MEMORY_UNITS[m.group(2) or "Mi"]
    return -(-amount.numerator // amount.denominator)


def _seconds(value: Any) -> Any:
    """90, "90s", "36m", "1.5h", "1h30m" -> whole seconds (components/core/durations.py's one grammar: Go's,
    and a bare number is seconds); a fraction of a second is refused, as the fields count whole seconds."""
    if isinstance(value, bool):
        return value
    exact = seconds(value)
    if exact.denominator != 1:
        raise ValueError(f'that is {float(exact):g} seconds; give whole seconds (90, "90s", "1.5h")')
    return int(exact)


# Stored as millicores; a bare number means cores, as in Kubernetes, so it serializes as "<n>m"
# and a dumped model validates back to itself.
Millicores = Annotated[Int, BeforeValidator(_millicores), Field(ge=0), PlainSerializer(lambda v: f"{v}m", return_type=str)]
MiB = Annotated[Int, BeforeValidator(_mib), Field(ge=0)]
Seconds = Annotated[Int, BeforeValidator(_seconds), Field(ge=1)]


# Built once: a TypeAdapter compiles its validator when it is made, and the fit and quota checks ask for one
# quantity at a time (a fresh adapter per value was a tenth of a stack file's validation).
_MILLICORES: TypeAdapter[int] = TypeAdapter(Millicores)
_MIB: TypeAdapter[int] = TypeAdapter(MiB)


def to_millicores(value: Any) -> int:
    """A CPU quantity (1.5, "1.5", "1500m") in millicores, as a ``Millicores`` field reads it; a ValidationError if it is not one."""
    return _MILLICORES.validate_python(value)


def to_mib(value: Any) -> int:
    """A memory quantity (4096, "4096Mi", "4Gi") in MiB, rounded up, as a ``MiB`` field reads it; a ValidationError if it is not one."""
    return _MIB.validate_python(value)


def format_duration(seconds: int) -> str:
    """3 h 0 min style: 10800 -> "3h", 2160 -> "36m", 5430 -> "1h30m30s"."""
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s else "")
    return out or "0s"
