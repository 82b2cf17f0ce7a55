"""`gpu-platform preflight gke` (issue 29 item 6): the zones that offer each pool's GPU (offline from the shipped
table, online from the Compute API), the regional GPU, preemptible GPU and CPU quotas; and the one verdict on a
GPU pool that lists a zone without its GPU (issue 34: an error everywhere, from catalog.gpu_zones.absent_gpu_zones). The online tests give preflight clients
shaped like google-cloud-compute's AcceleratorTypesClient and RegionsClient, answering with the library's
own message types in a fresh interpreter (test_the_library_s_own_types_and_errors): google-cloud-compute's
google.rpc.status_pb2 cannot be loaded beside the Pulumi SDK's copy of that proto in one process, so the
in-process fakes answer with objects carrying the same fields (AcceleratorType.name; Quota.metric, limit,
usage)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError

from gpu_platform.components.catalog.gpu_zones import absent_gpu_zones, gpu_zone_notice, zones_offering
from gpu_platform.components.catalog.gpus import GCP_ACCELERATORS
from gpu_platform.components.catalog.zones import zones_of
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.infra.preflight import CloudError
from gpu_platform.infra.preflight_gke import GPU_QUOTAS, ComputeClients, preflight_gke
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from tests.conftest import PROJECT_DIR
from tests.factories import a100_pool, stack

H100 = {
    "name": "h100",
    "machine_type": "a3-highgpu-8g",
    "accelerator_type": "nvidia-h100-80gb",
    "autoscaling": {"scope": "total", "min_nodes": 0, "max_nodes": 2},
}


def config(**gke: Any) -> StackConfig:
    return StackConfig.model_validate({**stack(**gke), "monitoring": {"enabled": False}})


def lines(findings: list[Any]) -> list[str]:
    return [str(f) for f in findings]


# --- The shipped table --------------------------------------------------------------------------


def test_the_table_covers_every_gke_gpu_or_says_it_does_not() -> None:
    data = json.loads((PROJECT_DIR / "components" / "catalog" / "data" / "gpu_zones.json").read_text())
    listed, uncovered = set(data["gcp"]), set(data["not_covered"])
    assert listed | uncovered == set(GCP_ACCELERATORS) and not listed & uncovered
    assert data["date"] and data["sources"]
    assert set(GPU_QUOTAS) == set(GCP_ACCELERATORS)  # every catalog GPU has its quota metric


def test_every_zone_of_the_table_is_a_zone_of_its_region() -> None:
    for accelerator in json.loads((PROJECT_DIR / "components" / "catalog" / "data" / "gpu_zones.json").read_text())["gcp"]:
        for zone in zones_offering(accelerator) or []:
            region = zone.rsplit("-", 1)[0]
            assert zone in (zones_of(Cloud.GCP, region) or [zone]), (accelerator, zone)


def test_the_verdict_names_the_zone_the_gpu_and_the_zones_that_have_it() -> None:
    assert absent_gpu_zones("nvidia-h100-80gb", ["us-central1-a", "us-central1-f"]) == [
        (
            "us-central1-f",
            "zone us-central1-f does not offer nvidia-h100-80gb (components/catalog/data/gpu_zones.json, 2026-11): GKE cannot "
            "create a node pool whose GPU is missing from one of its zones; zones of us-central1 that do: us-central1-a, us-central1-b, us-central1-c",
        )
    ]
    assert absent_gpu_zones("nvidia-h100-80gb", ["us-central1-a"]) == []
    assert "no zone of southamerica-east1 does" in absent_gpu_zones("nvidia-h100-80gb", ["southamerica-east1-a"])[0][1]
    # Another source of which zones offer it (the Compute API, online), the same verdict.
    assert absent_gpu_zones("nvidia-h100-80gb", ["us-central1-a"], ["us-central1-b"], "the Compute API")[0][1].startswith(
        "zone us-central1-a does not offer nvidia-h100-80gb (the Compute API): GKE cannot create"
    )
    # An accelerator the data does not list is not judged offline but said to be unchecked (every catalog GPU is listed now).
    assert absent_gpu_zones("nvidia-tesla-k80", ["us-central1-a"]) == []
    assert "was not checked offline" in (gpu_zone_notice("k80", "nvidia-tesla-k80", ["us-central1-a"]) or "")
    assert gpu_zone_notice("h100", "nvidia-h100-80gb", ["us-central1-f"]) is None


def test_the_n1_gpus_are_listed_by_their_zones() -> None:
    """The GPUs N1 machines attach (T4, P4, P100, V100), from the source's accelerator rows: asia-northeast1
    offers T4 in zones a and c only; V100 is in europe-west4's three zones and no zone of asia-northeast1."""
    assert [z for z in zones_offering("nvidia-tesla-t4") or [] if z.startswith("asia-northeast1-")] == [
        "asia-northeast1-a",
        "asia-northeast1-c",
    ]
    ((zone, problem),) = absent_gpu_zones("nvidia-tesla-t4", ["asia-northeast1-a", "asia-northeast1-b"])
    assert zone == "asia-northeast1-b" and problem.endswith("zones of asia-northeast1 that do: asia-northeast1-a, asia-northeast1-c")
    assert absent_gpu_zones("nvidia-tesla-v100", ["europe-west4-c"]) == []
    assert "no zone of asia-northeast1 does" in absent_gpu_zones("nvidia-tesla-v100", ["asia-northeast1-a"])[0][1]
    assert len(zones_offering("nvidia-tesla-p4") or []) == 17 and len(zones_offering("nvidia-tesla-p100") or []) == 12


