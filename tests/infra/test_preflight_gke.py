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


ZONES = {
    "us-central1-a": ["nvidia-tesla-a100", "nvidia-tesla-t4"],
    "us-central1-b": ["nvidia-tesla-t4"],
    "us-central1-c": ["nvidia-tesla-a100", "nvidia-tesla-t4"],
}
PLENTY = {"CPUS": (2400, 0), "NVIDIA_A100_GPUS": (64, 0), "PREEMPTIBLE_NVIDIA_A100_GPUS": (64, 0), "NVIDIA_T4_GPUS": (64, 0)}


def clients(zones: dict[str, list[str]] = ZONES, quotas: dict[str, tuple[float, float]] = PLENTY) -> ComputeClients:
    return ComputeClients(FakeAcceleratorTypes(zones), FakeRegions(quotas))


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

    for finding in preflight_gke(config, "ml-platform", ComputeClients(Types(), Regions())):
        print(finding)
    for error in (exceptions.Forbidden("Required 'compute.acceleratorTypes.list' permission"), DefaultCredentialsError("no ADC")):
        try:
            preflight_gke(config, "ml-platform", ComputeClients(Types(error), Regions()))
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
