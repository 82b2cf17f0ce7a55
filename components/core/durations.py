"""Durations, defined once: Go's ``time.ParseDuration`` grammar, and exact seconds out.

Every duration the platform reads goes through ``go_duration_ns``: the stack keys that end up
as Go flags (the cluster autoscaler's), plan-capacity's ``Seconds``, the simulator's
``--set model.*`` settings and its distributions. So ``1h30m``, ``1.5h``, ``90m`` and ``5400s``
mean 5400 seconds everywhere, and whatever a stack key accepts the simulator reads the same.

The grammar is Go's: an optional sign, then one or more decimal numbers (``1``, ``1.5``, ``.5``)
each with a unit ``ns``, ``us`` (``µs``, ``μs``), ``ms``, ``s``, ``m`` or ``h``; ``0`` alone is
zero. Units may repeat and come in any order (Go accepts ``30m1h``). The value is an int64 of
nanoseconds, as in Go: a fraction of a nanosecond is dropped, and more than 2562047h47m16.854775807s
is refused. Readers that take seconds (``seconds``) also take a bare number as seconds (``90``,
``2.5``): plan-capacity and ``--set`` always have.

Prometheus durations (alert ``for``, scrape intervals, retention) are another grammar,
Prometheus's own (``15d``, ``1w``; integers only, units largest first): they stay
``kube.PrometheusDuration`` and are never read here.
"""

from __future__ import annotations

import datetime
import math
import re
from fractions import Fraction
from typing import Annotated, Any

from pydantic import AfterValidator

__all__ = ["CRON_DESCRIPTORS", "GO_DURATION_EXAMPLES", "GoDuration", "cron_active", "cron_matches", "cron_problem", "go_duration_ns", "seconds"]

_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_ELEMENT = re.compile(r"([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)")
_MAX_NS = 2**63 - 1
"""Go's time.Duration is an int64 of nanoseconds: at most 2562047h47m16.854775807s."""
_HINT = "a Go duration such as 90s, 7m, 1.5h or 1h30m (units ns, us, ms, s, m, h; no d)"

GO_DURATION_EXAMPLES = ("90s", "7m", "1.5h", "1h30m", "0.5m", "2h45m30.5s", "500ms", "2m0s", "300ms", ".5h", "30m1h")
"""Durations Go's time.ParseDuration accepts, as the tests and the docs name them."""


def _leading_fraction(digits: str) -> tuple[int, float]:
    """Go's leadingFraction: the digits as an integer and their scale, dropping digits past int64."""
    f, scale = 0, 1.0
    overflow = False
    for digit in digits:
        if overflow:
            continue
        if f > _MAX_NS // 10:
            overflow = True
            continue
        y = f * 10 + int(digit)
        if y > _MAX_NS:
            overflow = True
            continue
        f, scale = y, scale * 10
    return f, scale


def go_duration_ns(text: str) -> int:
    """Nanoseconds of ``text`` as Go's ``time.ParseDuration`` reads it (its algorithm, float rounding of
    a fraction included: ``0.3333333333333333333h`` is 20m in Go too); ValueError otherwise."""
    original = text
    negative = text[:1] == "-"
    if text[:1] in ("-", "+"):
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise ValueError(f"{original!r} is not {_HINT}")
    total = 0
    pos = 0
    while pos < len(text):
        m = _ELEMENT.match(text, pos)
        if not m or (not m.group(1) and not m.group(2)):
            raise ValueError(f"{original!r} is not {_HINT}")
        unit = _UNIT_NS[m.group(3)]
        whole = int(m.group(1) or "0")
        if whole > _MAX_NS:
            raise ValueError(f"{original!r} is longer than Go's maximum duration, 2562047h47m16.854775807s")
        value = whole * unit
        if m.group(2):
            f, scale = _leading_fraction(m.group(2))
            value += int(float(f) * (float(unit) / scale))
        total += value
        if value > _MAX_NS + 1 or total > _MAX_NS + 1:
            raise ValueError(f"{original!r} is longer than Go's maximum duration, 2562047h47m16.854775807s")
        pos = m.end()
    if total > _MAX_NS + negative:
        raise ValueError(f"{original!r} is longer than Go's maximum duration, 2562047h47m16.854775807s")
    return -total if negative else total