# --- One verdict: the stack's config (so the preview, the program and preflight) refuses it -------------


def refusal(**gke: Any) -> list[str]:
    with pytest.raises(ValidationError) as info:
        config(**gke)
    return format_validation_error(info.value, StackConfig)


def test_fails_when_a_gpu_pool_lists_a_zone_without_its_gpu() -> None:
    """An error at the key that lists the zone, naming the value and the zones that offer the GPU: the same line the
    preview, `pulumi up` and `preflight gke` give, refused before anything is registered."""
    ((_, problem),) = absent_gpu_zones("nvidia-h100-80gb", ["us-central1-f"])
    assert refusal(node_locations=["us-central1-a", "us-central1-f"], gpu_pools=[H100]) == [
        f'gke.node_locations[1]: pool h100: {problem} (got "us-central1-f")'
    ]
    # The pool's own node_locations, when it names them, is the key.
    pinned = {**H100, "node_locations": ["us-central1-f"]}
    assert refusal(node_locations=["us-central1-a", "us-central1-f"], gpu_pools=[pinned]) == [
        f'gke.gpu_pools[0].node_locations[0]: pool h100: {problem} (got "us-central1-f")'
    ]


def test_fails_when_a_t4_pool_is_in_a_zone_without_t4_and_passes_one_with_it() -> None:
    tokyo = {"location": "asia-northeast1"}
    ((_, problem),) = absent_gpu_zones("nvidia-tesla-t4", ["asia-northeast1-b"])
    assert refusal(**tokyo, node_locations=["asia-northeast1-a", "asia-northeast1-b"]) == [
        f'gke.node_locations[1]: pool t4: {problem} (got "asia-northeast1-b")'
    ]
    assert [n for n in config(**tokyo, node_locations=["asia-northeast1-a", "asia-northeast1-c"]).notices() if n.startswith("gke pool")] == []
    assert [n for n in config().notices() if n.startswith("gke pool")] == []  # the default: T4 in us-central1-b and -c


def test_fails_when_the_scheduler_pool_s_t4_is_missing_from_a_zone() -> None:
    """The scheduler pool has a GPU too (a T4 per node): the same verdict holds for it."""
    from tests.factories import t4_pool

    tokyo = {"location": "asia-northeast1", "node_locations": ["asia-northeast1-a", "asia-northeast1-b"]}
    ((_, problem),) = absent_gpu_zones("nvidia-tesla-t4", ["asia-northeast1-b"])
    assert refusal(**tokyo, gpu_pools=[t4_pool(node_locations=["asia-northeast1-a"])], scheduler_pool={}) == [
        f'gke.node_locations[1]: pool scheduler: {problem} (got "asia-northeast1-b")'
    ]
    assert refusal(**tokyo, gpu_pools=[t4_pool(node_locations=["asia-northeast1-a"])], scheduler_pool={"node_locations": ["asia-northeast1-b"]}) == [
        f'gke.scheduler_pool.node_locations[0]: pool scheduler: {problem} (got "asia-northeast1-b")'
    ]


def test_a_program_s_own_args_give_the_same_verdict() -> None:
    from gpu_platform.components.gke.args import GpuGkeClusterArgs

    data = stack(node_locations=["us-central1-a", "us-central1-f"], gpu_pools=[H100])["gke"]
    with pytest.raises(ValidationError) as info:
        GpuGkeClusterArgs.model_validate(data)
    ((_, problem),) = absent_gpu_zones("nvidia-h100-80gb", ["us-central1-f"])
    (error,) = info.value.errors()
    assert (error["loc"], error["msg"]) == (("node_locations", 1), f"pool h100: {problem}")


def test_preflight_gke_offline_refuses_it_with_the_same_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.cli import main
    from tests.infra.test_cli import project_with_stack

    def pin(config: dict[str, Any]) -> None:
        config["gpu-platform:gke"]["node_locations"] = ["us-central1-b", "us-central1-f"]
        config["gpu-platform:gke"]["gpu_pools"] = [H100]

    project = project_with_stack(tmp_path, "pinned", pin)
    assert main(["preflight", "gke", "pinned", "--offline", "--project-dir", str(project)]) == 2
    ((_, problem),) = absent_gpu_zones("nvidia-h100-80gb", ["us-central1-f"])
    assert f'gpu-platform:gke.node_locations[1]: pool h100: {problem} (got "us-central1-f")' in capsys.readouterr().err


