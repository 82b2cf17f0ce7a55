"""The command line reference (docs/reference/cli.md): every command, subcommand, argument and flag, read
from the argparse parser the command line runs with, so the page cannot say a flag the parser lacks."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from gpu_platform.infra.docs import GENERATED, REFERENCE, anchor
from gpu_platform.infra.docs.markdown import cell, table

__all__ = ["cli_page", "cli_reference"]

_COMMON = ("help", "debug")
"""Destinations every command takes (`-h`/`--help`, `--debug`), said once at the top of the page."""


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of the parser's subcommands, in the order `--help` lists them."""
    for action in parser._actions:  # noqa: SLF001 - argparse keeps its actions only here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            helps = {a.dest: a.help or "" for a in action._choices_actions}  # noqa: SLF001
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        shown = action.metavar or action.dest
        return f"`{shown}` (optional)" if action.nargs in ("?", "*") else f"`{shown}`"
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return f"`{names}`"
    value = action.metavar or action.dest.upper()
    return f"`{names} {value}`"


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS, [], False):
        return "-"
    return f"`{action.default}`"


def _notes(action: argparse.Action, exclusive: dict[argparse.Action, list[str]]) -> str:
    notes = []
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
        notes.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
    if isinstance(action, argparse._AppendAction) or action.nargs == "*":  # noqa: SLF001
        notes.append("repeatable")
    if action in exclusive:
        notes.append("not with " + ", ".join(f"`{o}`" for o in exclusive[action]))
    return "; ".join(notes) or "-"


def _usage(parser: argparse.ArgumentParser) -> str:
    return " ".join(parser.format_usage().split()).removeprefix("usage: ")


def _command(parser: argparse.ArgumentParser, title: str, summary: str) -> list[str]:
    lines = [f"## {title}", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ".", ""]
    lines += [f"Usage: `{_usage(parser)}`", ""]
    exclusive: dict[argparse.Action, list[str]] = {}
    for group in parser._mutually_exclusive_groups:  # noqa: SLF001
        for action in group._group_actions:  # noqa: SLF001
            exclusive[action] = [o for other in group._group_actions if other is not action for o in other.option_strings]  # noqa: SLF001
    actions = [a for a in parser._actions if a.dest not in _COMMON and not isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
    if actions:
        rows = ((cell(_argument(a)), cell(_default(a)), cell(_notes(a, exclusive)), cell(a.help or "")) for a in actions)
        lines += table(("argument", "default", "values", "description"), rows)
        lines.append("")
    children = _subcommands(parser)
    if children:
        lines += ["Subcommands: " + ", ".join(f"[`{name}`](#{anchor(f'{title} {name}')})" for name, _, _ in children) + ".", ""]
    for name, help_text, child in children:
        lines += _command(child, f"{title} {name}", help_text)
    return lines


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """The page: the program's own options, then every command and subcommand with its arguments."""
    commands = _subcommands(parser)
    lines = [
        "# Command line reference",
        "",
        GENERATED,
        "",
        f"`{parser.prog}` has {len(commands)} commands: "
        + ", ".join(f"[`{name}`](#{anchor(f'{parser.prog} {name}')})" for name, _, _ in commands)
        + ". Every command also takes `-h`/`--help` (its usage and flags) and `--debug` (before or after the command: "
        "the traceback of an unexpected failure, for a bug report; also `GPU_PLATFORM_DEBUG=1`). The exit codes are "
        "the same for every command ([exit codes](../operating/exit-codes.md)).",
        "",
    ]
    own = [a for a in parser._actions if a.dest not in _COMMON and not isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
    lines += [f"## {parser.prog}", "", f"Usage: `{_usage(parser)}`", ""]
    lines += table(
        ("argument", "default", "values", "description"), ((cell(_argument(a)), cell(_default(a)), cell(_notes(a, {})), cell(a.help or "")) for a in own)
    )
    lines.append("")
    for name, help_text, child in commands:
        lines += _command(child, f"{parser.prog} {name}", help_text)
    return "\n".join(lines).rstrip() + "\n"


def cli_page(project_dir: Path, parser: argparse.ArgumentParser) -> tuple[Path, Callable[[str], str]]:
    """The generated page and its renderer, for `gpu-platform docs` (infra/docs.sync_docs' ``pages``)."""
    return project_dir / REFERENCE / "cli.md", lambda _: cli_reference(parser)
