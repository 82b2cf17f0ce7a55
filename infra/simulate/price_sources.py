"""Where the shipped price table comes from, and how ``gpu-platform prices build`` rebuilds it.

The table holds the hourly price of every type a stack can name (the GKE catalog's machine types
and the GPUs N1 machines attach, components/catalog/gpus.py; the EKS catalog's instance types,
components/catalog/aws.py) in every region of either cloud that prices it, on-demand and spot.
It is built from public, dated, pinned sources, named with their commits in the table itself
(``sources``) and in BUILD_SOURCES below:

- GCP machine types: Cyclenerd/google-cloud-pricing-cost-calculator's ``pricing.yml``, which its
  CI builds from Google's Cloud Billing Catalog API (the SKUs ``prices refresh`` reads too). A
  machine's price is its vCPUs, memory, the GPUs an A2/A3/G2 type is built with and the local SSD
  the A2 ultra and A3 types bundle; the file prices a type in a region only where every one of
  those SKUs exists there. Spot is per region (GCP prices spot per region).
- GPUs attached to N1 machines (T4, P4, P100, V100), billed apart: skypilot-org/skypilot-catalog's
  ``catalogs/v7/gcp/vms.csv``, the accelerator rows (no InstanceType; a row's price is the count's,
  so one GPU costs price / count). The catalog repeats a region's price in each zone it lists.
- AWS instance types: skypilot-org/skypilot-catalog's ``catalogs/v7/aws/vms.csv`` (on-demand per
  region, spot per Availability Zone: the catalog's snapshot of each zone's spot price when its CI
  wrote that commit, not an average over time). Its zones are zone IDs (``usw2-az1``), which name a
  different zone in each account, so the table keeps the region's spot as the middle of the
  zones' (the median) and no per-zone figure; ``prices refresh`` asks EC2 itself and keeps the
  zone names the account sees. Every region the file prices a GPU type of the catalog in is a
  region of the table (22 at the pinned commit); a region it does not price is refused by name.

Figures are rounded to 5 decimal places of a dollar per hour (a hundredth of a cent); the control
plane's fee is the providers' list price (GKE cluster management and EKS standard support, USD
0.10 per cluster-hour).
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gpu_platform.components.catalog.aws import AWS_INSTANCE_TYPES
from gpu_platform.components.catalog.gpus import GCP_ACCELERATORS, GCP_MACHINE_SHAPES
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.infra.simulate.prices import CloudPrices, HourlyPrice, PriceTable
from gpu_platform.infra.simulate.settings import SimulationError

__all__ = [
    "BUILD_SOURCES",
    "CLUSTER_PER_HOUR",
    "Source",
    "aws_from_skypilot",
    "catalog_types",
    "gcp_gpus_from_skypilot",
    "gcp_machines_from_cyclenerd",
    "kept_sources",
    "table_json",
    "table_of",
]

CLUSTER_PER_HOUR = 0.10
"""USD per cluster-hour: GKE's cluster management fee (no free tier for regional clusters) and EKS standard support."""

DIGITS = 5
"""Decimal places kept of a USD-per-hour figure."""


@dataclass(frozen=True)
class Source:
    """One pinned public file the table is built from."""

    key: str
    """The flag naming its local copy: ``prices build --file KEY=PATH``."""
    repo: str
    commit: str
    committed: str | None
    """The commit's date (UTC, as git reports it); None where it was not read."""
    path: str
    provides: str

    def cite(self) -> str:
        when = f" (committed {self.committed})" if self.committed else ""
        return f"github.com/{self.repo}/blob/{self.commit}/{self.path}{when}: {self.provides}"


BUILD_SOURCES: tuple[Source, ...] = (
    Source(
        "gcp-machines",
        "Cyclenerd/google-cloud-pricing-cost-calculator",
        "fd66b26ff84fee5cdd94f341ea89206e76c06b99",
        "2026-07-30",
        "pricing.yml",
        "GCP machine types per region, on-demand and spot (built from the Cloud Billing Catalog API, generated 2026-07-30)",
    ),
    Source(
        "gcp-gpus",
        "skypilot-org/skypilot-catalog",
        "6f65ab58724c0a5b17dbb81ee124e7d7dee0d4a5",
        None,
        "catalogs/v7/gcp/vms.csv",
        "GPUs attached to N1 machines (T4, P4, P100, V100) per region, on-demand and spot",
    ),
    Source(
        "aws",
        "skypilot-org/skypilot-catalog",
        "27f67dd4e1bc0d35fa0ec075180ad54b230882c4",
        None,
        "catalogs/v7/aws/vms.csv",
        "AWS instance types per region, on-demand; spot the median of the region's Availability Zones (the catalog's per-zone spot snapshot at this commit)",
    ),
)
"""The files ``gpu-platform prices build`` reads, each at its commit."""

