"""`gpu-platform docs`: the stack config reference generated from the models."""

from __future__ import annotations

import argparse
from typing import Any

from gpu_platform.infra.cli.common import err, find_project
from gpu_platform.infra.errors import EXIT_OK, EXIT_VIOLATIONS


def cmd_docs(args: argparse.Namespace) -> int:
    from gpu_platform.infra.docs import sync_docs

    project_dir = find_project(args)
    stale = sync_docs(project_dir, write=args.write)
    if args.write:
        for path in stale:
            print(f"updated {path}")
        return EXIT_OK
    if args.check:
        for path in stale:
            err(f"{path} is out of date with the models; run: gpu-platform docs --write")
        return EXIT_VIOLATIONS if stale else EXIT_OK
    from gpu_platform.infra.docs import config_reference

    print(config_reference())
    return EXIT_OK


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the `docs` command to the parser."""
    docs = sub.add_parser("docs", parents=[common], help="the stack config reference generated from the models")
    group = docs.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="exit 1 when README.md or Pulumi.yaml is stale")
    group.add_argument("--write", action="store_true", help="rewrite the generated parts of README.md and Pulumi.yaml")
    docs.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    docs.set_defaults(func=cmd_docs)
