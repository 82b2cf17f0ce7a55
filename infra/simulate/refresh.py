"""``gpu-platform prices refresh``: the price table from the clouds' own pricing APIs.

The same table as the shipped one (price_sources.catalog_types: every type a stack can name, in
every region that prices it), asked of the providers with the usual credentials:

- AWS: the Price List API (``pricing:GetProducts``, AmazonEC2, Linux, shared tenancy, no
  pre-installed software, capacity status Used) for on-demand per region, and EC2's
  ``DescribeSpotPriceHistory`` (Linux/UNIX, the newest price) for spot in each Availability
  Zone, by the zone names the account sees; a region's ``spot`` is the median of its zones'.
- GCP: the Cloud Billing Catalog API (``CloudCatalogClient.list_skus`` of Compute Engine), the
  SKUs a machine type is billed by: its family's vCPU and memory SKUs, the GPUs an A2/A3/G2
  type is built with, the local SSD an A2 ultra or A3 type bundles (price_sources.LOCAL_SSD_GB);
  the GPUs N1 machines attach priced apart. Spot from the "Spot Preemptible" SKUs. A type is
  priced in a region only where every SKU it needs is offered there.

Errors are one line (CloudError): no credentials, a refusal, an answer without the fields read.
"""

from __future__ import annotations

import functools
import json
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar

from gpu_platform.components.catalog.gpus import GCP_MACHINE_SHAPES
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.infra.simulate.price_sources import LOCAL_SSD_GB, _price, catalog_types, table_of
from gpu_platform.infra.simulate.prices import HourlyPrice, PriceTable

__all__ = ["COMPUTE_ENGINE", "CloudError", "aws_prices", "gcp_prices", "google_error", "refreshed_table"]

_T = TypeVar("_T")

COMPUTE_ENGINE = "services/6F81-5844-456A"
"""Compute Engine's service in the Cloud Billing Catalog."""

PRICING_REGION = "us-east-1"
"""The Price List API's endpoint region (it answers for every region)."""

HOURS_PER_MONTH = 730
"""Google bills local SSD per GiB-month; a month is 730 hours in its pricing."""


class CloudError(Exception):
    """A pricing API that cannot be asked or answers something that is not an answer (one line)."""


Prices = dict[str, dict[str, HourlyPrice]]


# AWS --------------------------------------------------------------------------------------------

_EC2_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
}


