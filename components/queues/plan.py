"""The tenant queues, derived from the typed tenants and the one plan of the pools (pure: no resource).

One ResourceFlavor per pool (its GPU type and pool: the pool's node selector and tolerations, as
NodePoolShape.placement gives them), CPU pools first so a pod asking for no GPU is admitted onto a CPU
pool; one ClusterQueue per tenant in one Cohort, with every flavor (nominal GPUs where the tenant has
them, 0 elsewhere, so it may borrow); the Cohort's own quota holds each pool's GPUs no tenant has as
nominal quota (a pool's GPUs are the shape's schedulable units); a LocalQueue ``default`` in each tenant namespace. The component, the stack checks and
the tests read this plan: nothing downstream recomputes it.

A pool whose capacity ladder the stack states and no capacity strategy names (a reservation, capacity block or
flex-start rung, or on-demand before spot) has one ResourceFlavor per rung instead, in the ladder's order, each selecting its rung's nodes (``NodePoolShape.rung_nodes``: GKE's node pool, an EKS
node group's capacity label), holding the rung's GPUs at its maximum. A tenant's quota on the pool is split over the
rungs in that order (each filled to what it holds before the next), never repeated on each; with the queue's
flavorFungibility (``FLAVOR_FUNGIBILITY``) a workload takes the first rung that fits, borrowing if it must, and tries
the next rung rather than preempt. Kueue falls through the rungs by quota, not by the cloud's capacity (kueue#2560):
a pool of spot_then_on_demand (named, or stated as [spot, on_demand]) keeps one flavor over its rungs, and its
autoscaler falls back.

Where a pool has GKE's queued provisioning (Dynamic Workload Scheduler), whose nodes come only for a
ProvisioningRequest, the setup GKE documents for Kueue: a ProvisioningRequestConfig of class
``queued-provisioning.gke.io`` managing nvidia.com/gpu, an AdmissionCheck of Kueue's ProvisioningRequest
controller using it, and that check on every ClusterQueue with a flavor of such a pool, scoped to those
flavors (``admissionChecksStrategy`` ``onFlavors``): a workload given another flavor is admitted on quota
alone; one given a queued pool's flavor is admitted only once its ProvisioningRequest is provisioned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gpu_platform.components.core.labels import GPU_RESOURCE, NAMESPACE_NAME_LABEL, PoolRole
from gpu_platform.components.core.quantities import to_mib, to_millicores
from gpu_platform.components.dask.args import DaskOperatorArgs
from gpu_platform.components.kubeflow.args import KubeflowInstallArgs
from gpu_platform.components.pools.ladders import CapacityRung, rung_slugs
from gpu_platform.components.pools.shapes import NodePoolShape, tolerations
from gpu_platform.components.queues.args import (
    KUEUE_API_VERSION,
    LOCAL_QUEUE,
    PROVISIONING_CHECK,
    PROVISIONING_CLASS,
    PROVISIONING_CONTROLLER,
    KueueArgs,
    TenantQueueArgs,
)

__all__ = [
    "FLAVOR_FUNGIBILITY",
    "FlavorSlot",
    "QueueTenant",
    "QueuesPlan",
    "TenantKind",
    "dask_queue_tenants",
    "flavor_name",
    "flavor_slots",
    "kubeflow_queue_tenants",
    "plan_queues",
    "planned_queues",
    "queued_flavors",
    "rung_flavors",
]

COVERED = ("cpu", "memory", GPU_RESOURCE)
"""The resources every ClusterQueue covers: all that a Dask or pipeline pod requests."""


class TenantKind(StrEnum):
    """Which add-on a tenant comes from."""

    DASK = "dask"
    KUBEFLOW = "kubeflow"


@dataclass(frozen=True)
class QueueTenant:
    """A tenant as its add-on defines it: its namespace, its ResourceQuota and the pool its pods run on."""

    name: str
    """The tenant's name, which is its namespace."""
    kind: TenantKind
    """Dask or Kubeflow."""
    gpus: int
    """GPUs its ResourceQuota allows (requests.nvidia.com/gpu)."""
    millicores: int | None
    """CPU its ResourceQuota allows, millicores; None when unbounded."""
    memory_mib: int | None
    """Memory its ResourceQuota allows, MiB; None when unbounded."""
    home_pool: str | None
    """The pool its GPU pods run on (a Dask tenant's workers, a Kubeflow tenant's training pool); None when no pool fits."""


