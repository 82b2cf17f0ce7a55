"""KueueArgs: the platform's tenant queues (one Cohort, a ClusterQueue per tenant, a LocalQueue
``default`` per tenant namespace), their quotas, borrowing, lending, fair-sharing weights and preemption,
and the pinned Kueue chart."""

from __future__ import annotations

import functools
from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, field_validator

from gpu_platform.components.core.kube import ChartVersion, ComponentNamespace, DnsLabel, DnsSubdomain
from gpu_platform.components.core.models import ARGS_CONFIG, PlannedOnce, check_unique
from gpu_platform.components.core.numbers import Float, Int

if TYPE_CHECKING:
    from gpu_platform.components.pools.shapes import NodePoolShape
    from gpu_platform.components.queues.plan import QueuesPlan, QueueTenant

__all__ = [
    "KUEUE_API_VERSION",
    "KUEUE_CHART",
    "PROVISIONING_CHECK",
    "PROVISIONING_CLASS",
    "PROVISIONING_CONTROLLER",
    "KUEUE_REPOSITORY",
    "LOCAL_QUEUE",
    "KueueArgs",
    "ReclaimWithinCohort",
    "TenantQueueArgs",
    "WithinClusterQueue",
]

KUEUE_CHART = "kueue"
"""The Kueue chart's name in its repository."""
KUEUE_REPOSITORY = "oci://registry.k8s.io/kueue/charts"
"""Where the Kueue project publishes its chart (the chart's README installs it from there)."""
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
"""The storage version of every Kueue CRD in chart 0.19.2 (v1beta1 is still served)."""
PROVISIONING_CLASS = "queued-provisioning.gke.io"
"""The ProvisioningRequest class of GKE's queued provisioning (Dynamic Workload Scheduler): a node pool with
queued provisioning on gets nodes only for a ProvisioningRequest of this class."""
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
"""The controllerName of Kueue's built-in ProvisioningRequest admission check (ProvisioningRequestControllerName
in Kueue 0.19.2's apis/kueue/v1beta2/provisioningrequestconfig_types.go). Kueue 0.19 runs that controller
with no feature gate (ProvisioningACC went GA in 0.14 and was dropped in 0.15) whenever the API server
serves ProvisioningRequest, which GKE does."""
PROVISIONING_CHECK = "queued-provisioning"
"""The name of the stack's ProvisioningRequestConfig and of the AdmissionCheck that uses it (one of each, for
every queued-provisioning pool: the check is scoped to those pools' flavors)."""
LOCAL_QUEUE = "default"
"""The LocalQueue in each tenant namespace: Kueue sends a workload with no queue-name label to the
namespace's LocalQueue of this name (LocalQueueDefaulting), so Dask and pipeline pods need no change."""


class ReclaimWithinCohort(StrEnum):
    """Whether a ClusterQueue under its nominal quota may preempt workloads that borrowed it (Kueue's
    ``preemption.reclaimWithinCohort``)."""

    NEVER = "Never"
    """Wait until borrowed quota is given back."""
    LOWER_PRIORITY = "LowerPriority"
    """Preempt borrowers' workloads of lower priority only."""
    ANY = "Any"
    """Preempt any borrower's workload, whatever its priority."""


class WithinClusterQueue(StrEnum):
    """Whether a pending workload may preempt admitted workloads of its own ClusterQueue (Kueue's
    ``preemption.withinClusterQueue``)."""

    NEVER = "Never"
    """Never preempt within the tenant's queue."""
    LOWER_PRIORITY = "LowerPriority"
    """Preempt the tenant's own workloads of lower priority."""
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    """Also preempt the tenant's newer workloads of equal priority."""


