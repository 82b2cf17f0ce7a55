"""The price table: every region it holds prices a stack there, the sources it is built from, and
`gpu-platform prices refresh` against the providers' APIs (AWS: moto's EC2 and botocore's Stubber
with the Price List API's own response shape; GCP: google-cloud-billing's own Sku types)."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber
from moto import mock_aws

from gpu_platform.components.catalog.aws import AWS_INSTANCE_TYPES
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.infra.cli import main
from gpu_platform.infra.simulate.cluster import model_inputs
from gpu_platform.infra.simulate.inputs import NodeGroup, Resources
from gpu_platform.infra.simulate.price_sources import (
    BUILD_SOURCES,
    aws_from_skypilot,
    catalog_types,
    gcp_gpus_from_skypilot,
    gcp_machines_from_cyclenerd,
    kept_sources,
    table_json,
    table_of,
)
from gpu_platform.infra.simulate.prices import SHIPPED, HourlyPrice, PriceTable
from gpu_platform.infra.simulate.refresh import CloudError, aws_prices, refreshed_table
from gpu_platform.infra.simulate.runs import run
from gpu_platform.infra.simulate.settings import ModelSettings, SimulationError
from gpu_platform.infra.simulate.workloads import DeepDive, deep_dive, repeat
from gpu_platform.infra.stack.read import read_stack_file, stack_config_from
from tests.conftest import PROJECT_DIR

SHIPPED_TABLE = PriceTable.shipped()


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# Every region of the table prices a stack there -------------------------------------------------


def _gke_stack(region: str, prices: Any) -> Any:
    """dev-gke moved to ``region``: its GPU pool on a GPU type priced there, its CPU pools on types priced there."""
    raw, secret = read_stack_file(PROJECT_DIR, "dev-gke")
    raw = copy.deepcopy(raw)
    raw["gcp:region"] = region
    gke = raw["gpu-platform:gke"]
    gke["location"] = region
    gke.pop("node_locations")
    gke.pop("scheduler_pool")
    table = prices.region("gcp", region)
    pool = gke["gpu_pools"][0]
    for key in ("accelerator_type", "accelerator_count", "driver_version"):
        pool.pop(key, None)
    # One GPU type the region prices: G2 (L4), A2 (A100), A3 (H100) built in, or N1 with an attached GPU.
    built_in = {"g2-standard-4": "nvidia-l4", "a2-highgpu-1g": "nvidia-tesla-a100", "a3-highgpu-1g": "nvidia-h100-80gb"}
    machine = next((m for m in built_in if m in table.machines), None)
    if machine is not None:
        pool.update(machine_type=machine, accelerator_type=built_in[machine])
    else:
        pool.update(machine_type="n1-standard-8", accelerator_type=next(iter(table.gpus)), accelerator_count=1)
    pool.update(capacity="spot_then_on_demand", driver_version="LATEST")
    gke["system_pool"]["machine_type"] = next(m for m in ("e2-standard-4", "n2-standard-4", "n1-standard-4") if m in table.machines)
    return stack_config_from(raw, secret, "dev-gke")


def _eks_stack(region: str, prices: Any) -> Any:
    """dev-eks moved to ``region``: its GPU classes on a GPU type priced there, its system group on a CPU type."""
    raw, secret = read_stack_file(PROJECT_DIR, "dev-eks")
    raw = copy.deepcopy(raw)
    eks = raw["gpu-platform:eks"]
    eks["region"] = region
    eks.pop("zones")
    table = prices.region("aws", region)
    gpu = next(t for t in sorted(table.machines) if t.startswith(("g", "p")))
    cpu = next(t for t in sorted(table.machines) if t.startswith(("m", "t")))
    eks["system_node_group"]["instance_types"] = [cpu]
    for cls in raw["gpu-platform:eks_node_groups"]["classes"]:
        cls["instance_types"] = [gpu]
    return stack_config_from(raw, secret, "dev-eks")


@pytest.mark.parametrize("cloud", [Cloud.GCP, Cloud.AWS])
def test_every_region_of_the_table_prices_a_stack_there(cloud: Cloud) -> None:
    """For each region the shipped table holds, a stack config there (a GPU type it prices, spot and
    on-demand groups) passes the price lookup simulate makes before it runs (every group, both capacities)."""
    tables = SHIPPED_TABLE.gcp if cloud is Cloud.GCP else SHIPPED_TABLE.aws
    assert tables
    for table in tables:
        stack = (_gke_stack if cloud is Cloud.GCP else _eks_stack)(table.region, SHIPPED_TABLE)
        inputs = model_inputs(stack, ModelSettings())
        assert inputs.region == table.region
        assert any(g.gpus_per_node for g in inputs.groups) and any(g.spot for g in inputs.groups)
        for group in inputs.groups:
            assert SHIPPED_TABLE.hourly(cloud, table.region, group) > 0, (table.region, group.machine_type)


def test_the_table_covers_every_catalog_gpu_machine_type_somewhere() -> None:
    """Each GPU machine type of the GKE catalog is priced in at least one region (a3-edgegpu-8g is the
    exception the source lacks); each GPU N1 machines attach likewise."""
    machines, gpus = catalog_types(Cloud.GCP)
    priced = {m for t in SHIPPED_TABLE.gcp for m in t.machines}
    gpu_machines = {m for m in machines if m.startswith(("a2-", "a3-", "g2-"))}
    assert gpu_machines - priced == {"a3-edgegpu-8g"}
    assert set(machines) - gpu_machines <= priced
    assert set(gpus) == {g for t in SHIPPED_TABLE.gcp for g in t.gpus}
    assert len(SHIPPED_TABLE.gcp) >= 40  # every GCP region with Compute Engine prices


def test_europe_west4_simulates_end_to_end(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The issue's example: a GKE stack in europe-west4 simulates with the shipped prices, costed there."""
    out = tmp_path / "c.json"
    code, _, err = _cli(
        [
            "simulate",
            "dev-gke",
            "--set",
            "gke.location=europe-west4",
            "--set",
            "gke.node_locations=[europe-west4-a, europe-west4-b]",
            "--json",
            str(out),
            "--project-dir",
            str(PROJECT_DIR),
        ],
        capsys,
    )
    assert code == 0, err
    cost = json.loads(out.read_text())["cost"]
    assert cost["region"] == "europe-west4" and cost["total_usd"] > 0
    t4 = SHIPPED_TABLE.region("gcp", "europe-west4")
    assert t4.gpus["nvidia-tesla-t4"].on_demand == 0.35


