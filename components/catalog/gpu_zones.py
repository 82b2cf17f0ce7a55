"""Which zones offer each GKE GPU, shipped as data (components/catalog/data/gpu_zones.json, with its sources and
date), and the one verdict on a GPU pool that lists a zone without its GPU (``absent_gpu_zones``).

That verdict is an error wherever it is made: GKE refuses to create a node pool whose accelerator is not
offered in one of its node locations, so such a stack could never deploy. GpuGkeClusterArgs refuses it
before anything is registered (the stack's config read, a program's own Args, the offline preview, ``preflight
gke``), naming the key that lists the zone and the zones of the region that offer the GPU; ``preflight gke``
online asks the Compute API which zones offer it and gives the same verdict through the same function. An
accelerator the data does not list is not checked offline, and ``gpu_zone_notice`` says so."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gpu_platform.components.catalog.zones import zones_of
from gpu_platform.components.core.cloud import Cloud

__all__ = ["GPU_ZONES_DATE", "SHIPPED_SOURCE", "absent_gpu_zones", "gpu_zone_notice", "pool_gpu_notices", "zones_offering"]


@functools.cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "gpu_zones.json").read_text(encoding="utf-8"))
    return data


GPU_ZONES_DATE: str = str(_data()["date"])
"""When the GPU zone data was taken."""


SHIPPED_SOURCE = f"components/catalog/data/gpu_zones.json, {GPU_ZONES_DATE}"
"""How a verdict made from the shipped data names its source."""


def zones_offering(accelerator: str) -> list[str] | None:
    """The zones that offer ``accelerator`` (a GKE accelerator type), or None when the data does not list it."""
    zones = _data()["gcp"].get(accelerator)
    return list(zones) if zones is not None else None


def _region_of(zone: str) -> str:
    return zone.rsplit("-", 1)[0]


def absent_gpu_zones(accelerator: str, zones: Sequence[str], offered: Iterable[str] | None = None, source: str = SHIPPED_SOURCE) -> list[tuple[str, str]]:
    """The one verdict on a GKE GPU pool's zones: (zone, problem) for each of ``zones`` that does not offer
    ``accelerator``, the problem naming the zones of its region that do. ``offered``: the zones that offer it as
    ``source`` says (the Compute API, for preflight gke online), else the shipped data's. Empty when every zone
    offers it; offline, a zone is not judged when the shipped data does not list the accelerator
    (``gpu_zone_notice`` says so) or the zone's region (``catalog.zones.unchecked_region`` says so).
    Always an error: GKE refuses a node pool whose accelerator is not offered in one of its node locations."""
    have = set(offered) if offered is not None else set(zones_offering(accelerator) or ())
    if offered is None and zones_offering(accelerator) is None:
        return []
    problems = []
    for zone in zones:
        region = _region_of(zone)
        if zone in have or (offered is None and zones_of(Cloud.GCP, region) is None):
            # Offered; or, offline, a region the shipped zone data does not list (catalog.zones.unchecked_region says so).
            continue
        nearby = sorted(z for z in have if _region_of(z) == region)
        where = f"zones of {region} that do: {', '.join(nearby)}" if nearby else f"no zone of {region} does"
        problems.append(
            (
                zone,
                f"zone {zone} does not offer {accelerator} ({source}): GKE cannot create a node pool whose GPU is missing from one of its zones; {where}",
            )
        )
    return problems


def gpu_zone_notice(pool: str, accelerator: str, zones: Sequence[str]) -> str | None:
    """One line when the shipped data does not list ``accelerator``, so pool ``pool``'s ``zones`` were not
    checked offline (preflight gke asks the Compute API); else None."""
    if zones_offering(accelerator) is not None:
        return None
    return (
        f"gke pool {pool}: whether zone {', '.join(zones)} offers {accelerator} was not checked offline: the shipped GPU zone "
        f"data (components/catalog/data/gpu_zones.json, {GPU_ZONES_DATE}) does not list {accelerator}; run gpu-platform preflight gke"
    )


def pool_gpu_notices(shapes: Iterable[Any]) -> list[str]:
    """One line per GPU pool (a NodePoolShape of the plan) whose zones are named but whose GPU the shipped data
    does not list. A zone that does not offer a listed GPU is no notice: GpuGkeClusterArgs refuses it
    (``absent_gpu_zones``)."""
    return [n for s in shapes if s.accelerator is not None and s.zones is not None and (n := gpu_zone_notice(s.name, s.accelerator, s.zones))]
