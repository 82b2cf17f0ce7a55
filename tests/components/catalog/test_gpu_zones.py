"""Which zones offer each GKE GPU (components/catalog/gpu_zones.py): a GPU pool pinned to a zone that lacks its
GPU gets a notice naming the region's zones that have it; a GPU the data does not list is reported unchecked."""

from __future__ import annotations

from gpu_platform.components.catalog.gpu_zones import GPU_ZONES_DATE, gpu_zone_notice, pool_gpu_notices, zones_offering
from gpu_platform.components.gke.args import GpuGkeClusterArgs
from tests.factories import a100_pool, gke, t4_pool


def test_zones_offering() -> None:
    zones = zones_offering("nvidia-a100-80gb")
    assert zones is not None and "us-central1-a" in zones and "us-central1-b" not in zones
    assert zones_offering("nvidia-made-up") is None


def test_a_zone_that_offers_the_gpu_gets_no_notice() -> None:
    assert gpu_zone_notice("t4", "nvidia-tesla-t4", "us-central1-b") is None


def test_a_zone_without_the_gpu_names_the_region_s_zones_that_have_it() -> None:
    assert gpu_zone_notice("big", "nvidia-a100-80gb", "us-central1-b") == (
        "gke pool big: zone us-central1-b does not offer nvidia-a100-80gb (zones of us-central1 that offer it: us-central1-a, "
        f"us-central1-c; components/catalog/data/gpu_zones.json, {GPU_ZONES_DATE}); its nodes could never start there"
    )
    notice = gpu_zone_notice("big", "nvidia-tesla-a100", "europe-west2-a")
    assert notice is not None and "(no zone of europe-west2 offers it;" in notice


def test_an_unlisted_gpu_is_reported_unchecked() -> None:
    notice = gpu_zone_notice("x", "nvidia-made-up", "us-central1-a")
    assert notice is not None
    assert notice.startswith("gke pool x: whether zone us-central1-a offers nvidia-made-up was not checked offline")
    assert notice.endswith("run gpu-platform preflight gke")


def test_pool_notices_read_the_plan_s_zones() -> None:
    # The deep-dive cluster's zones b and c: T4 in both, the 80 GB A100 in c only.
    args = GpuGkeClusterArgs.model_validate(
        gke(gpu_pools=[t4_pool(), a100_pool(name="big", accelerator_type="nvidia-a100-80gb", machine_type="a2-ultragpu-1g")])
    )
    notices = pool_gpu_notices(args.plan)
    assert len(notices) == 1 and notices[0].startswith("gke pool big: zone us-central1-b does not offer nvidia-a100-80gb")
