"""Prices and cost: the shipped price table (infra/simulate/prices.json, built by ``gpu-platform prices
build``; or --prices FILE of the same shape, such as ``gpu-platform prices refresh`` writes) and what a
simulated run costs, paid against used."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.models import ARGS_CONFIG
from gpu_platform.components.core.numbers import Float
from gpu_platform.infra.simulate.cluster import ModelInputs
from gpu_platform.infra.simulate.inputs import NodeGroup, Trace
from gpu_platform.infra.simulate.settings import SimulationError

__all__ = ["SHIPPED", "CloudPrices", "Cost", "CostLine", "HourlyPrice", "PriceTable", "capacity_of", "cost_of", "reserved_hours"]

SHIPPED = Path(__file__).parent / "prices.json"
"""The price table in the package: every region of both clouds offering the catalog's types (prices build)."""


class HourlyPrice(BaseModel):
    """One type's price per hour, on-demand and spot."""

    model_config = ARGS_CONFIG

    on_demand: Annotated[Float, Field(ge=0)]
    """Per hour, on-demand. Required."""
    spot: Annotated[Float, Field(ge=0)] | None = None
    """Per hour, spot: the region's (GCP prices spot per region), or the median of its zones' (AWS).
    Default: none (no spot price: a spot group of the type is refused)."""
    flex_start: Annotated[Float, Field(ge=0)] | None = None
    """Per hour, flex-start (GCP: the Cloud Billing Catalog's "DWS Defined Duration" SKUs, discounted from on-demand by
    up to 53% on vCPUs and GPUs per GKE's flex-start page). The shipped table's sources publish none, so a flex-start
    rung of the type is refused until --prices FILE gives one.
    Default: none (no flex-start price)."""
    capacity_block: Annotated[Float, Field(ge=0)] | None = None
    """Per instance-hour, an EC2 capacity block for ML (AWS: the EC2 Capacity Blocks pricing page, per region and
    instance type, paid up front for the block's window). The shipped table's sources publish none, so a
    capacity_block rung of the type is refused until --prices FILE gives one.
    Default: none (no capacity-block price)."""
    spot_zones: dict[str, Annotated[Float, Field(ge=0)]] = Field(default_factory=dict)
    """Per hour, spot, by zone name (AWS prices spot per Availability Zone); a spot group pays the mean over
    those of its zones listed here, ``spot`` where none is. Default: {} (``spot`` in every zone)."""


class CloudPrices(BaseModel):
    """One cloud's prices in one region."""

    model_config = ARGS_CONFIG

    region: str
    """The region the prices are for. Required."""
    cluster_per_hour: Annotated[Float, Field(ge=0)] = 0.0
    """The control plane's fee per hour (GKE cluster management, EKS standard support). Default: 0."""
    machines: dict[str, HourlyPrice] = Field(default_factory=dict)
    """Per machine or instance type (on AWS the GPUs are in it). Default: {}."""
    gpus: dict[str, HourlyPrice] = Field(default_factory=dict)
    """Per attached GPU (GCP N1 machines: charged apart from the machine). Default: {}."""


