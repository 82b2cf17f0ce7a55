"""Zones per region, shipped as data (components/catalog/data/zones.json, with its sources and date), so
the offline preview can refuse a zone that is not in the cluster's region. A region the data
does not list is not checked, and ``unchecked_region`` says so for the preview to print."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from gpu_platform.components.core.cloud import Cloud

__all__ = [
    "ZONES_DATE",
    "zones_of",
]


@functools.cache
def _data() -> dict[str, object]:
    data: dict[str, object] = json.loads((Path(__file__).parent / "data" / "zones.json").read_text(encoding="utf-8"))
    return data


ZONES_DATE: str = str(_data()["date"])
"""When the zone data was taken from the clouds' docs."""


def zones_of(cloud: Cloud, region: str) -> list[str] | None:
    """The zones of ``region``, or None when the shipped data does not list the region."""
    table = _data()[Cloud(cloud).value]
    assert isinstance(table, dict)
    zones = table.get(region)
    return list(zones) if zones is not None else None


def zone_problem(cloud: Cloud, region: str, zone: str) -> str | None:
    """Why ``zone`` is not a zone of ``region`` by the shipped data, or None (also when the data
    does not list the region: see unchecked_region)."""
    zones = zones_of(cloud, region)
    if zones is None or zone in zones:
        return None
    return f"zone {zone} is not a zone of {region} (its zones: {', '.join(zones)}, as of {ZONES_DATE})"


def unchecked_region(cloud: Cloud, region: str) -> str | None:
    """The notice to print when ``region``'s zones could not be checked offline, or None."""
    if zones_of(cloud, region) is not None:
        return None
    return (
        f"the zones of {cloud} region {region} were not checked offline: the shipped zone data "
        f"(components/catalog/data/zones.json, {ZONES_DATE}) does not list the region"
    )
