"""DaskOperatorArgs and its parts: tenants, notebooks, shared clusters and the RAPIDS DaskCluster spec, checked against the pools they land on (a pod that fits no node, a quota that cannot hold what the tenant runs)."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from gpu_platform.components.core.kube import ChartVersion, DnsLabel, PinnedImage, kubernetes_owns
from gpu_platform.components.core.labels import AWS_ACCELERATOR_LABEL, GKE_ACCELERATOR_LABEL, GPU_RESOURCE, SCHEDULER_LABEL, PoolRole
from gpu_platform.components.core.models import ARGS_CONFIG, check_min_max, check_unique, field_error
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.core.quantities import to_mib, to_millicores
from gpu_platform.components.pools.reserves import allocatable
from gpu_platform.components.pools.shapes import GPU_TAINT, NodePoolShape, Taint, tolerations
from gpu_platform.components.pools.sharing import shared_request_problem

__all__ = [
    "CLUSTER_SPEC_CONFIG_MAP",
    "CLUSTER_SPEC_DIR",
    "CLUSTER_SPEC_KEY",
    "DaskNotebookArgs",
    "DaskOperatorArgs",
    "DaskTenantArgs",
    "OperatorScope",
    "RapidsDaskClusterSpec",
    "SharedDaskClusterArgs",
]

DASK_OPERATOR_CHART = "dask-kubernetes-operator"
DASK_REPO = "https://helm.dask.org"
SERVICE_ACCOUNT = "rapids-dask"
# CUDA 12 builds: CUDA 13 images need an R580 driver, newer than GKE's DEFAULT driver on T4 pools.
RAPIDS_BASE = "nvcr.io/nvidia/rapidsai/base:26.02-cuda12-py3.13"
RAPIDS_NOTEBOOKS = "nvcr.io/nvidia/rapidsai/notebooks:26.02-cuda12-py3.13"
GPU_NODE_LABELS = (GKE_ACCELERATOR_LABEL, AWS_ACCELERATOR_LABEL)
"""The label every GPU node carries: GKE sets the first, the EKS node groups the second."""

TENANT_ROLE_RULES: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    (("",), ("events",), ("get", "list", "watch")),
    (("",), ("pods", "services"), ("get", "list", "watch", "create", "delete")),
    (("",), ("pods/log",), ("get", "list")),
    (("kubernetes.dask.org",), ("*",), ("*",)),
)
"""(apiGroups, resources, verbs) of the RAPIDS deep-dive's rapids-dask Role: what KubeCluster needs, nothing more."""

CLUSTER_SPEC_CONFIG_MAP = "dask-cluster-spec"
CLUSTER_SPEC_KEY = "cluster.yaml"
CLUSTER_SPEC_DIR = "/etc/gpu-platform/dask"
"""Where the tenant notebook finds the placed DaskCluster spec: CLUSTER_SPEC_DIR/CLUSTER_SPEC_KEY."""
WORKER_GPUS_WHY = (
    "dask-cuda-worker starts one Dask worker per GPU of its pod while the DaskAutoscaler counts Dask workers, "
    "so a pod with more GPUs makes the autoscaler start and stop the wrong number of pods"
)


def one_gpu_per_worker(field: str | None, value: int) -> int:
    """``value`` when it is 1: more GPUs per worker pod would break the DaskAutoscaler's count."""
    if value > 1:
        raise ValueError(f"{field} {value} is not supported: {WORKER_GPUS_WHY}; use 1")
    return value


OPERATOR_REQUESTS = {"cpu": "100m", "memory": "256Mi"}
"""What the operator's pod requests (in a tenant's namespace, within its quota, in namespaced scope)."""
CPU_PATTERN = r"^[0-9]+(\.[0-9]+)?m?$"
MEMORY_PATTERN = r"^[0-9]+(Ki|Mi|Gi|Ti)$"

JUPYTER_PROXY_CONFIG = "c.ServerProxy.host_allowlist = lambda app, host: True\n"
"""jupyter-server-proxy: let the notebook proxy the Dask dashboard of any scheduler in the namespace."""


