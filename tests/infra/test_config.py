"""The stack config model as the program reads it from Pulumi config."""

from __future__ import annotations

import json
from pathlib import Path

import pulumi
import pytest
from pydantic import ValidationError

from gpu_platform.infra.preview.engine import RecordingMocks, RecordingMonitor, run_program
from gpu_platform.infra.stack.errors import ConfigError, PreviewError
from gpu_platform.infra.stack.model import StackConfig
from gpu_platform.infra.stack.read import config_for_engine, load_stack_config, read_namespace, read_stack_file
from tests.conftest import PROJECT_DIR
from tests.factories import gke


def set_config(values: dict[str, object], secret: list[str] | None = None) -> None:
    """Monitoring off unless a test sets it: its password checks have tests of their own."""
    values = {"gpu-platform:monitoring": {"enabled": False}, **values}
    pulumi.runtime.set_all_config(config_for_engine(values), secret or [])


def test_reads_structured_config_as_the_cli_passes_it() -> None:
    set_config({"gpu-platform:cloud": "gcp", "gpu-platform:gke": gke(), "gcp:project": "p"})
    assert json.loads(pulumi.runtime.get_config("gpu-platform:gke"))["location"] == "us-central1"
    config = load_stack_config()
    assert config.gke is not None and config.gke.node_locations == ["us-central1-b", "us-central1-c"]
    assert config.environment.value == "dev"


def test_reads_only_its_own_namespace() -> None:
    set_config({"gpu-platform:cloud": "gcp", "gcp:project": "p", "other:cloud": "x"})
    assert read_namespace() == {"cloud": "gcp", "monitoring": {"enabled": False}}


def lines_for(values: dict[str, object]) -> list[str]:
    set_config(values)
    with pytest.raises(ConfigError) as info:
        load_stack_config()
    return info.value.lines


def test_fails_when_cloud_is_missing() -> None:
    assert lines_for({"gcp:project": "p"}) == ["gpu-platform:cloud: required (got nothing)"]


def test_fails_when_gke_section_is_missing_for_gcp() -> None:
    assert lines_for({"gpu-platform:cloud": "gcp", "gcp:project": "p"}) == [
        "gpu-platform:gke: gke is required when cloud is gcp (or existing_cluster, for a cluster the stack does not create) (got null)"
    ]


def test_fails_when_gcp_project_is_missing() -> None:
    assert lines_for({"gpu-platform:cloud": "gcp", "gpu-platform:gke": gke()}) == [
        "gcp:project: required when gpu-platform:gke.project is not set (got nothing)"
    ]


def test_explicit_gke_project_needs_no_provider_project() -> None:
    set_config({"gpu-platform:cloud": "gcp", "gpu-platform:gke": gke(project="ml-platform")})
    assert load_stack_config().gke.project == "ml-platform"  # type: ignore[union-attr]


def test_fails_when_cloud_is_not_offered() -> None:
    assert lines_for({"gpu-platform:cloud": "azure", "gpu-platform:gke": gke(), "gcp:project": "p"}) == [
        "gpu-platform:cloud: Input should be 'gcp' or 'aws' (got \"azure\")"
    ]


def test_fails_when_top_level_key_is_misspelt() -> None:
    (line,) = lines_for({"gpu-platform:cloud": "gcp", "gpu-platform:gkee": gke(), "gpu-platform:gke": gke(), "gcp:project": "p"})
    assert line.startswith(
        "gpu-platform:gkee: unknown key; did you mean gke? allowed: aws_load_balancer_controller, cloud, dask, eks, eks_node_groups, environment, existing_cluster, existing_cluster_kubeconfig, gke, grafana_admin_password, headlamp, inference, kubeflow, kubeflow_artifact_store_access_key, kubeflow_artifact_store_secret_key, kubeflow_database_password, kubeflow_dex_password_hash, kubeflow_katib_database_password, kubeflow_oauth2_client_secret, kubeflow_oauth2_cookie_secret, kubeflow_oidc_client_secret, kubernetes_version, monitoring, queues, shared_datasets"
    )


def test_fails_when_kubernetes_version_lost_its_zero_to_yaml() -> None:
    # An unquoted 1.30 in a stack file reaches the program as "1.3".
    (line,) = lines_for({"gpu-platform:cloud": "gcp", "gpu-platform:gke": gke(), "gcp:project": "p", "gpu-platform:kubernetes_version": 1.30})
    assert line == (
        'gpu-platform:kubernetes_version: kubernetes_version must be a minor version such as "1.34"; YAML reads an unquoted 1.30 as 1.3: quote it (got "1.3")'
    )


def test_fails_when_kubernetes_version_has_no_schemas() -> None:
    (line,) = lines_for({"gpu-platform:cloud": "gcp", "gpu-platform:gke": gke(), "gcp:project": "p", "gpu-platform:kubernetes_version": "1.99"})
    assert line.startswith("gpu-platform:kubernetes_version: kubernetes_version 1.99 has no offline API schemas; use 1.")


