"""Which zones offer each GKE GPU, shipped as data (components/catalog/data/gpu_zones.json, with its sources and
date), so the offline preview notices a GPU pool pinned to a zone that does not offer its GPU, as the EKS
preview says what it could not check offline. An accelerator the data does not list is not checked, and
``gpu_zone_notice`` says so; ``gpu-platform preflight gke`` asks the Compute API instead."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

__all__ = ["GPU_ZONES_DATE", "gpu_zone_notice", "pool_gpu_notices", "zones_offering"]


@functools.cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "gpu_zones.json").read_text(encoding="utf-8"))
    return data


GPU_ZONES_DATE: str = str(_data()["date"])
"""When the GPU zone data was taken."""


def zones_offering(accelerator: str) -> list[str] | None:
    """The zones that offer ``accelerator`` (a GKE accelerator type), or None when the data does not list it."""
    zones = _data()["gcp"].get(accelerator)
    return list(zones) if zones is not None else None


def gpu_zone_notice(pool: str, accelerator: str, zone: str) -> str | None:
    """One line when pool ``pool``'s ``zone`` does not offer ``accelerator`` by the shipped data, naming the
    zones of the same region that do; or when the data does not list the accelerator; else None."""
    zones = zones_offering(accelerator)
    if zones is None:
        return (
            f"gke pool {pool}: whether zone {zone} offers {accelerator} was not checked offline: the shipped GPU zone "
            f"data (components/catalog/data/gpu_zones.json, {GPU_ZONES_DATE}) does not list {accelerator}; run gpu-platform preflight gke"
        )
    if zone in zones:
        return None
    region = zone.rsplit("-", 1)[0]
    nearby = [z for z in zones if z.rsplit("-", 1)[0] == region]
    where = f"zones of {region} that offer it: {', '.join(nearby)}" if nearby else f"no zone of {region} offers it"
    return (
        f"gke pool {pool}: zone {zone} does not offer {accelerator} ({where}; components/catalog/data/gpu_zones.json, "
        f"{GPU_ZONES_DATE}); its nodes could never start there"
    )


def pool_gpu_notices(pools: Any) -> list[str]:
    """The notices for a GKE plan's pools (GpuGkeClusterArgs.plan): each GPU pool whose zones are known (named
    in the stack, or a zonal cluster's) and one of them lacks its GPU; one line per pool whose GPU the data does
    not list. Pools whose zones GKE picks are not checked here (preflight gke asks the Compute API)."""
    notices: list[str] = []
    for pool in pools:
        accelerator = pool.shape.accelerator
        if accelerator is None or pool.zones.names is None:
            continue
        if zones_offering(accelerator) is None:
            notices.append(gpu_zone_notice(pool.args.name, accelerator, ", ".join(pool.zones.names)) or "")
            continue
        notices += [n for z in pool.zones.names if (n := gpu_zone_notice(pool.args.name, accelerator, z))]
    return notices
