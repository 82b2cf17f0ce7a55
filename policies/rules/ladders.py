"""Capacity ladder guardrails (issue 38 item 5): the costly ladder mistakes the field's threads report, judged from the
rendered layers (GKE node pools and their ComputeClass, EKS node groups, Karpenter NodePools, Kueue's objects).

- A named reservation tried after capacity that is bought per use: the reservation is paid for whether used or not,
  and sits idle while the autoscaler buys the rung above it (karpenter-provider-gcp#239 asks Karpenter to consume
  reservations first "reducing waste and cost"; Azure/karpenter-provider-azure#1834 calls reservation-first
  provisioning the goal).
- A training pool that buys only spot: a step is restarted from its beginning at each reclaim unless it checkpoints
  (mozilla/translations#315: preempted training took 2 to 3 times as long; EveryVoiceTTS/EveryVoice#183 and
  aws/sagemaker-python-sdk#1040: a preempted training restarted from scratch). The stack says nothing of
  checkpointing, so the rule judges what it does say: the Kubeflow training pool's label on a class with no rung
  other than spot.
- A flex-start run limit shorter than the run the stack gives a queued job: GKE deletes a flex-start node at its
  maxRunDuration, so a job Kueue admits on that rung is cut there, and again on every retry on the same rung
  (broadinstitute/cromwell#4600: tasks killed at a preemptible VM's 24-hour limit were restarted on the same kind
  of VM and killed again).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import Field

from gpu_platform.components.core.durations import go_duration_ns
from gpu_platform.components.core.labels import CLASS_LABEL, KARPENTER_CAPACITY_LABEL
from gpu_platform.components.kubeflow.args import TrainingPoolSelector
from gpu_platform.policies.rules.base import EKS_NODE_GROUP, GKE_NODE_POOL, Resource, ResourceRule, RuleConfig, StackRule, is_gpu_node_pool
from gpu_platform.policies.rules.gpu import COMPUTE_CLASS, _eks_priorities, _eks_priority
from gpu_platform.policies.rules.karpenter import KARPENTER_NODE_POOL, launches_gpus

__all__ = ["PROVISIONING_REQUEST_CONFIG", "RULES"]

PROVISIONING_REQUEST_CONFIG = "kubernetes:kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
_TRAINING = TrainingPoolSelector()
"""The Kubeflow training pool's default selector (KubeflowInstallArgs.training_pool)."""


class TrainingLabelConfig(RuleConfig):
    trainingLabel: str = Field(default=f"{_TRAINING.label_key}={_TRAINING.label_value}", pattern=r"^[^=]+=[^=]*$")  # noqa: N815
    """The node label, key=value, of the pools that run long training (KubeflowInstall's training_pool selector). Default: gpu-platform.io/workload=training."""


def _node(r: Resource) -> Mapping[str, Any]:
    return r.props.get("nodeConfig") or {}


def _gke_kind(r: Resource) -> str:
    """What a GKE node pool buys, as its inputs say: reservation(<name>), reservation(any), flex_start, spot or on_demand."""
    node = _node(r)
    affinity = node.get("reservationAffinity") or {}
    if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION":
        return f"reservation({', '.join(affinity.get('values') or [])})"
    if affinity.get("consumeReservationType") == "ANY_RESERVATION":
        return "reservation(any)"
    if node.get("flexStart"):
        return "flex_start"
    return "spot" if node.get("spot") else "on_demand"


def _gke_pools(resources: list[Resource]) -> dict[str, Resource]:
    return {str(r.props.get("name")): r for r in resources if r.type == GKE_NODE_POOL}


def _classes(resources: list[Resource]) -> Iterator[tuple[str, list[str]]]:
    """Each ComputeClass: its name and its node pools in priority order."""
    for r in resources:
        if r.type == COMPUTE_CLASS:
            order = [p for entry in ((r.props.get("spec") or {}).get("priorities") or []) for p in entry.get("nodepools") or []]
            yield str((r.props.get("metadata") or {}).get("name") or r.name), order