class PriceTable(BaseModel):
    """Hourly prices by machine type and capacity type: infra/simulate/prices.json, or --prices FILE (YAML or JSON, the same shape)."""

    model_config = ARGS_CONFIG

    date: str
    """When the prices were read. Required."""
    currency: str = "USD"
    """The prices' currency. Default: USD."""
    sources: list[str] = Field(min_length=1)
    """Where they were read. Required."""
    gcp: list[CloudPrices] = Field(default_factory=list)
    """Google Cloud prices, one entry per region. Default: [] (a GKE stack is refused)."""
    aws: list[CloudPrices] = Field(default_factory=list)
    """AWS prices, one entry per region. Default: [] (an EKS stack is refused)."""

    def region(self, cloud: Cloud | str, region: str) -> CloudPrices:
        """The prices of ``cloud`` in ``region``; SimulationError naming what the table has instead."""
        tables = self.gcp if Cloud(cloud) is Cloud.GCP else self.aws
        for table in tables:
            if table.region == region:
                return table
        have = f"{len(tables)} regions: " + ", ".join(t.region for t in tables) if tables else "none"
        raise SimulationError(
            f"the price table ({self.date}) has no {cloud} prices for region {region} (it has {have}); "
            f"write them with `gpu-platform prices refresh --cloud {cloud}` or give --prices FILE"
        )

    @classmethod
    def shipped(cls) -> PriceTable:
        """The table in the package (infra/simulate/prices.json, written by ``gpu-platform prices build``), read
        once per process (it is frozen)."""
        return _shipped()

    @classmethod
    def from_data(cls, data: Any, where: str) -> PriceTable:
        """A price table from a file's YAML (``where`` names it in messages); SimulationError, one line per problem."""
        from gpu_platform.infra.stack.errors import format_validation_error

        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise SimulationError([f"{where}: {line}" for line in format_validation_error(exc, PriceTable)]) from None

    def hourly(self, cloud: Cloud | str, region: str, group: NodeGroup) -> float:
        """USD per hour of one node of ``group`` in ``region``; SimulationError naming what is missing."""
        table = self.region(cloud, region)
        capacity = capacity_of(group)

        def pick(prices: dict[str, HourlyPrice], key: str, what: str) -> float:
            price = prices.get(key)
            if price is None:
                kind = "gpus" if what == "GPU" else "machines"
                where = [t.region for t in (self.gcp if Cloud(cloud) is Cloud.GCP else self.aws) if key in getattr(t, kind)]
                have = f"it prices it in {len(where)} regions: " + ", ".join(where) if where else "it prices it in no region"
                raise SimulationError(
                    f"the price table has no {what} {key} in {cloud} {region} ({have}); choose a type offered there or add it with --prices FILE"
                )
            value: float | None = getattr(price, capacity)
            if value is None:
                hint = (
                    " (the shipped table's sources publish no flex-start price: give the DWS Defined Duration SKUs' price)"
                    if group.flex_start
                    else " (the shipped table's sources publish no capacity-block price: give the EC2 Capacity Blocks pricing page's)"
                    if group.capacity_block
                    else ""
                )
                raise SimulationError(
                    f"the price table has no {capacity.replace('_', '-')} price for {what} {key} ({cloud} {region}); add it with --prices FILE{hint}"
                )
            return value

        def zoned(prices: dict[str, HourlyPrice], key: str, what: str) -> float:
            price = prices.get(key)
            listed = [price.spot_zones[z] for z in group.zones if z in price.spot_zones] if group.spot and price else []
            # The autoscaler spreads a group's nodes over its zones: the mean is the price of a node of it.
            return sum(listed) / len(listed) if listed else pick(prices, key, what)

        total = zoned(table.machines, group.machine_type, "machine type")
        if Cloud(cloud) is Cloud.GCP and group.gpus_per_node and group.machine_type.startswith("n1-"):
            # GCP bills an N1 machine and each GPU attached to it apart; A2, A3 and G2 prices hold their GPUs.
            total += group.gpus_per_node * zoned(table.gpus, group.accelerator or "", "GPU")
        return total


def capacity_of(group: NodeGroup) -> str:
    """The price a node of ``group`` pays (HourlyPrice's field): spot, flex_start, capacity_block, or on_demand
    (on-demand and reservation rungs: a reservation is billed at the on-demand rate, Compute Engine's reservations
    overview, "Reservation billing"; an EC2 On-Demand Capacity Reservation likewise, EC2's "Capacity Reservation
    pricing and billing")."""
    return "spot" if group.spot else "flex_start" if group.flex_start else "capacity_block" if group.capacity_block else "on_demand"


@functools.cache
def _shipped() -> PriceTable:
    return PriceTable.model_validate(json.loads(SHIPPED.read_text(encoding="utf-8")))