def test_the_preview_says_what_it_could_not_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU the shipped data does not list (here T4, taken out of it) is named as unchecked, not passed."""
    from gpu_platform.components.catalog import gpu_zones

    data = {**gpu_zones._data(), "gcp": {k: v for k, v in gpu_zones._data()["gcp"].items() if k != "nvidia-tesla-t4"}}
    monkeypatch.setattr(gpu_zones, "_data", lambda: data)
    (line,) = [n for n in config().notices() if n.startswith("gke pool")]
    assert line.startswith("gke pool t4: whether zone us-central1-b, us-central1-c offers nvidia-tesla-t4 was not checked offline")
    assert not any(f.error for f in preflight_gke(config(), None, None))


# --- preflight gke offline ----------------------------------------------------------------------


def test_offline_says_which_gpus_the_table_does_not_list(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpu_platform.components.catalog import gpu_zones

    data = {**gpu_zones._data(), "gcp": {k: v for k, v in gpu_zones._data()["gcp"].items() if k != "nvidia-tesla-t4"}}
    monkeypatch.setattr(gpu_zones, "_data", lambda: data)
    (line, _) = lines(preflight_gke(config(), None, None))
    assert line == "ok: pool t4: nvidia-tesla-t4 not checked offline: the shipped GPU zone data (2026-11) does not list it; run preflight gke online"


def test_offline_checks_a_t4_pool_by_the_shipped_data() -> None:
    (line, _) = lines(preflight_gke(config(), None, None))
    assert line == "ok: pool t4: nvidia-tesla-t4 is offered in us-central1-b, us-central1-c by the shipped data (2026-11)"
    findings = preflight_gke(config(location="asia-northeast1", node_locations=["asia-northeast1-a", "asia-northeast1-c"]), None, None)
    assert lines(findings)[0] == "ok: pool t4: nvidia-tesla-t4 is offered in asia-northeast1-a, asia-northeast1-c by the shipped data (2026-11)"


def test_offline_passes_zones_that_offer_the_gpu() -> None:
    findings = preflight_gke(config(node_locations=["us-central1-a", "us-central1-c"], gpu_pools=[a100_pool()]), None, None)
    assert lines(findings)[0] == "ok: pool a100: nvidia-tesla-a100 is offered in us-central1-a, us-central1-c by the shipped data (2026-11)"
    assert not any(f.error for f in findings)


def test_offline_checks_every_zone_gke_may_pick_when_none_are_named() -> None:
    data = {**stack(gpu_pools=[H100]), "monitoring": {"enabled": False}}
    del data["gke"]["node_locations"]
    findings = preflight_gke(StackConfig.model_validate(data), None, None)
    (line,) = [str(f) for f in findings if "pool h100" in str(f)]
    ((_, problem),) = absent_gpu_zones("nvidia-h100-80gb", ["us-central1-f"])
    assert line == f"error: pool h100: {problem} (GKE may pick it in us-central1: set node_locations)"


# --- preflight gke online -----------------------------------------------------------------------


@dataclass
class AcceleratorType:
    """The fields of compute_v1.AcceleratorType preflight reads."""

    name: str
    zone: str


@dataclass
class Quota:
    """compute_v1.Quota."""

    metric: str
    limit: float
    usage: float


@dataclass
class Region:
    """compute_v1.Region (its quotas)."""

    name: str
    quotas: list[Quota] = field(default_factory=list)


class FakeAcceleratorTypes:
    """AcceleratorTypesClient.list(project=, zone=) as google-cloud-compute has it, from a table."""

    def __init__(self, offered: dict[str, list[str]], error: Exception | None = None) -> None:
        self.offered, self.error, self.asked = offered, error, []

    def list(self, *, project: str, zone: str) -> list[Any]:
        self.asked.append((project, zone))
        if self.error is not None:
            raise self.error
        return [AcceleratorType(name=name, zone=zone) for name in self.offered.get(zone, [])]


class FakeRegions:
    """RegionsClient.get(project=, region=) answering a Region with its quotas."""

    def __init__(self, quotas: dict[str, tuple[float, float]]) -> None:
        self.quotas = quotas

    def get(self, *, project: str, region: str) -> Any:
        return Region(name=region, quotas=[Quota(metric=m, limit=limit, usage=usage) for m, (limit, usage) in self.quotas.items()])


class FakeReservations:
    """ReservationsClient.list(project=, zone=): the reservations held in each (project, zone)."""

    def __init__(self, held: dict[tuple[str, str], list[Any]]) -> None:
        self.held, self.asked = held, []

    def list(self, *, project: str, zone: str) -> list[Any]:
        self.asked.append((project, zone))
        return self.held.get((project, zone), [])


ZONES = {
    "us-central1-a": ["nvidia-tesla-a100", "nvidia-tesla-t4"],
    "us-central1-b": ["nvidia-tesla-t4"],
    "us-central1-c": ["nvidia-tesla-a100", "nvidia-tesla-t4"],
}
PLENTY = {"CPUS": (2400, 0), "NVIDIA_A100_GPUS": (64, 0), "PREEMPTIBLE_NVIDIA_A100_GPUS": (64, 0), "NVIDIA_T4_GPUS": (64, 0)}


def clients(
    zones: dict[str, list[str]] = ZONES, quotas: dict[str, tuple[float, float]] = PLENTY, held: dict[tuple[str, str], list[Any]] | None = None
) -> ComputeClients:
    return ComputeClients(FakeAcceleratorTypes(zones), FakeRegions(quotas), FakeReservations(held or {}))


def a100_stack(zones: list[str]) -> StackConfig:
    return config(node_locations=zones, gpu_pools=[a100_pool(node_locations=zones)])


def test_online_asks_every_zone_of_every_gpu_pool_and_passes_when_all_offer_it() -> None:
    asked = clients()
    findings = preflight_gke(a100_stack(["us-central1-a", "us-central1-c"]), "ml-platform", asked)
    # the pool's zones and the rest of the region (to name the zones that offer a GPU a pool's zone lacks)
    assert sorted(asked.accelerator_types.asked) == [("ml-platform", f"us-central1-{z}") for z in "abcf"]
    assert not any(f.error for f in findings), lines(findings)
    assert "ok: pool a100: nvidia-tesla-a100 is offered in us-central1-a, us-central1-c by the Compute API" in lines(findings)


def test_online_refuses_a_zone_the_compute_api_says_lacks_the_gpu() -> None:
    findings = preflight_gke(a100_stack(["us-central1-a", "us-central1-b"]), "ml-platform", clients())
    ((_, problem),) = absent_gpu_zones("nvidia-tesla-a100", ["us-central1-b"], ["us-central1-a", "us-central1-c"], "the Compute API")
    assert f"error: pool a100: {problem}" in lines(findings)
    assert problem.endswith("zones of us-central1 that do: us-central1-a, us-central1-c")


def test_online_spot_pools_count_against_the_preemptible_gpu_quota() -> None:
    quotas = {**PLENTY, "PREEMPTIBLE_NVIDIA_A100_GPUS": (4, 1)}
    findings = preflight_gke(a100_stack(["us-central1-a"]), "ml-platform", clients(quotas=quotas))
    (line,) = [x for x in lines(findings) if "PREEMPTIBLE_NVIDIA_A100_GPUS" in x]
    assert line == (
        "error: quota PREEMPTIBLE_NVIDIA_A100_GPUS in us-central1 is 4 (1 in use); the node pools may need 8 more (a100-spot 8x1): request an increase"
    )
    (on_demand,) = [x for x in lines(findings) if "quota NVIDIA_A100_GPUS" in x]
    assert on_demand.startswith("ok: quota NVIDIA_A100_GPUS in us-central1 is 64 (0 in use); the node pools need at most")


def test_online_refuses_a_region_without_the_gpu_quota() -> None:
    quotas = {k: v for k, v in PLENTY.items() if k != "NVIDIA_A100_GPUS"}
    findings = preflight_gke(a100_stack(["us-central1-a"]), "ml-platform", clients(quotas=quotas))
    assert any(x.startswith("error: quota NVIDIA_A100_GPUS in us-central1: the region has no such quota") for x in lines(findings))


def test_online_checks_the_cpu_quota_over_every_node_pool() -> None:
    cfg = a100_stack(["us-central1-a"])
    need = sum(p.max_total * pool.shape.vcpus for pool in cfg.gke.plan for p in pool.node_pools)  # type: ignore[union-attr]
    low = preflight_gke(cfg, "ml-platform", clients(quotas={**PLENTY, "CPUS": (need - 1, 0)}))
    assert any(x.startswith(f"error: quota CPUS in us-central1 is {need - 1} (0 in use); the node pools may need {need} more") for x in lines(low))
    enough = preflight_gke(cfg, "ml-platform", clients(quotas={**PLENTY, "CPUS": (need, 0)}))
    assert f"ok: quota CPUS in us-central1 is {need} (0 in use); the node pools need at most {need}" in lines(enough)


LIBRARY_CHECK = textwrap.dedent("""
    import warnings
    warnings.simplefilter("ignore", FutureWarning)
    from google.cloud import compute_v1                      # first: before the Pulumi SDK's protos
    from google.api_core import exceptions
    from google.auth.exceptions import DefaultCredentialsError
    from gpu_platform.infra.preflight import CloudError
    from gpu_platform.infra.preflight_gke import ComputeClients, preflight_gke
    from gpu_platform.infra.stack.model import StackConfig
    from tests.factories import a100_pool, stack

    data = {**stack(node_locations=["us-central1-a"], gpu_pools=[a100_pool(node_locations=["us-central1-a"])]),
            "monitoring": {"enabled": False}}
    config = StackConfig.model_validate(data)

    class Types:
        def __init__(self, error=None): self.error = error
        def list(self, *, project, zone):
            if self.error: raise self.error
            return [compute_v1.AcceleratorType(name="nvidia-tesla-a100", zone=zone)] if zone != "us-central1-b" else []

    class Regions:
        def get(self, *, project, region):
            return compute_v1.Region(name=region, quotas=[compute_v1.Quota(metric=m, limit=64, usage=0) for m in
                                     ("CPUS", "NVIDIA_A100_GPUS", "PREEMPTIBLE_NVIDIA_A100_GPUS")])

    class Reservations:
        def list(self, *, project, zone):
            return []

    for finding in preflight_gke(config, "ml-platform", ComputeClients(Types(), Regions(), Reservations())):
        print(finding)
    # A reservation rung, answered with the library's Reservation messages: one shared to this project, one not.
    ladder = [{"kind": "reservation", "reservation": "projects/ml-capacity/reservations/a100-pool"}, {"kind": "on_demand"}]
    pool = {k: v for k, v in a100_pool(node_locations=["us-central1-a", "us-central1-c"]).items() if k != "capacity"}
    data = {**stack(node_locations=["us-central1-a", "us-central1-c"], gpu_pools=[{**pool, "capacity_ladder": ladder}]),
            "monitoring": {"enabled": False}}
    laddered = StackConfig.model_validate(data)

    class Reserved:
        def list(self, *, project, zone):
            shared = compute_v1.ShareSettings(share_type="SPECIFIC_PROJECTS",
                                              project_map={"ml-platform": compute_v1.ShareSettingsProjectConfig(project_id="ml-platform")})
            props = compute_v1.AllocationSpecificSKUAllocationReservedInstanceProperties(machine_type="a2-highgpu-1g")
            return [compute_v1.Reservation(
                name="a100-pool", zone=zone, status="READY",
                specific_reservation=compute_v1.AllocationSpecificSKUReservation(count=2, in_use_count=1, instance_properties=props),
                share_settings=shared if zone == "us-central1-a" else None,
            )] if zone in ("us-central1-a", "us-central1-c") else []

    for finding in preflight_gke(laddered, "ml-platform", ComputeClients(Types(), Regions(), Reserved())):
        if "a100-pool" in str(finding):
            print(finding)
    for error in (exceptions.Forbidden("Required 'compute.acceleratorTypes.list' permission"), DefaultCredentialsError("no ADC")):
        try:
            preflight_gke(config, "ml-platform", ComputeClients(Types(error), Regions(), Reservations()))
        except CloudError as exc:
            print("refused:", exc)