# The lookup's rules -----------------------------------------------------------------------------


def _group(machine: str, *, spot: bool, zones: tuple[str, ...], gpus: int = 0, accelerator: str | None = None) -> NodeGroup:
    return NodeGroup(
        name="g",
        pool="g",
        role="gpu",
        machine_type=machine,
        allocatable=Resources(cpu=4, memory=16000, gpus=gpus),
        gpus_per_node=gpus,
        accelerator=accelerator,
        spot=spot,
        zones=zones,
    )


def _table(**aws_machines: HourlyPrice) -> PriceTable:
    return PriceTable.model_validate(
        {
            "date": "2026-01-01",
            "sources": ["test"],
            "aws": [{"region": "us-west-2", "machines": {k.replace("_", "."): v.model_dump() for k, v in aws_machines.items()}}],
        }
    )


def test_spot_is_the_mean_of_the_group_s_zones_listed() -> None:
    prices = _table(g5_xlarge=HourlyPrice(on_demand=1.0, spot=0.5, spot_zones={"us-west-2a": 0.3, "us-west-2b": 0.5, "us-west-2c": 0.9}))
    assert prices.hourly("aws", "us-west-2", _group("g5.xlarge", spot=True, zones=("us-west-2a", "us-west-2b"))) == pytest.approx(0.4)
    # A zone the table does not list counts for nothing; none listed: the region's spot.
    assert prices.hourly("aws", "us-west-2", _group("g5.xlarge", spot=True, zones=("us-west-2c", "us-west-2d"))) == pytest.approx(0.9)
    assert prices.hourly("aws", "us-west-2", _group("g5.xlarge", spot=True, zones=("us-west-2d",))) == pytest.approx(0.5)
    assert prices.hourly("aws", "us-west-2", _group("g5.xlarge", spot=False, zones=("us-west-2a",))) == pytest.approx(1.0)