def operator_chart_dir() -> Path:
    """The operator chart as the dask-kubernetes wheel ships it (values.yaml, crds/), found without importing it."""
    spec = importlib.util.find_spec("dask_kubernetes")
    assert spec is not None and spec.submodule_search_locations, "dask-kubernetes is not installed"
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "operator" / "deployment" / "helm" / DASK_OPERATOR_CHART


class OperatorScope(StrEnum):
    """Where the operator acts."""

    CLUSTER = "cluster"
    """One operator for every namespace (a ClusterRole)."""
    NAMESPACED = "namespaced"
    """One operator per tenant namespace, each with a Role in its own namespace only."""


def node_room(pool: NodePoolShape) -> tuple[int, int]:
    """(millicores, MiB) a pod may request on one node of ``pool``: capacity minus the kubelet's
    reserves (the pool's cloud's formula, default NodeReserves) and the DaemonSets' requests."""
    node = allocatable(pool)
    return node.cpu, node.memory_mib


def fit_problems(who: str, cpu: tuple[str, str], memory: tuple[str, str], pool: NodePoolShape) -> list[tuple[str, str, str]]:
    """(field, message, value) for each of ``cpu``/``memory`` ((field, quantity)) above a node of ``pool``."""
    room_cpu, room_mib = node_room(pool)
    where = f"pool {pool.name} ({pool.machine_type}), whose nodes leave {{}} to pods after the kubelet's reserves ({pool.reserve_formula}) and the DaemonSets"
    problems = []
    (cpu_field, cpu_value), (mem_field, mem_value) = cpu, memory
    if to_millicores(cpu_value) > room_cpu:
        problems.append(
            (
                cpu_field,
                f"{cpu_field} {cpu_value} of {who} fits no node of {where.format(f'{room_cpu}m CPU')}; use at most {room_cpu}m",
                cpu_value,
            )
        )
    if to_mib(mem_value) > room_mib:
        problems.append(
            (
                mem_field,
                f"{mem_field} {mem_value} of {who} fits no node of {where.format(f'{room_mib}Mi memory')}; use at most {room_mib}Mi",
                mem_value,
            )
        )
    return problems