""")


def test_the_library_s_own_types_and_errors() -> None:
    """google-cloud-compute's message types and google-api-core's and google-auth's errors, as the real clients
    answer, in a fresh interpreter that loads the library before the Pulumi SDK."""
    pytest.importorskip("google.auth", reason="google-cloud-compute is the [gcp] extra")
    done = subprocess.run([sys.executable, "-c", LIBRARY_CHECK], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    # google.cloud may exist without compute_v1 (another google-cloud-* package, e.g. the [prices] extra's billing).
    if "No module named 'google.cloud'" in done.stderr or "cannot import name 'compute_v1'" in done.stderr:
        pytest.skip("google-cloud-compute is the [gcp] extra")
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout.splitlines()
    assert "ok: pool a100: nvidia-tesla-a100 is offered in us-central1-a by the Compute API" in out
    assert "ok: quota PREEMPTIBLE_NVIDIA_A100_GPUS in us-central1 is 64 (0 in use); the node pools need at most 8" in out
    key = "pool a100: gke.gpu_pools[0].capacity_ladder[0].reservation projects/ml-capacity/reservations/a100-pool"
    assert [x for x in out if "a100-pool" in x] == [
        f"ok: {key}: reservation a100-pool of project ml-capacity in us-central1-a: READY, a2-highgpu-1g with 1x nvidia-tesla-a100, "
        "1 of 2 free (1 in use); the node pools create 0 there (a100-reserved 0)",
        f"error: {key}: reservation a100-pool of project ml-capacity in us-central1-c: it is not shared with project ml-platform "
        "(share type LOCAL): share it with ml-platform",
    ]
    assert out[-2:] == [
        "refused: Google Cloud refused a Compute API call in us-central1: 403 Required 'compute.acceleratorTypes.list' permission",
        "refused: cannot ask Google Cloud: no credentials (gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS)",
    ]


def test_online_without_a_project_is_one_line() -> None:
    with pytest.raises(CloudError, match=r"^cannot ask Google Cloud: no project"):
        preflight_gke(a100_stack(["us-central1-a"]), None, clients())


# --- The command ---------------------------------------------------------------------------------


def test_the_command_offline_prints_each_finding_and_exits_by_them(capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.cli import main

    assert main(["preflight", "gke", "prod-gke", "--offline", "--project-dir", str(PROJECT_DIR)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "ok: pool a100x8: nvidia-tesla-a100 is offered in us-central1-c by the shipped data (2026-11)" in out
    assert out[-1] == f"{len(out) - 1} checks, 0 would fail a deploy (offline: the shipped GPU zone table, no quotas)"


# --- Reservations a capacity ladder names (issue 38 item 3) --------------------------------------------


@dataclass
class AcceleratorConfig:
    """compute_v1.AcceleratorConfig."""

    accelerator_type: str
    accelerator_count: int


@dataclass
class InstanceProperties:
    """compute_v1.AllocationSpecificSKUAllocationReservedInstanceProperties (the fields preflight reads)."""

    machine_type: str = ""
    guest_accelerators: list[AcceleratorConfig] = field(default_factory=list)


@dataclass
class SpecificReservation:
    """compute_v1.AllocationSpecificSKUReservation."""

    count: int
    in_use_count: int
    instance_properties: InstanceProperties | None
    source_instance_template: str = ""


@dataclass
class ShareSettings:
    """compute_v1.ShareSettings: share_type LOCAL, SPECIFIC_PROJECTS or ORGANIZATION; project_map by project id."""

    share_type: str
    project_map: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reservation:
    """compute_v1.Reservation (the fields preflight reads)."""

    name: str
    zone: str
    status: str
    specific_reservation: SpecificReservation
    share_settings: ShareSettings | None = None


def reserved(name: str, zone: str, count: int = 4, in_use: int = 0, machine: str = "a2-highgpu-1g", status: str = "READY", **more: Any) -> Reservation:
    """A reservation of ``count`` VMs of ``machine`` in ``zone`` (A2 machines fix their GPUs, so none are listed)."""
    return Reservation(name, zone, status, SpecificReservation(count, in_use, InstanceProperties(machine)), **more)


LADDER = [
    {"kind": "reservation", "reservation": "a100-training"},
    {"kind": "flex_start", "max_run_duration": "24h"},
    {"kind": "spot"},
    {"kind": "on_demand"},
]
A100_ZONES = ["us-central1-a", "us-central1-c"]


def ladder_stack(ladder: list[dict[str, Any]] = LADDER, zones: list[str] | None = A100_ZONES, min_nodes: int = 2) -> StackConfig:
    pool = {k: v for k, v in a100_pool(node_locations=zones).items() if k != "capacity" and (zones or k != "node_locations")}
    pool.update(capacity_ladder=ladder, autoscaling={"scope": "total", "min_nodes": min_nodes, "max_nodes": 8})
    return config(node_locations=A100_ZONES, gpu_pools=[pool])


KEY = "pool a100: gke.gpu_pools[0].capacity_ladder[0].reservation a100-training"


def online(cfg: StackConfig, held: dict[tuple[str, str], list[Any]]) -> list[str]:
    return lines(preflight_gke(cfg, "ml-platform", clients(held=held)))


def test_a_reservation_in_every_zone_with_room_for_the_minimum_passes() -> None:
    """min_nodes 2 in total over two zones: GKE creates one node per zone with the reserved node pool."""
    asked = clients(held={("ml-platform", z): [reserved("a100-training", z, count=4, in_use=3)] for z in A100_ZONES})
    out = lines(preflight_gke(ladder_stack(), "ml-platform", asked))
    assert [x for x in out if "a100-training" in x] == [
        f"ok: {KEY}: reservation a100-training in {z}: READY, a2-highgpu-1g with 1x nvidia-tesla-a100, 1 of 4 free (3 in use); "
        "the node pools create 1 there (a100-reserved 1)"
        for z in A100_ZONES
    ]
    assert not any(x.startswith("error") for x in out), out
    # Every zone of the region is listed, so a refusal can name where the reservation is.
    assert sorted(asked.reservations.asked) == [("ml-platform", f"us-central1-{z}") for z in "abcf"]


def test_fails_when_the_reservation_does_not_exist() -> None:
    (line,) = [x for x in online(ladder_stack(), {}) if "a100-training" in x]
    assert line == (
        f"error: {KEY}: no reservation a100-training in us-central1-a, us-central1-c (no zone of us-central1 has it): node pool "
        "a100-reserved consumes it only in its own zones and cannot create nodes there; set the pool's "
        "node_locations to zones it is in, or reserve in those zones"
    )


def test_fails_when_the_reservation_is_in_another_zone() -> None:
    held = {
        ("ml-platform", "us-central1-a"): [reserved("a100-training", "us-central1-a")],
        ("ml-platform", "us-central1-b"): [reserved("a100-training", "us-central1-b")],
    }
    out = [x for x in online(ladder_stack(), held) if "a100-training" in x]
    assert out[0] == (
        f"error: {KEY}: no reservation a100-training in us-central1-c (it is in us-central1-a, us-central1-b): node pool "
        "a100-reserved consumes it only in its own zones and cannot create nodes there; set the pool's "
        "node_locations to zones it is in, or reserve in those zones"
    )
    assert out[1].startswith(f"ok: {KEY}: reservation a100-training in us-central1-a: READY")


def test_fails_when_gke_may_pick_a_zone_without_the_reservation() -> None:
    """A pool without node_locations in a regional cluster without them: GKE picks among the region's zones."""
    data = {**stack(gpu_pools=[{k: v for k, v in a100_pool().items() if k != "capacity"} | {"capacity_ladder": LADDER}]), "monitoring": {"enabled": False}}
    del data["gke"]["node_locations"]
    held = {("ml-platform", z): [reserved("a100-training", z)] for z in A100_ZONES}
    (line, *_) = [x for x in online(StackConfig.model_validate(data), held) if "a100-training" in x]
    assert line.startswith(f"error: {KEY}: no reservation a100-training in us-central1-b, us-central1-f (it is in us-central1-a, us-central1-c)")
    assert line.endswith("GKE may pick any zone of us-central1: set node_locations to the zones it is in")


