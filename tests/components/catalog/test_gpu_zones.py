"""Which zones offer each GKE GPU (components/catalog/gpu_zones.py): the one verdict on a GPU pool that lists a zone
without its GPU (``absent_gpu_zones``: an error naming the region's zones that have it), and the notice for a GPU the
shipped data does not list (its zones not checked offline)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpu_platform.components.catalog.gpu_zones import absent_gpu_zones, gpu_zone_notice, pool_gpu_notices, zones_offering
from gpu_platform.components.gke.args import GpuGkeClusterArgs
from tests.factories import a100_pool, gke, t4_pool


def test_zones_offering() -> None:
    zones = zones_offering("nvidia-a100-80gb")
    assert zones is not None and "us-central1-a" in zones and "us-central1-b" not in zones
    assert zones_offering("nvidia-made-up") is None


def test_a_zone_that_offers_the_gpu_is_no_problem() -> None:
    assert absent_gpu_zones("nvidia-tesla-t4", ["us-central1-b", "us-central1-c"]) == []


def test_a_zone_without_the_gpu_is_one_problem_naming_the_regions_zones_that_have_it() -> None:
    ((zone, problem),) = absent_gpu_zones("nvidia-a100-80gb", ["us-central1-b", "us-central1-c"])
    assert zone == "us-central1-b"
    assert problem.startswith("zone us-central1-b does not offer nvidia-a100-80gb")
    assert problem.endswith("zones of us-central1 that do: us-central1-a, us-central1-c")
    ((_, elsewhere),) = absent_gpu_zones("nvidia-tesla-a100", ["europe-west2-a"])
    assert elsewhere.endswith("no zone of europe-west2 does")


def test_the_compute_apis_answer_takes_the_place_of_the_shipped_data() -> None:
    """preflight gke online judges with the zones the API lists, by the same function."""
    assert absent_gpu_zones("nvidia-a100-80gb", ["us-central1-b"], offered=["us-central1-b"], source="the Compute API") == []
    ((_, problem),) = absent_gpu_zones("nvidia-tesla-t4", ["us-central1-b"], offered=["us-central1-c"], source="the Compute API")
    assert "(the Compute API)" in problem


def test_an_unlisted_gpu_is_reported_unchecked_and_not_judged() -> None:
    notice = gpu_zone_notice("x", "nvidia-made-up", ["us-central1-a"])
    assert notice is not None
    assert notice.startswith("gke pool x: whether zone us-central1-a offers nvidia-made-up was not checked offline")
    assert notice.endswith("run gpu-platform preflight gke")
    assert absent_gpu_zones("nvidia-made-up", ["us-central1-a"]) == []
    assert gpu_zone_notice("t4", "nvidia-tesla-t4", ["us-central1-b"]) is None


def test_a_pool_listing_a_zone_without_its_gpu_is_refused_and_no_notice_is_left() -> None:
    # The deep-dive cluster's zones b and c: T4 in both, the 80 GB A100 in c only.
    with pytest.raises(ValidationError) as refused:
        GpuGkeClusterArgs.model_validate(gke(gpu_pools=[t4_pool(), a100_pool(name="big", accelerator_type="nvidia-a100-80gb", machine_type="a2-ultragpu-1g")]))
    assert "zone us-central1-b does not offer nvidia-a100-80gb" in str(refused.value)
    args = GpuGkeClusterArgs.model_validate(gke(gpu_pools=[t4_pool()]))
    assert pool_gpu_notices(args.pool_shapes()) == []