def dask_queue_tenants(dask: DaskOperatorArgs, pools: Sequence[NodePoolShape]) -> list[QueueTenant]:
    """The Dask tenants: their workers run on the first GPU pool (RapidsDaskClusterSpec.for_pools)."""
    home = next((p.name for p in pools if p.role is PoolRole.GPU), None)
    return [
        QueueTenant(
            name=t.name,
            kind=TenantKind.DASK,
            gpus=t.gpu_quota,
            millicores=None if t.cpu_quota is None else to_millicores(t.cpu_quota),
            memory_mib=None if t.memory_quota is None else to_mib(t.memory_quota),
            home_pool=home,
        )
        for t in dask.tenants
    ]


def kubeflow_queue_tenants(install: KubeflowInstallArgs, pools: Sequence[NodePoolShape]) -> list[QueueTenant]:
    """The Kubeflow tenants: their steps run on the first pool the training pool selector matches."""
    home = next((p.name for p in pools if install.training_pool.matches(p)), None)
    return [
        QueueTenant(
            name=t.name,
            kind=TenantKind.KUBEFLOW,
            gpus=t.gpus,
            millicores=None if t.cpus is None else t.cpus * 1000,
            memory_mib=None if t.memory_gib is None else t.memory_gib * 1024,
            home_pool=home,
        )
        for t in install.tenants
    ]


def flavor_name(pool: NodePoolShape) -> str:
    """The ResourceFlavor of ``pool``: its GPU type (cpu on a CPU pool) and its name. A pool with a flavor per rung
    (``rung_flavors``) has them named after this with each rung's suffix."""
    return f"{pool.accelerator or 'cpu'}-{pool.name}"


def queued_flavors(pools: Sequence[NodePoolShape]) -> list[str]:
    """The ResourceFlavors of the pools with queued provisioning (GKE's DWS), in plan order."""
    return [flavor_name(p) for p in pools if p.queued_provisioning]


FLAVOR_FUNGIBILITY = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
"""The flavorFungibility of a ClusterQueue with a pool's rung flavors (Kueue's defaults, stated so the ladder does
not hang on them): a workload takes the first rung, in the ladder's order, that fits in its quota or by borrowing
from the Cohort, and tries the next rung rather than preempt on this one."""


@dataclass(frozen=True)
class FlavorSlot:
    """What one ResourceFlavor of a pool holds: the whole pool, or one rung of a pool with a flavor per rung."""

    pool: NodePoolShape
    """The pool."""
    name: str
    """The ResourceFlavor's name."""
    node_selector: dict[str, str]
    """The node labels the flavor selects: the pool's, and for a rung its node pool's or node group's."""
    max_nodes: int
    """Most nodes the flavor's nodes number (the pool's, or the rung's)."""
    rung: CapacityRung | None = None
    """The rung, for a rung's flavor; None for a pool's one flavor."""

    @property
    def gpus(self) -> int:
        """nvidia.com/gpu the flavor's nodes hold at their maximum (the shape's schedulable units per node)."""
        return self.max_nodes * self.pool.schedulable_gpus_per_node


def rung_flavors(pool: NodePoolShape) -> bool:
    """Whether ``pool`` gets one ResourceFlavor per rung: when the plan tells its rungs' nodes apart
    (NodePoolShape.rung_nodes: a stated ladder that no capacity strategy names). A pool of spot_then_on_demand, named or
    stated as [spot, on_demand], keeps one flavor selecting all its rungs, so the autoscaler falls back by capacity;
    Kueue's fallback between flavors is by quota only (kueue#2560)."""
    return len(pool.rung_nodes) > 1


def flavor_slots(pool: NodePoolShape) -> list[FlavorSlot]:
    """The ResourceFlavors of ``pool``, in the ladder's order: one per rung (``rung_flavors``), each named
    ``<flavor_name>-<rung suffix>`` and selecting its rung's nodes, else the pool's one."""
    if not rung_flavors(pool):
        return [FlavorSlot(pool, flavor_name(pool), dict(pool.placement.node_selector), pool.max_nodes)]
    slugs = rung_slugs([r.rung for r in pool.rung_nodes])
    return [
        FlavorSlot(pool, f"{flavor_name(pool)}-{slug}", {**pool.placement.node_selector, **nodes.node_selector}, nodes.max_nodes, nodes.rung)
        for nodes, slug in zip(pool.rung_nodes, slugs, strict=True)
    ]