def test_fails_when_too_few_instances_are_free_for_the_minimum() -> None:
    """min_nodes 4 in total over two zones: two nodes per zone at creation; zone c's reservation has one free."""
    held = {
        ("ml-platform", "us-central1-a"): [reserved("a100-training", "us-central1-a")],
        ("ml-platform", "us-central1-c"): [reserved("a100-training", "us-central1-c", 4, 3)],
    }
    out = [x for x in online(ladder_stack(min_nodes=4), held) if "a100-training" in x]
    assert out == [
        f"ok: {KEY}: reservation a100-training in us-central1-a: READY, a2-highgpu-1g with 1x nvidia-tesla-a100, 4 of 4 free (0 in use); "
        "the node pools create 2 there (a100-reserved 2)",
        f"error: {KEY}: reservation a100-training in us-central1-c has 1 of 4 free (3 in use); the node pools consuming it create 2 "
        "there at once (a100-reserved 2): lower their minimum or enlarge the reservation",
    ]


def test_fails_when_the_reservation_holds_another_machine_or_gpu_or_is_not_ready() -> None:
    held = {
        ("ml-platform", "us-central1-a"): [reserved("a100-training", "us-central1-a", machine="a2-highgpu-2g", status="CREATING")],
        ("ml-platform", "us-central1-c"): [
            Reservation(
                "a100-training",
                "us-central1-c",
                "READY",
                SpecificReservation(4, 0, InstanceProperties("a2-highgpu-1g", [AcceleratorConfig("nvidia-a100-80gb", 1)])),
            )
        ],
    }
    out = [x for x in online(ladder_stack(), held) if "a100-training" in x]
    assert out == [
        f"error: {KEY}: reservation a100-training in us-central1-a: its status is CREATING, not READY; it reserves a2-highgpu-2g, not the pool's a2-highgpu-1g",
        f"error: {KEY}: reservation a100-training in us-central1-c: it reserves 1x nvidia-a100-80gb per VM, not the pool's 1x nvidia-tesla-a100",
    ]


