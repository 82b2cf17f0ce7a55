"""Planning a Kubeflow install, pure: which manifests at which ref, how steps land on the training pool, whether the system pool holds the edition."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_platform.components.kubeflow.args import EDITION_FOOTPRINT, Edition, KubeflowInstallArgs, TrainingPoolSelector
from gpu_platform.components.pools.shapes import NodePoolShape, PoolPlacement, Taint, tolerations

__all__ = ["capacity_problem", "manifest_sources", "place_on_training_pool", "training_placement"]


def manifest_sources(args: KubeflowInstallArgs) -> list[tuple[str, str]]:
    """(role, kustomize git URL) in the order they must be applied."""
    ref = args.release_ref
    if args.edition is Edition.PIPELINES:
        base = "https://github.com/kubeflow/pipelines//manifests/kustomize"
        return [
            ("cluster-scoped", f"{base}/cluster-scoped-resources?ref={ref}"),
            ("pipelines", f"{base}/env/platform-agnostic?ref={ref}"),
        ]
    return [("platform", f"https://github.com/kubeflow/manifests//example?ref={ref}")]


# --- the training pool ------------------------------------------------------------------------


def training_placement(selector: TrainingPoolSelector, pools: Sequence[NodePoolShape]) -> PoolPlacement:
    """How a pipeline step lands on the training pool, from the stack's pools.

    One matching pool: its own placement (on GKE a spot-then-on-demand pool is selected
    through its ComputeClass, so the class keeps its spot-first order). Several: the
    training label, tolerating every taint they carry. None: ValueError.
    """
    matching = [p for p in pools if selector.matches(p)]
    if not matching:
        raise ValueError(f"no pool carries label {selector.label_key}={selector.label_value} and taint {selector.taint}")
    if len(matching) == 1:
        return matching[0].placement
    tolerations: dict[str, Taint] = {}
    for pool in matching:
        for taint in pool.placement.tolerations:
            tolerations.setdefault(str(taint), taint)
    return PoolPlacement({selector.label_key: selector.label_value}, tuple(tolerations.values()))


def place_on_training_pool(task: Any, placement: PoolPlacement) -> Any:
    """Confine one KFP pipeline task to the training pool: its node selector and tolerations.

    Uses kfp-kubernetes (``pip install 'gpu-platform[kfp]'``); returns the task.
    """
    from kfp import kubernetes  # the KFP SDK is heavy: only pipeline authors import it

    for key, value in placement.node_selector.items():
        kubernetes.add_node_selector(task, label_key=key, label_value=value)
    for toleration in tolerations(placement.tolerations):
        kubernetes.add_toleration(task, **toleration)
    return task


# --- capacity ---------------------------------------------------------------------------------


def capacity_problem(edition: Edition, system_pools: Sequence[NodePoolShape], reserve_percent: int) -> str | None:
    """Why the system pools cannot hold the edition at their maximum size, or None.

    ``reserve_percent`` of the pools is kept for the kubelet, system pods and the other
    add-ons (monitoring, operators).
    """
    need = EDITION_FOOTPRINT[edition]
    vcpus = sum(p.vcpus * p.max_nodes for p in system_pools) * (100 - reserve_percent) / 100
    memory = sum(p.memory_mib * p.max_nodes for p in system_pools) * (100 - reserve_percent) / 100
    if need.vcpus <= vcpus and need.memory_mib <= memory:
        return None
    pools = ", ".join(f"{p.name} ({p.max_nodes}x {p.machine_type})" for p in system_pools) or "none"
    return (
        f"the {edition.value} edition needs {need.vcpus:g} vCPU and {need.memory_mib // 1024} GiB on the system pool; "
        f"{pools} offer {vcpus:g} vCPU and {memory / 1024:g} GiB after the {reserve_percent}% reserve: "
        "raise the system pool's max_nodes or machine type"
    )


# --- transforms of the rendered manifests -----------------------------------------------------
