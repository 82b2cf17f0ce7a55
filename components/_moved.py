"""The deep import paths of the flat layout (``gpu_platform.components.gke_plan`` and the like), kept
for one release after the modules moved into one folder per family: importing an old path warns and
hands back the module at its new path (the same module object, so patches and ``isinstance`` hold).

Remove in the release after 0.1 (CHANGELOG.md says so)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

PACKAGE = "gpu_platform.components"

MOVED: dict[str, str] = {
    "aws_catalog": "catalog.aws",
    "aws_load_balancer_controller": "load_balancer.controller",
    "catalog_base": "catalog.base",
    "cloud": "core.cloud",
    "cluster_component": "core.cluster",
    "dask_args": "dask.args",
    "dask_operator": "dask.operator",
    "dask_resources": "dask.resources",
    "dataset_args": "datasets.args",
    "dataset_resources": "datasets.resources",
    "dcgm_args": "monitoring.dcgm_args",
    "dcgm_exporter": "monitoring.dcgm_exporter",
    "dcgm_values": "monitoring.dcgm_resources",
    "durations": "core.durations",
    "eks_args": "eks.args",
    "eks_cluster": "eks.cluster",
    "eks_gpu_pools": "eks.gpu_pools",
    "eks_node_group_args": "eks.node_group_args",
    "eks_node_group_resources": "eks.node_group_resources",
    "eks_plan": "eks.plan",
    "eks_resources": "eks.resources",
    "gke_args": "gke.args",
    "gke_plan": "gke.plan",
    "gke_pool_args": "gke.pool_args",
    "gke_resources": "gke.resources",
    "gpu_catalog": "catalog.gpus",
    "gpu_gke_cluster": "gke.cluster",
    "gpu_inference_service": "inference.service",
    "gpu_sharing": "pools.sharing",
    "gpu_utilization_args": "monitoring.gpu_utilization_args",
    "gpu_utilization_autoscaler": "monitoring.gpu_utilization_autoscaler",
    "gpu_zones": "catalog.gpu_zones",
    "headlamp_args": "headlamp.args",
    "inference_args": "inference.args",
    "karpenter_args": "karpenter.args",
    "karpenter_node_pools": "karpenter.node_pools",
    "karpenter_plan": "karpenter.plan",
    "karpenter_resources": "karpenter.resources",
    "kube": "core.kube",
    "kubeflow_args": "kubeflow.args",
    "kubeflow_install": "kubeflow.install",
    "kubeflow_plan": "kubeflow.plan",
    "kubeflow_transforms": "kubeflow.transforms",
    "kueue": "queues.kueue",
    "kueue_args": "queues.args",
    "kueue_plan": "queues.plan",
    "labels": "core.labels",
    "load_balancer_args": "load_balancer.args",
    "load_balancer_resources": "load_balancer.resources",
    "models": "core.models",
    "numbers": "core.numbers",
    "outputs": "core.outputs",
    "prometheus_args": "monitoring.prometheus_args",
    "prometheus_stack": "monitoring.prometheus_stack",
    "prometheus_values": "monitoring.prometheus_resources",
    "quantities": "core.quantities",
    "reserves": "pools.reserves",
    "shared_datasets": "datasets.shared_datasets",
    "spot_failover_eks_node_groups": "eks.node_groups",
    "warm_capacity": "warm.warm_capacity",
    "warm_capacity_args": "warm.args",
    "zones": "catalog.zones",
}
"""Old module name -> its module's path below the package now. Three old modules share their name with
the family folder they moved into (``pools``, ``headlamp``, ``provider``): that folder's package forwards
the old module's names (``forwarding``) instead."""

FOLDER_NAMED: dict[str, str] = {"pools": "pools.shapes", "headlamp": "headlamp.headlamp", "provider": "provider.provider"}
"""The old modules whose name is now a family folder, and where their contents went."""


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; the old import path is removed in the next release", DeprecationWarning, stacklevel=3)


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``gpu_platform.components.<old name>`` after every real finder has not, and loads it as the
    module at its new path."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        package, _, old = fullname.rpartition(".")
        if package != PACKAGE or old not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = f"{PACKAGE}.{MOVED[spec.name.rpartition('.')[2]]}"
        _warn(spec.name, new)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module at its new path is already executed."""


def install() -> None:
    """Adds the finder once, after the real ones."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())


def forwarding(folder: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of a family folder named like the module that moved into it: the old module's
    names, with a warning."""
    new = f"{PACKAGE}.{FOLDER_NAMED[folder]}"

    def module_getattr(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        module = importlib.import_module(new)
        try:
            value = getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {PACKAGE}.{folder!r} has no attribute {name!r}") from None
        _warn(f"{PACKAGE}.{folder}.{name}", f"{new}.{name}")
        return value

    return module_getattr
