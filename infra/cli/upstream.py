"""`gpu-platform upstream`: check or rewrite the lock of upstream sources."""

from __future__ import annotations

import argparse
from typing import Any

from gpu_platform.infra.cli.common import err, find_project, upstream_sources
from gpu_platform.infra.errors import (
    EXIT_CONFIG,
    EXIT_OK,
    EXIT_VIOLATIONS,
    CommandError,
    deferred_interrupts,
)


def cmd_upstream(args: argparse.Namespace) -> int:
    """`upstream check`: every locked source is in the sources and matches the lock.
    `upstream lock`: the lock rewritten to cover exactly what the stacks and the components
    declare (`--check`: exit 1 when it would change, write nothing)."""
    from gpu_platform.infra.output import file_target, write_outputs
    from gpu_platform.infra.preview.engine import run_program
    from gpu_platform.infra.preview.upstream import (
        LOCK_PATH,
        SourceError,
        check_lock,
        dump_lock,
        lock_files,
        sources_for_program,
    )
    from gpu_platform.infra.stack.read import read_stack_file

    sources = upstream_sources(args)
    if args.action == "check":
        problems = check_lock(sources)
        for line in problems:
            err(line)
        print(
            f"{len(sources.lock.charts)} charts, {len(sources.lock.git)} git refs and {len(sources.lock.files)} files locked; "
            f"{len(problems)} problems in {sources.describe()}"
        )
        return EXIT_VIOLATIONS if problems else EXIT_OK
    from gpu_platform.infra.preview.render import (
        declared_sources,
        lock_for,
        supported_files,
        supported_sources,
    )

    target = None if args.check else file_target("lock", str(LOCK_PATH))
    project_dir = find_project(args)
    stacks = args.stacks or sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (project_dir / "stacks").glob("Pulumi.*.yaml"))
    declared = [supported_sources()]
    try:
        # The single files first: a stack's program reads them (the controller's IAM policy).
        files = lock_files(supported_files(), sources)
    except SourceError as exc:
        raise CommandError([str(exc)], EXIT_CONFIG) from None
    sources.lock = sources.lock.model_copy(update={"files": files})
    for stack in stacks:
        config, secret_keys = read_stack_file(project_dir, stack)
        with deferred_interrupts(second_raises=True), sources_for_program(sources):
            declared.append(declared_sources(run_program(project_dir, stack, config, secret_keys)))
    try:
        text = dump_lock(lock_for(declared, sources).model_copy(update={"files": files}))
    except SourceError as exc:
        raise CommandError([str(exc)], EXIT_CONFIG) from None
    if target is None:
        stale = text != LOCK_PATH.read_text(encoding="utf-8")
        if stale:
            err(f"{LOCK_PATH} does not cover exactly what the stacks and components declare; run: gpu-platform upstream lock")
        return EXIT_VIOLATIONS if stale else EXIT_OK
    write_outputs([(target, text.encode("utf-8"))])
    print(f"wrote {LOCK_PATH}")
    return EXIT_OK


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the `upstream` command to the parser."""
    up = sub.add_parser("upstream", parents=[common], help="the lock of upstream charts and Kustomize sources: check it, or re-lock")
    up.add_argument("action", choices=["check", "lock"], help="check: the sources match the lock; lock: rewrite the lock for the stacks")
    up.add_argument("stacks", nargs="*", help="lock: the stacks whose sources to lock (default: every stack file)")
    up.add_argument("--upstream", metavar="DIR", help="a local copy of the sources (default: the user cache, fetched online)")
    up.add_argument("--offline", action="store_true", help="never fetch")
    up.add_argument("--check", action="store_true", help="lock: exit 1 when the lock would change, write nothing")
    up.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml")
    up.set_defaults(func=cmd_upstream, no_render=False)