def test_a_region_or_type_the_table_lacks_is_one_line_naming_it() -> None:
    prices = _table(g5_xlarge=HourlyPrice(on_demand=1.0))
    with pytest.raises(SimulationError) as exc:
        prices.hourly("aws", "eu-west-1", _group("g5.xlarge", spot=False, zones=("eu-west-1a",)))
    assert exc.value.lines == [
        "the price table (2026-01-01) has no aws prices for region eu-west-1 (it has 1 regions: us-west-2); "
        "write them with `gpu-platform prices refresh --cloud aws` or give --prices FILE"
    ]
    with pytest.raises(SimulationError, match=r"^the price table has no spot price for machine type g5.xlarge \(aws us-west-2\)"):
        prices.hourly("aws", "us-west-2", _group("g5.xlarge", spot=True, zones=("us-west-2a",)))
    # A type the region's prices lack altogether: named with the regions that price it.
    with pytest.raises(SimulationError) as exc:
        prices.hourly("aws", "us-west-2", _group("g6.xlarge", spot=False, zones=("us-west-2a",)))
    assert exc.value.lines == [
        "the price table has no machine type g6.xlarge in aws us-west-2 (it prices it in no region); choose a type offered there or add it with --prices FILE"
    ]
    with pytest.raises(
        SimulationError,
        match=r"^the price table has no machine type g6.xlarge in aws eu-west-1 \(it prices it in "
        r"12 regions: .*us-west-2\); choose a type offered there",
    ):
        SHIPPED_TABLE.hourly("aws", "eu-west-1", _group("g6.xlarge", spot=True, zones=("eu-west-1a",)))


def test_an_n1_machine_pays_its_attached_gpus_apart() -> None:
    table = SHIPPED_TABLE.region("gcp", "us-central1")
    group = _group("n1-standard-4", spot=False, zones=("us-central1-b",), gpus=2, accelerator="nvidia-tesla-t4")
    assert SHIPPED_TABLE.hourly("gcp", "us-central1", group) == pytest.approx(
        table.machines["n1-standard-4"].on_demand + 2 * table.gpus["nvidia-tesla-t4"].on_demand
    )
    # A G2 machine's price holds its L4: nothing is added.
    g2 = _group("g2-standard-4", spot=True, zones=("us-central1-b",), gpus=1, accelerator="nvidia-l4")
    assert SHIPPED_TABLE.hourly("gcp", "us-central1", g2) == table.machines["g2-standard-4"].spot


# The shipped file and how it is built -----------------------------------------------------------


def test_the_shipped_file_is_the_builder_s_canonical_form_and_names_its_pinned_sources() -> None:
    assert SHIPPED.read_bytes() == table_json(SHIPPED_TABLE)
    assert SHIPPED.stat().st_size < 200_000
    for source in BUILD_SOURCES[:2]:  # the GCP part is built from these, at these commits
        assert any(source.commit in line and source.repo in line for line in SHIPPED_TABLE.sources)
    assert all(t.cluster_per_hour == 0.10 for t in [*SHIPPED_TABLE.gcp, *SHIPPED_TABLE.aws])


CYCLENERD = {
    "about": {"generated": "Thu Jul 30 06:13:17 2026"},
    "compute": {
        "instance": {
            "g2-standard-4": {
                "cpu": 4,
                "ram": 16,
                "l4": 1,
                "cost": {
                    "europe-west4": {"hour": 0.742916046, "hour_spot": 0.38986, "month": 542.3},
                    "us-central1": {"hour": 0.706832255, "hour_spot": 0.397336},
                },
            },
            "c3-standard-4": {"cost": {"europe-west4": {"hour": 0.2}}},  # not in the catalog: left out
            "e2-standard-4": {"cost": {"europe-west4": {"hour": 0.14754408, "hour_spot": 0.070528}}},
        }
    },
}