class RapidsDaskClusterSpec(BaseModel):
    """A RAPIDS DaskCluster as the RAPIDS deep-dive runs it: dask-cuda-worker workers with GPUs, the scheduler
    on the cheap scheduler pool. ``to_dict()`` gives the spec for ``KubeCluster(custom_cluster_spec=...)``."""

    model_config = ARGS_CONFIG

    name: DnsLabel
    """DaskCluster name. Required."""
    image: PinnedImage = RAPIDS_BASE
    """RAPIDS image of the scheduler and workers (pinned). Default: nvcr.io/nvidia/rapidsai/base:26.02-cuda12-py3.13."""
    n_workers: Int = Field(default=2, ge=0, le=1000)
    """Workers in the default worker group. Default: 2."""
    gpus_per_worker: Int = Field(default=1, ge=1)
    """GPUs each worker pod gets; only 1, since dask-cuda-worker starts one Dask worker per GPU and the DaskAutoscaler counts Dask workers. Default: 1."""
    worker_cpu: str = Field(default="1", pattern=CPU_PATTERN)
    """CPU request and limit of each worker (fits two workers on an n1-standard-4 with two T4s). Default: 1."""
    worker_memory: str = Field(default="5Gi", pattern=MEMORY_PATTERN)
    """Memory request and limit of each worker; dask-cuda-worker sizes its host memory limit from it. Default: 5Gi."""
    scheduler_gpus: Int = Field(default=1, ge=0, le=1)
    """GPUs of the scheduler (the RAPIDS Dask-scheduler-on-T4 guide gives it one, to deserialise GPU objects). Default: 1."""
    scheduler_cpu: str = Field(default="1", pattern=CPU_PATTERN)
    """CPU request and limit of the scheduler. Default: 1."""
    scheduler_memory: str = Field(default="2Gi", pattern=MEMORY_PATTERN)
    """Memory request and limit of the scheduler. Default: 2Gi."""
    idle_timeout_seconds: Int = Field(default=0, ge=0)
    """Seconds without activity after which the operator deletes the cluster (0: never). Default: 0."""
    scheduler_node_labels: dict[str, str] = Field(default_factory=lambda: {SCHEDULER_LABEL[0]: SCHEDULER_LABEL[1]})
    """Node labels the scheduler prefers (weight 100). Default: {dedicated: scheduler}."""
    scheduler_node_selector: dict[str, str] = Field(default_factory=dict)
    """Node labels the scheduler requires. Default: {} (none: the scheduler prefers its pool and, where a GPU pool carries no taint beyond the GPU one, spills onto it when the scheduler pool is full, rather than that pool's size capping how many Dask clusters run)."""
    scheduler_tolerations: list[Taint] = Field(default_factory=lambda: [GPU_TAINT])
    """Taints of the scheduler pool the scheduler tolerates. Default: [nvidia.com/gpu=present:NoSchedule]."""
    worker_tolerations: list[Taint] = Field(default_factory=lambda: [GPU_TAINT])
    """Taints of the GPU pools the workers tolerate. Default: [nvidia.com/gpu=present:NoSchedule]."""
    worker_node_selector: dict[str, str] = Field(default_factory=dict)
    """Node selector of the workers (e.g. a GPU pool's or compute class's). Default: {}."""

    @field_validator("gpus_per_worker")
    @classmethod
    def _one_gpu(cls, value: int, info: ValidationInfo) -> int:
        return one_gpu_per_worker(info.field_name, value)

    @classmethod
    def for_pools(cls, name: str, pools: Sequence[NodePoolShape], **fields: Any) -> RapidsDaskClusterSpec:
        """A spec placed on a stack's pools: the scheduler on the scheduler pool, workers on the first GPU pool.

        Raises ValidationError (a ValueError) at ``worker_cpu``/``scheduler_memory``/... when the workers' or
        the scheduler's CPU or memory fits no node of the pool they are placed on (allocatable by the
        pool's cloud's kubelet reserve formula)."""
        scheduler = next((p for p in pools if p.role is PoolRole.SCHEDULER), None)
        gpu = next((p for p in pools if p.role is PoolRole.GPU), None)
        if scheduler is not None:
            fields.setdefault("scheduler_node_labels", {SCHEDULER_LABEL[0]: scheduler.labels.get(SCHEDULER_LABEL[0], SCHEDULER_LABEL[1])})
            fields.setdefault("scheduler_tolerations", list(scheduler.placement.tolerations))
        elif gpu is not None:
            # No scheduler pool: the scheduler's GPU must come from a GPU pool, so tolerate its taints.
            fields.setdefault("scheduler_tolerations", list(gpu.placement.tolerations))
        if gpu is not None:
            fields.setdefault("worker_tolerations", list(gpu.placement.tolerations))
            fields.setdefault("worker_node_selector", dict(gpu.placement.node_selector))
        spec = cls(name=name, **fields)
        problems = []
        if gpu is not None:
            problems += fit_problems("the Dask workers", ("worker_cpu", spec.worker_cpu), ("worker_memory", spec.worker_memory), gpu)
        if (home := scheduler or gpu) is not None:
            problems += fit_problems(
                "the Dask scheduler",
                ("scheduler_cpu", spec.scheduler_cpu),
                ("scheduler_memory", spec.scheduler_memory),
                home,
            )
        if problems:
            where, _, value = problems[0]
            raise field_error("RapidsDaskClusterSpec", where, "; ".join(message for _, message, _ in problems), value)
        return spec

    def to_dict(self) -> dict[str, Any]:
        """The DaskCluster (kubernetes.dask.org/v1): make_cluster_spec's, plus placement and GPUs."""
        # Imported here: dask_kubernetes pulls distributed and kr8s (about a second).
        from dask_kubernetes.operator import make_cluster_spec

        spec: dict[str, Any] = make_cluster_spec(
            name=self.name,
            image=self.image,
            n_workers=self.n_workers,
            resources=pod_resources(self.worker_cpu, self.worker_memory, self.gpus_per_worker),
            worker_command="dask-cuda-worker",
            idle_timeout=self.idle_timeout_seconds,
        )
        worker = spec["spec"]["worker"]["spec"]
        scheduler = spec["spec"]["scheduler"]["spec"]
        worker["tolerations"] = tolerations(self.worker_tolerations)
        if self.worker_node_selector:
            worker["nodeSelector"] = dict(self.worker_node_selector)
        (container,) = scheduler["containers"]
        container["resources"] = pod_resources(self.scheduler_cpu, self.scheduler_memory, self.scheduler_gpus)
        scheduler["tolerations"] = tolerations(self.scheduler_tolerations)
        if self.scheduler_node_selector:
            scheduler["nodeSelector"] = dict(self.scheduler_node_selector)
        scheduler["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "preference": {
                            "matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(self.scheduler_node_labels.items())]
                        },
                    }
                ]
            }
        }
        # make_cluster_spec leaves env None where not given; the API drops nulls.
        for pod in (worker, scheduler):
            for c in pod["containers"]:
                for key in ("env",):
                    if c.get(key) is None:
                        c.pop(key, None)
        return spec


