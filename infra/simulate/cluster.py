"""The stack as the cluster model sees it: one model node group per node pool or managed node group of
the stack's own plan (gke_plan, eks_plan), with its shape (schedulable GPUs included), bounds, zones
(the shape's), priority and taints; the autoscaler's settings and the tenants' quotas."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.infra.report.tenants import tenant_namespaces
from gpu_platform.infra.simulate.inputs import UNLIMITED, Binding, Budget, KarpenterInputs, NodeGroup, NodePoolInputs, Resources, Timings
from gpu_platform.infra.simulate.queues import Cohort, cohort_from_objects
from gpu_platform.infra.simulate.settings import ModelSettings

__all__ = ["ModelInputs", "model_inputs", "streamed_image"]


@dataclass(frozen=True)
class ModelInputs:
    """What a run needs besides the workload (picklable: sweeps run it in other processes)."""

    cloud: Cloud
    region: str
    groups: tuple[NodeGroup, ...]
    timings: Timings
    binding: Binding
    quotas: dict[str, int]
    seed: int
    settings: dict[str, Any] = field(default_factory=dict)
    """The model's settings as given, for the JSON."""
    tenants: dict[str, str] = field(default_factory=dict)
    """namespace -> tenant (infra/report/tenants.tenant_namespaces): the per-tenant figures' rows."""
    queues: Cohort | None = None
    """The tenants' Kueue queues (infra/simulate/queues.py): admission through them instead of the quotas;
    None: no queues."""
    warm: dict[str, int] = field(default_factory=dict)
    """GPUs kept warm by placeholder pods, by pool (StackConfig.warm_capacity; infra/simulate/warm.py)."""
    karpenter: KarpenterInputs | None = None
    """The stack's Karpenter NodePools and disruption (infra/simulate/karpenter.py), which provision its GPU groups
    in place of the cluster autoscaler; None: the cluster autoscaler."""


def _resources(shape: Any) -> Resources:
    """What pods can request on a node of ``shape``: GPUs are its schedulable GPUs (NodePoolShape.schedulable_gpus_per_node:
    x clients on a shared pool, MIG instances), so a shared pool runs that many one-GPU pods a node."""
    from gpu_platform.components.pools.reserves import allocatable

    node = allocatable(shape)
    return Resources(cpu=node.cpu, memory=node.memory_mib, gpus=node.gpus)


def _taints(shape: Any) -> tuple[str, ...]:
    """The taints that keep pods off a pool (NoSchedule, NoExecute), each ``key=value``: the value counts (the
    ComputeClass taint of one class's node pools is not another class's, cloud.google.com/compute-class=<class>)."""
    from gpu_platform.components.pools.shapes import TaintEffect

    return tuple(sorted({f"{t.key}={t.value}" for t in shape.taints if t.effect is not TaintEffect.PREFER_NO_SCHEDULE}))


def workload_image(stack: Any) -> str:
    """The image the GPU pools' pods run and the prepuller pulls: the stack's Dask RAPIDS image
    (dask.rapids_image), or its default when the stack has no Dask operator."""
    from gpu_platform.components.dask.args import RAPIDS_BASE

    return str(stack.dask.rapids_image) if getattr(stack, "dask", None) is not None else RAPIDS_BASE


def streamed_image(stack: Any) -> tuple[str, bool]:
    """The workload image and whether GKE streams it: only an image held in Artifact Registry in the cluster's
    region (``<region>-docker.pkg.dev/...``) is streamed; one from any other registry (the default RAPIDS image
    is on nvcr.io) is pulled whole with image streaming on (GKE's image streaming requirements: images in Artifact
    Registry, in the cluster's region)."""
    image = workload_image(stack)
    region = getattr(stack, "region", None)
    return image, bool(region) and image.split("/", 1)[0] == f"{region}-docker.pkg.dev"