def _aws_errors(what: str, call: Callable[[], _T]) -> _T:
    import botocore.exceptions
    from botocore.parsers import ResponseParserError

    try:
        return call()
    except botocore.exceptions.NoCredentialsError:
        raise CloudError("cannot ask AWS: no credentials (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)") from None
    except botocore.exceptions.ClientError as exc:
        error = exc.response.get("Error") or {}
        message = " ".join(str(error.get("Message") or "").split())[:200]
        raise CloudError(f"AWS refused {exc.operation_name} ({what}): {error.get('Code')}" + (f": {message}" if message else "")) from None
    except (botocore.exceptions.BotoCoreError, ResponseParserError) as exc:
        raise CloudError(f"cannot ask AWS ({what}): {type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise CloudError(f"AWS answered {what} without the fields refresh reads ({type(exc).__name__}: {exc})") from None


def _on_demand(pricing: Any, instance_type: str) -> dict[str, float]:
    """{region: USD per hour} of one instance type, from the Price List API."""
    filters = [{"Type": "TERM_MATCH", "Field": "instanceType", "Value": instance_type}] + [
        {"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in _EC2_FILTERS.items()
    ]
    out: dict[str, float] = {}
    for page in pricing.get_paginator("get_products").paginate(ServiceCode="AmazonEC2", Filters=filters, FormatVersion="aws_v1"):
        for item in page["PriceList"]:
            product = json.loads(item) if isinstance(item, str) else item
            region = product["product"]["attributes"]["regionCode"]
            for term in product["terms"].get("OnDemand", {}).values():
                for dimension in term["priceDimensions"].values():
                    if dimension.get("unit") == "Hrs":
                        usd = float(dimension["pricePerUnit"]["USD"])
                        if usd > 0:
                            out[region] = usd
    return out


def _spot(ec2: Any, types: list[str], now: datetime) -> dict[str, dict[str, float]]:
    """{instance type: {zone: USD per hour}}: the newest Linux/UNIX spot price in each zone of the region."""
    newest: dict[tuple[str, str], tuple[Any, float]] = {}
    pages = ec2.get_paginator("describe_spot_price_history").paginate(
        InstanceTypes=types,
        ProductDescriptions=["Linux/UNIX"],
        StartTime=now,
    )
    for page in pages:
        for entry in page["SpotPriceHistory"]:
            key = (entry["InstanceType"], entry["AvailabilityZone"])
            when = entry.get("Timestamp")
            if key not in newest or (when is not None and newest[key][0] is not None and when > newest[key][0]):
                newest[key] = (when, float(entry["SpotPrice"]))
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (name, zone), (_, price) in newest.items():
        out[name][zone] = price
    return dict(out)


def aws_prices(client: Callable[[str, str], Any], regions: Iterable[str] | None = None, now: datetime | None = None) -> Prices:
    """{region: {instance type: price}} for the catalog's instance types; ``client(service, region)`` makes boto3 clients."""
    types, _ = catalog_types(Cloud.AWS)
    pricing = client("pricing", PRICING_REGION)
    on_demand: dict[str, dict[str, float]] = defaultdict(dict)
    for name in types:
        for region, usd in _aws_errors(f"on-demand {name}", functools.partial(_on_demand, pricing, name)).items():
            on_demand[region][name] = usd
    wanted = set(regions) if regions is not None else None
    out: Prices = {}
    for region in sorted(on_demand):
        if wanted is not None and region not in wanted:
            continue
        names = sorted(on_demand[region])
        ec2 = client("ec2", region)
        spot = _aws_errors(f"spot in {region}", functools.partial(_spot, ec2, names, now or datetime.now(UTC)))
        out[region] = {
            name: _price(on_demand[region][name], statistics.median(spot[name].values()) if spot.get(name) else None, spot.get(name)) for name in names
        }
    return out


# GCP --------------------------------------------------------------------------------------------

# The SKU a machine family bills its vCPUs and memory by: "<FAMILY> [Predefined ]Instance Core|Ram
# running in <place>", "Spot Preemptible " before it for spot.
_CORE_RAM = re.compile(r"^(?P<spot>Spot Preemptible )?(?P<family>[A-Z][A-Z0-9]*) (Predefined )?Instance (?P<what>Core|Ram) running in ")
_GPU = re.compile(r"^Nvidia (?P<model>.+?) GPU (?P<how>running in|attached to Spot Preemptible VMs running in) ")
_LOCAL_SSD = re.compile(r"^SSD backed Local Storage (?P<how>in|attached to Spot Preemptible VMs in) ")

# Billing's GPU model names for the catalog's accelerators.
_GPU_SKU_MODEL = {
    "Tesla T4": "nvidia-tesla-t4",
    "Tesla P4": "nvidia-tesla-p4",
    "Tesla P100": "nvidia-tesla-p100",
    "Tesla V100": "nvidia-tesla-v100",
    "L4": "nvidia-l4",
    "Tesla A100": "nvidia-tesla-a100",
    "Tesla A100 80GB": "nvidia-a100-80gb",
    "H100 80GB": "nvidia-h100-80gb",
    "H100 80GB Mega": "nvidia-h100-mega-80gb",
}


def _unit_price(sku: Any) -> tuple[float, str] | None:
    """(USD per usage unit, the unit) of a SKU's current price: its first tier, starting at 0."""
    if not sku.pricing_info:
        return None
    expression = sku.pricing_info[0].pricing_expression
    if not expression.tiered_rates:
        return None
    money = expression.tiered_rates[0].unit_price
    if money.currency_code and money.currency_code != "USD":
        raise CloudError(f"Cloud Billing answered {sku.sku_id} in {money.currency_code}, not USD")
    return money.units + money.nanos / 1e9, expression.usage_unit


def _gcp_rates(skus: Iterable[Any]) -> dict[tuple[str, str, bool], dict[str, float]]:
    """{(kind, name, spot): {region: USD per unit-hour}}: kind core|ram (name a family), gpu (an accelerator), ssd."""
    rates: dict[tuple[str, str, bool], dict[str, float]] = defaultdict(dict)
    for sku in skus:
        if sku.category.usage_type not in ("OnDemand", "Preemptible"):
            continue
        description = sku.description
        key: tuple[str, str, bool] | None = None
        if m := _CORE_RAM.match(description):
            key = (m["what"].lower(), m["family"].lower(), bool(m["spot"]))
        elif (m := _GPU.match(description)) and m["model"] in _GPU_SKU_MODEL:
            key = ("gpu", _GPU_SKU_MODEL[m["model"]], m["how"] != "running in")
        elif m := _LOCAL_SSD.match(description):
            key = ("ssd", "local", m["how"] != "in")
        if key is None:
            continue
        priced = _unit_price(sku)
        if priced is None:
            continue
        usd, unit = priced
        per_hour = usd / HOURS_PER_MONTH if unit.endswith(".mo") else usd
        for region in sku.service_regions:
            rates[key][region] = per_hour
    return rates


def gcp_prices(client: Any) -> tuple[Prices, Prices]:
    """({region: {machine type: price}}, {region: {attached GPU: price}}) from ``client.list_skus`` (a CloudCatalogClient)."""
    from google.api_core import exceptions as api_errors
    from google.auth import exceptions as auth_errors

    try:
        rates = _gcp_rates(client.list_skus(parent=COMPUTE_ENGINE))
    except (api_errors.GoogleAPIError, auth_errors.GoogleAuthError) as exc:
        raise CloudError(google_error(exc)) from None
    machines, attached = catalog_types(Cloud.GCP)

    def cost(name: str, region: str, spot: bool) -> float | None:
        shape = GCP_MACHINE_SHAPES[name]
        parts = [(("core", shape.family, spot), shape.vcpus), (("ram", shape.family, spot), shape.memory_mib / 1024)]
        if shape.accelerator and shape.gpu_count:
            parts.append((("gpu", shape.accelerator, spot), shape.gpu_count))
        if name in LOCAL_SSD_GB:
            parts.append((("ssd", "local", spot), LOCAL_SSD_GB[name]))
        total = 0.0
        for key, amount in parts:
            rate = rates.get(key, {}).get(region)
            if rate is None:
                return None
            total += rate * amount
        return total

    regions = sorted({r for table in rates.values() for r in table})
    by_region: Prices = defaultdict(dict)
    gpus: Prices = defaultdict(dict)
    for region in regions:
        for name in machines:
            od = cost(name, region, False)
            if od is not None:
                by_region[region][name] = _price(od, cost(name, region, True))
        for gpu in attached:
            od = rates.get(("gpu", gpu, False), {}).get(region)
            if od is not None:
                gpus[region][gpu] = _price(od, rates.get(("gpu", gpu, True), {}).get(region))
    return dict(by_region), dict(gpus)


def google_error(exc: Exception) -> str:
    name = type(exc).__name__
    if name == "DefaultCredentialsError":
        return "cannot ask Google Cloud Billing: no credentials (run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS)"
    return f"cannot ask Google Cloud Billing: {name}: {' '.join(str(exc).split())[:200]}"


def refreshed_table(
    clouds: set[Cloud],
    aws_client: Callable[[str, str], Any] | None,
    gcp_client: Any | None,
    base: PriceTable | None,
    now: datetime | None = None,
) -> PriceTable:
    """A table asked of the APIs for ``clouds``; a cloud not asked keeps ``base``'s entries (and says so)."""
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%d")
    sources: list[str] = []
    gcp_machines: Prices = {}
    gcp_gpus: Prices = {}
    aws: Prices = {}
    if Cloud.GCP in clouds:
        assert gcp_client is not None
        gcp_machines, gcp_gpus = gcp_prices(gcp_client)
        sources.append(f"Cloud Billing Catalog API, {COMPUTE_ENGINE} (Compute Engine) SKUs, read {when}")
    elif base is not None:
        gcp_machines = {t.region: dict(t.machines) for t in base.gcp}
        gcp_gpus = {t.region: dict(t.gpus) for t in base.gcp}
        sources.append(f"GCP kept from the table of {base.date}")
    if Cloud.AWS in clouds:
        assert aws_client is not None
        aws = aws_prices(aws_client, now=now)
        sources.append(f"AWS Price List API (AmazonEC2 on-demand) and EC2 DescribeSpotPriceHistory (Linux/UNIX), read {when}")
    elif base is not None:
        aws = {t.region: dict(t.machines) for t in base.aws}
        sources.append(f"AWS kept from the table of {base.date}")
    return table_of(when, sources, gcp_machines, gcp_gpus, aws)
