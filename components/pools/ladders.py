"""The capacity ladder: the one home of how a GPU pool buys its nodes, rung by rung.

A ladder is an ordered list of rungs, each one kind of capacity: a reservation (a named one, or
any), an EKS capacity block, on-demand, GKE flex-start (with its run limit) or spot. The
autoscaler tries the first rung and falls back to the next when it gets no node there. The
capacity strategies (``on_demand``, ``spot``, ``spot_then_on_demand``) are named ladders
(``named_ladder``), so a pool that names a strategy plans exactly as it always did.

What a cloud does not offer is refused here, one line naming the rung and what is allowed
(``gke_ladder_problems``, ``eks_ladder_problems``); the GKE plan (``components/gke/plan.py``) makes one node
pool per rung and its ComputeClass lists them in the ladder's order; the EKS plan (``components/eks/plan.py``)
one managed node group per rung, ranked by the priority expander in the ladder's order, and Karpenter's plan
(``components/karpenter/plan.py``) one NodePool per rung, weighted in that order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, Field, model_validator

from gpu_platform.components.core.durations import GoDuration, go_duration_ns
from gpu_platform.components.core.models import ARGS_CONFIG, field_error

__all__ = [
    "FLEX_START_MAX_RUN",
    "CapacityRung",
    "CapacityStrategy",
    "RungKind",
    "eks_ladder_problems",
    "eks_provisioner_ladder_problems",
    "gke_ladder_problems",
    "ladder_text",
    "named_ladder",
    "rung_slugs",
    "strategy_of",
]

FLEX_START_MAX_RUN = "168h"
"""The longest a GKE flex-start VM runs: seven days (GKE's flex-start concept page), 604800s."""
_FLEX_START_MAX_NS = go_duration_ns(FLEX_START_MAX_RUN)

_GCE_RESERVATION = re.compile(r"^(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
"""A Compute Engine reservation: its name, or projects/<project>/reservations/<name> for one shared from another project."""


class CapacityStrategy(StrEnum):
    """How a GPU pool buys capacity, as a named ladder (``named_ladder``)."""

    ON_DEMAND = "on_demand"
    """Only on-demand (standard) VMs."""
    SPOT = "spot"
    """Only spot VMs: cheapest, may be reclaimed, may be unavailable."""
    SPOT_THEN_ON_DEMAND = "spot_then_on_demand"
    """A spot pool and an on-demand twin; the autoscaler tries spot first and falls back."""


class RungKind(StrEnum):
    """One kind of capacity a ladder's rung buys."""

    RESERVATION = "reservation"
    """Reserved capacity: a named reservation, or any matching one (GKE ``reservation_affinity``)."""
    CAPACITY_BLOCK = "capacity_block"
    """An EC2 capacity block for ML (EKS managed node groups' CAPACITY_BLOCK capacity type); not offered on GKE."""
    ON_DEMAND = "on_demand"
    """On-demand (standard) VMs."""
    FLEX_START = "flex_start"
    """GKE flex-start VMs (Dynamic Workload Scheduler without queueing): obtained when capacity frees up, run at most seven days; not offered on EKS."""
    SPOT = "spot"
    """Spot VMs: cheapest, may be reclaimed, may be unavailable."""


class CapacityRung(BaseModel):
    """One rung of a capacity ladder: a kind of capacity, with the options its cloud allows."""

    model_config = ARGS_CONFIG

    kind: RungKind
    """reservation, capacity_block, on_demand, flex_start or spot. Required."""
    reservation: str | None = Field(default=None, min_length=1, max_length=160)
    """reservation and capacity_block only: the reservation to consume (on GKE a Compute Engine reservation name, or projects/<project>/reservations/<name> for a shared one; on EKS the capacity reservation's or capacity block's id, cr-...). A reservation rung without one takes any matching (on EKS: open) reservation and otherwise on-demand capacity, so it never fails over and must be the ladder's last rung. Default: none (any matching reservation)."""
    max_run_duration: GoDuration | None = None
    """flex_start only: how long each node runs before GKE deletes it, a Go duration of at most 168h (GKE's seven days). Default: none (168h)."""

    @model_validator(mode="after")
    def _options_of_kind(self) -> CapacityRung:
        if self.reservation is not None and self.kind not in (RungKind.RESERVATION, RungKind.CAPACITY_BLOCK):
            raise field_error(
                "CapacityRung",
                "reservation",
                f"reservation applies to kind reservation or capacity_block (got kind {self.kind.value}); remove it",
                self.reservation,
            )
        if self.kind is RungKind.CAPACITY_BLOCK and self.reservation is None:
            raise field_error(
                "CapacityRung",
                "reservation",
                "a capacity_block rung needs reservation: the capacity block's reservation id",
                None,
            )
        if self.max_run_duration is not None:
            if self.kind is not RungKind.FLEX_START:
                raise field_error(
                    "CapacityRung",
                    "max_run_duration",
                    f"max_run_duration applies to kind flex_start only (got kind {self.kind.value}); remove it",
                    self.max_run_duration,
                )
            ns = go_duration_ns(self.max_run_duration)
            if ns < 1_000_000_000 or ns > _FLEX_START_MAX_NS or ns % 1_000_000_000:
                raise field_error(
                    "CapacityRung",
                    "max_run_duration",
                    f"max_run_duration {self.max_run_duration} is not offered: GKE takes whole seconds from 1s to {FLEX_START_MAX_RUN} (seven days)",
                    self.max_run_duration,
                )
        return self

    @property
    def fails_over(self) -> bool:
        """Whether the autoscaler moves on to the next rung when this one has no capacity: every rung but a
        reservation rung without a name, which takes on-demand capacity when no reservation is free (GKE's
        ANY_RESERVATION: "with a fallback to on-demand capacity")."""
        return not (self.kind is RungKind.RESERVATION and self.reservation is None)

    @property
    def run_seconds(self) -> int | None:
        """flex_start: the nodes' run limit in whole seconds (168h when unset); None for other kinds."""
        if self.kind is not RungKind.FLEX_START:
            return None
        return go_duration_ns(self.max_run_duration or FLEX_START_MAX_RUN) // 1_000_000_000

    def __str__(self) -> str:
        """The rung as messages and docs name it: spot, on_demand, reservation(any), reservation(res-a), flex_start(168h)."""
        if self.kind in (RungKind.RESERVATION, RungKind.CAPACITY_BLOCK):
            return f"{self.kind.value}({self.reservation or 'any'})"
        if self.kind is RungKind.FLEX_START:
            return f"flex_start({self.max_run_duration or FLEX_START_MAX_RUN})"
        return self.kind.value


_NAMED: dict[CapacityStrategy, tuple[CapacityRung, ...]] = {
    CapacityStrategy.ON_DEMAND: (CapacityRung(kind=RungKind.ON_DEMAND),),
    CapacityStrategy.SPOT: (CapacityRung(kind=RungKind.SPOT),),
    CapacityStrategy.SPOT_THEN_ON_DEMAND: (CapacityRung(kind=RungKind.SPOT), CapacityRung(kind=RungKind.ON_DEMAND)),
}


def named_ladder(strategy: CapacityStrategy) -> tuple[CapacityRung, ...]:
    """The ladder a capacity strategy names: on_demand [on_demand], spot [spot], spot_then_on_demand [spot, on_demand]."""
    return _NAMED[strategy]


def strategy_of(ladder: Sequence[CapacityRung]) -> CapacityStrategy:
    """The capacity strategy nearest ``ladder``, for readers that know only strategies: the one that names it,
    else spot when every rung is spot, on_demand when none is, spot_then_on_demand otherwise."""
    for strategy, named in _NAMED.items():
        if tuple(ladder) == named:
            return strategy
    spot = [r.kind is RungKind.SPOT for r in ladder]
    if all(spot):
        return CapacityStrategy.SPOT
    if not any(spot):
        return CapacityStrategy.ON_DEMAND
    return CapacityStrategy.SPOT_THEN_ON_DEMAND


def ladder_text(ladder: Sequence[CapacityRung]) -> str:
    """``spot -> on_demand``: a ladder in one line."""
    return " -> ".join(str(r) for r in ladder)


_SLUG = {
    RungKind.RESERVATION: "reserved",
    RungKind.CAPACITY_BLOCK: "block",
    RungKind.ON_DEMAND: "on-demand",
    RungKind.FLEX_START: "flex",
    RungKind.SPOT: "spot",
}


def rung_slugs(ladder: Sequence[CapacityRung]) -> list[str]:
    """Each rung's suffix of its node pool's name (``<pool>-<suffix>``), at most 10 characters: spot, on-demand,
    flex, reserved (reserved2, reserved3 for further named reservations)."""
    slugs: list[str] = []
    for rung in ladder:
        slug = _SLUG[rung.kind]
        repeat = sum(1 for s in slugs if s.rstrip("0123456789") == slug)
        slugs.append(slug if repeat == 0 else f"{slug}{repeat + 1}")
    return slugs


def _rung_key(rung: CapacityRung) -> tuple[RungKind, str | None]:
    """What makes two rungs the same: the kind, and the reservation for reservation rungs."""
    return (rung.kind, rung.reservation if rung.kind in (RungKind.RESERVATION, RungKind.CAPACITY_BLOCK) else None)


def _order_problems(ladder: Sequence[CapacityRung]) -> list[tuple[tuple[str | int, ...], str, object]]:
    """What no ladder may do, on any cloud: list a rung twice, or put a rung after one that never fails over."""
    problems: list[tuple[tuple[str | int, ...], str, object]] = []
    seen: dict[tuple[RungKind, str | None], int] = {}
    for i, rung in enumerate(ladder):
        key = _rung_key(rung)
        if key in seen:
            problems.append(((i,), f"rung {rung} is already rung {seen[key]} of the ladder; list each rung once", str(rung)))
        seen.setdefault(key, i)
        if i > 0 and not ladder[i - 1].fails_over:
            problems.append(
                (
                    (i,),
                    f"rung {rung} comes after {ladder[i - 1]}, which never fails over (it takes on-demand capacity when no "
                    "reservation is free); end the ladder there or name the reservation",
                    str(rung),
                )
            )
    return problems


_EKS_RESERVATION = re.compile(r"^cr-[0-9a-f]{8}([0-9a-f]{9})?$")
"""An EC2 capacity reservation id (an On-Demand Capacity Reservation's or a capacity block's): cr- and 8 or 17 hex digits."""

_EKS_ALLOWED = "on EKS use reservation, capacity_block, spot or on_demand"
"""What an EKS class's rungs may be."""


def eks_ladder_problems(ladder: Sequence[CapacityRung]) -> list[tuple[tuple[str | int, ...], str, object]]:
    """What an EKS class's ladder asks that EKS does not offer, or what no ladder may do: (location under the ladder,
    the one-line message, the value) per problem, in rung order. Flex-start is GKE's; a reservation or capacity
    block is named by its EC2 id (cr-...); a reservation rung without one takes any open reservation and otherwise
    on-demand capacity, so it ends the ladder. Both provisioners render every order of reservation,
    capacity_block, spot and on_demand: the priority expander's tiers and the NodePools' weights are the ladder's
    order, whatever it is (what one provisioner alone refuses is ``eks_provisioner_ladder_problems``)."""
    problems: list[tuple[tuple[str | int, ...], str, object]] = []
    for i, rung in enumerate(ladder):
        if rung.kind is RungKind.FLEX_START:
            problems.append(((i, "kind"), f"flex_start is offered on GKE only (Dynamic Workload Scheduler); {_EKS_ALLOWED}", rung.kind.value))
        if rung.reservation is not None and not _EKS_RESERVATION.match(rung.reservation):
            problems.append(
                (
                    (i, "reservation"),
                    f"reservation {rung.reservation} is not an EC2 capacity reservation id: cr- and 17 (or 8) lowercase hex digits, "
                    "as DescribeCapacityReservations lists it",
                    rung.reservation,
                )
            )
    return sorted([*problems, *_order_problems(ladder)], key=lambda problem: problem[0][0] if problem[0] else -1)


def eks_provisioner_ladder_problems(
    ladder: Sequence[CapacityRung], instance_types: Sequence[str], *, karpenter: bool
) -> list[tuple[tuple[str | int, ...], str, object]]:
    """What one EKS provisioner cannot render of a ladder EKS accepts (``eks_ladder_problems``): (location under the
    ladder, message, value). A managed node group that targets a reservation or capacity block launches only the
    reservation's one instance type (a capacity block's launch template names it: EKS's "Create a managed node
    group with Capacity Blocks for ML"), so such a rung needs a class of one instance type; Karpenter picks the
    reservation's type among the class's, so it takes any."""
    if karpenter or len(instance_types) == 1:
        return []
    return [
        (
            (i, "reservation"),
            f"{rung} holds one instance type and a managed node group targeting it launches only that type, but the class "
            f"lists {len(instance_types)} ({', '.join(instance_types)}): list the reservation's one instance type, or use provisioner karpenter",
            rung.reservation,
        )
        for i, rung in enumerate(ladder)
        if rung.reservation is not None
    ]


def gke_ladder_problems(ladder: Sequence[CapacityRung]) -> list[tuple[tuple[str | int, ...], str, object]]:
    """What GKE does not offer in ``ladder``, or what no ladder may do: (location under the ladder, the one-line
    message, the value) per problem, in rung order."""
    problems: list[tuple[tuple[str | int, ...], str, object]] = []
    for i, rung in enumerate(ladder):
        if rung.kind is RungKind.CAPACITY_BLOCK:
            problems.append(
                (
                    (i, "kind"),
                    "capacity_block is offered on EKS only (EC2 capacity blocks); on GKE use reservation, flex_start, spot or on_demand",
                    rung.kind.value,
                )
            )
        if rung.kind is RungKind.RESERVATION and rung.reservation is not None and not _GCE_RESERVATION.match(rung.reservation):
            problems.append(
                (
                    (i, "reservation"),
                    f"reservation {rung.reservation} is not a Compute Engine reservation: a name (lowercase letters, digits and '-', "
                    "starting with a letter) or projects/<project>/reservations/<name>",
                    rung.reservation,
                )
            )
    # Each rung's problems together, in rung order: what GKE does not offer, then what no ladder may do.
    return sorted([*problems, *_order_problems(ladder)], key=lambda problem: problem[0][0] if problem[0] else -1)