def _gke_groups(gke: Any, streams: bool, reserved_instances: int | None = None) -> list[NodeGroup]:
    """One model group per node pool of the plan (gke_plan.plan_pools): its name, bounds and zones; image streaming
    where the pool has it on and the workload image is one GKE streams (``streams``, streamed_image); its capacity
    rung (PlannedNodePool.rung): spot, on-demand, a reservation holding ``reserved_instances`` (default: the node
    pool's minimum in total) or flex-start with its run limit (CapacityRung.run_seconds)."""
    from gpu_platform.components.pools.ladders import RungKind
    from gpu_platform.components.pools.shapes import BoundsScope

    groups = []
    for planned in gke.plan:
        shape = planned.shape
        zones = shape.zone_names()
        for i, node_pool in enumerate(planned.node_pools):
            bounds = node_pool.bounds
            per_zone = bounds.scope is BoundsScope.PER_ZONE
            rung = node_pool.rung
            reservation = rung.kind is RungKind.RESERVATION
            total_min = bounds.min_nodes * (len(zones) if per_zone else 1)
            groups.append(
                NodeGroup(
                    name=node_pool.gke_name,
                    pool=shape.name,
                    role=shape.role.value,
                    machine_type=shape.machine_type,
                    allocatable=_resources(shape),
                    gpus_per_node=shape.gpus_per_node,
                    accelerator=shape.accelerator,
                    spot=node_pool.spot,
                    # A ComputeClass lists its pool's node pools in the capacity ladder's order (spot_then_on_demand:
                    # the spot pool, then its on-demand twin): GKE tries them in that order for the pods that select
                    # the class, and the order ranks no other node pool (compute_class scopes it).
                    priority=len(planned.node_pools) - i if planned.compute_class else 0,
                    compute_class=planned.compute_class,
                    zones=zones,
                    min_nodes=bounds.min_nodes,
                    max_nodes=bounds.max_nodes,
                    per_zone=per_zone,
                    image_streaming=streams and bool(getattr(planned.args, "image_streaming", False)),
                    taints=_taints(shape),
                    reserved=(total_min if reserved_instances is None else reserved_instances) if reservation else None,
                    reservation_named=reservation and rung.reservation is not None,
                    flex_start=rung.kind is RungKind.FLEX_START,
                    run_limit=None if rung.run_seconds is None else float(rung.run_seconds),
                )
            )
    return groups


def _eks_groups(plan: Any, reserved_instances: int | None = None) -> list[NodeGroup]:
    """One model group per managed node group of the stack's plan (StackConfig.eks_plan): bounds in total; its
    capacity rung (NodeGroupPlan.rung) as _gke_groups models a GKE pool's: spot, on-demand, an On-Demand Capacity
    Reservation holding ``reserved_instances`` (default: the group's minimum), named (``cr-...``: no node beyond
    them) or any open one (on-demand beyond them), or a capacity block holding the group's maximum, named, at its
    capacity-block price."""
    from gpu_platform.components.pools.ladders import RungKind
    from gpu_platform.components.pools.shapes import CapacityType

    groups = []
    for p in plan.node_groups:
        kind = p.group.rung.kind
        block = kind is RungKind.CAPACITY_BLOCK
        if block:
            # The block's instances: the group may never hold more (EKS sizes a capacity-block group to its block).
            reserved: int | None = p.group.max_nodes
        elif kind is RungKind.RESERVATION:
            reserved = p.group.min_nodes if reserved_instances is None else reserved_instances
        else:
            reserved = None
        groups.append(
            NodeGroup(
                name=p.group.name,
                pool=p.shape.name,
                role=p.shape.role.value,
                machine_type=p.shape.machine_type,
                allocatable=_resources(p.shape),
                gpus_per_node=p.shape.gpus_per_node,
                accelerator=p.shape.accelerator,
                spot=p.group.capacity is CapacityType.SPOT,
                priority=p.priority,
                zones=p.shape.zone_names(),
                min_nodes=p.group.min_nodes,
                max_nodes=p.group.max_nodes,
                taints=_taints(p.shape),
                reserved=reserved,
                reservation_named=block or (reserved is not None and p.group.rung.reservation is not None),
                capacity_block=block,
            )
        )
    return groups


def _limits(limits: dict[str, str]) -> Resources:
    """A NodePool's rendered spec.limits in the model's units (millicores, MiB, GPUs); an unlimited resource UNLIMITED."""
    from gpu_platform.components.core.labels import GPU_RESOURCE
    from gpu_platform.components.core.quantities import to_mib, to_millicores

    return Resources(
        cpu=to_millicores(limits["cpu"]) if "cpu" in limits else UNLIMITED,
        memory=to_mib(limits["memory"]) if "memory" in limits else UNLIMITED,
        gpus=int(limits[GPU_RESOURCE]) if GPU_RESOURCE in limits else UNLIMITED,
    )


def _karpenter(stack: Any, settings: ModelSettings, groups: list[NodeGroup]) -> tuple[list[NodeGroup], KarpenterInputs]:
    """The stack's NodePools (StackConfig.karpenter_plan: names, weights, limits as rendered) over the plan's groups
    of the same names: a NodePool has no minimum (its group starts empty) and is tried by weight. Consolidation
    and budgets are the NodePools' spec.disruption as the component renders it (KarpenterDisruption.spec)."""
    from gpu_platform.components.core.durations import seconds
    from gpu_platform.components.core.labels import GPU_RESOURCE

    plan = stack.karpenter_plan
    pools = {p.name: p for p in plan}
    disruption = stack.eks_node_groups.karpenter.disruption.spec()
    after = disruption["consolidateAfter"]
    out = [dataclasses.replace(g, min_nodes=0, priority=pools[g.name].weight) if g.name in pools else g for g in groups]
    inputs = KarpenterInputs(
        pools=tuple(
            NodePoolInputs(
                name=p.name,
                weight=p.weight,
                capacity=Resources(p.node_capacity["cpu"] * 1000, p.node_capacity["memory"], p.node_capacity[GPU_RESOURCE]),
                limits=_limits(p.limits),
            )
            for p in plan
        ),
        consolidation_policy=str(disruption["consolidationPolicy"]),
        consolidate_after=None if after == "Never" else float(seconds(after)),
        budgets=tuple(
            Budget(
                nodes=b["nodes"],
                schedule=b.get("schedule"),
                duration=float(seconds(b["duration"])) if b.get("duration") else None,
                reasons=tuple(b.get("reasons", ())),
            )
            for b in disruption["budgets"]
        ),
        batch_idle=settings.karpenter.batch_idle_duration,
        batch_max=settings.karpenter.batch_max_duration,
        start=settings.karpenter.start,
    )
    return out, inputs


