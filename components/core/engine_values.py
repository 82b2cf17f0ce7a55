"""The values the Pulumi engine hands code that runs inside its callbacks, and how to work on them.

A resource transform (``transforms=`` in ResourceOptions) is called by the engine with a resource's
properties as the SDK deserializes them, which are not always the plain JSON the offline preview
renders and the tests build:

- a secret arrives as a ``pulumi.Output`` marked secret (an output value: a Secret's ``data``, any
  field the provider marks secret), or, on a wire without output values, as the SDK's secret
  wrapper ``{SIG: SECRET, "value": ...}``, which the SDK pushes up to the enclosing map or list;
- during a preview, a value not known yet arrives as ``pulumi.output.Unknown`` (the wire's unknown
  sentinel) or as an Output that is not known;
- any of these may sit anywhere inside lists and maps, or be the whole map or list.

Code that only passes a value along needs nothing: the SDK serializes each of these back as it came.
Code that reads a value reads it through this module: directly when the value is plain (so the
offline preview's objects come out exactly as before), otherwise through ``Output.apply``, which
keeps the result secret when the value was and leaves it unknown while the value is unknown.
Everything here is pure and synchronous except ``read_known``, which an async transform awaits to
decide which object it is looking at.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
from pulumi.output import Unknown
from pulumi.runtime import rpc

__all__ = [
    "UNKNOWN",
    "as_output",
    "is_opaque",
    "is_plain",
    "is_unknown",
    "merged",
    "on_value",
    "read_known",
    "replace_if",
    "update_in",
]

UNKNOWN: Any = Unknown()
"""What ``read_known`` answers for a value that is not known yet (a preview)."""


def is_unknown(value: Any) -> bool:
    """A value not known yet: the SDK's Unknown, or the wire's unknown sentinel string."""
    return isinstance(value, Unknown) or (isinstance(value, str) and value == rpc.UNKNOWN)


def is_opaque(value: Any) -> bool:
    """A value that cannot be read as it stands: an Output, an unknown, or a secret wrapper."""
    return isinstance(value, pulumi.Output) or is_unknown(value) or rpc.is_rpc_secret(value)


def is_plain(value: Any) -> bool:
    """Nothing opaque anywhere inside ``value``: it can be read as plain JSON."""
    if is_opaque(value):
        return False
    if isinstance(value, Mapping):
        return all(is_plain(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(is_plain(v) for v in value)
    return True


def _outputs_inside(value: Any) -> Any:
    """``value`` with every secret wrapper made a secret Output and every unknown sentinel the SDK's Unknown."""
    if isinstance(value, pulumi.Output):
        return value.apply(as_output)
    if is_unknown(value):
        return UNKNOWN
    if rpc.is_rpc_secret(value):
        return pulumi.Output.secret(as_output(rpc.unwrap_rpc_secret(value)))
    if isinstance(value, Mapping):
        return {k: _outputs_inside(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_outputs_inside(v) for v in value]
    return value


def as_output(value: Any) -> pulumi.Output[Any]:
    """Any engine shape as one Output of its plain value: secret when any part was, unknown while any part is."""
    return pulumi.Output.from_input(_outputs_inside(value))


def on_value(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` over a value it must read: ``fn(value)`` when the value is plain, else an Output of ``fn``
    over the resolved value (secret when the value was, unknown while it is)."""
    if is_plain(value):
        return fn(value)
    return as_output(value).apply(lambda resolved: pulumi.Output.from_input(fn(resolved)))


def update_in(value: Any, path: Sequence[str], fn: Callable[[Any], Any]) -> Any:
    """A copy of the map ``value`` with the value at ``path`` replaced by ``fn(old)`` (maps made where
    missing). Maps on the way are copied as they stand; one that is opaque is worked on as an Output,
    so only that map becomes an Output (secret if it was)."""
    if not path:
        return fn(value)
    if is_opaque(value):
        return as_output(value).apply(lambda resolved: pulumi.Output.from_input(update_in(resolved, path, fn)))
    copied = dict(value or {})
    copied[path[0]] = update_in(copied.get(path[0]), path[1:], fn)
    return copied


def merged(value: Any, extra: Mapping[str, Any]) -> Any:
    """The map ``value`` (None for none) with ``extra``'s keys set; its other values kept as they are."""
    if is_opaque(value):
        return as_output(value).apply(lambda resolved: pulumi.Output.from_input({**(resolved or {}), **extra}))
    return {**(value or {}), **extra}


_NOT_FOUND = object()


def replace_if(value: Any, path: Sequence[str], test: Callable[[Any], bool], new: Any) -> Any:
    """The map ``value`` with the value at ``path`` set to ``new`` where ``test(old)``; None when it can be
    read and ``test`` says no. Where the maps or the old value cannot be read (an Output, a secret, an
    unknown), the answer is the map with an Output at ``path`` that holds ``new`` or the old value once
    known: the decision is made on the Output."""
    current: Any = value
    for key in path:
        if is_opaque(current):
            break
        current = (current or {}).get(key, _NOT_FOUND) if isinstance(current, Mapping) or current is None else _NOT_FOUND
        if current is _NOT_FOUND:
            return None
    else:
        if is_plain(current):
            if not test(current):
                return None
            return update_in(value, path, lambda _: new)
    return update_in(value, path, lambda old: on_value(old, lambda known: new if test(known) else known))


async def read_known(value: Any, path: Sequence[str] = ()) -> Any:
    """The value at ``path`` inside ``value`` (None when absent), reading through Outputs (awaited) and secret
    wrappers: for deciding which object a transform was given. UNKNOWN when it is not known yet."""
    current = value
    for key in (None, *path):
        if key is not None:
            if not isinstance(current, Mapping):
                return None
            current = current.get(key)
        while True:
            if isinstance(current, pulumi.Output):
                resolved = await current.future(with_unknowns=True)
                if resolved is None and not await current.is_known():
                    return UNKNOWN
                current = resolved
            elif rpc.is_rpc_secret(current):
                current = rpc.unwrap_rpc_secret(current)
            else:
                break
        if is_unknown(current):
            return UNKNOWN
    return current
