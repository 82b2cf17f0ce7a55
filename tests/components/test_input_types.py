"""The typed checks shared by every field that uses them: durations, DNS subdomains, chart
repositories, GCP labels, AWS tags and the GKE system pool's machine type."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from gpu_platform.components.core.kube import ChartRepository, DnsSubdomain, Duration, GoDuration
from gpu_platform.components.eks.args import AwsTagMap
from gpu_platform.components.gke.args import GcpLabelMap, SystemPoolArgs


@pytest.mark.parametrize("value", ["90s", "7m", "1h30m", "2562047h", "1.5h", "300ms"])
def test_go_duration_reads_go_durations(value: str) -> None:
    assert TypeAdapter(GoDuration).validate_python(value) == value


@pytest.mark.parametrize("value", ["30s7m", "1m1m", ".5h", "2h45m30.5s"])
def test_go_duration_takes_go_s_whole_grammar(value: str) -> None:
    """Go accepts units in any order and repeated (components/core/durations.py); so does the stack."""
    assert TypeAdapter(GoDuration).validate_python(value) == value


@pytest.mark.parametrize(("value", "why"), [("9999999999h", "longer than Go's maximum"), ("7d", "not a Go duration"), ("-1m", "negative")])
def test_fails_when_go_duration_is_out_of_range_or_not_go(value: str, why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        TypeAdapter(GoDuration).validate_python(value)


@pytest.mark.parametrize("value", ["30s", "15d", "1y2w", "7d12h", "1h30m15s100ms"])
def test_prometheus_duration_reads_prometheus_durations(value: str) -> None:
    assert TypeAdapter(Duration).validate_python(value) == value


@pytest.mark.parametrize(("value", "why"), [("12h7d", "largest first"), ("999999999999999y", "longer than"), ("5m5m", "once")])
def test_fails_when_prometheus_duration_is_out_of_range_or_order(value: str, why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        TypeAdapter(Duration).validate_python(value)


@pytest.mark.parametrize("value", ["gp3", "standard-rwo", "ebs.csi.aws.com"])
def test_dns_subdomain_reads_storage_class_names(value: str) -> None:
    assert TypeAdapter(DnsSubdomain).validate_python(value) == value


@pytest.mark.parametrize("value", ["GP3", "gp3_fast", "-gp3", "gp3.", "a" * 254, ""])
def test_fails_when_storage_class_is_not_a_dns_subdomain(value: str) -> None:
    with pytest.raises(ValidationError, match="not a DNS subdomain"):
        TypeAdapter(DnsSubdomain).validate_python(value)


@pytest.mark.parametrize("value", ["https://prometheus-community.github.io/helm-charts", "oci://ghcr.io/org/charts", "http://charts.local:8080"])
def test_chart_repository_reads_urls(value: str) -> None:
    assert TypeAdapter(ChartRepository).validate_python(value) == value


@pytest.mark.parametrize("value", ["prometheus-community", "ftp://x.example", "https://", "https://a b"])
def test_fails_when_chart_repository_is_not_a_url(value: str) -> None:
    with pytest.raises(ValidationError, match="is not an http"):
        TypeAdapter(ChartRepository).validate_python(value)


def test_gcp_labels_take_63_beside_the_components_own() -> None:
    assert len(TypeAdapter(GcpLabelMap).validate_python({f"k{i}": "v" for i in range(63)})) == 63


def test_fails_when_gcp_labels_leave_no_room_for_the_components_own() -> None:
    with pytest.raises(ValidationError, match="64 labels: GCP allows at most 64 per resource and the component adds"):
        TypeAdapter(GcpLabelMap).validate_python({f"k{i}": "v" for i in range(64)})


def test_aws_tags_take_45_plain_tags() -> None:
    tags = {f"team:{i}": "data science/ml" for i in range(45)}
    assert TypeAdapter(AwsTagMap).validate_python(tags) == tags


@pytest.mark.parametrize(
    ("tags", "why"),
    [
        ({"aws:team": "x"}, "aws: prefix is reserved"),
        ({"AWS:team": "x"}, "aws: prefix is reserved"),
        ({f"k{i}": "v" for i in range(46)}, "use at most 45"),
        ({"k" * 129: "v"}, "1 to 128"),
        ({"k": "v" * 257}, "at most 256"),
        ({"k": "bad;value"}, "at most 256"),
    ],
)
def test_fails_when_aws_tags_break_aws_rules(tags: dict[str, str], why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        TypeAdapter(AwsTagMap).validate_python(tags)


def test_system_pool_takes_a_cpu_machine_type() -> None:
    assert SystemPoolArgs(machine_type="n2-standard-4").machine_type == "n2-standard-4"


@pytest.mark.parametrize(
    ("machine", "why"), [("a2-highgpu-1g", "is a GPU machine type"), ("g2-standard-4", "is a GPU machine type"), ("e2-huge", "not in the catalog")]
)
def test_fails_when_system_pool_machine_is_gpu_or_unknown(machine: str, why: str) -> None:
    with pytest.raises(ValidationError, match=why) as info:
        SystemPoolArgs(machine_type=machine)
    assert info.value.errors()[0]["loc"] == ("machine_type",)


# --- zones per region (components/catalog/data/zones.json) ---------------------------------------------

from gpu_platform.components.catalog.zones import unchecked_region, zone_problem  # noqa: E402


def test_zones_of_a_listed_region_pass() -> None:
    assert zone_problem("gcp", "us-central1", "us-central1-f") is None
    assert zone_problem("aws", "us-west-2", "us-west-2d") is None
    assert unchecked_region("gcp", "us-central1") is None


def test_fails_when_a_zone_is_not_in_the_listed_region() -> None:
    assert "not a zone of us-central1" in str(zone_problem("gcp", "us-central1", "us-central1-z"))
    assert "not a zone of us-west-2" in str(zone_problem("aws", "us-west-2", "us-west-2z"))


def test_a_region_missing_from_the_data_is_reported_as_unchecked() -> None:
    assert zone_problem("gcp", "europe-west99", "europe-west99-a") is None
    assert "were not checked offline" in str(unchecked_region("gcp", "europe-west99"))


def test_preview_says_when_zones_were_not_checked(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import shutil

    import yaml

    from gpu_platform.infra.cli import main
    from tests.conftest import PROJECT_DIR

    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "infra").symlink_to(PROJECT_DIR / "infra", target_is_directory=True)
    (tmp_path / "stacks").mkdir()
    doc = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.dev-gke.yaml").read_text())
    gke = doc["config"]["gpu-platform:gke"]
    gke["location"] = "europe-west99"
    gke["node_locations"] = ["europe-west99-b", "europe-west99-c"]
    doc["config"]["gcp:region"] = "europe-west99"
    (tmp_path / "stacks" / "Pulumi.dev-gke.yaml").write_text(yaml.safe_dump(doc))
    main(["preview", "dev-gke", "--project-dir", str(tmp_path), "--quiet"])
    out = capsys.readouterr().out
    assert "notice: offline: the zones of gcp region europe-west99 were not checked offline" in out


# --- DCGM field names (components/monitoring/data/dcgm_fields.json) ----------------------------------------

from gpu_platform.components.monitoring.dcgm_args import DcgmMetric  # noqa: E402


@pytest.mark.parametrize("field", ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED"])
def test_dcgm_metric_takes_a_field_dcgm_has(field: str) -> None:
    assert DcgmMetric(field=field, type="gauge", help="x").field == field


def test_fails_when_dcgm_has_no_such_field() -> None:
    with pytest.raises(ValidationError, match="DCGM has no field DCGM_FI_DEV_GPU_UTILS; did you mean DCGM_FI_DEV_GPU_UTIL"):
        DcgmMetric(field="DCGM_FI_DEV_GPU_UTILS", type="gauge", help="x")