def model_inputs(stack: Any, settings: ModelSettings) -> ModelInputs:
    """The cluster model's groups, timings, binding and quotas for a StackConfig."""
    from gpu_platform.components.core.durations import seconds
    from gpu_platform.components.gke.args import AutoscalingProfile

    a, n, s = settings.autoscaler, settings.node, settings.spot
    karpenter = None
    # The stack's region as the program reads it; AWS's own default where the stack names none.
    region = stack.region or "us-east-1"
    if stack.cloud is Cloud.GCP:
        gke = stack.gke
        groups = _gke_groups(gke, streamed_image(stack)[1], settings.reservation.instances)
        optimize = gke.autoscaling_profile is AutoscalingProfile.OPTIMIZE_UTILIZATION
        # GKE runs the autoscaler itself; optimize-utilization removes nodes sooner than the upstream 10m.
        unneeded = delay = 120.0 if optimize else 600.0
        provision, backoff, max_backoff = 900.0, 300.0, 1800.0
        binding = Binding.MOST_ALLOCATED if optimize else Binding.LEAST_ALLOCATED
        notice = 30.0
    else:
        settings_eks = stack.eks_node_groups.autoscaler
        groups = _eks_groups(stack.eks_plan, settings.reservation.instances)
        if stack.karpenter_plan is not None:
            groups, karpenter = _karpenter(stack, settings, groups)
        unneeded = float(seconds(settings_eks.scale_down_unneeded_time))
        delay = float(seconds(settings_eks.scale_down_delay_after_add))
        provision = float(seconds(settings_eks.max_node_provision_time))
        backoff = float(seconds(settings_eks.initial_node_group_backoff_duration))
        max_backoff = float(seconds(settings_eks.max_node_group_backoff_duration))
        binding = Binding.LEAST_ALLOCATED
        notice = 120.0
    timings = Timings(
        scan_interval=a.scan_interval,
        provision=n.provision,
        gpu_ready=n.gpu_ready,
        image_pull=n.image_pull,
        image_pull_streaming=n.image_pull_streaming,
        prepuller=n.prepuller,
        pod_start=n.pod_start,
        scale_down_unneeded=a.scale_down_unneeded_time if a.scale_down_unneeded_time is not None else unneeded,
        scale_down_delay_after_add=a.scale_down_delay_after_add if a.scale_down_delay_after_add is not None else delay,
        scale_down_utilisation_threshold=a.scale_down_utilization_threshold,
        scale_down_gpu_utilisation_threshold=a.scale_down_gpu_utilization_threshold,
        unremovable_recheck=a.unremovable_node_recheck_timeout,
        backoff_reset=a.backoff_reset_timeout,
        max_node_provision=a.max_node_provision_time if a.max_node_provision_time is not None else provision,
        early_abort=a.early_abort,
        failure_report=a.failure_report,
        initial_backoff=a.initial_backoff if a.initial_backoff is not None else backoff,
        max_backoff=a.max_backoff if a.max_backoff is not None else max_backoff,
        spot_shortage=s.shortage,
        preemption_per_node_hour=s.preemption_per_node_hour,
        preemption_notice=s.notice if s.notice is not None else notice,
    )
    quotas = {t.name: t.gpu_quota for t in stack.dask.tenants} if stack.dask is not None else {}
    tenants = tenant_namespaces(stack)
    plan = stack.queues_plan
    if plan is not None:
        # Every queued tenant's ResourceQuota stays the ceiling of what its queue admits (a tenant is its namespace).
        quotas |= {t.name: t.gpus for t in stack.queue_tenants()}
    # With queues, Kueue admits (the stack's own ClusterQueues and Cohort) in place of the quotas.
    queues = None if plan is None else cohort_from_objects([plan.cohort, *plan.cluster_queues], tenants)
    return ModelInputs(
        cloud=stack.cloud,
        region=region,
        groups=tuple(groups),
        timings=timings,
        binding=settings.binding or binding,
        quotas=quotas,
        seed=settings.seed,
        settings=settings.model_dump(mode="json"),
        tenants=tenants,
        queues=queues,
        warm={} if stack.warm_capacity is None else stack.warm_capacity.enabled(),
        karpenter=karpenter,
    )
