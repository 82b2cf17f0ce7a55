"""A GKE pool's capacity ladder, rendered alike in every layer GpuGkeCluster declares (issue 38 item 2, GKE's
part): the node pools, each buying its rung, and the ComputeClass's priorities, read back from what the
recording engine saw and checked against the ladder's order and the plan's shape (which Kueue, plan-capacity
and simulate read)."""

from __future__ import annotations

from typing import Any

import pulumi

from gpu_platform.components import GpuGkeCluster, GpuGkeClusterArgs
from gpu_platform.components.pools.ladders import CapacityRung, RungKind
from tests.components.gke.test_cluster import wait
from tests.components.gke.test_resources import compute_class, validate
from tests.conftest import Engine
from tests.factories import a100_pool, gke, t4_pool

LADDER = [
    {"kind": "reservation", "reservation": "a100-training"},
    {"kind": "flex_start", "max_run_duration": "24h"},
    {"kind": "spot"},
    {"kind": "on_demand"},
]


def _ladder_pool(**overrides: Any) -> dict[str, Any]:
    pool = a100_pool(capacity_ladder=LADDER, fallback_max_nodes=4, **overrides)
    del pool["capacity"]
    return pool


def rung_of(node_pool: dict[str, Any]) -> CapacityRung:
    """The rung a rendered node pool buys, read from its engine inputs alone."""
    node = node_pool["nodeConfig"]
    affinity = node.get("reservationAffinity") or {}
    if node.get("flexStart"):
        seconds = int(node["maxRunDuration"].removesuffix("s"))
        assert affinity == {"consumeReservationType": "NO_RESERVATION"}
        return CapacityRung(kind=RungKind.FLEX_START, max_run_duration=f"{seconds // 3600}h")
    if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION":
        assert affinity["key"] == "compute.googleapis.com/reservation-name"
        (name,) = affinity["values"]
        return CapacityRung(kind=RungKind.RESERVATION, reservation=name)
    if affinity.get("consumeReservationType") == "ANY_RESERVATION":
        return CapacityRung(kind=RungKind.RESERVATION)
    return CapacityRung(kind=RungKind.SPOT if node["spot"] else RungKind.ON_DEMAND)


@pulumi.runtime.test
def test_every_layer_lists_the_ladder_in_its_order(engine: Engine) -> pulumi.Output[Any]:
    cluster = GpuGkeCluster("ml", GpuGkeClusterArgs.model_validate(gke(gpu_pools=[t4_pool(), _ladder_pool()])))
    ladder = [CapacityRung.model_validate(r) for r in LADDER]

    def check(_: Any) -> None:
        spec = engine.resource("ml-a100-compute-class").inputs["spec"]
        ordered = [entry["nodepools"] for entry in spec["priorities"]]
        assert all(len(names) == 1 and set(entry) == {"nodepools"} for names, entry in zip(ordered, spec["priorities"], strict=True))
        pools = {r.inputs["name"]: r.inputs for r in engine.of_type("gcp:container/nodePool:NodePool")}
        # The ComputeClass's priorities, each read as the rung its node pool buys: the ladder, in order.
        assert [rung_of(pools[names[0]]) for names in ordered] == ladder
        # One node pool per rung, each named after its rung, and the plan's shape (what Kueue, plan-capacity and
        # simulate read) holds the same ladder.
        declared = [names[0] for names in ordered]
        assert declared == ["a100-reserved", "a100-flex", "a100-spot", "a100-on-demand"]
        assert sorted(n for n in pools if n.startswith("a100-")) == sorted(declared)
        (shape,) = [s for s in cluster.pool_shapes() if s.name == "a100"]
        assert list(shape.rungs) == ladder
        # Every node pool of the class carries its label and taint; only the first keeps the pool's bounds.
        for name in declared:
            assert pools[name]["nodeConfig"]["labels"]["cloud.google.com/compute-class"] == "a100"
        assert [pools[n]["autoscaling"]["totalMaxNodeCount"] for n in declared] == [8, 4, 4, 4]

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_each_rung_node_pool_buys_its_capacity(engine: Engine) -> pulumi.Output[Any]:
    cluster = GpuGkeCluster("ml", GpuGkeClusterArgs.model_validate(gke(gpu_pools=[t4_pool(), _ladder_pool()])))

    def check(_: Any) -> None:
        reserved, flex, spot, on_demand = (engine.resource(f"ml-a100-{n}").inputs for n in ("reserved", "flex", "spot", "on-demand"))
        assert reserved["nodeConfig"]["reservationAffinity"] == {
            "consumeReservationType": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": ["a100-training"],
        }
        assert reserved["nodeConfig"]["spot"] is False and "flexStart" not in reserved["nodeConfig"]
        assert (flex["nodeConfig"]["flexStart"], flex["nodeConfig"]["maxRunDuration"]) == (True, "86400s")
        assert flex["management"] == {"autoRepair": False, "autoUpgrade": True}
        assert flex["autoscaling"]["locationPolicy"] == "ANY"
        assert spot["nodeConfig"]["spot"] is True and "reservationAffinity" not in spot["nodeConfig"]
        assert on_demand["nodeConfig"]["spot"] is False and "reservationAffinity" not in on_demand["nodeConfig"]
        assert on_demand["management"] == {"autoRepair": True, "autoUpgrade": True}

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_a_one_rung_any_reservation_pool_consumes_any_reservation(engine: Engine) -> pulumi.Output[Any]:
    cluster = GpuGkeCluster("ml", GpuGkeClusterArgs.model_validate(gke(gpu_pools=[t4_pool(capacity_ladder=[{"kind": "reservation"}])])))

    def check(_: Any) -> None:
        t4 = engine.resource("ml-t4").inputs
        assert t4["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "ANY_RESERVATION"}
        assert not engine.of_type("kubernetes:cloud.google.com/v1:ComputeClass")

    return wait(cluster).apply(check)


@pulumi.runtime.test
def test_the_ladder_compute_class_matches_the_crd_schema(engine: Engine) -> pulumi.Output[Any]:
    cluster = GpuGkeCluster("ml", GpuGkeClusterArgs.model_validate(gke(gpu_pools=[t4_pool(), _ladder_pool(migrate_back_to_spot=True)])))

    def check(_: Any) -> None:
        spec = engine.resource("ml-a100-compute-class").inputs["spec"]
        assert spec["activeMigration"] == {"optimizeRulePriority": True}
        assert [r["errors"] for r in validate([compute_class(spec)])] == [[]]

    return wait(cluster).apply(check)