def test_an_n1_reservation_must_list_the_pool_s_gpus() -> None:
    """N1 machines attach GPUs as guest accelerators: a reservation of bare n1-standard-4 VMs holds no T4."""
    t4 = {"name": "t4", "machine_type": "n1-standard-4", "accelerator_type": "nvidia-tesla-t4", "accelerator_count": 2}
    t4 |= {"capacity_ladder": [{"kind": "reservation", "reservation": "t4-res"}, {"kind": "on_demand"}]}
    t4 |= {"autoscaling": {"scope": "per_zone", "min_nodes": 1, "max_nodes": 4}}
    cfg = config(gpu_pools=[t4])  # zones b and c
    bare = {("ml-platform", z): [reserved("t4-res", z, machine="n1-standard-4")] for z in ("us-central1-b", "us-central1-c")}
    out = [x for x in online(cfg, bare) if "t4-res" in x]
    assert out[0] == (
        "error: pool t4: gke.gpu_pools[0].capacity_ladder[0].reservation t4-res: reservation t4-res in us-central1-b: it reserves no GPUs, "
        "not the pool's 2x nvidia-tesla-t4 (N1 machines attach them)"
    )
    listed = {
        ("ml-platform", z): [
            Reservation("t4-res", z, "READY", SpecificReservation(2, 0, InstanceProperties("n1-standard-4", [AcceleratorConfig("nvidia-tesla-t4", 2)])))
        ]
        for z in ("us-central1-b", "us-central1-c")
    }
    assert [x.split(":")[0] for x in online(cfg, listed) if "t4-res" in x] == ["ok", "ok"]


