"""The shipped zones per region (components/catalog/zones.py): a zone outside its region is refused by name,
and a region the data does not list is not checked, with the notice the preview prints."""

from __future__ import annotations

from gpu_platform.components.catalog.zones import ZONES_DATE, unchecked_region, zone_problem, zones_of
from gpu_platform.components.core.cloud import Cloud


def test_zones_of_a_listed_region() -> None:
    assert zones_of(Cloud.GCP, "us-central1") == ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"]
    assert zones_of(Cloud.AWS, "ap-northeast-2") == ["ap-northeast-2a", "ap-northeast-2b", "ap-northeast-2c", "ap-northeast-2d"]
    # each cloud has its own table: a GCP region is not an AWS one
    assert zones_of(Cloud.AWS, "us-central1") is None


def test_zones_of_returns_a_copy() -> None:
    zones = zones_of(Cloud.GCP, "us-central1")
    assert zones is not None
    zones.clear()
    assert zones_of(Cloud.GCP, "us-central1")


def test_a_zone_of_another_region_is_refused_naming_the_region_s_zones() -> None:
    assert zone_problem(Cloud.GCP, "us-central1", "us-central1-b") is None
    assert zone_problem(Cloud.GCP, "us-central1", "us-east1-b") == (
        f"zone us-east1-b is not a zone of us-central1 (its zones: us-central1-a, us-central1-b, us-central1-c, us-central1-f, as of {ZONES_DATE})"
    )


def test_an_unlisted_region_is_not_checked_and_says_so() -> None:
    assert zone_problem(Cloud.GCP, "mars-north1", "mars-north1-a") is None
    assert unchecked_region(Cloud.GCP, "us-central1") is None
    notice = unchecked_region(Cloud.GCP, "mars-north1")
    assert notice == (
        "the zones of gcp region mars-north1 were not checked offline: the shipped zone data "
        f"(components/catalog/data/zones.json, {ZONES_DATE}) does not list the region"
    )