@dataclass
class CostLine:
    machine_type: str
    capacity: str
    node_hours: float
    usd_per_hour: float
    usd: float


@dataclass
class Cost:
    currency: str
    prices_date: str
    region: str
    hours: float
    lines: list[CostLine]
    cluster_usd: float
    total_usd: float
    usd_per_day: float
    gpu_hours_paid: float
    """GPU node-hours from scale-up request to removal, times their GPUs."""
    gpu_hours_used: float
    """GPU-hours held by running pods (the report's utilised)."""
    spot_share: float
    """Share of the GPU node-hours on spot capacity (0..1)."""


def reserved_hours(intervals: list[tuple[float, float]], reserved: int) -> tuple[float, float]:
    """A reservation's node-hours over [start, end) intervals of its nodes: (those within its ``reserved`` instances,
    those beyond them: at any moment the nodes past the reservation's count)."""
    events = sorted([(a, 1) for a, b in intervals if b > a] + [(b, -1) for a, b in intervals if b > a])
    within = beyond = 0.0
    count, last = 0, 0.0
    for t, step in events:
        within += min(count, reserved) * (t - last) / 3600
        beyond += max(0, count - reserved) * (t - last) / 3600
        count, last = count + step, t
    return within, beyond


def cost_of(trace: Trace, inputs: ModelInputs, prices: PriceTable, used_gpu_hours: float) -> Cost:
    """What the run paid: each node from its scale-up request to its removal at its group's rate (spot, flex-start or
    on-demand), and each reservation rung's instances for the whole run whether nodes used them or not, at the
    on-demand rate (a capacity block's for its window, the whole run, at its capacity-block price), its nodes
    beyond them (any reservation) at on-demand."""
    lines: dict[tuple[str, str], CostLine] = {}
    paid = spot = 0.0

    def bill(group: NodeGroup, capacity: str, hours: float, rate: float) -> None:
        nonlocal paid, spot
        line = lines.setdefault((group.machine_type, capacity), CostLine(group.machine_type, capacity, 0.0, rate, 0.0))
        line.node_hours += hours
        line.usd += hours * rate
        paid += hours * group.gpus_per_node
        if group.spot:
            spot += hours * group.gpus_per_node

    reserved: dict[str, list[tuple[float, float]]] = {g.name: [] for g in inputs.groups if g.reserved is not None}
    for node in trace.nodes:
        if node.failed:
            continue  # no capacity was given: nothing to pay
        end = min(node.removed if node.removed is not None else trace.horizon, trace.horizon)
        group = node.group
        if group.reserved is not None:
            reserved.setdefault(group.name, []).append((node.requested, end))
            continue
        rate = prices.hourly(inputs.cloud, inputs.region, group)
        bill(group, capacity_of(group).replace("_", "-"), max(0.0, end - node.requested) / 3600, rate)
    for group in inputs.groups:
        if group.reserved is None:
            continue
        rate = prices.hourly(inputs.cloud, inputs.region, group)
        _, beyond = reserved_hours(reserved[group.name], group.reserved)
        bill(group, "capacity-block" if group.capacity_block else "reservation", group.reserved * trace.horizon / 3600, rate)
        if beyond:
            bill(group, "on-demand", beyond, rate)
    table = prices.region(inputs.cloud, inputs.region)
    hours = trace.horizon / 3600
    cluster = hours * table.cluster_per_hour
    total = cluster + sum(line.usd for line in lines.values())
    return Cost(
        currency=prices.currency,
        prices_date=prices.date,
        region=table.region,
        hours=hours,
        lines=sorted(lines.values(), key=lambda x: -x.usd),
        cluster_usd=cluster,
        total_usd=total,
        usd_per_day=total / hours * 24 if hours else 0.0,
        gpu_hours_paid=paid,
        gpu_hours_used=used_gpu_hours,
        spot_share=spot / paid if paid else 0.0,
    )