SKYPILOT_GCP = """InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice
a2-highgpu-1g,12.0,85.0,,,,europe-west4,europe-west4-a,0.81406,0.31824
,,,P100,2,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]},europe-west4,europe-west4-a,3.066,0.786
,,,T4,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]},europe-west4,europe-west4-a,0.35,0.14
,,,T4,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]},europe-west4,europe-west4-b,0.35,0.14
,,,T4,4,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]},europe-west4,europe-west4-a,1.4,0.56
,,,L4,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 24576}}]},europe-west4,europe-west4-a,0.7,0.2
,,,tpu-v2-8,1,tpu-v2-8,europe-west4,europe-west4-a,4.95,1.26225
"""

SKYPILOT_AWS = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone
g5.xlarge,A10G,1.0,4.0,16.0,"{'Gpus': [{'Name': 'A10G', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 24576}}], 'TotalGpuMemoryInMiB': 24576}",1.006,0.4100,us-west-2,usw2-az1
g5.xlarge,A10G,1.0,4.0,16.0,"{'Gpus': [{'Name': 'A10G', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 24576}}], 'TotalGpuMemoryInMiB': 24576}",1.006,0.3900,us-west-2,usw2-az2
g5.xlarge,A10G,1.0,4.0,16.0,"{'Gpus': [{'Name': 'A10G', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 24576}}], 'TotalGpuMemoryInMiB': 24576}",1.006,0.5000,us-west-2,usw2-az3
i7i.large,,,2.0,16.0,,0.1888,0.030300,us-east-1,use1-az1
m6i.large,,,2.0,8.0,,0.096,,us-west-2,usw2-az1
"""


def test_the_builder_reads_its_sources_by_their_rules() -> None:
    machines = gcp_machines_from_cyclenerd(CYCLENERD)
    assert machines["europe-west4"]["g2-standard-4"] == HourlyPrice(on_demand=0.74292, spot=0.38986)
    assert set(machines["europe-west4"]) == {"g2-standard-4", "e2-standard-4"}
    gpus = gcp_gpus_from_skypilot(SKYPILOT_GCP)
    # One GPU costs a row's price over its count; the N1 GPUs only (L4 is G2's, built in; no TPU, no machine).
    assert gpus == {
        "europe-west4": {
            "nvidia-tesla-p100": HourlyPrice(on_demand=1.533, spot=0.393),
            "nvidia-tesla-t4": HourlyPrice(on_demand=0.35, spot=0.14),
        }
    }
    aws = aws_from_skypilot(SKYPILOT_AWS)
    # Spot: the median of the zones (their IDs name no zone a stack can); types outside the catalog left out.
    assert aws == {"us-west-2": {"g5.xlarge": HourlyPrice(on_demand=1.006, spot=0.41), "m6i.large": HourlyPrice(on_demand=0.096)}}
    table = table_of("d", ["s"], machines, gpus, aws)
    assert PriceTable.model_validate(json.loads(table_json(table))) == table
    with pytest.raises(SimulationError, match="gcp-gpus: not a SkyPilot vms.csv .no column"):
        gcp_gpus_from_skypilot("a,b\n1,2\n")
    with pytest.raises(SimulationError, match="gcp-machines: not Cyclenerd's pricing.yml"):
        gcp_machines_from_cyclenerd({"compute": {}})


def test_prices_build_writes_the_table_from_local_copies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pricing.yml").write_text(yaml.safe_dump(CYCLENERD))
    (tmp_path / "gcp.csv").write_text(SKYPILOT_GCP)
    (tmp_path / "aws.csv").write_text(SKYPILOT_AWS)
    out = tmp_path / "prices.json"
    code, _, err = _cli(
        [
            "prices",
            "build",
            "--file",
            f"gcp-machines={tmp_path / 'pricing.yml'}",
            "--file",
            f"gcp-gpus={tmp_path / 'gcp.csv'}",
            "--file",
            f"aws={tmp_path / 'aws.csv'}",
            "--date",
            "2026-07-30",
            "--out",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    table = PriceTable.model_validate(json.loads(out.read_text()))
    assert [t.region for t in table.gcp] == ["europe-west4", "us-central1"] and [t.region for t in table.aws] == ["us-west-2"]
    assert table.date == "2026-07-30" and any(BUILD_SOURCES[2].commit in s for s in table.sources)
    code, _, err = _cli(["prices", "build", "--file", "nope=x", "--date", "d", "--out", str(out)], capsys)
    assert code == 2 and err.strip() == "gpu-platform: --file nope=x: KEY=PATH with KEY one of aws, gcp-gpus, gcp-machines"


# The AWS part: every region the source prices a catalog GPU type in ------------------------------

# SkyPilot's aws/vms.csv shape (the columns the builder reads; GpuInfo and the like left empty, as the
# builder ignores them): the rule "a region of the table is one the source prices a catalog GPU type in".
SKYPILOT_AWS_REGIONS = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone
g6.xlarge,,,,,,0.8048,0.3814,us-west-2,usw2-az1
g6.xlarge,,,,,,0.8048,,us-west-2,usw2-az2
g6.xlarge,,,,,,0.8048,0.5386,us-west-2,usw2-az3
g6.xlarge,,,,,,0.8048,0.3961,us-west-2,usw2-az4
m6i.large,,,,,,0.096,0.0375,us-west-2,usw2-az1
g5.xlarge,,,,,,1.123,0.5181,eu-west-1,euw1-az1
g5.xlarge,,,,,,1.123,0.5149,eu-west-1,euw1-az2
g5.xlarge,,,,,,1.123,0.5122,eu-west-1,euw1-az3
m6i.large,,,,,,0.107,0.0524,eu-west-1,euw1-az1
g4dn.xlarge,,,,,,0.71,0.2306,ap-northeast-1,apne1-az1
g4dn.xlarge,,,,,,0.71,0.2157,ap-northeast-1,apne1-az4
p4d.24xlarge,,,,,,39.32,,ap-south-1,aps1-az1
p4d.24xlarge,,,,,,39.32,,ap-south-1,aps1-az2
m6i.large,,,,,,0.1177,0.0369,me-central-1,mec1-az1
g4ad.xlarge,,,,,,0.37853,0.1445,us-east-1,use1-az1
"""