def seconds(value: Any) -> Fraction:
    """Exact seconds of a Go duration (``"1.5h"``, ``"1h30m"``, ``"500ms"``) or of a bare number of
    seconds (``90``, ``"90"``, ``2.5``); ValueError otherwise (a bool, NaN, infinity, any other text)."""
    if isinstance(value, bool):
        raise ValueError(f"a duration is seconds (90) or {_HINT}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("a duration is a finite number of seconds")
        return Fraction(value)
    if not isinstance(value, str):
        raise ValueError(f"a duration is seconds (90) or {_HINT}")
    text = value.strip()
    if re.fullmatch(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)", text):
        return Fraction(text)
    try:
        return Fraction(go_duration_ns(text), 1_000_000_000)
    except ValueError as exc:
        if "longer than" in str(exc):
            raise ValueError("longer than Go's maximum duration, 2562047h47m16.854775807s") from None
        raise ValueError(f"a duration is seconds (90) or {_HINT}") from None


def _go_duration(value: str) -> str:
    ns = go_duration_ns(value)
    if ns < 0:
        raise ValueError(f"{value!r} is negative; a duration here is 0 or more")
    return value


GoDuration = Annotated[str, AfterValidator(_go_duration)]
"""A duration as Go's time.ParseDuration reads it (the cluster autoscaler's flags): 90s, 7m, 1.5h,
1h30m. Kept as written (it is handed to the program that parses it); ``seconds`` reads its value."""


# --- cron schedules ------------------------------------------------------------------------------

_CRON_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}),
    ("day of week", 0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}),
)
CRON_DESCRIPTORS = ("@annually", "@yearly", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
"""The descriptors a five-field cron parser (robfig/cron's standard parser, Karpenter's) takes in place of fields."""


def _cron_number(text: str, low: int, high: int, names: dict[str, int]) -> int | None:
    value = names.get(text.lower()) if text.isalpha() else (int(text) if text.isdigit() else None)
    return value if value is not None and low <= value <= high else None


def _cron_field_problem(text: str, name: str, low: int, high: int, names: dict[str, int]) -> str | None:
    for part in text.split(","):
        span, _, step = part.partition("/")
        if step and (not step.isdigit() or int(step) < 1):
            return f"{name} {part!r}: a step after / is a whole number of at least 1"
        if span in ("*", "?"):
            continue
        first, dash, last = span.partition("-")
        a = _cron_number(first, low, high, names)
        b = _cron_number(last, low, high, names) if dash else a
        if a is None or b is None:
            return f"{name} {part!r} is out of range: {low} to {high}" + (f" (or {', '.join(list(names)[:3])}...)" if names else "")
        if a > b:
            return f"{name} {part!r}: a range runs low to high"
    return None


def cron_problem(schedule: str) -> str | None:
    """Why ``schedule`` is not a five-field cron schedule (minute hour day-of-month month day-of-week, each
    ``*``, a number in range, a range, a list or a step; month and weekday names allowed) nor a descriptor
    (``@daily``...), or None. The grammar of robfig/cron's standard parser, which Karpenter's budgets use:
    ``99 99 * * *`` parses as five fields there but no minute 99 exists, so it is refused here."""
    if schedule in CRON_DESCRIPTORS:
        return None
    fields = schedule.split()
    if len(fields) != 5:
        return f"schedule {schedule!r} has {len(fields)} fields; a cron schedule has 5 (minute hour day-of-month month day-of-week) or is one of {', '.join(CRON_DESCRIPTORS)}"
    for text, (name, low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
        if problem := _cron_field_problem(text, name, low, high, names):
            return f"schedule {schedule!r}: {problem}"
    return None


_DESCRIBED = {
    "@annually": "0 0 1 1 *",
    "@yearly": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
"""What each descriptor stands for (robfig/cron v3 parser.go parseDescriptor)."""


def _cron_values(text: str, low: int, high: int, names: dict[str, int]) -> tuple[frozenset[int], bool]:
    """The values one field matches, and whether it is a star (``*`` or ``?`` without a step: robfig/cron's
    starBit, which decides how day of month and day of week combine)."""
    values: set[int] = set()
    star = False
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if span in ("*", "?"):
            a, b = low, high
            star = star or step == 1
        else:
            first, dash, last = span.partition("-")
            start = _cron_number(first, low, high, names)
            end = _cron_number(last, low, high, names) if dash else (high if step_text else start)
            if start is None or end is None:
                raise ValueError(f"not a cron field: {text!r}")
            a, b = start, end
        values.update(range(a, b + 1, step))
    return frozenset(values), star


def cron_matches(schedule: str, at: datetime.datetime) -> bool:
    """Whether the five-field cron ``schedule`` (or a descriptor) fires at the minute of ``at`` (UTC), as
    robfig/cron v3's standard parser reads it (Karpenter's budgets): day of month and day of week both
    restricted match either; one of them a star, both must match (spec.go dayMatches)."""
    fields = _DESCRIBED.get(schedule, schedule).split()
    (minutes, _), (hours, _), (days, day_star), (months, _), (weekdays, weekday_star) = (
        _cron_values(text, low, high, names) for text, (_, low, high, names) in zip(fields, _CRON_FIELDS, strict=True)
    )
    at = at.astimezone(datetime.UTC)
    if at.minute not in minutes or at.hour not in hours or at.month not in months:
        return False
    day, weekday = at.day in days, (at.weekday() + 1) % 7 in weekdays
    return day and weekday if day_star or weekday_star else day or weekday


def cron_active(schedule: str, duration_s: float, at: datetime.datetime) -> bool:
    """Whether a budget with ``schedule`` and ``duration`` is active at ``at``: the schedule fired in
    (at - duration, at], as Karpenter 1.14.1 decides it (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go:412-430
    Budget.IsActive: the next firing after at - duration is not after at). Firings are whole minutes."""
    at = at.astimezone(datetime.UTC)
    since = at - datetime.timedelta(seconds=duration_s)
    minute = at.replace(second=0, microsecond=0)
    while minute > since:
        if cron_matches(schedule, minute):
            return True
        minute -= datetime.timedelta(minutes=1)
    return False