def test_two_pools_on_one_reservation_need_room_for_both() -> None:
    """Per-zone minimums of 1 and 2 on one reservation: 3 per zone at creation; told once per zone."""
    second = {k: v for k, v in a100_pool(name="a100b").items() if k != "capacity"}
    second |= {"capacity_ladder": LADDER, "autoscaling": {"scope": "per_zone", "min_nodes": 2, "max_nodes": 4}}
    first = {k: v for k, v in a100_pool().items() if k != "capacity"} | {
        "capacity_ladder": LADDER,
        "autoscaling": {"scope": "per_zone", "min_nodes": 1, "max_nodes": 4},
    }
    cfg = config(node_locations=A100_ZONES, gpu_pools=[first, second])
    held = {("ml-platform", z): [reserved("a100-training", z, count=3, in_use=1)] for z in A100_ZONES}
    out = [x for x in online(cfg, held) if "a100-training" in x]
    assert out == [
        f"error: {KEY}: reservation a100-training in {z} has 2 of 3 free (1 in use); the node pools consuming it create 3 "
        "there at once (a100-reserved 1 + a100b-reserved 2): lower their minimum or enlarge the reservation"
        for z in A100_ZONES
    ]


def test_a_shared_reservation_is_looked_up_in_its_project_and_must_be_shared() -> None:
    shared = [{"kind": "reservation", "reservation": "projects/ml-capacity/reservations/a100-pool"}, {"kind": "on_demand"}]
    key = "pool a100: gke.gpu_pools[0].capacity_ladder[0].reservation projects/ml-capacity/reservations/a100-pool"
    to_us = ShareSettings("SPECIFIC_PROJECTS", {"ml-platform": {"project_id": "ml-platform"}})
    held = {("ml-capacity", z): [reserved("a100-pool", z, share_settings=to_us)] for z in A100_ZONES}
    asked = clients(held=held)
    out = [x for x in lines(preflight_gke(ladder_stack(shared), "ml-platform", asked)) if "a100-pool" in x]
    assert out[0] == (
        f"ok: {key}: reservation a100-pool of project ml-capacity in us-central1-a: READY, a2-highgpu-1g with 1x nvidia-tesla-a100, "
        "4 of 4 free (0 in use); the node pools create 1 there (a100-reserved 1)"
    )
    assert {p for p, _ in asked.reservations.asked} == {"ml-capacity"}
    local = {("ml-capacity", z): [reserved("a100-pool", z, share_settings=ShareSettings("LOCAL"))] for z in A100_ZONES}
    out = [x for x in online(ladder_stack(shared), local) if "a100-pool" in x]
    assert out[0] == (
        f"error: {key}: reservation a100-pool of project ml-capacity in us-central1-a: it is not shared with project ml-platform "
        "(share type LOCAL): share it with ml-platform"
    )


