"""`gpu-platform preview`: the offline preview of a stack or a program of one's own."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from gpu_platform.infra.cli.common import (
    find_project,
    first_line,
    json_bytes,
    upstream_sources,
)
from gpu_platform.infra.errors import (
    EXIT_CONFIG,
    EXIT_OK,
    EXIT_PROGRAM,
    EXIT_VIOLATIONS,
    CommandError,
    deferred_interrupts,
)
from gpu_platform.infra.preview.tree import render_tree


def cmd_preview(args: argparse.Namespace) -> int:
    with deferred_interrupts(second_raises=True):  # the SDKs' imports: see read_stack
        from gpu_platform.infra.apply.command import check_target, run_apply
        from gpu_platform.infra.output import check_distinct, file_target, folder_target, write_outputs
        from gpu_platform.infra.preview.checks import check_plan
        from gpu_platform.infra.preview.manifests import MANIFEST_FILES, manifest_files, masked
        from gpu_platform.policies.evaluate import read_policy_config

    # Every output path and option is checked before the program runs and before anything is written.
    json_target = file_target("--json", args.json) if args.json is not None else None
    manifests_target = folder_target("--manifests", args.manifests, MANIFEST_FILES) if args.manifests is not None else None
    check_distinct(json_target, manifests_target)
    check_target(args)
    args.stack = _preview_stack(args)
    # The program reads upstream files too (the load balancer controller's IAM policy): --upstream and --offline
    # hold for it with --no-render as well; only rendering is left out.
    sources = upstream_sources(args)
    policy_config = read_policy_config(Path(args.policy_config) if args.policy_config is not None else None)
    plan, stack_config = _run(args, sources)

    checks = check_plan(plan, stack_config, policy_config, None if args.no_render else sources)
    if checks.report is not None and args.render and checks.report.notices:
        raise CommandError([f"{line} (--render requires every release and directory rendered)" for line in checks.report.notices], EXIT_CONFIG)
    outputs: list[Any] = []
    if json_target is not None:
        outputs.append((json_target, json_bytes(masked(checks.plan_document(plan)))))  # secret values masked at their keys
    if manifests_target is not None:
        outputs.append((manifests_target, manifest_files(checks.objects, checks.report.rendering if checks.report is not None else None)))
    write_outputs(outputs)

    if not args.quiet:
        print(render_tree(plan, _rendered_details(checks.report)))
        print()
    print("\n".join(checks.lines(plan)))
    applied = EXIT_OK
    if args.apply is not None:
        lines, applied = run_apply(args, plan, checks.objects, checks.report, stack_config)
        print("\n".join(lines))
    return EXIT_VIOLATIONS if checks.failed or applied else EXIT_OK


def _run(args: argparse.Namespace, sources: Any = None) -> tuple[Any, Any]:
    """Run the program (this repository's, or --program's) once: its plan, and the config it read
    (a program of one's own has none of ours: program_target stands in). The program reads the upstream
    files it needs (the AWS Load Balancer Controller's IAM policy) from ``sources``, the ones rendering uses
    (--upstream, else the cache), when given."""
    from gpu_platform.infra.preview.engine import load_program, run_program
    from gpu_platform.infra.preview.upstream import sources_for_program
    from gpu_platform.infra.stack.errors import ConfigError
    from gpu_platform.infra.stack.read import read_stack_file

    program = load_program(Path(args.program)) if args.program is not None else None
    project_dir = program.project_dir if program is not None else find_project(args)
    config, secret_keys = read_stack_file(project_dir, args.stack, required=program is None)
    try:
        # Ctrl-C takes effect when the run ends (seconds; a second Ctrl-C at once): an
        # interrupt inside the SDK's event loop or a provider SDK's import is not safe.
        with deferred_interrupts(second_raises=True), sources_for_program(sources):
            plan = run_program(project_dir, args.stack, config, secret_keys, program=program)
        own = plan.stack_config if program is None else None
        return plan, own if own is not None else program_target(plan, args.kubernetes_version)
    except (ConfigError, KeyboardInterrupt):
        raise
    except Exception as exc:
        raise _program_failure(exc) from exc


def _rendered_details(report: Any) -> dict[str, str]:
    """Per release or directory (by URN): its source, object count and findings, for the tree."""
    if report is None:
        return {}
    counts: dict[str, int] = {}
    for finding in [*(f for f in report.schema if f.validated), *report.policy, *report.cluster]:
        name = getattr(finding, "resource", "") or ""
        counts[name.split(": ", 1)[0]] = counts.get(name.split(": ", 1)[0], 0) + 1
    details = {}
    for source in report.rendering.sources:
        if source.rendered:
            kinds: dict[str, int] = {}
            for obj in source.objects:
                kinds[obj.kind] = kinds.get(obj.kind, 0) + 1
            found = counts.get(source.resource.name, 0)
            details[source.resource.urn] = (
                f"rendered {len(source.objects)} objects ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}); {found} findings"
            )
        else:
            details[source.resource.urn] = f"not rendered: {source.unavailable or source.error}"
    return details


def _preview_stack(args: argparse.Namespace) -> str:
    """The stack to preview: positional or --stack (not two different ones); dev for --program."""
    if args.stack is not None and args.stack_option is not None and args.stack != args.stack_option:
        raise CommandError(f"--stack {args.stack_option}: the positional stack is {args.stack}; give one")
    stack = args.stack if args.stack is not None else args.stack_option
    if stack is None and args.program is None:
        raise CommandError("preview needs a stack (gpu-platform preview <stack>) or --program DIR")
    if args.program is None and args.kubernetes_version is not None:
        raise CommandError("--kubernetes-version applies to --program; a stack sets gpu-platform:kubernetes_version")
    if args.program is not None and args.project_dir is not None:
        raise CommandError("--project-dir and --program both name a project: give one")
    if args.kubernetes_version is not None and not re.fullmatch(r"1\.[0-9]{2}", args.kubernetes_version):
        raise CommandError(f"--kubernetes-version {args.kubernetes_version}: a Kubernetes minor version such as 1.34")
    return "dev" if stack is None else stack


def program_target(plan: Any, kubernetes_version: str | None) -> Any:
    """What the checks need of a program of one's own, which has no gpu-platform stack config:
    the Kubernetes version (--kubernetes-version, else the stack config's default), the cloud
    its cluster runs on (from the plan's resources; gcp when it declares no cluster), and its pools:
    those of the cluster components it made (each one's ``pool_shapes()``; a pool two of them share,
    an EKS cluster's system group seen from its node groups too, counted once), which ``--apply``
    makes kwok nodes of."""
    from types import SimpleNamespace

    from gpu_platform.components.core.cloud import Cloud
    from gpu_platform.infra.stack.model import StackConfig

    version = kubernetes_version or StackConfig.model_fields["kubernetes_version"].default
    cloud = Cloud.AWS if any(r.type.startswith("aws:eks/") for r in plan.resources) else Cloud.GCP
    shapes: dict[str, Any] = {}
    for cluster in plan.clusters:
        for shape in cluster.pool_shapes():
            shapes.setdefault(shape.name, shape)
    pools = list(shapes.values())
    made = [f"{type(c).__name__} {c.pulumi_resource_name}" for c in plan.clusters]
    source = (
        f"the pools of the program's cluster components ({', '.join(made)}): {', '.join(shapes)}"
        if pools
        else "none: the program makes no cluster component (GpuGkeCluster, EksCluster, SpotFailoverEksNodeGroups or "
        "KarpenterNodePools), so no kwok node stands for its nodes and pods that need one stay pending"
    )
    return SimpleNamespace(
        kubernetes_version=version,
        cloud=cloud,
        pool_shapes=lambda: list(pools),
        pool_zones=lambda: {s.name: s.zone_names() for s in pools},
        pools_source=source,
    )


def _program_failure(exc: Exception) -> CommandError:
    """A program's exception as the command's error, exit 3: the stack config was read and checked before the program
    ran, so whatever fails inside it is the program's defect, never the user's config (exit 2). A component's refused
    input (Pulumi's InputPropertyError/InputPropertiesError) is one line per property, naming it; anything else one line."""
    import pulumi

    if isinstance(exc, pulumi.InputPropertyError):
        return CommandError([f"the program gave a component invalid input {exc.property_path}: {exc.reason}"], EXIT_PROGRAM)
    if isinstance(exc, pulumi.InputPropertiesError):
        details = exc.errors or []
        lines = [f"the program gave a component invalid input {d['property_path']}: {d['reason']}" for d in details]
        return CommandError(lines or [f"the program gave a component invalid inputs: {exc.message}"], EXIT_PROGRAM)
    if (refused := _args_refused(exc)) is not None:
        return CommandError(refused, EXIT_PROGRAM)
    return CommandError([f"the program failed: {type(exc).__name__}: {first_line(exc)}"], EXIT_PROGRAM)


def _args_refused(exc: Exception) -> list[str] | None:
    """A component Args model the program built and pydantic refused (a GpuGkeClusterArgs whose pool lists a zone
    without its GPU): one line per problem, by the stack config's own formatter, so the program gets the verdict
    a stack file gets; None for any other exception."""
    from pydantic import BaseModel, ValidationError

    import gpu_platform.components as components
    from gpu_platform.infra.stack.errors import format_validation_error

    root = getattr(components, exc.title, None) if isinstance(exc, ValidationError) else None
    if not (isinstance(exc, ValidationError) and isinstance(root, type) and issubclass(root, BaseModel)):
        return None
    return [f"the program gave {exc.title} invalid input {line}" for line in format_validation_error(exc, root)]


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the `preview` command to the parser."""
    preview = sub.add_parser("preview", parents=[common], help="offline preview of a stack: resource tree, plan JSON, manifests")
    preview.add_argument("stack", nargs="?", help="stack name: stacks/Pulumi.<stack>.yaml (with --program: default dev)")
    preview.add_argument(
        "--program",
        metavar="DIR",
        help="preview your own Python Pulumi program (the folder of its Pulumi.yaml) with the same checks; "
        "its stack file Pulumi.<stack>.yaml is read when there is one",
    )
    preview.add_argument("--stack", dest="stack_option", metavar="NAME", help="the stack (the same as the positional name)")
    preview.add_argument(
        "--kubernetes-version",
        metavar="X.Y",
        help="with --program: the Kubernetes minor whose schemas the objects are checked against (default: 1.34)",
    )
    preview.add_argument("--json", metavar="PLAN", help="write the plan as JSON to PLAN (- for standard output)")
    preview.add_argument(
        "--manifests",
        metavar="DIR",
        help="write every Kubernetes object as YAML into DIR, replacing it whole (a new folder, or one holding only *.yaml)",
    )
    preview.add_argument("--project-dir", metavar="DIR", help="the folder holding Pulumi.yaml (default: found from the cwd)")
    preview.add_argument("--quiet", action="store_true", help="print the summary and findings only, not the tree")
    preview.add_argument("--policy-config", metavar="FILE", help="policy pack config (the JSON of pulumi preview --policy-pack-config)")
    preview.add_argument(
        "--upstream",
        metavar="DIR",
        help="render Helm releases and Kustomize directories from this local copy of the locked sources "
        "(charts/<name>-<version>.tgz, git/<owner>+<name>.git; default: $GPU_PLATFORM_UPSTREAM, else the user cache)",
    )
    preview.add_argument("--offline", action="store_true", help="never fetch sources missing from the cache (also GPU_PLATFORM_OFFLINE=1)")
    render_mode = preview.add_mutually_exclusive_group()
    render_mode.add_argument("--no-render", action="store_true", help="check the plan only, not what its releases and directories put on the cluster")
    render_mode.add_argument("--render", action="store_true", help="fail (exit 2) when a release or directory cannot be rendered")
    preview.add_argument(
        "--apply",
        metavar="local|KUBECONFIG",
        help="server-side apply every object (plan and rendered) in the engine's order: 'local' starts the control "
        "plane built from the upstream modules (tests/kube/build.sh) with kwok nodes like the pools; a kubeconfig "
        "applies to that cluster. Then judges what the controllers and the scheduler do with it: each refusal, workload "
        "whose pods are refused and pod that fits no pool is one line and exit 1",
    )
    preview.add_argument("--apply-kwok-nodes", action="store_true", help="with --apply KUBECONFIG: create kwok nodes like the pools there too")
    preview.add_argument(
        "--prune",
        action="store_true",
        help="with --apply KUBECONFIG: delete what an earlier apply of this stack put there and its plan no longer has "
        "(each delete dry-run first; without it they are only listed)",
    )
    preview.set_defaults(func=cmd_preview)