def _cpu(millicores: int) -> str:
    return f"{millicores // 1000}" if millicores % 1000 == 0 else f"{millicores}m"


@dataclass(frozen=True)
class QueuesPlan:
    """The Kueue objects of a stack, as Kubernetes object bodies, and what is wrong with them."""

    flavors: list[dict[str, Any]]
    """One ResourceFlavor per pool (per rung of a pool with ``rung_flavors``, in its ladder's order), CPU pools first."""
    cohort: dict[str, Any]
    """The platform's Cohort, holding the GPUs no tenant has as nominal quota."""
    cluster_queues: list[dict[str, Any]]
    """One ClusterQueue per tenant, in the stack's tenant order (Dask, then Kubeflow)."""
    local_queues: list[dict[str, Any]]
    """The LocalQueue ``default`` in each tenant namespace."""
    nominal_gpus: dict[str, dict[str, int]]
    """tenant -> ResourceFlavor -> nominal GPUs, as placed."""
    provisioning_configs: list[dict[str, Any]] = field(default_factory=list)
    """The ProvisioningRequestConfig of class queued-provisioning.gke.io when a pool has queued provisioning; else none."""
    admission_checks: list[dict[str, Any]] = field(default_factory=list)
    """The AdmissionCheck of Kueue's ProvisioningRequest controller using that config; else none."""
    problems: list[tuple[tuple[str | int, ...], str, Any]] = field(default_factory=list)
    """(key path under the queues section, what is wrong and the fix, the value) per problem."""

    @property
    def namespaces(self) -> list[str]:
        """The tenant namespaces whose pods Kueue admits (the controller's managedJobsNamespaceSelector)."""
        return [q["metadata"]["namespace"] for q in self.local_queues]


def _place(
    args: KueueArgs,
    tenants: Sequence[QueueTenant],
    pools: Sequence[NodePoolShape],
) -> tuple[dict[str, dict[str, int]], list[tuple[tuple[str | int, ...], str, Any]]]:
    """Each tenant's nominal GPUs per flavor: a GPU type's quota fills the tenant's home pool first, then the
    type's other pools in plan order, never beyond what a flavor holds (oversubscription puts the excess on
    the tenant's first flavor of the type). A pool with a flavor per rung is filled rung by rung in the ladder's
    order: the quota is split over the rungs, never repeated on each (which would multiply it)."""
    problems: list[tuple[tuple[str | int, ...], str, Any]] = []
    overrides = {t.name: (i, t) for i, t in enumerate(args.tenants)}
    known = {t.name for t in tenants}
    for i, override in enumerate(args.tenants):
        if override.name not in known:
            problems.append(
                (
                    ("tenants", i, "name"),
                    f"tenant {override.name} is neither a Dask nor a Kubeflow tenant of this stack; "
                    f"use one of {', '.join(sorted(known)) or 'none (the stack has no tenants)'}",
                    override.name,
                )
            )
    by_type: dict[str, list[FlavorSlot]] = {}
    for pool in pools:
        if pool.accelerator is not None and pool.gpus_per_node > 0:
            by_type.setdefault(pool.accelerator, []).extend(flavor_slots(pool))
    free = {s.name: s.gpus for slots in by_type.values() for s in slots}
    nominal: dict[str, dict[str, int]] = {t.name: {} for t in tenants}
    wanted: dict[str, int] = {}
    for tenant in tenants:
        given = overrides.get(tenant.name)
        gpus = given[1].gpus if given is not None else None
        home = next((p for p in pools if p.name == tenant.home_pool), None)
        if given is None or gpus is None:
            quota = {home.accelerator: tenant.gpus} if home is not None and home.accelerator else {}
        else:
            i = given[0]
            quota = dict(gpus)
            for gpu_type, count in quota.items():
                if gpu_type not in by_type:
                    problems.append(
                        (
                            ("tenants", i, "gpus", gpu_type),
                            f"tenant {tenant.name} has a quota of GPU type {gpu_type}, which no pool has; "
                            f"use one of {', '.join(sorted(by_type)) or 'none (no GPU pool)'}",
                            count,
                        )
                    )
            quota = {k: v for k, v in quota.items() if k in by_type}
            if (total := sum(quota.values())) > tenant.gpus:
                problems.append(
                    (
                        ("tenants", i, "gpus"),
                        f"tenant {tenant.name}'s nominal GPUs ({total}) exceed its ResourceQuota of {tenant.gpus} GPUs, "
                        "which refuses the pods beyond it before Kueue sees them; lower gpus or raise the tenant's quota",
                        total,
                    )
                )
        for gpu_type, count in quota.items():
            wanted[gpu_type] = wanted.get(gpu_type, 0) + count
            order = sorted(by_type[gpu_type], key=lambda s: s.pool.name != tenant.home_pool)
            left = count
            for slot in order:
                take = min(left, free[slot.name])
                if take:
                    nominal[tenant.name][slot.name] = nominal[tenant.name].get(slot.name, 0) + take
                    free[slot.name] -= take
                    left -= take
            if left and args.oversubscription:
                first = order[0].name
                nominal[tenant.name][first] = nominal[tenant.name].get(first, 0) + left
    if not args.oversubscription:
        for gpu_type, count in wanted.items():
            held = sum(s.gpus for s in by_type[gpu_type])
            if count > held:
                held_by: dict[str, int] = {}
                for s in by_type[gpu_type]:
                    held_by[s.pool.name] = held_by.get(s.pool.name, 0) + s.gpus
                pools_held = ", ".join(f"{name} {gpus}" for name, gpus in held_by.items())
                problems.append(
                    (
                        ("oversubscription",),
                        f"the tenants' nominal {gpu_type} GPUs ({count}) exceed what the pools hold at their maximum "
                        f"size ({held}: {pools_held}); lower the tenants' quotas, raise the pools' max_nodes, "
                        "or set oversubscription: true",
                        False,
                    )
                )
    return nominal, problems