def test_offline_says_each_named_reservation_is_unchecked() -> None:
    out = [x for x in lines(preflight_gke(ladder_stack(), None, None)) if "a100-training" in x]
    assert out == [
        f"ok: {KEY}: not checked offline (that it is in us-central1-a, us-central1-c and holds a2-highgpu-1g with 1x nvidia-tesla-a100, "
        "1 free per zone); run preflight gke online"
    ]
    # A reservation rung without a name takes any matching reservation, else on-demand: nothing to look up.
    anyone = [{"kind": "spot"}, {"kind": "reservation"}]
    assert not [x for x in lines(preflight_gke(ladder_stack(anyone), "ml-platform", clients())) if "reservation" in x]


def test_the_command_offline_says_the_ladder_s_reservation_is_unchecked(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.cli import main
    from tests.infra.test_cli import project_with_stack

    pool = {k: v for k, v in a100_pool().items() if k != "capacity"} | {"capacity_ladder": LADDER}

    def add(config: dict[str, Any]) -> None:
        config["gpu-platform:gke"]["gpu_pools"].append(pool)

    project = project_with_stack(tmp_path, "ladder", add)
    assert main(["preflight", "gke", "ladder", "--offline", "--project-dir", str(project)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        "ok: pool a100: gke.gpu_pools[1].capacity_ladder[0].reservation a100-training: not checked offline (that it is in us-central1-b, "
        "us-central1-c and holds a2-highgpu-1g with 1x nvidia-tesla-a100); run preflight gke online"
    ) in out


def test_a_reservation_made_from_an_instance_template_is_said_to_be_unchecked_for_its_shape() -> None:
    """A reservation made from an instance template lists no instance properties: its machine and GPUs are not judged, its room is."""
    template = "projects/ml-platform/global/instanceTemplates/a100-vm"
    held = {
        ("ml-platform", z): [Reservation("a100-training", z, "READY", SpecificReservation(2, 0, None, source_instance_template=template))] for z in A100_ZONES
    }
    out = [x for x in online(ladder_stack(), held) if "a100-training" in x]
    assert out[0] == (
        f"ok: {KEY}: reservation a100-training in us-central1-a: READY, made from {template} (machine and GPUs not checked), "
        "2 of 2 free (0 in use); the node pools create 1 there (a100-reserved 1)"
    )