def check_reservation_first(resources: list[Resource], config: RuleConfig) -> Iterator[tuple[str, str]]:
    pools = _gke_pools(resources)
    for name, order in _classes(resources):
        first_bought: str | None = None
        for position, pool_name in enumerate(order):
            pool = pools.get(pool_name)
            if pool is None:
                continue
            kind = _gke_kind(pool)
            named = kind.startswith("reservation(") and kind != "reservation(any)"
            if named and first_bought is not None:
                yield (
                    pool.name,
                    f"ComputeClass {name} tries node pool {pool_name} ({kind}) at priority {position + 1}, after {first_bought}; "
                    "a named reservation is paid for whether used or not: make it capacity_ladder's first rung",
                )
            elif not named and first_bought is None:
                first_bought = f"{pool_name} ({kind})"
    # EKS managed node groups: a class's group on a named reservation (a capacity block, or a launch template targeting a
    # reservation by id) must have a higher priority in the priority expander than each of its class's groups bought per use.
    templates = {r.name: r.props for r in resources if r.type == LAUNCH_TEMPLATE}
    classes: dict[str, list[tuple[Resource, str | None]]] = {}
    for r in resources:
        if r.type == EKS_NODE_GROUP and is_gpu_node_pool(r) and (cls := (r.props.get("labels") or {}).get(CLASS_LABEL)):
            template = templates.get(f"{r.name}-launch-template") or {}
            target = ((template.get("capacityReservationSpecification") or {}).get("capacityReservationTarget") or {}).get("capacityReservationId")
            classes.setdefault(str(cls), []).append((r, str(target) if target else None))
    for expander in _eks_priorities(resources):
        for cls, groups in classes.items():
            ranked = [(r, reservation, _eks_priority(expander, str(r.props.get("nodeGroupName")))) for r, reservation in groups]
            bought = [(r, p) for r, reservation, p in ranked if reservation is None and r.props.get("capacityType") != "CAPACITY_BLOCK" and p is not None]
            for r, reservation, p in ranked:
                if p is None or (reservation is None and r.props.get("capacityType") != "CAPACITY_BLOCK"):
                    continue
                above = [f"{o.props.get('nodeGroupName')} (priority {q})" for o, q in bought if q >= p]
                if above:
                    yield (
                        r.name,
                        f"class {cls}'s node group {r.props.get('nodeGroupName')} (reservation {reservation or 'capacity block'}) has "
                        f"priority {p}, not above {above[0]} in the priority expander; a reservation is paid for whether used or "
                        "not: make it capacity_ladder's first rung",
                    )
    # Karpenter: a class's NodePool of the reserved capacity type must weigh more than each of its other NodePools.
    by_class: dict[str, list[tuple[Resource, list[str], int]]] = {}
    for r in resources:
        if r.type == KARPENTER_NODE_POOL and launches_gpus(r):
            spec = r.props.get("spec") or {}
            template = spec.get("template") or {}
            cls = ((template.get("metadata") or {}).get("labels") or {}).get(CLASS_LABEL)
            capacity = next(
                (list(q.get("values") or []) for q in (template.get("spec") or {}).get("requirements") or [] if q.get("key") == KARPENTER_CAPACITY_LABEL), []
            )
            if cls is not None:
                by_class.setdefault(str(cls), []).append((r, capacity, int(spec.get("weight") or 0)))
    for cls, tiers in by_class.items():
        for r, capacity, weight in tiers:
            if capacity != ["reserved"]:
                continue
            above = [f"{o.name} ({', '.join(c)}, weight {w})" for o, c, w in tiers if "reserved" not in c and w >= weight]
            if above:
                yield (
                    r.name,
                    f"class {cls}'s reserved NodePool {r.name} has weight {weight}, not above {above[0]}; "
                    "a reservation is paid for whether used or not: make it capacity_ladder's first rung",
                )


