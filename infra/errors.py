"""What every `gpu-platform` command does with a failure: the exit codes, the one error type
commands raise, and Ctrl-C.

Exit codes (the same for every command; docs/operating/exit-codes.md):

- 0 ok;
- 1 the checks ran and found problems (policy or schema violations, a preflight check that
  would fail a deploy, a pool maximum too low, stale docs);
- 2 bad input: a command line, stack file, config value, inputs file, policy config or an
  output path that is wrong; nothing was written;
- 3 the Pulumi program or the command itself failed unexpectedly (a bug: ``--debug`` or
  GPU_PLATFORM_DEBUG=1 prints the traceback for a report);
- 4 a service the command asks could not be reached or answered nonsense (Prometheus for
  ``report``, AWS for ``preflight``);
- 130 interrupted (Ctrl-C, SIGINT): no output file is left half-written.

SIGINT is recorded as well as raised: an interrupt that a library swallows on its way up
(in a finalizer, an exit handler or a callback) still ends the command with 130, and output
files are not committed after it.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = [
    "EXIT_CONFIG",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PROGRAM",
    "EXIT_SERVICE",
    "EXIT_VIOLATIONS",
    "MAX_LINES",
    "CommandError",
    "capped",
    "check_interrupt",
    "mark_interrupted",
    "deferred_interrupts",
    "interrupted",
    "recording_interrupts",
]

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_CONFIG = 2
EXIT_PROGRAM = 3
EXIT_SERVICE = 4
EXIT_INTERRUPTED = 130


MAX_LINES = 50
"""Most problem lines a run prints; the rest are counted in one line (a list of 20,000 bad entries
is 50 lines and a count, not 20,000 lines)."""


def capped(lines: list[str], limit: int = MAX_LINES) -> list[str]:
    """``lines`` up to ``limit``, then one line counting the rest."""
    if len(lines) <= limit:
        return list(lines)
    rest = len(lines) - limit
    return [*lines[:limit], f"... and {rest} more problem{'s' if rest != 1 else ''} not shown (fix these and run again to see them)"]


class CommandError(Exception):
    """A failure a command reports as one line per problem, with its exit code."""

    def __init__(self, lines: list[str] | str, exit_code: int = EXIT_CONFIG) -> None:
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        self.exit_code = exit_code
        super().__init__("\n".join(capped(self.lines)))


class _State:
    seen = False
    """A SIGINT arrived since recording started."""
    deferring = 0
    """Inside deferred_interrupts(): record the signal, raise when the block ends."""
    patient = 0
    """Inside deferred_interrupts(second_raises=True): the first SIGINT waits, a second one raises."""
    installed = 0


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    first = not _State.seen
    if first:
        # Tasks the interrupt leaves behind make asyncio log "Exception in callback" tracebacks.
        logging.getLogger("asyncio").disabled = True
    _State.seen = True
    if _State.deferring or (_State.patient and first):
        return
    raise KeyboardInterrupt


def interrupted() -> bool:
    """Whether a SIGINT (or a KeyboardInterrupt the CLI caught) arrived since recording started."""
    return _State.seen


def mark_interrupted() -> None:
    _State.seen = True


@contextmanager
def recording_interrupts() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt as usual and is remembered (reentrant; main thread only;
    a SIGINT the parent process set to be ignored stays ignored)."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return
    outermost = _State.installed == 0
    previous = signal.getsignal(signal.SIGINT)
    if outermost:
        _State.seen = False
        signal.signal(signal.SIGINT, _on_sigint)
    _State.installed += 1
    try:
        yield
    finally:
        _State.installed -= 1
        if outermost:
            signal.signal(signal.SIGINT, previous)
            _State.seen = False


@contextmanager
def deferred_interrupts(raise_after: bool = True, second_raises: bool = False) -> Iterator[None]:
    """A block SIGINT does not cut in two; the interrupt is raised when it ends (``raise_after``)
    or only recorded.

    Strict (the renames that commit outputs, cleanup): every SIGINT waits for the end of the
    block. Patient (``second_raises``; the Pulumi program's run, seconds long): the first
    SIGINT waits, so it never lands inside the SDK's event loop or a half-done import of a
    provider SDK (where CPython has been seen to crash), and a second one raises at once.
    """
    if second_raises:
        _State.patient += 1
    else:
        _State.deferring += 1
    try:
        yield
    finally:
        if second_raises:
            _State.patient -= 1
        else:
            _State.deferring -= 1
        if raise_after and not _State.deferring and not _State.patient and _State.seen:
            raise KeyboardInterrupt


def check_interrupt() -> None:
    """Raise KeyboardInterrupt when an interrupt arrived and was swallowed on its way up."""
    if _State.seen:
        raise KeyboardInterrupt
