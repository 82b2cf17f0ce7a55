"""The feature matrix: every pair of the platform's optional features on every provisioner, read and planned
as a stack would be, and the page that shows it (docs/features/matrix.md, `gpu-platform docs --write`).

A provisioner's base stack is a shipped stack file with every optional feature taken out (``BASES``: dev-gke
for GKE, dev-eks for EKS with the cluster autoscaler, prod-eks for EKS with Karpenter). A feature is a small
overlay of stack keys on that base (``FEATURES``), with the features it cannot go without (``needs``: an
inference service needs monitoring's dcgm-exporter, a shared dataset needs tenants to mount it). Each pair of
features a provisioner offers is laid over its base and read and planned by ``stack_config_from``, the reader
the program and every offline command use: it either works, or is refused with the reader's lines.

``tests/infra/test_feature_matrix.py`` takes the very stacks from here, checks that a refusal is one line
naming both features' keys, and runs each accepted stack through the program under the recording engine and
through plan-capacity, simulate and the local (kwok) nodes, which must agree with the plan and Kueue on each
GPU pool's schedulable GPUs. The page is generated from the same cells, so a stale page fails `docs --check`.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_platform.components.core.labels import WORKLOAD_LABEL
from gpu_platform.infra.docs.markdown import GENERATED, cell, table

__all__ = [
    "BASES",
    "FEATURES",
    "Base",
    "Cell",
    "Feature",
    "MatrixStack",
    "base_stack",
    "cells",
    "matrix_page",
    "matrix_stack",
    "pairs",
    "verdict",
]

NS = "gpu-platform:"
"""The project's config namespace, as stack files spell their keys."""

OPTIONAL = (
    "dask",
    "shared_datasets",
    "monitoring",
    "grafana_admin_password",
    "kubeflow",
    "headlamp",
    "queues",
    "inference",
    "warm_capacity",
    "aws_load_balancer_controller",
)
"""The stack keys of the optional features, taken out of a shipped stack to make a base."""

SECRET = "v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
"""Placeholder ciphertext for a secret an overlay sets (as the shipped stacks carry)."""

IMAGE = "nvcr.io/nvidia/tritonserver:25.01-py3"
"""The inference overlay's model server (the inference guide's)."""


@dataclass(frozen=True)
class Base:
    """A cloud and provisioner, and the shipped stack its base is made from."""

    name: str
    """Short name (a column of the page, part of each matrix stack's name)."""
    title: str
    """What the page calls it."""
    stack: str
    """The shipped stack file (stacks/Pulumi.<stack>.yaml) the base is made from."""
    cloud: str
    """gcp or aws."""
    gpu_pool: str
    """The GPU pool (GKE) or class (EKS) the overlays that act on one pool act on: the base's first."""
    existing: bool = False
    """On a cluster the stack does not create: the base's pools, once the overlays laid theirs, described as an
    existing_cluster in place of its cluster sections (ExistingClusterArgs.of_shapes of their plan)."""


BASES = (
    Base("gke", "GKE", "dev-gke", "gcp", "t4"),
    Base("eks", "EKS (cluster autoscaler)", "dev-eks", "aws", "t4"),
    Base("eks-karpenter", "EKS (Karpenter)", "prod-eks", "aws", "small"),
    Base("existing-gke", "An existing GKE cluster", "dev-gke", "gcp", "t4", existing=True),
    Base("existing-eks", "An existing EKS cluster", "dev-eks", "aws", "t4", existing=True),
)
"""Every cloud and provisioner of the matrix."""


