"""Helpers every command shares: the one-line error printer, the stack reader, the YAML file reader."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.infra.errors import EXIT_CONFIG, CommandError, deferred_interrupts

TABLE_COLUMNS = 110
"""The width the commands' tables are laid out for (simulate's sweep table fits 100 columns, report's
per-tenant table 110). Printed to a pipe, a file or a CI log, rich would fall back to 80 columns and cut
the swept values and the figures to an ellipsis; a terminal keeps its own width, wider or narrower."""


def table_console() -> Any:
    """The console a command prints its tables to: stdout at the terminal's width, or at TABLE_COLUMNS
    (or COLUMNS when wider) when stdout is not a terminal."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=max(TABLE_COLUMNS, console.width))


def err(line: str) -> None:
    print(f"gpu-platform: {line}", file=sys.stderr)


def find_project(args: argparse.Namespace) -> Path:
    from gpu_platform.infra.stack.read import find_project_dir

    return find_project_dir(Path(args.project_dir) if args.project_dir else None)


def read_stack(args: argparse.Namespace) -> Any:
    """The stack's typed config for a command that reads it (PreviewError/ConfigError otherwise).

    The first Ctrl-C waits for the end (a second one raises at once): importing the Pulumi
    SDK is not a safe place for a KeyboardInterrupt.
    """
    with deferred_interrupts(second_raises=True):
        from gpu_platform.infra.stack.read import load_stack

        return load_stack(find_project(args), args.stack)


def yaml_file(flag: str, path: str, expected: str = "a mapping") -> Any:
    """A YAML mapping from a file a flag names; CommandError, one line naming the flag, otherwise."""
    try:
        data = yaml.safe_load(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise CommandError(f"{flag} {path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"{flag} {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); save it as UTF-8 YAML") from None
    except yaml.YAMLError as exc:
        raise CommandError(f"{flag} {path}: invalid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise CommandError(f"{flag} {path}: invalid YAML: nested too deeply") from None
    if not isinstance(data, dict):
        raise CommandError(f"{flag} {path}: expected {expected}")
    return data


def json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def pool_shape(args: argparse.Namespace, stack_config: Any) -> Any:
    """The pool --pool names in the stack (its NodePoolShape); one line naming the pools otherwise."""
    shapes = {shape.name: shape for shape in stack_config.pool_shapes()}
    if args.pool not in shapes:
        raise CommandError(f"--pool {args.pool}: stack {args.stack} has no such pool (pools: {', '.join(shapes) or 'none'})")
    return shapes[args.pool]


def upstream_sources(args: argparse.Namespace) -> Any:
    """Where rendering takes its sources (--upstream, $GPU_PLATFORM_UPSTREAM, else the cache),
    checked before the program runs; CommandError (exit 2) when they cannot be used."""
    from gpu_platform.infra.preview.upstream import SourceError, Sources, check_upstream_dir, load_lock

    flag = "--upstream" if args.upstream is not None else "GPU_PLATFORM_UPSTREAM"
    upstream = args.upstream if args.upstream is not None else os.environ.get("GPU_PLATFORM_UPSTREAM")
    try:
        lock = load_lock()
        upstream_dir = check_upstream_dir(flag, upstream, lock) if upstream is not None else None
    except SourceError as exc:
        raise CommandError([str(exc)], EXIT_CONFIG) from None
    offline = args.offline or os.environ.get("GPU_PLATFORM_OFFLINE") == "1"
    return Sources(lock, upstream_dir=upstream_dir, fetch=not offline)
