"""The capacity ladder (components/pools/ladders.py): rungs and their options, the named ladders the capacity
strategies are, and what GKE refuses, one line per problem."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpu_platform.components.pools.ladders import (
    CapacityRung,
    CapacityStrategy,
    RungKind,
    gke_ladder_problems,
    ladder_text,
    named_ladder,
    rung_slugs,
    strategy_of,
)
from tests.conftest import refused

SPOT = CapacityRung(kind=RungKind.SPOT)
ON_DEMAND = CapacityRung(kind=RungKind.ON_DEMAND)
FLEX = CapacityRung(kind=RungKind.FLEX_START)
ANY_RESERVATION = CapacityRung(kind=RungKind.RESERVATION)
RES_A = CapacityRung(kind=RungKind.RESERVATION, reservation="res-a")


def test_the_strategies_are_named_ladders() -> None:
    assert named_ladder(CapacityStrategy.ON_DEMAND) == (ON_DEMAND,)
    assert named_ladder(CapacityStrategy.SPOT) == (SPOT,)
    assert named_ladder(CapacityStrategy.SPOT_THEN_ON_DEMAND) == (SPOT, ON_DEMAND)
    for strategy in CapacityStrategy:
        assert strategy_of(named_ladder(strategy)) is strategy


def test_the_nearest_strategy_of_a_stated_ladder() -> None:
    assert strategy_of([RES_A, FLEX, ON_DEMAND]) is CapacityStrategy.ON_DEMAND
    assert strategy_of([RES_A, SPOT, ON_DEMAND]) is CapacityStrategy.SPOT_THEN_ON_DEMAND


def test_a_rung_is_named_in_one_line() -> None:
    ladder = [RES_A, CapacityRung(kind=RungKind.FLEX_START, max_run_duration="24h"), SPOT, ON_DEMAND, ANY_RESERVATION]
    assert ladder_text(ladder) == "reservation(res-a) -> flex_start(24h) -> spot -> on_demand -> reservation(any)"
    assert str(FLEX) == "flex_start(168h)"


def test_flex_start_runs_seven_days_unless_told() -> None:
    assert FLEX.run_seconds == 604800
    assert CapacityRung(kind=RungKind.FLEX_START, max_run_duration="1h30m").run_seconds == 5400
    assert SPOT.run_seconds is None


def test_only_an_unnamed_reservation_never_fails_over() -> None:
    assert not ANY_RESERVATION.fails_over
    assert all(r.fails_over for r in (RES_A, FLEX, SPOT, ON_DEMAND))


def test_each_rung_gets_its_own_node_pool_suffix() -> None:
    res_b = CapacityRung(kind=RungKind.RESERVATION, reservation="res-b")
    assert rung_slugs([RES_A, res_b, FLEX, SPOT, ON_DEMAND]) == ["reserved", "reserved2", "flex", "spot", "on-demand"]
    assert max(len(s) for s in rung_slugs([RES_A, res_b, FLEX, SPOT, ON_DEMAND])) <= 9


def test_fails_when_a_reservation_is_given_to_spot() -> None:
    assert refused(CapacityRung, {"kind": "spot", "reservation": "res-a"}) == [
        'reservation: reservation applies to kind reservation or capacity_block (got kind spot); remove it (got "res-a")'
    ]


def test_fails_when_a_capacity_block_names_no_reservation() -> None:
    lines = refused(CapacityRung, {"kind": "capacity_block"})
    assert lines == ["reservation: a capacity_block rung needs reservation: the capacity block's reservation id (got null)"]


def test_fails_when_a_run_limit_is_given_to_on_demand() -> None:
    lines = refused(CapacityRung, {"kind": "on_demand", "max_run_duration": "24h"})
    assert lines == ['max_run_duration: max_run_duration applies to kind flex_start only (got kind on_demand); remove it (got "24h")']


@pytest.mark.parametrize("duration", ["169h", "0s", "1.5s"])
def test_fails_when_the_flex_start_run_limit_is_not_offered(duration: str) -> None:
    lines = refused(CapacityRung, {"kind": "flex_start", "max_run_duration": duration})
    assert lines == [f'max_run_duration: max_run_duration {duration} is not offered: GKE takes whole seconds from 1s to 168h (seven days) (got "{duration}")']


def test_fails_when_the_kind_is_unknown() -> None:
    with pytest.raises(ValidationError, match="kind"):
        CapacityRung.model_validate({"kind": "preemptible"})


def test_gke_refuses_a_capacity_block() -> None:
    block = CapacityRung(kind=RungKind.CAPACITY_BLOCK, reservation="cr-0123456789abcdef0")
    assert gke_ladder_problems([block, ON_DEMAND]) == [
        ((0, "kind"), "capacity_block is offered on EKS only (EC2 capacity blocks); on GKE use reservation, flex_start, spot or on_demand", "capacity_block")
    ]


def test_gke_refuses_a_rung_after_one_that_never_fails_over() -> None:
    assert gke_ladder_problems([ANY_RESERVATION, SPOT, ON_DEMAND]) == [
        (
            (1,),
            "rung spot comes after reservation(any), which never fails over (it takes on-demand capacity when no reservation is free); "
            "end the ladder there or name the reservation",
            "spot",
        )
    ]
    assert gke_ladder_problems([RES_A, SPOT, ON_DEMAND, ANY_RESERVATION]) == []


def test_gke_refuses_a_rung_listed_twice() -> None:
    assert gke_ladder_problems([SPOT, ON_DEMAND, SPOT]) == [((2,), "rung spot is already rung 0 of the ladder; list each rung once", "spot")]
    assert gke_ladder_problems([RES_A, CapacityRung(kind=RungKind.RESERVATION, reservation="res-b")]) == []


def test_gke_refuses_a_reservation_that_is_no_compute_engine_name() -> None:
    bad = CapacityRung(kind=RungKind.RESERVATION, reservation="Res_A")
    shared = CapacityRung(kind=RungKind.RESERVATION, reservation="projects/other-project/reservations/res-a")
    assert [loc for loc, _, _ in gke_ladder_problems([bad, ON_DEMAND])] == [(0, "reservation")]
    assert gke_ladder_problems([shared, ON_DEMAND]) == []


def test_gke_reports_every_problem_of_a_ladder_at_once() -> None:
    block = CapacityRung(kind=RungKind.CAPACITY_BLOCK, reservation="cr-0123456789abcdef0")
    problems = gke_ladder_problems([block, ANY_RESERVATION, ON_DEMAND, ON_DEMAND])
    assert [loc for loc, _, _ in problems] == [(0, "kind"), (2,), (3,)]
