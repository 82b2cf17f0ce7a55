"""One stack on one target: apply it, then judge what the cluster does with it.

1. kwok nodes shaped like the stack's pools (infra/apply/nodes.py), when there are any;
2. every object applied in the engine's order (infra/apply/apply.py: each refusal one line);
3. the pods once the controllers and the scheduler are done (apply.settle);
4. the workloads: a controller whose pods the server refused (infra/apply/workloads.py);
5. with nodes, the scheduling: pods that fit no pool even at its maximum, and what is expected to wait
   (infra/apply/scheduling.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from gpu_platform.infra.apply.apply import ApplyObject, ApplyResult, Server, apply_objects, create_nodes, settle
from gpu_platform.infra.apply.nodes import Pools
from gpu_platform.infra.apply.scheduling import judge_scheduling
from gpu_platform.infra.apply.workloads import WORKLOAD_KINDS, judge_workloads

__all__ = ["apply_and_judge", "apply_stack"]


def apply_stack(
    objects: Sequence[ApplyObject],
    pools: Pools | None,
    target: str,
    progress: Callable[[str], None] | None = None,
    cloud: str | None = None,
    stack: str | None = None,
    prune: bool = False,
) -> ApplyResult:
    """Apply ``objects`` (stack_objects' order) to ``target`` and judge the result: ``local`` (the built
    control plane, started and stopped here, with kwok nodes for ``pools``) or a kubeconfig path (a user's
    own cluster: nodes are created only when ``pools`` is given; pass None there unless kwok runs in it).
    There, with ``stack``, what an earlier apply of that stack left that is no longer in the plan is listed,
    and with ``prune`` deleted (dry run first; infra/apply/inventory.py); an object whose change is refused
    as immutable is replaced.

    Raises ControlPlaneError (local: Go or the binaries missing, a start failure).
    """
    if target == "local":
        from gpu_platform.infra.apply.local import control_plane, find_binaries

        binaries = find_binaries(build=True)
        with control_plane(binaries) as plane:
            if progress:
                progress(f"control plane {plane.version} at {plane.server}")
            from gpu_platform.infra.preview.cluster_checks import CLUSTER_PROVIDED_GROUPS

            return apply_and_judge(Server(plane.api_client()), objects, pools, frozenset(CLUSTER_PROVIDED_GROUPS.get(cloud or "", ())))
    from kubernetes import config

    server = Server(config.new_client_from_config(config_file=target))
    result = apply_and_judge(server, objects, pools, replace=True)
    if stack is not None:
        from gpu_platform.infra.apply.inventory import prune as find_leftovers

        leftovers = find_leftovers(server, stack, objects, delete=prune)
        result.left, result.pruned, result.prune_refused = leftovers.listed, leftovers.dry_run + leftovers.pruned, leftovers.refused
    return result


def apply_and_judge(
    server: Server, objects: Sequence[ApplyObject], pools: Pools | None, provided: frozenset[str] = frozenset(), replace: bool = False
) -> ApplyResult:
    """Steps 1 to 5 against ``server``; everything found in the one ApplyResult. ``replace``: an object whose
    change is refused as immutable is replaced (deleted, then created), as the engine would (a cluster where
    an earlier apply left objects)."""
    result = ApplyResult(provided_groups=provided, replace_immutable=replace)
    start = time.monotonic()
    nodes = pools.nodes() if pools is not None else []
    if nodes:
        create_nodes(server, nodes, result)
    apply_objects(server, objects, result)
    if nodes:
        result.pods = settle(server)
    result.workloads = judge_workloads(server, result.applied)
    result.judged = sum(o.kind in WORKLOAD_KINDS for o in result.applied)
    if pools is not None and nodes:
        scheduling = judge_scheduling(server, pools, result, result.pods)
        result.pods, result.unfit, result.expected, result.node_counts = scheduling.pods, scheduling.unfit, scheduling.expected, scheduling.nodes
    result.seconds = time.monotonic() - start
    return result
