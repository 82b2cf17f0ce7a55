"""The policy pack counts a GKE pool's zones as the plan does (gke_plan.pool_zones): a zonal cluster's pool
without node locations is one zone, not GKE's regional three."""

from __future__ import annotations

import pytest

from gpu_platform.policies.rules.base import GKE_NODE_POOL, Resource, gpu_pool_gpus


def _pool(location: str | None, node_locations: list[str] | None = None) -> Resource:
    props = {
        "autoscaling": {"minNodeCount": 0, "maxNodeCount": 20},
        "nodeConfig": {"guestAccelerators": [{"type": "nvidia-tesla-t4", "count": 2}]},
    }
    if location is not None:
        props["location"] = location
    if node_locations is not None:
        props["nodeLocations"] = node_locations
    return Resource(GKE_NODE_POOL, "t4", "urn:pulumi:dev::p::gcp:container/nodePool:NodePool::t4", props)


@pytest.mark.parametrize(
    ("location", "cluster", "own", "zones"),
    [
        ("us-central1-a", [], None, 1),  # zonal
        ("us-central1-a", ["us-central1-b"], None, 2),  # zonal with an extra zone
        ("us-central1", [], None, 3),  # regional: GKE's three
        ("us-central1", ["us-central1-b", "us-central1-c"], None, 2),
        ("us-central1", ["us-central1-b", "us-central1-c"], ["us-central1-c"], 1),  # the pool's own
        (None, [], None, 3),  # a location the engine does not show: counted as a region
    ],
)
def test_per_zone_gpus_multiply_over_the_plan_s_zones(location: str | None, cluster: list[str], own: list[str] | None, zones: int) -> None:
    assert gpu_pool_gpus(_pool(location, own), cluster) == 2 * 20 * zones
