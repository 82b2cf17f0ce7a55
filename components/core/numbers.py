"""The one integer and the one float type every Args and config model uses.

pydantic's lax ``int`` takes ``true`` as 1 (``max_nodes: true`` would mean one node) and its
``float`` takes ``true`` as 1.0. These types refuse booleans and otherwise keep pydantic's
lax reading, so strings of digits from Pulumi's string config still read as numbers.

Both are finite: YAML's ``.inf``, ``-.inf`` and ``.nan`` (and the strings ``inf``, ``nan``) are
refused with one error at the key (pydantic's ``finite_number``), never carried on to crash a plan
that turns them into whole numbers (``int(inf)`` is an OverflowError). ``int`` refuses them by
itself; ``float`` does only with ``allow_inf_nan`` off, which ``Float`` sets. A stack-facing number
is one of these two (tests/bad_input/test_numbers.py walks every numeric field to hold that).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AllowInfNan, BeforeValidator

__all__ = ["Float", "Int"]


def _no_bool(kind: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"{kind} expected, not a boolean ({str(value).lower()})")
        return value

    return check


Int = Annotated[int, BeforeValidator(_no_bool("a whole number"))]
"""An integer that refuses booleans."""
Float = Annotated[float, BeforeValidator(_no_bool("a number")), AllowInfNan(False)]
"""A float that refuses booleans, infinities and NaN."""
