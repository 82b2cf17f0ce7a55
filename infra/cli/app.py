"""The command line itself: the parser, every command's module and the one place failures become
one line and an exit code. Imported by `gpu_platform.infra.cli.run` only once a Ctrl-C during the
import can be answered (infra/cli/__init__.py)."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from gpu_platform.infra.cli import (
    docs,
    plan_capacity,
    preflight,
    preview,
    prices,
    report,
    simulate,
    upstream,
)
from gpu_platform.infra.cli.common import err, first_line
from gpu_platform.infra.collector import collector_paused
from gpu_platform.infra.errors import (
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_PROGRAM,
    EXIT_SERVICE,
    CommandError,
    capped,
    deferred_interrupts,
    interrupted,
    mark_interrupted,
    recording_interrupts,
)
from gpu_platform.infra.output import claim_stdout

__all__ = ["build_parser", "main", "run"]

COMMANDS = (preview, preflight, docs, plan_capacity, upstream, report, simulate, prices)
"""One module per command, in the order `--help` lists them; each adds its parser with register()."""


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the traceback of an unexpected failure, for a bug report (also GPU_PLATFORM_DEBUG=1)",
    )
    parser = _Parser(prog="gpu-platform", description="Operate gpu-platform stacks.", parents=[common])
    parser.add_argument("--version", action="version", version=f"gpu-platform {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.register(sub, common)
    # The command that describes the command line (`docs`: docs/reference/cli.md) reads the parser from its
    # arguments: it cannot import this module, which imports it.
    parser.set_defaults(parser=parser)
    return parser


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, as for config errors
        raise CommandError(message, EXIT_CONFIG)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:  # --help, --version
        if message:
            print(message, end="", file=sys.stderr if status else sys.stdout)
        raise _Exit(status)


class _Exit(Exception):  # noqa: N818 - --help and --version ending the parse, not an error
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpu-platform")
    except PackageNotFoundError:
        return "unknown (not installed)"


_ERRORS = (
    ("gpu_platform.infra.stack.errors", "ConfigError", EXIT_CONFIG),
    ("gpu_platform.infra.stack.errors", "PreviewError", EXIT_CONFIG),
    ("gpu_platform.policies.evaluate", "PolicyConfigError", EXIT_CONFIG),
    ("gpu_platform.infra.report.prometheus", "ReportError", EXIT_SERVICE),
    ("gpu_platform.infra.simulate.settings", "SimulationError", EXIT_CONFIG),
    ("gpu_platform.infra.simulate.replay", "ReplayError", EXIT_CONFIG),
)


def _classify(exc: Exception) -> tuple[list[str], int] | None:
    if isinstance(exc, CommandError):
        return exc.lines, exc.exit_code
    for module, name, code in _ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(exc, cls):
            return list(getattr(exc, "lines", None) or [first_line(exc)]), code
    return None


def _debug(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get("GPU_PLATFORM_DEBUG", "").lower() in ("1", "true", "yes")


_reported: list[bool] = []


def _interrupted() -> int:
    """The one line for Ctrl-C (printed once however many layers see it) and its exit code."""
    if not _reported:
        _reported.append(True)
        err("interrupted")
    return EXIT_INTERRUPTED


@contextlib.contextmanager
def _quiet_unraisable(debug: bool) -> Iterator[None]:
    """Exceptions Python can only print ("Exception ignored in ..."; a Ctrl-C landing in a
    finalizer or an exit handler) print no traceback unless --debug; the interrupt itself is
    recorded by infra/errors.py and still ends the command with 130."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            mark_interrupted()
        if debug:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure becomes one line per problem and an exit code."""
    import traceback

    argv = list(sys.argv[1:] if argv is None else argv)
    debug = _debug(argv)
    _reported.clear()
    with recording_interrupts(), _quiet_unraisable(debug), collector_paused():
        # Importing the provider SDKs creates hundreds of thousands of objects and no garbage
        # cycles worth collecting; pausing the cyclic collector for one short command saves
        # a sixth of a preview's run time (tests/benchmarks/preview_vs_import.py).
        try:
            args = build_parser().parse_args(argv)
            with claim_stdout():  # an output written to "-": the command's report goes to stderr
                code = int(args.func(args))
            if interrupted():  # an interrupt some library swallowed: never exit 0 after Ctrl-C
                return _interrupted()
            return code
        except _Exit as exc:
            return exc.code
        except KeyboardInterrupt:
            mark_interrupted()
            return _interrupted()
        except Exception as exc:  # noqa: BLE001 - the one place: no traceback unless asked
            if interrupted():
                return _interrupted()
            known = _classify(exc)
            if debug and (known is None or known[1] == EXIT_PROGRAM):
                traceback.print_exception(exc)
            if known is None:
                err(f"unexpected error: {type(exc).__name__}: {first_line(exc)} (a bug: rerun with --debug for the traceback and report it)")
                return EXIT_PROGRAM
            for line in capped(known[0]):
                err(line)
            return known[1]


def run() -> None:
    """The console script: main(), then leave without tearing the interpreter down.

    Freeing the provider SDKs' objects one by one at exit takes about half a second, a
    third of a preview (tests/benchmarks/preview_vs_import.py). By then the output is
    written and its files closed; the exit handlers still run (with SIGINT deferred, so an
    interrupt there cannot be swallowed), then the process ends: 130 if an interrupt came
    at any point.
    """
    code = EXIT_INTERRUPTED
    try:
        with recording_interrupts(), _quiet_unraisable(_debug(sys.argv[1:])):
            code = main()
            with deferred_interrupts(raise_after=False):
                atexit._run_exitfuncs()  # noqa: SLF001 - the interpreter's own exit handlers, run before os._exit
                if interrupted():
                    code = _interrupted()
    except KeyboardInterrupt:  # in the instants between main() and the exit handlers
        code = _interrupted()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - a closed pipe or a late Ctrl-C: the exit code still stands
        pass
    os._exit(code)