def plan_queues(
    args: KueueArgs,
    tenants: Sequence[QueueTenant],
    pools: Sequence[NodePoolShape],
) -> QueuesPlan:
    """The stack's Kueue objects for ``tenants`` on ``pools`` (the plan's pool shapes), each pool's GPUs counted
    as the shape's schedulable units (NodePoolShape.max_schedulable_gpus: time-sharing or MPS clients, MIG instances)."""
    nominal, problems = _place(args, tenants, pools)
    ordered = sorted(pools, key=lambda p: (p.gpus_per_node > 0, p.role is not PoolRole.SCHEDULER))
    overrides = {t.name: t for t in args.tenants}
    slots = [slot for pool in ordered for slot in flavor_slots(pool)]
    flavors = []
    for slot in slots:
        spec: dict[str, Any] = {}
        if slot.node_selector:
            spec["nodeLabels"] = dict(slot.node_selector)
        if slot.pool.placement.tolerations:
            spec["tolerations"] = tolerations(slot.pool.placement.tolerations)
        flavors.append(
            {
                "apiVersion": KUEUE_API_VERSION,
                "kind": "ResourceFlavor",
                "metadata": {"name": slot.name},
                "spec": spec,
            }
        )
    placed = {s.name: sum(n.get(s.name, 0) for n in nominal.values()) for s in slots}
    cohort_flavors = [
        {
            "name": s.name,
            "resources": [
                {"name": "cpu", "nominalQuota": "0"},
                {"name": "memory", "nominalQuota": "0"},
                {"name": GPU_RESOURCE, "nominalQuota": s.gpus - placed[s.name]},
            ],
        }
        for s in slots
        if s.gpus > placed[s.name]
    ]
    cohort_spec: dict[str, Any] = {}
    if cohort_flavors:
        cohort_spec["resourceGroups"] = [{"coveredResources": list(COVERED), "flavors": cohort_flavors}]
    cohort = {"apiVersion": KUEUE_API_VERSION, "kind": "Cohort", "metadata": {"name": args.cohort}, "spec": cohort_spec}
    queued = queued_flavors(ordered)
    provisioning_configs, admission_checks = _provisioning(args, queued)
    laddered = any(s.rung is not None for s in slots)
    cluster_queues, local_queues = [], []
    for tenant in tenants:
        override = overrides.get(tenant.name, TenantQueueArgs(name=tenant.name))
        flavor_entries = []
        for slot in slots:
            pool = slot.pool
            cpu = pool.vcpus * slot.max_nodes * 1000
            if override.cpus is not None:
                cpu = min(cpu, round(override.cpus * 1000))
            elif tenant.millicores is not None:
                cpu = min(cpu, tenant.millicores)
            memory = pool.memory_mib * slot.max_nodes
            if override.memory_gib is not None:
                memory = min(memory, round(override.memory_gib * 1024))
            elif tenant.memory_mib is not None:
                memory = min(memory, tenant.memory_mib)
            gpus = nominal[tenant.name].get(slot.name, 0)
            gpu: dict[str, Any] = {"name": GPU_RESOURCE, "nominalQuota": gpus}
            if override.borrowing_limit is not None:
                gpu["borrowingLimit"] = override.borrowing_limit
            if override.lending_limit is not None:
                gpu["lendingLimit"] = min(override.lending_limit, gpus)
            flavor_entries.append(
                {
                    "name": slot.name,
                    "resources": [
                        {"name": "cpu", "nominalQuota": _cpu(cpu)},
                        {"name": "memory", "nominalQuota": f"{memory}Mi"},
                        gpu,
                    ],
                }
            )
        queue_spec: dict[str, Any] = {
            "cohortName": args.cohort,
            "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: tenant.name}},
            "queueingStrategy": "BestEffortFIFO",
            "fairSharing": {"weight": f"{override.weight:g}"},
            "preemption": {
                "reclaimWithinCohort": args.reclaim_within_cohort.value,
                "withinClusterQueue": args.within_cluster_queue.value,
            },
            "resourceGroups": [{"coveredResources": list(COVERED), "flavors": flavor_entries}],
        }
        if laddered:
            queue_spec["flavorFungibility"] = dict(FLAVOR_FUNGIBILITY)
        # The queued pools' flavors this queue has: the ProvisioningRequest check runs for a workload assigned one
        # of them, and for no other (an empty onFlavors would run it for every workload of the queue).
        if on_flavors := [e["name"] for e in flavor_entries if e["name"] in queued]:
            queue_spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": PROVISIONING_CHECK, "onFlavors": on_flavors}]}
        cluster_queues.append({"apiVersion": KUEUE_API_VERSION, "kind": "ClusterQueue", "metadata": {"name": tenant.name}, "spec": queue_spec})
        local_queues.append(
            {
                "apiVersion": KUEUE_API_VERSION,
                "kind": "LocalQueue",
                "metadata": {"name": LOCAL_QUEUE, "namespace": tenant.name},
                "spec": {"clusterQueue": tenant.name},
            }
        )
    return QueuesPlan(
        flavors,
        cohort,
        cluster_queues,
        local_queues,
        nominal,
        provisioning_configs=provisioning_configs,
        admission_checks=admission_checks,
        problems=problems,
    )