# SkyPilot's accelerator names for the GPUs N1 machines attach (its catalog names them by model).
_SKYPILOT_GCP_GPUS = {"T4": "nvidia-tesla-t4", "P4": "nvidia-tesla-p4", "P100": "nvidia-tesla-p100", "V100": "nvidia-tesla-v100"}

# Local SSD (GB) the A2 ultra and A3 machine types come with, billed with them (Compute Engine's
# machine-type pages; the same figures pricing.yml lists as local-ssd).
LOCAL_SSD_GB = {
    "a2-ultragpu-1g": 375,
    "a2-ultragpu-2g": 750,
    "a2-ultragpu-4g": 1500,
    "a2-ultragpu-8g": 3000,
    "a3-highgpu-1g": 750,
    "a3-highgpu-2g": 1500,
    "a3-highgpu-4g": 3000,
    "a3-highgpu-8g": 6000,
    "a3-megagpu-8g": 6000,
    "a3-edgegpu-8g": 6000,
}


def catalog_types(cloud: Cloud) -> tuple[list[str], list[str]]:
    """(machine or instance types, GPUs priced apart) a stack of ``cloud`` can name, sorted."""
    if cloud is Cloud.GCP:
        gpus = sorted(a.name for a in GCP_ACCELERATORS.values() if a.machine_family == "n1")
        return sorted(GCP_MACHINE_SHAPES), gpus
    return sorted(AWS_INSTANCE_TYPES), []


def _round(value: float) -> float:
    return round(float(value), DIGITS)


def _price(on_demand: float | None, spot: float | None, zones: dict[str, float] | None = None) -> HourlyPrice:
    return HourlyPrice(
        on_demand=_round(on_demand or 0.0),
        spot=None if spot is None else _round(spot),
        spot_zones={z: _round(v) for z, v in sorted((zones or {}).items())},
    )


def gcp_machines_from_cyclenerd(data: Any) -> dict[str, dict[str, HourlyPrice]]:
    """{region: {machine type: price}} for the catalog's GCP machine types, from pricing.yml's compute.instance."""
    try:
        instances = data["compute"]["instance"]
    except (KeyError, TypeError):
        raise SimulationError("gcp-machines: not Cyclenerd's pricing.yml (no compute.instance)") from None
    machines, _ = catalog_types(Cloud.GCP)
    out: dict[str, dict[str, HourlyPrice]] = defaultdict(dict)
    for name in machines:
        for region, cost in (instances.get(name) or {}).get("cost", {}).items():
            hour = cost.get("hour")
            if hour is None:
                continue
            out[region][name] = _price(hour, cost.get("hour_spot"))
    return dict(out)


def _csv_rows(text: str, where: str, needed: set[str]) -> Iterable[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(text))
    missing = needed - set(reader.fieldnames or ())
    if missing:
        raise SimulationError(f"{where}: not a SkyPilot vms.csv (no column {', '.join(sorted(missing))})")
    yield from reader


def gcp_gpus_from_skypilot(text: str) -> dict[str, dict[str, HourlyPrice]]:
    """{region: {GPU: price of one}} for the GPUs N1 machines attach, from SkyPilot's GCP vms.csv.

    A row prices ``AcceleratorCount`` GPUs; one costs the row's price over the count. Where the
    catalog lists a region's price in several zones or counts and they differ, the median holds."""
    od: dict[tuple[str, str], list[float]] = defaultdict(list)
    spot: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in _csv_rows(text, "gcp-gpus", {"InstanceType", "AcceleratorName", "AcceleratorCount", "Region", "Price", "SpotPrice"}):
        gpu = _SKYPILOT_GCP_GPUS.get(row["AcceleratorName"])
        if row["InstanceType"] or gpu is None:
            continue
        count = float(row["AcceleratorCount"] or 0)
        if count <= 0:
            continue
        key = (row["Region"], gpu)
        if row["Price"]:
            od[key].append(float(row["Price"]) / count)
        if row["SpotPrice"]:
            spot[key].append(float(row["SpotPrice"]) / count)
    out: dict[str, dict[str, HourlyPrice]] = defaultdict(dict)
    for (region, gpu), values in sorted(od.items()):
        s = spot.get((region, gpu))
        out[region][gpu] = _price(statistics.median(values), statistics.median(s) if s else None)
    return dict(out)


def aws_from_skypilot(text: str) -> dict[str, dict[str, HourlyPrice]]:
    """{region: {instance type: price}} for the catalog's AWS types, from SkyPilot's AWS vms.csv.

    On-demand is the region's (the catalog repeats it per zone; the median if it ever differs); spot
    is the median of the zones' spot prices, since the catalog's zone IDs name no zone a stack can."""
    wanted = set(catalog_types(Cloud.AWS)[0])
    od: dict[tuple[str, str], list[float]] = defaultdict(list)
    spot: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in _csv_rows(text, "aws", {"InstanceType", "Region", "AvailabilityZone", "Price", "SpotPrice"}):
        if row["InstanceType"] not in wanted:
            continue
        key = (row["Region"], row["InstanceType"])
        if row["Price"]:
            od[key].append(float(row["Price"]))
        if row["SpotPrice"]:
            spot[key].append(float(row["SpotPrice"]))
    out: dict[str, dict[str, HourlyPrice]] = defaultdict(dict)
    for (region, name), values in sorted(od.items()):
        s = spot.get((region, name))
        out[region][name] = _price(statistics.median(values), statistics.median(s) if s else None)
    return dict(out)


