"""Valid inputs to start from; each test changes one thing."""

from __future__ import annotations

import copy
from typing import Any


def t4_pool(**overrides: Any) -> dict[str, Any]:
    pool = {
        "name": "t4",
        "machine_type": "n1-standard-4",
        "accelerator_type": "nvidia-tesla-t4",
        "accelerator_count": 2,
        "autoscaling": {"scope": "per_zone", "min_nodes": 1, "max_nodes": 20},
    }
    pool.update(overrides)
    return pool


def a100_pool(**overrides: Any) -> dict[str, Any]:
    pool = {
        "name": "a100",
        "machine_type": "a2-highgpu-1g",
        "accelerator_type": "nvidia-tesla-a100",
        "capacity": "spot_then_on_demand",
        "autoscaling": {"scope": "total", "min_nodes": 0, "max_nodes": 8},
    }
    pool.update(overrides)
    return pool


def gke(**overrides: Any) -> dict[str, Any]:
    """The RAPIDS deep-dive cluster: regional us-central1, zones b and c, one 2x T4 pool."""
    args: dict[str, Any] = {
        "location": "us-central1",
        "node_locations": ["us-central1-b", "us-central1-c"],
        "gpu_pools": [t4_pool()],
    }
    args.update(copy.deepcopy(overrides))
    return args


def stack(**gke_overrides: Any) -> dict[str, Any]:
    return {"cloud": "gcp", "gke": gke(**gke_overrides)}


def gpu_class(**overrides: Any) -> dict[str, Any]:
    """The seed's small class: p3.2xlarge spot then on-demand, 0..4."""
    cls: dict[str, Any] = {"name": "small", "instance_types": ["p3.2xlarge"], "max_nodes": 4}
    cls.update(copy.deepcopy(overrides))
    return cls


def eks(**overrides: Any) -> dict[str, Any]:
    """dev-eks's cluster: ap-northeast-2 in zones a and c (2b offered no GPUs to the seed)."""
    args: dict[str, Any] = {"region": "ap-northeast-2", "zones": ["ap-northeast-2a", "ap-northeast-2c"]}
    args.update(copy.deepcopy(overrides))
    return args


def eks_node_groups(**overrides: Any) -> dict[str, Any]:
    """The seed's classes: small p3.2xlarge and large p3.8xlarge, each spot then on-demand."""
    args: dict[str, Any] = {"classes": [gpu_class(), gpu_class(name="large", instance_types=["p3.8xlarge"], max_nodes=2)]}
    args.update(copy.deepcopy(overrides))
    return args


def eks_stack(eks_args: dict[str, Any] | None = None, **group_overrides: Any) -> dict[str, Any]:
    return {"cloud": "aws", "eks": eks_args or eks(), "eks_node_groups": eks_node_groups(**group_overrides)}


def prod_eks_raw() -> dict[str, Any]:
    """prod-eks's gpu-platform config as StackConfig reads it (secrets left out, the region
    from aws:region): a shipped stack to change one thing in."""
    from gpu_platform.infra.stack.read import read_stack_file
    from tests.conftest import PROJECT_DIR

    values, _ = read_stack_file(PROJECT_DIR, "prod-eks")
    raw = {k.removeprefix("gpu-platform:"): v for k, v in values.items() if k.startswith("gpu-platform:")}
    raw = {k: v for k, v in raw.items() if not k.endswith(("_password", "_hash", "_secret"))}
    raw["eks"]["region"] = values.get("aws:region", "us-west-2")
    return raw


def recipe_stack() -> Any:
    """prod-eks on the cluster autoscaler with the Dask scheduler recipe of docs/clouds/eks-gpu-sharing.md: its scheduler class
    time-sliced four ways (the node-template tags count GPUs x clients; prod-eks itself is provisioned by
    Karpenter, where a NodeOverlay does: tests/apply/test_karpenter_overlay.py)."""
    raw = prod_eks_raw()
    raw["eks_node_groups"].pop("provisioner", None)
    raw["eks_node_groups"].pop("karpenter", None)
    for cls in raw["eks_node_groups"]["classes"]:
        if cls["name"] == "scheduler":
            cls["gpu_sharing"] = {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}
    from gpu_platform.infra.stack.model import StackConfig

    return StackConfig.model_validate(raw)


def dws_pool(**overrides: Any) -> dict[str, Any]:
    """An A100 pool with GKE's queued provisioning (DWS): on demand, total bounds from zero."""
    return a100_pool(**{"name": "a100-dws", "capacity": "on_demand", "queued_provisioning": True, **overrides})


def dws_stack_raw(**overrides: Any) -> dict[str, Any]:
    """A GKE stack (test data, not a shipped stack) with a plain T4 pool, a DWS A100 pool beside it, two Dask
    tenants and the queues: what a queued-provisioning pool needs to be reachable."""
    raw: dict[str, Any] = {
        "cloud": "gcp",
        "gke": gke(gpu_pools=[t4_pool(), dws_pool()]),
        "dask": {"tenants": [{"name": "team-a", "gpu_quota": 8}, {"name": "team-b", "gpu_quota": 4}]},
        "queues": {},
    }
    raw.update(copy.deepcopy(overrides))
    return raw


CLUSTER_SECTIONS = ("gke", "eks", "eks_node_groups")
"""The stack keys that make a cluster, which an existing_cluster stands in place of."""


def existing_stack(shipped: str, drop: tuple[str, ...] = ("shared_datasets",)) -> tuple[dict[str, Any], set[str]]:
    """A shipped stack moved onto an existing cluster with the same pools, as read_stack_file gives it: its cluster
    sections replaced by existing_cluster (ExistingClusterArgs.of_shapes of its plan), the keys ``drop`` names taken
    out (by default shared_datasets, which only a cluster the stack creates can have)."""
    from gpu_platform.components import ExistingClusterArgs
    from gpu_platform.infra.stack.read import load_stack, read_stack_file
    from tests.conftest import PROJECT_DIR

    ns = "gpu-platform:"
    config, secret = read_stack_file(PROJECT_DIR, shipped)
    planned = load_stack(PROJECT_DIR, shipped)
    described = ExistingClusterArgs.of_shapes(planned.cloud.kind, planned.pool_shapes(), region=planned.region)
    config = {k: copy.deepcopy(v) for k, v in config.items() if k.removeprefix(ns) not in {*CLUSTER_SECTIONS, *drop}}
    config[ns + "existing_cluster"] = described.model_dump(mode="json", exclude={"kind"}, exclude_none=True)
    return config, {k for k in secret if k in config}
