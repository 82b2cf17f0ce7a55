"""Timings as distributions of seconds: the grammar of the simulator's settings (`fixed(2m)`,
`uniform(60s, 120s)`, `lognormal(...)`, or a Go duration for a fixed value), drawn from the run's one
random source."""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any

from gpu_platform.components.core.durations import seconds as duration_seconds

__all__ = ["Dist", "fixed", "format_seconds", "parse_seconds"]


_CALL = re.compile(r"^\s*(fixed|uniform|exponential|lognormal|normal)\s*\((.*)\)\s*$")


def parse_seconds(text: str | float | int) -> float:
    """``90``, ``"90s"``, ``"2.5m"``, ``"1h30m"``, ``"1.5h"``, ``"500ms"`` -> seconds, by the one duration
    grammar (components/core/durations.py: Go's, a bare number is seconds); ValueError otherwise."""
    value = duration_seconds(text)
    if value < 0:
        raise ValueError("a duration is seconds of 0 or more, never negative")
    return float(value)


def format_seconds(seconds: float) -> str:
    """A duration as written back: whole minutes as "5m", else seconds "90s" / "1.5s"."""
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    return f"{seconds:g}s"


@dataclass(frozen=True)
class Dist:
    """A distribution of durations, seconds.

    Written as a duration (fixed: ``"90s"``) or a call: ``uniform(60s, 120s)``,
    ``exponential(30s)`` (mean), ``normal(200s, 20s)`` (mean, standard deviation; clipped at
    0), ``lognormal(150s, 0.3)`` (median, sigma of the log).
    """

    kind: str
    a: float
    b: float = 0.0

    @classmethod
    def parse(cls, value: Any) -> Dist:
        if isinstance(value, Dist):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls("fixed", parse_seconds(value))
        if not isinstance(value, str):
            raise ValueError('a distribution is a duration ("90s") or uniform(a, b), exponential(mean), normal(mean, sd), lognormal(median, sigma)')
        call = _CALL.match(value)
        if call is None:
            return cls("fixed", parse_seconds(value))
        kind, inner = call.group(1), [p.strip() for p in call.group(2).split(",")]
        arity = {"fixed": 1, "exponential": 1, "uniform": 2, "normal": 2, "lognormal": 2}[kind]
        if len(inner) != arity:
            raise ValueError(f"{kind}() takes {arity} argument{'s' if arity > 1 else ''}, not {len(inner)}")
        if kind == "lognormal":
            median, sigma = parse_seconds(inner[0]), float(inner[1])
            if median <= 0 or not 0 <= sigma <= 5:
                raise ValueError("lognormal(median, sigma) needs median > 0 and sigma in [0, 5]")
            return cls(kind, median, sigma)
        numbers = [parse_seconds(p) for p in inner]
        if kind == "uniform" and numbers[0] > numbers[1]:
            raise ValueError("uniform(a, b) needs a <= b")
        if kind == "exponential" and numbers[0] <= 0:
            raise ValueError("exponential(mean) needs a mean > 0")
        return cls(kind, numbers[0], numbers[1] if arity == 2 else 0.0)

    def draw(self, rng: random.Random) -> float:
        if self.kind == "fixed":
            return self.a
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b)
        if self.kind == "exponential":
            return rng.expovariate(1 / self.a)
        if self.kind == "normal":
            return max(0.0, rng.gauss(self.a, self.b))
        return self.a * math.exp(rng.gauss(0.0, self.b))

    @property
    def mean(self) -> float:
        if self.kind in ("fixed", "exponential", "normal"):
            return self.a
        if self.kind == "uniform":
            return (self.a + self.b) / 2
        return self.a * math.exp(self.b**2 / 2)

    def __str__(self) -> str:
        if self.kind == "fixed":
            return format_seconds(self.a)
        if self.kind == "exponential":
            return f"exponential({format_seconds(self.a)})"
        if self.kind == "lognormal":
            return f"lognormal({format_seconds(self.a)}, {self.b:g})"
        return f"{self.kind}({format_seconds(self.a)}, {format_seconds(self.b)})"


def fixed(seconds: float) -> Dist:
    return Dist("fixed", float(seconds))