# What names a cloud's part in a table's sources: its pinned files (BUILD_SOURCES) and the pricing APIs
# ``prices refresh`` asks (refresh.refreshed_table's source lines).
_CLOUD_SOURCE_MARKS = {
    Cloud.GCP: ("Cloud Billing Catalog API",),
    Cloud.AWS: ("AWS Price List API",),
}
_CLOUD_OF_KEY = {"gcp-machines": Cloud.GCP, "gcp-gpus": Cloud.GCP, "aws": Cloud.AWS}


def kept_sources(table: PriceTable, cloud: Cloud | str) -> list[str]:
    """The source lines of ``table`` that ``cloud``'s part was read from, for a build that keeps that part.

    A line citing one of the cloud's pinned files or its pricing API, or starting with the cloud's name
    ("AWS part: ...", a build's --note), is kept as it is; a table whose lines name none of these (written
    by hand) is kept as one line naming its date and every source."""
    cloud = Cloud(cloud)
    marks = [f"github.com/{s.repo}/blob/{s.commit}/{s.path}" for s in BUILD_SOURCES if _CLOUD_OF_KEY[s.key] is cloud]
    marks += [*_CLOUD_SOURCE_MARKS[cloud], f"{cloud.value.upper()} "]
    own = [line for line in table.sources if any(line.startswith(mark) for mark in marks)]
    if own:
        return own
    return [f"{cloud.value.upper()} part kept from a table of {table.date}, whose sources were: " + "; ".join(table.sources)]


def table_of(
    date: str,
    sources: list[str],
    gcp_machines: dict[str, dict[str, HourlyPrice]],
    gcp_gpus: dict[str, dict[str, HourlyPrice]],
    aws: dict[str, dict[str, HourlyPrice]],
) -> PriceTable:
    """The price table: one entry per region offering a GPU type of the catalog (a GPU platform has no use
    for the others), regions and types sorted (a rebuild diffs line by line)."""
    gcp_gpu_regions = {r for r, m in gcp_machines.items() if any(GCP_MACHINE_SHAPES[t].accelerator for t in m)} | {r for r, g in gcp_gpus.items() if g}
    aws = {r: m for r, m in aws.items() if any(AWS_INSTANCE_TYPES[t].gpu for t in m if t in AWS_INSTANCE_TYPES)}
    gcp = [
        CloudPrices(
            region=r,
            cluster_per_hour=CLUSTER_PER_HOUR,
            machines=dict(sorted(gcp_machines.get(r, {}).items())),
            gpus=dict(sorted(gcp_gpus.get(r, {}).items())),
        )
        for r in sorted(gcp_gpu_regions)
    ]
    aws_tables = [CloudPrices(region=r, cluster_per_hour=CLUSTER_PER_HOUR, machines=dict(sorted(aws[r].items()))) for r in sorted(aws)]
    return PriceTable(date=date, sources=sources, gcp=gcp, aws=aws_tables)


def table_json(table: PriceTable) -> bytes:
    """The table as the shipped file holds it: JSON, one type per line, defaults left out (small, diffable)."""

    def price(p: HourlyPrice) -> str:
        fields: dict[str, Any] = {"on_demand": p.on_demand}
        if p.spot is not None:
            fields["spot"] = p.spot
        if p.spot_zones:
            fields["spot_zones"] = p.spot_zones
        return json.dumps(fields, separators=(",", ":"))

    def region(t: CloudPrices) -> str:
        blocks = []
        for key, prices in (("machines", t.machines), ("gpus", t.gpus)):
            rows = ",\n".join(f"      {json.dumps(k)}: {price(v)}" for k, v in prices.items())
            blocks.append(f'     "{key}": {{\n{rows}\n     }}' if prices else f'     "{key}": {{}}')
        return f'    {{"region": {json.dumps(t.region)}, "cluster_per_hour": {t.cluster_per_hour},\n' + ",\n".join(blocks) + "}"

    head = {"date": table.date, "currency": table.currency, "sources": table.sources}
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    for name, tables, comma in (("gcp", table.gcp, ","), ("aws", table.aws, "")):
        body = ",\n".join(region(t) for t in tables)
        lines.append(f'  "{name}": [\n{body}\n  ]{comma}' if tables else f'  "{name}": []{comma}')
    lines.append("}")
    return ("\n".join(lines) + "\n").encode()