def test_the_aws_part_holds_every_region_the_source_prices_a_catalog_gpu_type_in() -> None:
    aws = aws_from_skypilot(SKYPILOT_AWS_REGIONS)
    table = table_of("d", ["s"], {}, {}, aws)
    # A region with a catalog GPU type is in; a region with only CPU types (me-central-1) or only types
    # outside the catalog (us-east-1's g4ad) is not.
    assert [t.region for t in table.aws] == ["ap-northeast-1", "ap-south-1", "eu-west-1", "us-west-2"]
    west = table.region("aws", "us-west-2").machines
    # Spot is the median of the zones that have one (an empty zone is no price); on-demand the region's.
    assert west["g6.xlarge"] == HourlyPrice(on_demand=0.8048, spot=0.3961)
    assert table.region("aws", "eu-west-1").machines["g5.xlarge"] == HourlyPrice(on_demand=1.123, spot=0.5149)
    assert table.region("aws", "ap-northeast-1").machines["g4dn.xlarge"].spot == pytest.approx((0.2306 + 0.2157) / 2)
    # A type no zone has a spot price for is on-demand only (a spot group of it is refused by name).
    assert table.region("aws", "ap-south-1").machines["p4d.24xlarge"] == HourlyPrice(on_demand=39.32)
    # The build does not depend on the order of the source's rows.
    header, *rows = SKYPILOT_AWS_REGIONS.splitlines()
    shuffled = "\n".join([header, *rows[::-1], ""])
    assert table_json(table_of("d", ["s"], {}, {}, aws_from_skypilot(shuffled))) == table_json(table)


def test_the_shipped_aws_part_is_every_region_of_its_pinned_source() -> None:
    """22 regions (every region skypilot-catalog 27f67dd4's aws/vms.csv prices a catalog GPU type in), each
    with a GPU type and a CPU type for a system group; the source cited at its commit."""
    regions = [t.region for t in SHIPPED_TABLE.aws]
    assert len(regions) == 22 and {"us-west-2", "eu-west-1", "ap-northeast-1", "ap-northeast-2", "us-east-1"} <= set(regions)
    assert any(BUILD_SOURCES[2].repo in s and BUILD_SOURCES[2].commit in s for s in SHIPPED_TABLE.sources)
    gpu_types = {name for name, shape in AWS_INSTANCE_TYPES.items() if shape.gpu}
    for t in SHIPPED_TABLE.aws:
        assert set(t.machines) & gpu_types and "m6i.large" in t.machines, t.region
        for name, price in t.machines.items():
            assert price.on_demand > 0 and (price.spot is None or price.spot <= price.on_demand + 1e-4), (t.region, name)
    assert set(SHIPPED_TABLE.region("aws", "us-west-2").machines) >= {"g6.xlarge", "g5.xlarge", "g6e.xlarge", "p5.48xlarge"}