@dataclass
class MatrixStack:
    """A matrix stack's config as read_stack_file gives it: ``namespace:key -> value`` and the secret keys."""

    name: str
    """The stack's name (matrix-<base>-<feature>-<feature>)."""
    config: dict[str, Any]
    """``gpu-platform:<key> -> value`` (and the providers' keys), secure values as placeholders."""
    secret_keys: set[str]
    """The keys whose values are Pulumi secrets."""

    def get(self, key: str) -> Any:
        """The value of ``gpu-platform:<key>`` (None when unset)."""
        return self.config.get(NS + key)

    def set(self, key: str, value: Any) -> None:
        """Set ``gpu-platform:<key>``."""
        self.config[NS + key] = value

    def gpu_pool(self, base: Base) -> dict[str, Any]:
        """The base's first GPU pool (GKE) or class (EKS), to change in place."""
        pools = self.get("gke")["gpu_pools"] if base.cloud == "gcp" else self.get("eks_node_groups")["classes"]
        found: list[dict[str, Any]] = [p for p in pools if p["name"] == base.gpu_pool]
        return found[0]

    def document(self) -> dict[str, Any]:
        """The stack file this config is read from (secrets as placeholder ciphertext)."""
        config = {k: ({"secure": SECRET} if k in self.secret_keys else v) for k, v in self.config.items()}
        return {"config": config}


Overlay = Callable[[MatrixStack, Base, dict[str, Any]], None]
"""Lays a feature over a stack: (the stack, its base, the shipped stack's config to take values from)."""


@dataclass(frozen=True)
class Feature:
    """An optional feature, as the keys a stack sets to turn it on."""

    name: str
    """Short name (the page's rows)."""
    title: str
    """What the page calls it."""
    keys: tuple[str, ...]
    """The stack keys it sets, as a refusal names them (``warm_capacity``, ``gke.gpu_pools[].queued_provisioning``)."""
    overlay: Overlay
    """How it changes a stack."""
    clouds: tuple[str, ...] = ("gcp", "aws")
    """The clouds that offer it."""
    needs: tuple[str, ...] = ()
    """Features it cannot go without, laid over first."""
    on_existing: bool = True
    """Whether a stack on an existing cluster offers it (what only a created cluster has is refused there)."""


def _secret(stack: MatrixStack, key: str) -> None:
    """A secret the stack sets, as the offline reader hands it on (its placeholder; the key marked secret)."""
    from gpu_platform.infra.stack.errors import SECRET_PLACEHOLDER

    stack.set(key, SECRET_PLACEHOLDER + key)
    stack.secret_keys.add(NS + key)