def test_project_may_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_PROJECT", "from-env")
    set_config({"gpu-platform:cloud": "gcp", "gpu-platform:gke": gke()})
    assert load_stack_config().gke is not None


def test_fails_when_stack_name_cannot_be_the_cluster_name() -> None:
    pulumi.runtime.set_mocks(RecordingMocks(), project="gpu-platform", stack="Bad_Stack")
    try:
        (line,) = lines_for({"gpu-platform:cloud": "gcp", "gpu-platform:gke": gke(), "gcp:project": "p"})
    finally:
        pulumi.runtime.set_mocks(RecordingMocks(), project="gpu-platform", stack="test")
    assert line.startswith("gpu-platform:gke.cluster_name: required, since the stack name 'Bad_Stack' is not a valid GKE cluster name")


def test_fails_when_environment_is_unknown() -> None:
    (line,) = lines_for({"gpu-platform:cloud": "gcp", "gpu-platform:gke": gke(), "gcp:project": "p", "gpu-platform:environment": "qa"})
    assert line == "gpu-platform:environment: Input should be 'dev', 'staging' or 'prod' (got \"qa\")"


def test_reports_every_problem_at_once() -> None:
    lines = lines_for(
        {
            "gpu-platform:cloud": "gcp",
            "gcp:project": "p",
            "gpu-platform:gke": gke(release_channel="NIGHTLY", location="moon"),
        }
    )
    assert [line.split(":")[1] for line in lines] == ["gke.location", "gke.release_channel"]


MONITORED = {"gpu-platform:cloud": "gcp", "gpu-platform:gke": gke(), "gcp:project": "p", "gpu-platform:monitoring": {}}


def test_fails_when_monitoring_has_no_grafana_password() -> None:
    (line,) = lines_for(MONITORED)
    assert line.startswith("gpu-platform:grafana_admin_password: required when monitoring is enabled; set it with `pulumi config set --secret")


def test_fails_when_grafana_password_is_plain_text() -> None:
    (line,) = lines_for({**MONITORED, "gpu-platform:grafana_admin_password": "hunter2"})
    assert line.endswith("(got a plaintext value)")
    assert "hunter2" not in line


def test_grafana_password_as_a_secret_is_accepted() -> None:
    set_config({**MONITORED, "gpu-platform:grafana_admin_password": "s3cret!"}, ["gpu-platform:grafana_admin_password"])
    config = load_stack_config()
    assert config.grafana_admin_password is not None
    assert "s3cret" not in repr(config)  # a SecretStr never prints its value


def test_fails_when_dcgm_selection_does_not_match_the_cloud() -> None:
    (line,) = lines_for({**MONITORED, "gpu-platform:monitoring": {"dcgm_exporter": {"node_selection": "eks"}}})
    assert line.startswith("gpu-platform:monitoring.dcgm_exporter.node_selection: node_selection eks does not match cloud gcp; use gke")


def test_fails_when_gpu_telemetry_is_collected_twice() -> None:
    lines = lines_for(
        {**MONITORED, "gpu-platform:gke": gke(managed_dcgm_metrics=True), "gpu-platform:monitoring": {"dcgm_exporter": {"node_selection": "gke"}}}
    )
    assert lines[0].startswith("gpu-platform:monitoring.dcgm_exporter: dcgm_exporter and gke.managed_dcgm_metrics both collect GPU telemetry")


def test_config_error_is_a_run_error() -> None:
    # pulumi up prints a RunError's message without a traceback.
    assert issubclass(ConfigError, pulumi.RunError)


def test_config_error_stops_the_program_before_any_resource() -> None:
    monitor = RecordingMonitor(RecordingMocks())
    with pytest.raises(ConfigError):
        run_program(PROJECT_DIR, "bad", {"gpu-platform:cloud": "gcp", "gcp:project": "p", "gpu-platform:gke": gke(location="moon")}, monitor=monitor)
    assert monitor.recorded == []