def planned_queues(args: KueueArgs, tenants: Sequence[QueueTenant], pools: Sequence[NodePoolShape]) -> QueuesPlan:
    """``plan_queues(args, tenants, pools)``, planned once for these Args, tenants and pools (``KueueArgs.plans``):
    the stack's checks (StackConfig.queues_plan) and the Kueue component ask the same values and read one plan."""
    asked = (tuple(tenants), tuple(pools))
    for tenants_planned, pools_planned, plan in args.plans:
        if (tenants_planned, pools_planned) == asked:
            return plan
    plan = plan_queues(args, *asked)
    args.plans.append((*asked, plan))
    return plan


def _provisioning(args: KueueArgs, queued: Sequence[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ProvisioningRequestConfig and the AdmissionCheck GKE documents for Kueue with queued provisioning, when
    ``queued`` names a flavor; else none. The config asks for nvidia.com/gpu only (managedResources): a workload's
    pod sets that request no GPU go into no ProvisioningRequest."""
    if not queued:
        return [], []
    config_spec: dict[str, Any] = {"provisioningClassName": PROVISIONING_CLASS, "managedResources": [GPU_RESOURCE]}
    if args.queued_provisioning_max_run_seconds is not None:
        config_spec["parameters"] = {"maxRunDurationSeconds": str(args.queued_provisioning_max_run_seconds)}
    config = {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": PROVISIONING_CHECK},
        "spec": config_spec,
    }
    check = {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": {"name": PROVISIONING_CHECK},
        "spec": {
            "controllerName": PROVISIONING_CONTROLLER,
            "parameters": {"apiGroup": KUEUE_API_VERSION.split("/")[0], "kind": "ProvisioningRequestConfig", "name": PROVISIONING_CHECK},
        },
    }
    return [config], [check]