@pytest.mark.parametrize(("region", "gpu"), [("us-west-2", "g6.xlarge"), ("eu-west-1", "g5.xlarge")])
def test_an_eks_stack_simulates_with_shipped_prices_in(region: str, gpu: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """dev-eks moved to ``region`` on ``gpu`` simulates end to end, each node-hour costed at the shipped price there."""
    out = tmp_path / "c.json"
    code, _, err = _cli(
        [
            "simulate",
            "dev-eks",
            "--hours",
            "1",
            "--set",
            f"eks.region={region}",
            "--set",
            f"eks.zones=[{region}a, {region}b]",
            "--set",
            f"eks_node_groups.classes[t4].instance_types=[{gpu}]",
            "--set",
            f"eks_node_groups.classes[scheduler].instance_types=[{gpu}]",
            "--json",
            str(out),
            "--project-dir",
            str(PROJECT_DIR),
        ],
        capsys,
    )
    assert code == 0, err
    cost = json.loads(out.read_text())["cost"]
    table = SHIPPED_TABLE.region("aws", region).machines
    assert cost["region"] == region and cost["total_usd"] > 0
    rates = {(line["machine_type"], line["capacity"]): line["usd_per_hour"] for line in cost["lines"]}
    assert rates[(gpu, "on-demand")] == table[gpu].on_demand and rates[(gpu, "spot")] == table[gpu].spot
    assert rates[("m6i.large", "on-demand")] == table["m6i.large"].on_demand


def test_prices_build_keeps_the_gcp_part_of_a_table_and_its_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--gcp-from keeps one cloud's part as it is, with the source lines it was read from; the AWS part
    comes from the file given; --note lines follow the sources; the same inputs write the same bytes."""
    (tmp_path / "aws.csv").write_text(SKYPILOT_AWS_REGIONS)
    outs = [tmp_path / "one.json", tmp_path / "two.json"]
    for out in outs:
        code, _, err = _cli(
            [
                "prices",
                "build",
                "--file",
                f"aws={tmp_path / 'aws.csv'}",
                "--gcp-from",
                str(SHIPPED),
                "--note",
                "a note",
                "--date",
                "d",
                "--out",
                str(out),
            ],
            capsys,
        )
        assert code == 0, err
    assert outs[0].read_bytes() == outs[1].read_bytes()
    table = PriceTable.model_validate(json.loads(outs[0].read_text()))
    assert table.gcp == SHIPPED_TABLE.gcp
    assert [t.region for t in table.aws] == ["ap-northeast-1", "ap-south-1", "eu-west-1", "us-west-2"]
    assert table.sources[:3] == [BUILD_SOURCES[0].cite(), BUILD_SOURCES[1].cite(), BUILD_SOURCES[2].cite()]
    assert table.sources[3] == "a note" and table.sources[4].startswith("control-plane fee")
    # The shipped table's AWS lines (its pinned file and the notes on it) are what --aws-from keeps.
    assert kept_sources(SHIPPED_TABLE, "aws") == [
        s for s in SHIPPED_TABLE.sources if s.startswith(("github.com/skypilot-org/skypilot-catalog/blob/27f67dd4", "AWS "))
    ]
    assert len(kept_sources(SHIPPED_TABLE, "aws")) == 3
    # A table of hand-written sources is kept as one line naming its date and every source.
    assert kept_sources(_table(g5_xlarge=HourlyPrice(on_demand=1.0)), "aws") == ["AWS part kept from a table of 2026-01-01, whose sources were: test"]
    code, _, err = _cli(
        [
            "prices",
            "build",
            "--file",
            f"aws={tmp_path / 'aws.csv'}",
            "--file",
            f"gcp-gpus={tmp_path / 'aws.csv'}",
            "--gcp-from",
            str(SHIPPED),
            "--date",
            "d",
            "--out",
            str(outs[0]),
        ],
        capsys,
    )
    assert code == 2 and err.strip() == ("gpu-platform: give the GCP part once: --file gcp-gpus=PATH or --gcp-from TABLE (kept), not both")


# prices refresh: AWS ----------------------------------------------------------------------------


def _product(instance_type: str, region: str, usd: str) -> str:
    """One Price List entry in the API's own shape (botocore's GetProducts example), for an EC2 instance."""
    sku = f"SKU{abs(hash((instance_type, region))) % 10**8}"
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "sku": sku,
                "attributes": {
                    "instanceType": instance_type,
                    "regionCode": region,
                    "location": region,
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                    "servicecode": "AmazonEC2",
                },
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    f"{sku}.JRTCKXETXF": {
                        "priceDimensions": {
                            f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "endRange": "Inf",
                                "beginRange": "0",
                                "appliesTo": [],
                                "description": f"${usd} per On Demand Linux",
                                "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                                "pricePerUnit": {"USD": usd},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                }
            },
            "version": "20261101000000",
            "publicationDate": "2026-11-01T00:00:00Z",
        }
    )


ON_DEMAND = {
    ("g5.xlarge", "us-west-2"): "1.0060000000",
    ("g6.xlarge", "us-west-2"): "0.8048000000",
    ("m6i.large", "us-west-2"): "0.0960000000",
    ("g5.xlarge", "eu-west-1"): "1.1230000000",
}


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # moto's public AMIs are off for every test (tests/conftest.py _moto_without_public_amis).
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)


def test_refresh_asks_the_price_list_and_each_zone_s_spot(aws_env: None) -> None:
    types, _ = catalog_types(Cloud.AWS)
    with mock_aws():
        pricing = boto3.client("pricing", region_name="us-east-1")
        stubber = Stubber(pricing)
        for name in types:
            items = [_product(t, r, usd) for (t, r), usd in ON_DEMAND.items() if t == name]
            stubber.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": items})
        stubber.activate()

        def client(service: str, region: str) -> Any:
            return pricing if service == "pricing" else boto3.client(service, region_name=region)

        prices = aws_prices(client, now=datetime(2026, 11, 25, tzinfo=UTC))
        stubber.assert_no_pending_responses()
        zones = {z["ZoneName"] for z in boto3.client("ec2", region_name="us-west-2").describe_availability_zones()["AvailabilityZones"]}
    assert set(prices) == {"us-west-2", "eu-west-1"}
    g5 = prices["us-west-2"]["g5.xlarge"]
    assert g5.on_demand == 1.006
    # moto's EC2 answers spot for each zone offering the type (at 0.00001): kept per zone name, the median as the region's.
    assert g5.spot_zones and set(g5.spot_zones) <= zones and g5.spot == 0.00001
    assert set(prices["us-west-2"]) == {"g5.xlarge", "g6.xlarge", "m6i.large"}


def test_refresh_with_aws_prices_a_g5_stack_in_us_west_2(aws_env: None) -> None:
    """A table refreshed for AWS (GCP kept from the shipped one) costs a g5 stack in us-west-2 end to end."""
    types, _ = catalog_types(Cloud.AWS)
    with mock_aws():
        pricing = boto3.client("pricing", region_name="us-east-1")
        stubber = Stubber(pricing)
        for name in types:
            stubber.add_response(
                "get_products", {"FormatVersion": "aws_v1", "PriceList": [_product(t, r, usd) for (t, r), usd in ON_DEMAND.items() if t == name]}
            )
        stubber.activate()
        table = refreshed_table(
            {Cloud.AWS},
            lambda s, r: pricing if s == "pricing" else boto3.client(s, region_name=r),
            None,
            SHIPPED_TABLE,
            now=datetime(2026, 11, 25, tzinfo=UTC),
        )
    assert table.gcp == SHIPPED_TABLE.gcp and table.date == "2026-11-25"
    raw, secret = read_stack_file(PROJECT_DIR, "prod-eks")
    raw = copy.deepcopy(raw)
    for cls in raw["gpu-platform:eks_node_groups"]["classes"]:
        cls["instance_types"] = ["g5.xlarge"]
        cls.pop("shape", None)
    raw["gpu-platform:eks"]["system_node_group"]["instance_types"] = ["m6i.large"]
    # prod-eks is provisioned by Karpenter (which simulate refuses) and its queues hold A10G quotas the
    # g5 classes' four-GPU maximum cannot: the price lookup is under test, on the cluster autoscaler, unqueued.
    raw["gpu-platform:eks_node_groups"].pop("provisioner", None)
    raw["gpu-platform:eks_node_groups"].pop("karpenter", None)
    raw.pop("gpu-platform:queues", None)
    inputs = model_inputs(stack_config_from(raw, secret, "prod-eks"), ModelSettings())
    jobs, horizon = repeat(deep_dive(DeepDive(), 0), 0.25)
    outcome = run(inputs, jobs, horizon, table)
    assert outcome.cost.region == "us-west-2" and outcome.cost.total_usd > 0
    assert {line.machine_type for line in outcome.cost.lines} <= {"g5.xlarge", "m6i.large"}


def test_refresh_without_credentials_is_one_line_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    out = tmp_path / "p.json"
    code, _, err = _cli(["prices", "refresh", "--cloud", "aws", "--out", str(out)], capsys)
    assert code == 4 and not out.exists()
    assert err.strip() == "gpu-platform: cannot ask AWS: no credentials (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"


def test_a_refusal_is_one_line(aws_env: None) -> None:
    pricing = boto3.client("pricing", region_name="us-east-1")
    stubber = Stubber(pricing)
    stubber.add_client_error("get_products", "AccessDeniedException", "User is not authorized to perform: pricing:GetProducts")
    stubber.activate()
    with pytest.raises(CloudError) as exc:
        aws_prices(lambda s, r: pricing)
    assert str(exc.value) == (
        "AWS refused GetProducts (on-demand g4dn.12xlarge): AccessDeniedException: User is not authorized to perform: pricing:GetProducts"
    )


# prices refresh: GCP ----------------------------------------------------------------------------
# google-cloud-billing's protos and the Pulumi SDK's both define google.rpc.Status: one process
# cannot import both (protobuf refuses the second). The CLI imports the billing client only for
# `prices refresh --cloud gcp`, which loads nothing of Pulumi's; the tests run in a process of
# their own (tests/infra/billing_check.py), as the command does.

needs_billing = pytest.mark.skipif(
    importlib.util.find_spec("google.cloud.billing_v1") is None, reason="google-cloud-billing (the prices extra) is not installed"
)


def _in_own_process(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


BILLING_CASES = ("machines_from_their_skus", "a_google_api_error_is_one_line")


@pytest.fixture(scope="module")
def billing_checks() -> subprocess.CompletedProcess[str]:
    """tests/infra/billing_check.py's cases, all in one process of their own."""
    return _in_own_process("-m", "tests.infra.billing_check", *BILLING_CASES)


@needs_billing
@pytest.mark.parametrize("case", BILLING_CASES)
def test_refresh_prices_gcp(case: str, billing_checks: subprocess.CompletedProcess[str]) -> None:
    """tests/infra/billing_check.py: machine types priced from their SKUs (google-cloud-billing's own Sku
    messages), and a Google API error as one line."""
    done = billing_checks
    assert done.returncode == 0 and f"ok {case}" in done.stdout.splitlines(), done.stderr[-3000:]


@needs_billing
def test_refresh_gcp_without_credentials_is_one_line_exit_4(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    env = {"CLOUDSDK_CONFIG": str(tmp_path / "gcloud"), "NO_GCE_CHECK": "True", "GOOGLE_APPLICATION_CREDENTIALS": ""}
    done = _in_own_process("-c", "from gpu_platform.infra.cli import run; run()", "prices", "refresh", "--cloud", "gcp", "--out", str(out), env=env)
    assert done.returncode == 4 and not out.exists(), done.stderr
    assert done.stderr.startswith("gpu-platform: cannot ask Google Cloud Billing: no credentials") and len(done.stderr.strip().splitlines()) == 1