class DaskNotebookArgs(BaseModel):
    """A RAPIDS JupyterLab per tenant, running as rapids-dask so KubeCluster works from it."""

    model_config = ARGS_CONFIG

    image: PinnedImage = RAPIDS_NOTEBOOKS
    """Notebook image (pinned; never latest). Default: nvcr.io/nvidia/rapidsai/notebooks:26.02-cuda12-py3.13."""
    gpus: Int = Field(default=1, ge=0, le=8)
    """GPUs of the notebook. Default: 1."""
    cpu: str = Field(default="2", pattern=CPU_PATTERN)
    """CPU request and limit; must fit one node of the pool the notebook runs on. Default: 2."""
    memory: str = Field(default="8Gi", pattern=MEMORY_PATTERN)
    """Memory request and limit; must fit one node of the pool the notebook runs on (a 15 GiB n1-standard-4 leaves about 11.9 GiB). Default: 8Gi."""


class SharedDaskClusterArgs(BaseModel):
    """A long-lived DaskCluster the whole tenant shares, scaled by a DaskAutoscaler."""

    model_config = ARGS_CONFIG

    name: DnsLabel = "shared"
    """DaskCluster name. Default: shared."""
    min_workers: Int = Field(default=0, ge=0, le=1000)
    """Fewest workers the autoscaler keeps. Default: 0."""
    max_workers: Int = Field(default=4, ge=1, le=1000)
    """Most workers the autoscaler starts. Default: 4."""

    @model_validator(mode="after")
    def _bounds(self) -> SharedDaskClusterArgs:
        check_min_max(self, "min_workers", "max_workers")
        return self


class DaskTenantArgs(BaseModel):
    """One team: a namespace with the RAPIDS deep-dive's RBAC, a GPU quota and defaults."""

    model_config = ARGS_CONFIG

    name: DnsLabel
    """The tenant's namespace. Required."""
    gpu_quota: Int = Field(ge=1, le=10000)
    """Most GPUs the tenant's pods may request at once (ResourceQuota requests.nvidia.com/gpu). Required."""
    cpu_quota: str | None = Field(default=None, pattern=r"^[0-9]+(\.[0-9]+)?m?$")
    """Most CPU requested at once. Default: none (unlimited)."""
    memory_quota: str | None = Field(default=None, pattern=r"^[0-9]+(Ki|Mi|Gi|Ti)$")
    """Most memory requested at once. Default: none (unlimited)."""
    default_cpu: str = Field(default="1", pattern=r"^[0-9]+(\.[0-9]+)?m?$")
    """CPU request of a container that sets none (LimitRange). Default: 1."""
    default_memory: str = Field(default="4Gi", pattern=r"^[0-9]+(Ki|Mi|Gi|Ti)$")
    """Memory request and limit of a container that sets none (LimitRange). Default: 4Gi."""
    notebook: DaskNotebookArgs | None = None
    """A RAPIDS notebook for the tenant. Default: none."""
    shared_cluster: SharedDaskClusterArgs | None = None
    """A shared DaskCluster with a DaskAutoscaler. Default: none."""
    isolated: bool = True
    """A NetworkPolicy admits traffic to the tenant's pods only from its own namespace and the Dask operator's (the notebook has no login; the cluster's CNI must enforce NetworkPolicy, which GpuGkeCluster and EksCluster turn on). Default: true."""