class TenantQueueArgs(BaseModel):
    """One tenant's queue, where it departs from what the tenant's own quota says."""

    model_config = ARGS_CONFIG

    name: DnsLabel
    """The tenant: a Dask tenant's or a Kubeflow tenant's name (its namespace). Required."""
    gpus: dict[str, Int] | None = None
    """Nominal GPUs per GPU type (the type as the pools name it, e.g. nvidia-tesla-a100); each must be a type some pool has. Default: none (the tenant's GPU quota, all of it of the GPU type of the pool its pods run on: a Dask tenant's worker pool, a Kubeflow tenant's training pool)."""
    cpus: Float | None = Field(default=None, gt=0)
    """Nominal CPUs on each pool's flavor. Default: none (the tenant's CPU quota, else each pool's CPUs at its maximum size)."""
    memory_gib: Float | None = Field(default=None, gt=0)
    """Nominal memory (GiB) on each pool's flavor. Default: none (the tenant's memory quota, else each pool's memory at its maximum size)."""
    borrowing_limit: Int | None = Field(default=None, ge=0)
    """Most GPUs of each pool the tenant may borrow from the cohort beyond its nominal quota. Default: none (up to what the cohort has free)."""
    lending_limit: Int | None = Field(default=None, ge=0)
    """Most of its nominal GPUs on a pool the tenant lends to the cohort while it does not use them. Default: none (all of them)."""
    weight: Float = Field(default=1.0, gt=0)
    """Fair-sharing weight: the tenant's share of borrowable GPUs relative to the others (0, an infinite share that is always preempted first, is refused). Default: 1."""

    @field_validator("gpus")
    @classmethod
    def _non_negative(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        for gpu_type, count in (value or {}).items():
            if count < 0:
                raise ValueError(f"gpus {gpu_type}: {count} is negative; give 0 or more GPUs")
        return value


class KueueArgs(PlannedOnce, BaseModel):
    """Inputs of Kueue: the chart, the platform's Cohort and what each tenant's ClusterQueue departs from the defaults by."""

    model_config = ARGS_CONFIG

    namespace: ComponentNamespace = "kueue-system"
    """Namespace of the Kueue controller. Default: kueue-system."""
    chart_version: ChartVersion = "0.19.2"
    """Version of the Kueue Helm chart (API kueue.x-k8s.io/v1beta2). Default: 0.19.2."""
    cohort: DnsSubdomain = "gpu-platform"
    """The one Cohort every tenant's ClusterQueue belongs to; it also holds, as its own quota, each pool's GPUs no tenant has as nominal quota, for all to borrow. Default: gpu-platform."""
    oversubscription: bool = False
    """Allow the tenants' nominal GPUs of a type to exceed what the pools of that type hold at their maximum size. Default: false (refused)."""
    reclaim_within_cohort: ReclaimWithinCohort = ReclaimWithinCohort.ANY
    """A tenant under its nominal quota preempts borrowers to get it back: Never, LowerPriority or Any. Default: Any."""
    within_cluster_queue: WithinClusterQueue = WithinClusterQueue.LOWER_PRIORITY
    """A tenant's workload preempts the same tenant's workloads: Never, LowerPriority or LowerOrNewerEqualPriority. Default: LowerPriority."""
    queued_provisioning_max_run_seconds: Int | None = Field(default=None, ge=1)
    """Pools with queued_provisioning only: how long GKE keeps the nodes of one ProvisioningRequest, in seconds
    (the ProvisioningRequestConfig's parameter maxRunDurationSeconds). Default: none (GKE's own limit)."""
    tenants: list[TenantQueueArgs] = Field(default_factory=list)
    """Per tenant, what its queue departs from the defaults by; every Dask and Kubeflow tenant gets a queue whether listed or not. Default: [] (all defaults)."""

    @field_validator("tenants")
    @classmethod
    def _distinct(cls, value: list[TenantQueueArgs]) -> list[TenantQueueArgs]:
        check_unique([t.name for t in value], "tenants", "a tenant")
        return value

    @functools.cached_property
    def plans(self) -> list[tuple[tuple[QueueTenant, ...], tuple[NodePoolShape, ...], QueuesPlan]]:
        """The queue plans made for these Args (kueue_plan.planned_queues), one per tenants and pools they were
        planned for: the stack's checks and the Kueue component read the same one, as GpuGkeCluster and the
        stack read one pool plan."""
        return []
