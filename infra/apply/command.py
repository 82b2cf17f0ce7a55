"""``gpu-platform preview STACK --apply local|KUBECONFIG``: the preview's objects applied for real.

- ``--apply local`` starts the control plane built from the upstream modules (infra/apply/local.py;
  built once by tests/kube/build.sh when Go 1.26 is here), creates kwok nodes shaped like the
  stack's pools, applies, judges the workloads and the scheduling (infra/apply/judge.py), and stops it;
- ``--apply KUBECONFIG`` applies to the cluster that kubeconfig's current context names (a test
  cluster of your own: the objects stay there), judges the workloads, replaces what an immutable change
  needs replaced, lists what an earlier apply of the stack left that the plan no longer has and deletes
  it with ``--prune`` (infra/apply/inventory.py). No nodes are created there unless
  ``--apply-kwok-nodes`` asks (a cluster running kwok with its annotation selector).

Exit codes: 0 every object applied, every workload's pods created, every pod fitting a pool; 1 the
server refused one or more objects, a controller's pods or a prune, or a pod fits no pool (one line
each); 2 a usage or set-up problem (Go or the binaries missing, no such kubeconfig, sources not
rendered); 4 the server cannot be reached.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from gpu_platform.infra.errors import EXIT_CONFIG, EXIT_OK, EXIT_SERVICE, EXIT_VIOLATIONS, CommandError

__all__ = ["check_target", "run_apply"]


def check_target(args: Any) -> None:
    """Usage problems of --apply, before the program runs (CommandError, exit 2)."""
    target = getattr(args, "apply", None)
    if target is None:
        if getattr(args, "apply_kwok_nodes", False):
            raise CommandError("--apply-kwok-nodes: only with --apply KUBECONFIG")
        if getattr(args, "prune", False):
            raise CommandError("--prune: only with --apply KUBECONFIG")
        return
    if args.no_render:
        raise CommandError("--apply: applies what the releases and directories render too; drop --no-render")
    if getattr(args, "prune", False) and target == "local":
        raise CommandError("--prune: only with --apply KUBECONFIG (--apply local starts an empty cluster every time)")
    if target == "local":
        if getattr(args, "apply_kwok_nodes", False):
            raise CommandError("--apply-kwok-nodes: --apply local always creates kwok nodes; use it with --apply KUBECONFIG")
        from gpu_platform.infra.apply.local import NEEDS_GO, ControlPlaneError, find_binaries, go_binary, kube_modules_dir

        try:
            find_binaries(build=False)
        except ControlPlaneError as exc:
            if os.environ.get("GPU_PLATFORM_KUBE_BIN") or kube_modules_dir() is None:
                raise CommandError(str(exc)) from None
            if go_binary() is None:
                raise CommandError(NEEDS_GO) from None
        return
    if not os.path.isfile(target):
        raise CommandError(f"--apply {target}: no such kubeconfig file; use --apply local or the path of a kubeconfig")


def run_apply(args: Any, plan: Any, objects: list[Any], report: Any, stack_config: Any) -> tuple[list[str], int]:
    """Apply the stack; (lines to print, exit code)."""
    from gpu_platform.infra.apply.apply import stack_objects
    from gpu_platform.infra.apply.judge import apply_stack
    from gpu_platform.infra.apply.local import ControlPlaneError
    from gpu_platform.infra.apply.nodes import Pools

    if report is not None and report.notices:
        raise CommandError([f"{line} (--apply requires every release and directory rendered)" for line in report.notices])
    target = args.apply
    to_apply = stack_objects(plan, objects, report.rendering if report is not None else None)
    shapes = stack_config.pool_shapes() if hasattr(stack_config, "pool_shapes") else []
    zones = stack_config.pool_zones() if hasattr(stack_config, "pool_zones") else {}
    pools = Pools(shapes, zones) if target == "local" or getattr(args, "apply_kwok_nodes", False) else None
    if target != "local":
        _reachable(target)
    try:
        cloud = getattr(getattr(stack_config, "cloud", None), "value", None)
        result = apply_stack(
            to_apply,
            pools,
            target,
            progress=lambda line: print(f"apply: {line}", file=sys.stderr),
            cloud=cloud,
            stack=getattr(plan, "stack", None) or args.stack,
            prune=bool(getattr(args, "prune", False)),
        )
    except ControlPlaneError as exc:
        raise CommandError(str(exc)) from None
    where = "the local control plane" if target == "local" else target
    nodes = sum(result.node_counts.values())
    lines = [
        f"applied: {len(result.applied)} of {len(to_apply)} objects to {where} in {result.seconds:.1f} s, "
        f"{len(result.refusals)} refused" + (f"; {nodes} kwok nodes, {len(result.pods)} pods" if nodes else ""),
        f"judged: {result.judged} workloads, {len(result.workloads)} refused their pods"
        + (f"; {len(result.unfit)} fit no pool, {len(result.expected)} expected" if nodes else ""),
    ]
    if pools is not None and (source := getattr(stack_config, "pools_source", None)):
        lines.append(f"kwok nodes: {source}")
    lines += [f"warning: apply: {w}" for w in result.warnings]
    lines += [f"notice: apply: {line}" for line in result.unserved]
    lines += [f"replaced: {r.line} (an immutable field changed: deleted and created again, as pulumi up replaces it)" for r in result.replaced]
    lines += [f"expected: {line}" for line in result.expected]
    lines += [f"notice: left the plan: {line}" + ("" if result.pruned or result.prune_refused else " (--prune removes it)") for line in result.left]
    lines += [f"pruned: {line}" for line in result.pruned]
    lines += [f"violation: prune: {line}" for line in result.prune_refused]
    lines += [f"violation: apply: {r.line}" for r in result.refusals]
    lines += [f"violation: workload: {r.line}" for r in result.workloads]
    lines += [f"violation: scheduling: {line}" for line in result.unfit]
    failed = result.refusals or result.workloads or result.unfit or result.prune_refused
    return lines, EXIT_VIOLATIONS if failed else EXIT_OK


def _reachable(kubeconfig: str) -> None:
    from gpu_platform.infra.apply.apply import Server

    try:
        from kubernetes import config

        server = Server(config.new_client_from_config(config_file=kubeconfig))
    except Exception as exc:  # noqa: BLE001 - any kubeconfig the client cannot load: one line
        raise CommandError(f"--apply {kubeconfig}: not a usable kubeconfig: {' '.join(str(exc).split())[:300]}", EXIT_CONFIG) from None
    status, document, _ = server.request("GET", "/version")
    if status != 200:
        reason = document.get("message") or f"HTTP {status}" if status else "no answer"
        raise CommandError(f"--apply {kubeconfig}: the API server does not answer /version: {reason}", EXIT_SERVICE)