def test_stack_file_gets_project_defaults(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: gpu-platform\nstackConfigDir: stacks\nconfig:\n  environment:\n    type: string\n    default: staging\n")
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.s.yaml").write_text("config:\n  gpu-platform:cloud: gcp\n  token:\n    secure: AAABAx==\n")
    config, secret = read_stack_file(tmp_path, "s")
    assert config["gpu-platform:environment"] == "staging"
    assert config["gpu-platform:token"] == "offline-placeholder-token"  # a bare key is the project's
    assert secret == {"gpu-platform:token"}


def test_fails_when_stack_file_is_missing() -> None:
    with pytest.raises(PreviewError) as info:
        read_stack_file(PROJECT_DIR, "nope")
    (line,) = info.value.lines
    assert line.startswith("stack 'nope': no stacks/Pulumi.nope.yaml (stacks: ")
    assert "dev-gke" in line and "prod-gke" in line


def test_fails_when_stack_file_is_not_yaml(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: gpu-platform\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.s.yaml").write_text("config:\n  gpu-platform:cloud: [gcp\n")
    with pytest.raises(PreviewError) as info:
        read_stack_file(tmp_path, "s")
    (line,) = info.value.lines
    assert line.startswith("Pulumi.s.yaml: invalid YAML at line ")


def test_stack_config_is_frozen() -> None:
    config = StackConfig.model_validate({"cloud": "gcp", "gke": gke()})
    with pytest.raises(ValidationError, match="frozen"):
        config.cloud = "gcp"  # type: ignore[assignment]


# --- the one reader: encodings, duplicate keys, stack names, namespaces, nested secrets --------


def _project(tmp_path: Path, text: str | bytes) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: gpu-platform\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir(exist_ok=True)
    path = tmp_path / "stacks" / "Pulumi.s.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return tmp_path


def test_reader_takes_a_utf8_file_with_a_byte_order_mark(tmp_path: Path) -> None:
    config, _ = read_stack_file(_project(tmp_path, "\ufeffconfig:\n  gpu-platform:cloud: gcp\n".encode()), "s")
    assert config["gpu-platform:cloud"] == "gcp"


def test_fails_when_stack_file_is_utf16(tmp_path: Path) -> None:
    with pytest.raises(PreviewError) as info:
        read_stack_file(_project(tmp_path, "config:\n  gpu-platform:cloud: gcp\n".encode("utf-16")), "s")
    assert info.value.lines == ["Pulumi.s.yaml: not UTF-8 text (UTF-16, UTF-32 or binary); save it as UTF-8"]


def test_fails_when_a_key_is_written_twice_at_depth(tmp_path: Path) -> None:
    text = "config:\n  gpu-platform:gke:\n    location: a\n    location: b\n"
    with pytest.raises(PreviewError) as info:
        read_stack_file(_project(tmp_path, text), "s")
    (line,) = info.value.lines
    assert line.startswith("Pulumi.s.yaml: duplicate key config.gpu-platform:gke.location at line 4 (first at line 3)")


@pytest.mark.parametrize("stack", ["../x", "team/dev", "dev gke", "x" * 101, ""])
def test_fails_when_the_stack_name_is_not_a_pulumi_stack_name(stack: str) -> None:
    with pytest.raises(PreviewError, match="not a Pulumi stack name"):
        read_stack_file(PROJECT_DIR, stack)


@pytest.mark.parametrize("stack", ["dev-gke", "a.b_c-1", "x" * 100])
def test_pulumi_stack_names_pass_the_name_check(stack: str) -> None:
    from gpu_platform.infra.stack.read import check_stack_name

    check_stack_name(stack)


def test_fails_when_a_namespace_is_misspelt(tmp_path: Path) -> None:
    with pytest.raises(PreviewError) as info:
        read_stack_file(_project(tmp_path, "config:\n  gpu-platform:cloud: gcp\n  gpu-platfrom:dask: {}\n"), "s")
    (line,) = info.value.lines
    assert line.startswith("gpu-platfrom:dask: unknown config namespace 'gpu-platfrom'; did you mean gpu-platform:dask?")


def test_nested_secure_values_are_placeholders_and_mark_their_key_secret(tmp_path: Path) -> None:
    text = "config:\n  gpu-platform:dask:\n    tenants:\n      - name:\n          secure: v1:abc\n"
    config, secret = read_stack_file(_project(tmp_path, text), "s")
    assert secret == {"gpu-platform:dask"}
    assert "v1:abc" not in json.dumps(config)


def test_karpenter_classes_are_read_as_the_component_s_args_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """eks_node_groups with provisioner karpenter is read as KarpenterNodePoolsArgs (the program hands the component
    the stack's validated, planned Args: KarpenterNodePoolsArgs.of returns them as they are); a problem in it keeps the
    key path as written, every problem in one run."""
    import yaml

    from gpu_platform.components.eks.node_group_args import KarpenterNodePoolsArgs, SpotFailoverEksNodeGroupsArgs
    from gpu_platform.infra.cli import main
    from gpu_platform.infra.stack.read import load_stack

    prod, dev = load_stack(PROJECT_DIR, "prod-eks"), load_stack(PROJECT_DIR, "dev-eks")
    assert type(prod.eks_node_groups) is KarpenterNodePoolsArgs
    assert KarpenterNodePoolsArgs.of(prod.eks_node_groups) is prod.eks_node_groups
    assert type(dev.eks_node_groups) is SpotFailoverEksNodeGroupsArgs

    (tmp_path / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (tmp_path / "infra").symlink_to(PROJECT_DIR / "infra")
    (tmp_path / "stacks").mkdir()
    document = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.prod-eks.yaml").read_text())
    groups = document["config"]["gpu-platform:eks_node_groups"]
    groups["classes"][0]["max_nodes"] = 0
    groups["karpenter"]["bogus"] = 1
    (tmp_path / "stacks" / "Pulumi.bad.yaml").write_text(yaml.safe_dump(document))
    assert main(["preview", "bad", "--quiet", "--no-render", "--project-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "gpu-platform:eks_node_groups.classes[0].max_nodes" in err
    assert "gpu-platform:eks_node_groups.karpenter.bogus" in err
    assert "Traceback" not in err