def _labelled(r: Resource, key: str, value: str) -> bool:
    if r.type == GKE_NODE_POOL:
        labels = _node(r).get("labels") or {}
    elif r.type == EKS_NODE_GROUP:
        labels = r.props.get("labels") or {}
    else:
        labels = (((r.props.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
    return isinstance(labels, Mapping) and labels.get(key) == value


def _spot(r: Resource) -> bool:
    if r.type == GKE_NODE_POOL:
        return _gke_kind(r) == "spot"
    if r.type == EKS_NODE_GROUP:
        return r.props.get("capacityType") == "SPOT"
    template = ((r.props.get("spec") or {}).get("template") or {}).get("spec") or {}
    return next((list(q.get("values") or []) for q in template.get("requirements") or [] if q.get("key") == KARPENTER_CAPACITY_LABEL), []) == ["spot"]


def check_training_not_spot_only(resources: list[Resource], config: TrainingLabelConfig) -> Iterator[tuple[str, str]]:
    key, _, value = config.trainingLabel.partition("=")
    training = [r for r in resources if (is_gpu_node_pool(r) or (r.type == KARPENTER_NODE_POOL and launches_gpus(r))) and _labelled(r, key, value)]
    # A class: a GKE ComputeClass's node pools, or the node groups and NodePools that carry one gpu-class label; a pool alone otherwise.
    members: dict[str, list[Resource]] = {}
    in_class = {pool: name for name, order in _classes(resources) for pool in order}
    for r in training:
        if r.type == GKE_NODE_POOL:
            pool_name = str(r.props.get("name"))
            group = f"ComputeClass {in_class[pool_name]}" if pool_name in in_class else f"node pool {pool_name}"
        else:
            cls = (r.props.get("labels") or {}).get(CLASS_LABEL) if r.type == EKS_NODE_GROUP else None
            if r.type == KARPENTER_NODE_POOL:
                cls = ((((r.props.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}).get(CLASS_LABEL)
            group = f"class {cls}" if cls else r.name
        members.setdefault(group, []).append(r)
    for group, rs in members.items():
        if all(_spot(r) for r in rs):
            yield (
                rs[0].name,
                f"{group} runs training ({config.trainingLabel}) on spot capacity only; a reclaimed step restarts from its "
                "beginning unless it checkpoints: add a capacity_ladder rung that is not spot (on_demand, reservation or flex_start)",
            )


def _seconds(value: object) -> int | None:
    text = str(value or "")
    if text.endswith("s") and text[:-1].isdigit():
        return int(text[:-1])
    if text.isdigit():
        return int(text)
    try:
        return go_duration_ns(text) // 1_000_000_000
    except ValueError:
        return None


def check_flex_start_run_limit(resources: list[Resource], config: RuleConfig) -> Iterator[tuple[str, str]]:
    queued = [
        (r, s)
        for r in resources
        if r.type == PROVISIONING_REQUEST_CONFIG
        and (s := _seconds((((r.props.get("spec") or {}).get("parameters")) or {}).get("maxRunDurationSeconds"))) is not None
    ]
    if not queued:
        return
    config_resource, longest = max(queued, key=lambda q: q[1])
    name = str((config_resource.props.get("metadata") or {}).get("name") or config_resource.name)
    for r in resources:
        if r.type != GKE_NODE_POOL or not _node(r).get("flexStart"):
            continue
        limit = _seconds(_node(r).get("maxRunDuration")) or 604800  # GKE's seven days when unset
        if limit < longest:
            yield (
                r.name,
                f"flex-start node pool {r.props.get('name')} runs its nodes at most {limit}s, shorter than the {longest}s the "
                f"ProvisioningRequestConfig {name} gives a queued job (queues.queued_provisioning_max_run_seconds); a job "
                f"admitted on this rung is cut at {limit}s: raise its max_run_duration to at least {longest}s",
            )


RULES: list[ResourceRule | StackRule] = [
    StackRule(
        "reservation-rung-first",
        "A named reservation is the first rung of its ladder: tried before any capacity bought per use (GKE ComputeClass "
        "priorities, the EKS priority expander's tiers, Karpenter NodePool weights), since it is paid for whether used or not (karpenter-provider-gcp#239, "
        "Azure/karpenter-provider-azure#1834).",
        "Put the reservation rung first in capacity_ladder.",
        check_reservation_first,
    ),
    StackRule(
        "training-not-spot-only",
        "A pool or class that runs training (the Kubeflow training pool's label) has a rung that is not spot: the stack "
        "declares no checkpointing, and a reclaimed step restarts from its beginning (mozilla/translations#315, "
        "EveryVoiceTTS/EveryVoice#183, aws/sagemaker-python-sdk#1040).",
        "Add an on_demand, reservation or flex_start rung after spot (capacity spot_then_on_demand, or capacity_ladder).",
        check_training_not_spot_only,
        TrainingLabelConfig,
    ),
    StackRule(
        "flex-start-run-limit",
        "A flex-start node pool runs its nodes at least as long as the run the stack gives a queued job (the Kueue "
        "ProvisioningRequestConfig's maxRunDurationSeconds): GKE deletes a flex-start node at its run limit, cutting "
        "the job, and again on each retry (broadinstitute/cromwell#4600).",
        "Raise the flex_start rung's max_run_duration, or lower queues.queued_provisioning_max_run_seconds.",
        check_flex_start_run_limit,
    ),
]