def _monitoring(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    stack.set("monitoring", copy.deepcopy(shipped[NS + "monitoring"]))
    _secret(stack, "grafana_admin_password")


def _dask(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    stack.set("dask", copy.deepcopy(shipped[NS + "dask"]))


def _datasets(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    dataset: dict[str, Any] = {
        "name": "reference",
        "bucket": {"name": f"matrix-{base.name}-reference-data"},
        "access": "read_only",
        "tenants": [t["name"] for t in stack.get("dask")["tenants"]],
        "deletion_protection": False,
    }
    if base.cloud == "aws":
        dataset["fsx"] = {"deployment_type": "PERSISTENT_2", "per_unit_storage_throughput": 125, "storage_capacity_gib": 1200}
    stack.set("shared_datasets", {"datasets": [dataset]})


TRAINING = {WORKLOAD_LABEL: "training"}
"""The label (and taint) Kubeflow's steps select their training pool by (KubeflowInstallArgs.training_pool's default)."""


def _kubeflow(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    if NS + "kubeflow" in shipped:
        stack.set("kubeflow", copy.deepcopy(shipped[NS + "kubeflow"]))
        return
    taint = {"key": WORKLOAD_LABEL, "value": "training", "effect": "NoSchedule"}
    if base.cloud == "gcp":
        stack.get("gke")["gpu_pools"].append(
            {
                "name": "train",
                "machine_type": "n1-standard-8",
                "accelerator_type": "nvidia-tesla-t4",
                "accelerator_count": 2,
                "autoscaling": {"scope": "total", "min_nodes": 0, "max_nodes": 4},
                "labels": dict(TRAINING),
                "taints": [taint],
            }
        )
    else:
        stack.get("eks_node_groups")["classes"].append(
            {"name": "train", "instance_types": ["g4dn.2xlarge"], "capacity": "on_demand", "max_nodes": 4, "labels": dict(TRAINING), "taints": [taint]}
        )
    tenants = [{"name": "team-vision", "owner": "vision-lead@example.com", "gpus": 4}]
    stack.set("kubeflow", {"install": {"edition": "pipelines", "release": "2.17.0", "tenants": tenants}})


def _queues(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    stack.set("queues", {})


def _inference(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    stack.set("inference", {"image": IMAGE, "pool": base.gpu_pool, "gpus": 1, "max_replicas": 4})


def _headlamp(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    stack.set("headlamp", {"enabled": True})


def _warm(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    stack.set("warm_capacity", {"pools": {base.gpu_pool: 2}})


def _sharing(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    stack.gpu_pool(base)["gpu_sharing"] = {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}


def _queued(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    pool = stack.gpu_pool(base)
    # What GKE's queued provisioning asks of a pool (GpuPoolArgs refuses it otherwise): on-demand, 0 to a total.
    bounds = pool["autoscaling"]
    total = bounds["max_nodes"] * (2 if bounds.get("scope") == "per_zone" else 1)
    pool.update(queued_provisioning=True, location_policy="ANY", autoscaling={"scope": "total", "min_nodes": 0, "max_nodes": total})


LADDER = [{"kind": "reservation", "reservation": "matrix-reserved"}, {"kind": "flex_start", "max_run_duration": "24h"}, {"kind": "spot"}, {"kind": "on_demand"}]
"""The capacity ladder overlay's rungs on GKE: every rung GKE offers, in the guide's order (docs/clouds/capacity-ladders.md)."""

EKS_LADDER = [
    {"kind": "capacity_block", "reservation": "cr-0a1b2c3d4e5f60718"},
    {"kind": "reservation", "reservation": "cr-0123456789abcdef0"},
    {"kind": "spot"},
    {"kind": "on_demand"},
]
"""The capacity ladder overlay's rungs on EKS (either provisioner): every rung EKS offers, in the guide's order."""


def _ladder(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    pool = stack.gpu_pool(base)
    pool.pop("capacity", None)
    pool["capacity_ladder"] = copy.deepcopy(LADDER if base.cloud == "gcp" else EKS_LADDER)


def _load_balancer(stack: MatrixStack, base: Base, shipped: dict[str, Any]) -> None:
    stack.set("aws_load_balancer_controller", {})


FEATURES = (
    Feature("monitoring", "Monitoring with dcgm-exporter", ("monitoring", "grafana_admin_password"), _monitoring),
    Feature("dask", "Dask tenants", ("dask",), _dask),
    Feature("kubeflow", "Kubeflow Pipelines", ("kubeflow",), _kubeflow),
    Feature("queues", "Tenant queues (Kueue)", ("queues",), _queues),
    Feature("datasets", "Shared datasets", ("shared_datasets",), _datasets, needs=("dask",), on_existing=False),
    Feature("inference", "GPU inference service", ("inference",), _inference, needs=("monitoring",)),
    Feature("headlamp", "Cluster UI (Headlamp)", ("headlamp",), _headlamp),
    Feature("warm", "Warm capacity", ("warm_capacity",), _warm),
    Feature("sharing", "GPU sharing (time-slicing)", ("gke.gpu_pools[].gpu_sharing", "eks_node_groups.classes[].gpu_sharing"), _sharing),
    # A DWS pool gets nodes only through the queues' ProvisioningRequest admission check, for a queued tenant: it
    # brings the queues and Kubeflow Pipelines' tenants (whose steps run on their own training pool).
    Feature("queued", "Queued provisioning (DWS)", ("gke.gpu_pools[].queued_provisioning",), _queued, clouds=("gcp",), needs=("queues", "kubeflow")),
    # A ladder is the pool's node pools and ComputeClass (GKE), node groups or NodePools (EKS), which only a cluster the
    # stack creates has.
    Feature(
        "ladder",
        "Capacity ladder",
        ("gke.gpu_pools[].capacity_ladder", "eks_node_groups.classes[].capacity_ladder"),
        _ladder,
        on_existing=False,
    ),
    Feature("load-balancer", "AWS Load Balancer Controller", ("aws_load_balancer_controller",), _load_balancer, clouds=("aws",), on_existing=False),
)
"""Every optional feature of the matrix, in the page's order."""

_BY_NAME = {f.name: f for f in FEATURES}


def features_of(base: Base) -> list[Feature]:
    """The features ``base``'s cloud offers (on an existing cluster, those it can have there)."""
    return [f for f in FEATURES if base.cloud in f.clouds and (f.on_existing or not base.existing)]


def pairs(base: Base) -> list[tuple[str, str]]:
    """Every pair of two features ``base`` offers, in the page's order."""
    return list(itertools.combinations([f.name for f in features_of(base)], 2))


@functools.cache
def _shipped(project_dir: Path, stack: str) -> tuple[dict[str, Any], frozenset[str]]:
    from gpu_platform.infra.stack.read import read_stack_file

    config, secret = read_stack_file(project_dir, stack)
    return config, frozenset(secret)


def base_stack(project_dir: Path, base: Base) -> MatrixStack:
    """``base``'s shipped stack without its optional features (monitoring off)."""
    config, secret = _shipped(project_dir, base.stack)
    config = {k: copy.deepcopy(v) for k, v in config.items() if k.removeprefix(NS) not in OPTIONAL}
    config[NS + "monitoring"] = {"enabled": False}
    return MatrixStack(f"matrix-{base.name}", config, {k for k in secret if k in config})


def matrix_stack(project_dir: Path, base: Base, features: tuple[str, ...]) -> MatrixStack:
    """``base``'s stack with ``features`` (and what they need) laid over it."""
    stack = base_stack(project_dir, base)
    shipped, _ = _shipped(project_dir, base.stack)
    wanted = list(dict.fromkeys(n for name in features for n in (*_BY_NAME[name].needs, name)))
    for name in wanted:
        _BY_NAME[name].overlay(stack, base, shipped)
    if base.existing:
        _onto_existing_cluster(stack, base)
    stack.name = "-".join(["matrix", base.name, *features])
    if len(stack.name) > 100:  # Pulumi's limit: many features at once are named by their number and a digest
        stack.name = f"matrix-{base.name}-{len(features)}-{hashlib.sha256(stack.name.encode()).hexdigest()[:8]}"
    return stack


CLUSTER_SECTIONS = ("gke", "eks", "eks_node_groups")
"""The stack keys that create a cluster, which existing_cluster stands in place of."""


def _onto_existing_cluster(stack: MatrixStack, base: Base) -> None:
    """Replace the stack's cluster sections by an existing_cluster with the same pools: the sections' own plan (the
    cluster components' Args alone, before any cross-feature check), described by ExistingClusterArgs.of_shapes."""
    from gpu_platform.components.core.cloud import Cloud
    from gpu_platform.components.eks.args import EksClusterArgs
    from gpu_platform.components.eks.node_group_args import SpotFailoverEksNodeGroupsArgs
    from gpu_platform.components.eks.plan import plan_node_groups
    from gpu_platform.components.existing.args import ExistingClusterArgs
    from gpu_platform.components.gke.args import GpuGkeClusterArgs

    cloud = Cloud(base.cloud)
    region: str | None
    if cloud is Cloud.GCP:
        gke = GpuGkeClusterArgs.model_validate(stack.get("gke"))
        shapes, region = gke.pool_shapes(), gke.region
    else:
        eks = EksClusterArgs.model_validate(stack.get("eks"))
        groups = dict(stack.get("eks_node_groups"))
        groups.setdefault("other_node_groups", [eks.system_node_group.name])
        shapes, region = list(plan_node_groups(eks, SpotFailoverEksNodeGroupsArgs.model_validate(groups), eks.region).shapes), eks.region
    described = ExistingClusterArgs.of_shapes(cloud.kind, shapes, region=region)
    for key in CLUSTER_SECTIONS:
        stack.config.pop(NS + key, None)
    stack.set("existing_cluster", described.model_dump(mode="json", exclude={"kind"}, exclude_none=True))


@dataclass(frozen=True)
class Cell:
    """What reading and planning a pair's stack gave."""

    base: str
    """The provisioner (Base.name)."""
    features: tuple[str, str]
    """The pair."""
    refusals: tuple[str, ...]
    """The reader's lines; none when the stack works."""

    @property
    def works(self) -> bool:
        return not self.refusals


def read(stack: MatrixStack) -> Any:
    """The stack's StackConfig, read and planned as the program reads it (ConfigError otherwise)."""
    from gpu_platform.infra.stack.read import stack_config_from

    return stack_config_from(copy.deepcopy(stack.config), set(stack.secret_keys), stack.name)


@functools.cache
def verdict(project_dir: Path, base: Base, features: tuple[str, ...]) -> Cell:
    """Read and plan ``features`` on ``base`` (once per process)."""
    from gpu_platform.infra.stack.errors import ConfigError

    try:
        read(matrix_stack(project_dir, base, features))
    except ConfigError as exc:
        return Cell(base.name, (features[0], features[-1]), tuple(exc.lines))
    return Cell(base.name, (features[0], features[-1]), ())


def cells(project_dir: Path) -> list[Cell]:
    """Every pair on every provisioner."""
    return [verdict(project_dir, base, pair) for base in BASES for pair in pairs(base)]


def matrix_page(project_dir: Path) -> str:
    """docs/features/matrix.md."""
    found = cells(project_dir)
    lines = [
        "# Feature matrix",
        "",
        GENERATED,
        "",
        "Every pair of the optional features below, on every cloud and provisioner, as a stack file would turn them on "
        "(`infra/docs/matrix.py`). Each provisioner's base is a shipped stack with its optional features taken out; each "
        "feature is a small overlay of stack keys on it. A pair either works or is refused before anything is deployed, in "
        "one line per problem that names both keys and why. `tests/infra/test_feature_matrix.py` takes the same stacks "
        "through the program under the offline engine, and asks `plan-capacity`, `simulate` and the local (kwok) nodes "
        "for each GPU pool's schedulable GPUs, which must agree with the plan and with Kueue's nominal quotas "
        "(on Karpenter, simulate's NodePool limits too). A feature that cannot go without "
        "another brings it (needs).",
        "",
        "## The features",
        "",
    ]
    rows = [
        [
            cell(f.title),
            f"`{f.name}`",
            ", ".join(f"`{k}`" for k in f.keys),
            ", ".join(f"`{n}`" for n in f.needs) or "",
            ", ".join(b.title for b in BASES if f in features_of(b)),
        ]
        for f in FEATURES
    ]
    lines += table(["feature", "name", "stack keys", "needs", "on"], rows)
    lines += ["", "The bases:", ""]
    lines += table(
        ["provisioner", "base stack", "the pool the overlays act on"],
        [
            [
                cell(b.title),
                f"`stacks/Pulumi.{b.stack}.yaml` without its optional features"
                + (", its pools described as an `existing_cluster` in place of its cluster sections" if b.existing else ""),
                f"`{b.gpu_pool}`",
            ]
            for b in BASES
        ],
    )
    for base in BASES:
        mine = [c for c in found if c.base == base.name]
        works = sum(c.works for c in mine)
        lines += ["", f"## {base.title}", "", f"{len(mine)} pairs: {works} work, {len(mine) - works} refused.", ""]
        lines += table(
            ["feature", "with", "verdict"],
            [[f"`{c.features[0]}`", f"`{c.features[1]}`", "works" if c.works else "refused: " + cell("; ".join(c.refusals))] for c in mine],
        )
    return "\n".join(lines) + "\n"