class DaskOperatorArgs(BaseModel):
    """Inputs of DaskOperator."""

    model_config = ARGS_CONFIG

    tenants: list[DaskTenantArgs] = Field(default_factory=list)
    """The teams, one namespace each. Default: []."""
    scope: OperatorScope = OperatorScope.CLUSTER
    """cluster (one operator, every namespace) or namespaced (one operator per tenant namespace). Default: cluster."""
    namespace: DnsLabel = "dask-operator"
    """Namespace of the cluster-wide operator and the prepuller. Default: dask-operator."""
    chart_version: ChartVersion = "2026.3.0"
    """dask-kubernetes-operator chart (helm.dask.org); its operator image has the same tag. Default: 2026.3.0."""
    worker_gpus: Int = Field(default=1, ge=1)
    """GPUs of one Dask worker pod (the spec the tenants' clusters use); only 1, since dask-cuda-worker starts one Dask worker per GPU and the DaskAutoscaler counts Dask workers. Default: 1."""
    worker_cpu: str = Field(default="1", pattern=CPU_PATTERN)
    """CPU request and limit of one Dask worker; must fit one node of the GPU pool (fits two workers on an n1-standard-4 with two T4s). Default: 1."""
    worker_memory: str = Field(default="5Gi", pattern=MEMORY_PATTERN)
    """Memory request and limit of one Dask worker (dask-cuda-worker sizes its host memory limit from it); must fit one node of the GPU pool. Default: 5Gi."""
    rapids_image: PinnedImage = RAPIDS_BASE
    """RAPIDS image of schedulers and workers, which the prepuller pulls onto every GPU node. Default: nvcr.io/nvidia/rapidsai/base:26.02-cuda12-py3.13."""
    prepull: bool = True
    """Pull the RAPIDS images onto every GPU node as it joins (a DaemonSet). Default: true."""
    pause_image: PinnedImage = "registry.k8s.io/pause:3.10"
    """The container that keeps the prepuller's pods alive. Default: registry.k8s.io/pause:3.10."""

    @field_validator("worker_gpus")
    @classmethod
    def _one_gpu(cls, value: int, info: ValidationInfo) -> int:
        return one_gpu_per_worker(info.field_name, value)

    @field_validator("tenants")
    @classmethod
    def _distinct(cls, value: list[DaskTenantArgs]) -> list[DaskTenantArgs]:
        check_unique([t.name for t in value], "tenants", "a name", "each tenant is one namespace")
        return value

    def _quota_holds_the_pods(self, i: int, tenant: DaskTenantArgs) -> None:
        """The CPU and memory quotas hold what the tenant runs at its largest: the notebook, the
        shared cluster at max_workers with its scheduler and, in namespaced scope, the operator.
        Beyond them a pod is refused by the quota and never runs."""
        shared = tenant.shared_cluster
        scheduler = RapidsDaskClusterSpec.model_fields
        parts: list[tuple[str, str, str, int]] = []
        if shared is not None:
            parts.append((f"{shared.max_workers} worker{'s' if shared.max_workers != 1 else ''}", self.worker_cpu, self.worker_memory, shared.max_workers))
            parts.append(("the scheduler", scheduler["scheduler_cpu"].default, scheduler["scheduler_memory"].default, 1))
        if tenant.notebook is not None:
            parts.append(("the notebook", tenant.notebook.cpu, tenant.notebook.memory, 1))
        if self.scope is OperatorScope.NAMESPACED:
            parts.append(("the operator", OPERATOR_REQUESTS["cpu"], OPERATOR_REQUESTS["memory"], 1))
        location: tuple[str | int, ...] = ("tenants", i, "shared_cluster", "max_workers") if shared else ("tenants", i)
        for quota, index, amount, kind, unit in (
            (tenant.cpu_quota, 1, to_millicores, "cpu", "m"),
            (tenant.memory_quota, 2, to_mib, "memory", "Mi"),
        ):
            if quota is None or not parts:
                continue
            need = sum(amount(part[index]) * part[3] for part in parts)
            limit = amount(quota)
            if need > limit:
                what = ", ".join(f"{p[0]}: {p[index]}" for p in parts)
                lead = f"max_workers {shared.max_workers} needs" if shared else f"tenant {tenant.name} needs"
                advice = f"raise {kind}_quota"
                if shared is not None:
                    per_worker = amount(parts[0][index])
                    fitting = (limit - (need - per_worker * shared.max_workers)) // per_worker
                    if fitting >= max(1, shared.min_workers):
                        advice = f"use max_workers {fitting} or raise {kind}_quota"
                raise field_error(
                    "DaskOperatorArgs",
                    location,
                    f"{lead} {need}{unit} {kind} ({what}), more than {kind}_quota {quota}; {advice}",
                    shared.max_workers if shared else quota,
                )

    @model_validator(mode="after")
    def _quota_holds_a_cluster(self) -> DaskOperatorArgs:
        for i, tenant in enumerate(self.tenants):
            notebook = tenant.notebook.gpus if tenant.notebook else 0
            need = self.worker_gpus + 1 + notebook  # one worker, the scheduler's GPU, the notebook
            if tenant.gpu_quota < need:
                raise field_error(
                    "DaskOperatorArgs",
                    ("tenants", i, "gpu_quota"),
                    f"gpu_quota {tenant.gpu_quota} of tenant {tenant.name} cannot run one Dask cluster: one worker "
                    f"needs {self.worker_gpus}, the scheduler 1" + (f" and the notebook {notebook}" if notebook else "") + f"; use at least {need}",
                    tenant.gpu_quota,
                )
            shared = tenant.shared_cluster
            if shared and tenant.gpu_quota < self.worker_gpus * shared.max_workers + 1 + notebook:
                # Beyond the quota the autoscaler's workers would stay Pending for good.
                raise field_error(
                    "DaskOperatorArgs",
                    ("tenants", i, "shared_cluster", "max_workers"),
                    f"max_workers {shared.max_workers} needs {self.worker_gpus * shared.max_workers + 1 + notebook} GPUs "
                    f"with the scheduler"
                    + (" and the notebook" if notebook else "")
                    + f", more than gpu_quota {tenant.gpu_quota}; lower max_workers or raise gpu_quota",
                    shared.max_workers,
                )
            self._quota_holds_the_pods(i, tenant)
            if tenant.name == self.namespace:
                # In either scope the operator's namespace already exists: one namespace, two owners.
                raise field_error(
                    "DaskOperatorArgs",
                    ("tenants", i, "name"),
                    f"tenant {tenant.name} is the operator namespace; choose another name",
                    tenant.name,
                )
            if kubernetes_owns(tenant.name):
                raise field_error(
                    "DaskOperatorArgs",
                    ("tenants", i, "name"),
                    f"namespace {tenant.name} belongs to Kubernetes; choose another name",
                    tenant.name,
                )
        return self

    def placement_problems(self, pools: Sequence[NodePoolShape]) -> list[tuple[tuple[str | int, ...], str, str]]:
        """(location, message, value) for each notebook and worker whose CPU or memory fits no node of
        the pool it is placed on, after the kubelet reserves of the pool's cloud, or that asks for more than one
        GPU of a pool whose GPUs are shared (the pool's shape says so: NodePoolShape.gpu_sharing)."""
        problems: list[tuple[tuple[str | int, ...], str, str]] = []
        gpu = next((p for p in pools if p.role is PoolRole.GPU), None)
        if gpu is not None:
            worker = fit_problems("the Dask workers", ("worker_cpu", self.worker_cpu), ("worker_memory", self.worker_memory), gpu)
            problems += [((f,), m, v) for f, m, v in worker]
            if gpu.shares_gpus and (problem := shared_request_problem("a Dask worker", self.worker_gpus, gpu.name)):
                problems.append((("worker_gpus",), f"{problem}; use worker_gpus 1", str(self.worker_gpus)))
        for i, tenant in enumerate(self.tenants):
            nb = tenant.notebook
            if nb is None or (pool := notebook_pool(pools, nb.gpus)) is None:
                continue
            found = fit_problems(f"tenant {tenant.name}'s notebook", ("cpu", nb.cpu), ("memory", nb.memory), pool)
            problems += [(("tenants", i, "notebook", f), m, v) for f, m, v in found]
            if pool.shares_gpus and (problem := shared_request_problem(f"tenant {tenant.name}'s notebook", nb.gpus, pool.name)):
                problems.append((("tenants", i, "notebook", "gpus"), f"{problem}; use gpus 1", str(nb.gpus)))
            elif nb.gpus > pool.schedulable_gpus_per_node:
                problems.append(
                    (
                        ("tenants", i, "notebook", "gpus"),
                        f"gpus {nb.gpus} of tenant {tenant.name}'s notebook fits no node of pool {pool.name} ({pool.machine_type}), "
                        f"which has {pool.schedulable_gpus_per_node} GPUs a node; use at most {pool.schedulable_gpus_per_node}",
                        str(nb.gpus),
                    )
                )
        problems += self._queued_problems(pools, gpu)
        return problems

    def _queued_problems(self, pools: Sequence[NodePoolShape], gpu: NodePoolShape | None) -> list[tuple[tuple[str | int, ...], str, str]]:
        """One line per queued-provisioning (DWS) pool the workers or notebooks are placed on: its nodes come only
        for a ProvisioningRequest, which no Dask pod is in, so they would stay Pending for good (as warm capacity's
        placeholders and the inference pods would, which are refused alike)."""
        placed: dict[str, list[str]] = {}
        if gpu is not None and gpu.queued_provisioning:
            placed.setdefault(gpu.name, []).append("the Dask workers")
        for tenant in self.tenants:
            nb = tenant.notebook
            if nb is not None and (pool := notebook_pool(pools, nb.gpus)) is not None and pool.queued_provisioning:
                placed.setdefault(pool.name, []).append(f"tenant {tenant.name}'s notebook")
        return [
            (
                (),
                f"{', '.join(who)} are placed on pool {name}, which has queued_provisioning: its nodes come only for a "
                "ProvisioningRequest, so these pods can never land there; put a GPU pool without queued_provisioning "
                "first among the pools, or turn queued_provisioning off",
                name,
            )
            for name, who in placed.items()
        ]


def notebook_pool(pools: Sequence[NodePoolShape], gpus: int) -> NodePoolShape | None:
    """The pool a notebook lands on: with GPUs, the first GPU pool of role gpu (else any GPU pool);
    without, the untainted pool with the most memory (it has no node selector)."""
    if gpus:
        ordered = sorted((p for p in pools if p.gpus_per_node), key=lambda p: p.role is not PoolRole.GPU)
        return ordered[0] if ordered else None
    untainted = [p for p in pools if not p.taints]
    return max(untainted, key=lambda p: p.memory_mib) if untainted else None


class PodResources(TypedDict):
    """A container's resources in pod-spec form (``k8s.core.v1.ResourceRequirementsArgs(**r)`` takes it as it is)."""

    requests: dict[str, str]
    limits: dict[str, str]


def pod_resources(cpu: str, memory: str, gpus: int) -> PodResources:
    """Requests equal to limits (Guaranteed QoS: dask-cuda-worker sizes itself from the cgroup limit)."""
    requests = {"cpu": cpu, "memory": memory}
    limits = {**requests, GPU_RESOURCE: str(gpus)} if gpus else dict(requests)
    return {"requests": requests, "limits": limits}
