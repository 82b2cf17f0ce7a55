"""`gpu-platform docs`: the references and the generated parts of the docs, from the code."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpu_platform.infra.cli.common import err, find_project
from gpu_platform.infra.errors import EXIT_OK, EXIT_VIOLATIONS


def stale_docs(project_dir: Path, parser: argparse.ArgumentParser, write: bool = False) -> list[Path]:
    """Every generated file that differs from what the code gives (rewritten when ``write``): those of
    infra/docs and the command line reference, read from ``parser``."""
    from gpu_platform.infra.cli.reference import cli_page
    from gpu_platform.infra.docs import sync_docs

    return sync_docs(project_dir, write=write, pages=[cli_page(project_dir, parser)])


def cmd_docs(args: argparse.Namespace) -> int:
    project_dir = find_project(args)
    stale = stale_docs(project_dir, args.parser, write=args.write)
    if args.write:
        for path in stale:
            print(f"updated {path}")
        return EXIT_OK
    if args.check:
        for path in stale:
            err(f"{path} is out of date with the code; run: gpu-platform docs --write")
        return EXIT_VIOLATIONS if stale else EXIT_OK
    from gpu_platform.infra.docs import config_reference

    print(config_reference())
    return EXIT_OK


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the `docs` command to the parser."""
    docs = sub.add_parser("docs", parents=[common], help="the references generated from the code: print the stack config reference, check or rewrite them all")
    group = docs.add_mutually_exclusive_group()
    group.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a generated file (docs/reference/*.md, the README's contents, stacks/ and components/ READMEs, Pulumi.yaml's config) is stale",
    )
    group.add_argument("--write", action="store_true", help="rewrite every generated file that is stale")
    docs.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    docs.set_defaults(func=cmd_docs)
