"""Python's cyclic garbage collector paused around work that allocates much and leaves no cycles worth collecting.

A preview makes millions of short-lived objects: the provider SDKs' modules and the engine's records while the
program runs, a node per value while the manifests are written as YAML. Each allocation burst sets off the
collector, whose full collections walk every live object again (the SDKs' modules are most of them). With it
paused, the objects go as their last reference does, as they would anyway; any cycles among them are collected
when the collector runs next, after the work. ``gpu-platform`` pauses it for a whole command; the library pauses
it around the engine's run of a program, the rendering of its charts and the manifests' writing, so a program or
test calling them directly gets the same (tests/benchmarks/preview_vs_import.py measures the command).

Used as ``with collector_paused():`` or as a decorator, ``@collector_paused()``."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for the block (or the decorated function's call) and back as it was after it (left
    off if it was off), whatever the block raises."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
