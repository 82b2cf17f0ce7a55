"""`gpu-platform` end to end: a subprocess for the real console entry (the installed script, its exit status and
what reaches its file descriptors), in-process for the rest (main, with file descriptors 1 and 2 taken)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.infra.cli import main
from tests.conftest import PROJECT_DIR, run_in_process


def cli(*args: str, cwd: Path = PROJECT_DIR) -> subprocess.CompletedProcess[str]:
    """The installed console script when there is one (as a user runs it), else the module."""
    script = Path(sys.executable).with_name("gpu-platform")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gpu_platform.infra.cli"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONWARNINGS": "ignore"})


def project_with_stack(tmp_path: Path, name: str, mutate) -> Path:  # type: ignore[no-untyped-def]
    """A copy of the project whose stack `name` is dev-gke changed by `mutate`."""
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "infra").symlink_to(PROJECT_DIR / "infra")
    (tmp_path / "stacks").mkdir()
    document = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.dev-gke.yaml").read_text())
    mutate(document["config"])
    (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(document))
    return tmp_path


def test_preview_dev_gke_writes_plan_and_manifests(tmp_path: Path) -> None:
    result = run_in_process(["preview", "dev-gke", "--json", str(tmp_path / "plan.json"), "--manifests", str(tmp_path / "m")], PROJECT_DIR)
    assert result.returncode == 0, result.stderr
    assert "gcp:container/nodePool:NodePool  dev-gke-t4" in result.stdout
    assert "gpus=2xnvidia-tesla-t4 driver=DEFAULT autoscaling=1..20 per zone (BALANCED)" in result.stdout
    assert "0 schema violations; policy pack: 0 mandatory and 0 advisory violations" in result.stdout
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["stack"] == "dev-gke"
    (t4,) = [r for r in plan["resources"] if r["name"] == "dev-gke-t4"]
    node = t4["inputs"]["nodeConfig"]
    assert t4["type"] == "gcp:container/nodePool:NodePool"
    assert node["machineType"] == "n1-standard-4"
    assert node["guestAccelerators"][0]["count"] == 2
    assert node["guestAccelerators"][0]["gpuDriverInstallationConfig"]["gpuDriverVersion"] == "DEFAULT"
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in node["taints"]
    assert t4["inputs"]["autoscaling"]["maxNodeCount"] == 20
    assert node["gcfsConfig"]["enabled"] is True
    assert (tmp_path / "m").is_dir()


def test_misspelt_key_exits_2_naming_it(tmp_path: Path) -> None:
    def mutate(config: dict) -> None:  # type: ignore[type-arg]
        config["gpu-platform:gke"]["gpu_pools"][0]["acelerator_count"] = config["gpu-platform:gke"]["gpu_pools"][0].pop("accelerator_count")

    project = project_with_stack(tmp_path, "typo", mutate)
    result = run_in_process(["preview", "typo", "--project-dir", str(project)], PROJECT_DIR)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert any(
        line.startswith("gpu-platform: gpu-platform:gke.gpu_pools[0].acelerator_count: unknown key; did you mean accelerator_count?") for line in lines
    ), lines
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"accelerator_count": 3},
            "gpu-platform:gke.gpu_pools[0].accelerator_count: accelerator_count 3 is not offered for nvidia-tesla-t4; use 1, 2 or 4 (got 3)",
        ),
        ({"machine_type": "a2-highgpu-2g"}, "gpu-platform:gke.gpu_pools[0].accelerator_type: accelerator_type nvidia-tesla-t4 does not run on a2-highgpu-2g"),
    ],
)
def test_impossible_gpu_exits_2_naming_the_key(
    tmp_path: Path,
    change: dict,
    expected: str,
    capsys: pytest.CaptureFixture[str],  # type: ignore[type-arg]
) -> None:
    project = project_with_stack(tmp_path, "bad", lambda c: c["gpu-platform:gke"]["gpu_pools"][0].update(change))
    rc = main(["preview", "bad", "--project-dir", str(project)])
    assert rc == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"gpu-platform: {expected}")


def test_impossible_gpu_message_through_a_subprocess(tmp_path: Path) -> None:
    project = project_with_stack(tmp_path, "bad", lambda c: c["gpu-platform:gke"]["gpu_pools"][0].update({"accelerator_count": 3}))
    result = cli("preview", "bad", "--project-dir", str(project))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "gpu-platform: gpu-platform:gke.gpu_pools[0].accelerator_count: accelerator_count 3 is not offered for nvidia-tesla-t4; use 1, 2 or 4 (got 3)"
    ]


def test_missing_stack_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preview", "nope", "--project-dir", str(PROJECT_DIR)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpu-platform: stack 'nope': no stacks/Pulumi.nope.yaml")


def test_bad_yaml_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = project_with_stack(tmp_path, "y", lambda c: None)
    (project / "stacks" / "Pulumi.y.yaml").write_text("config:\n  gpu-platform:cloud: [gcp\n")
    assert main(["preview", "y", "--project-dir", str(project)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("gpu-platform: Pulumi.y.yaml: invalid YAML at line 3")


def test_several_problems_one_line_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def mutate(config: dict) -> None:  # type: ignore[type-arg]
        config["gpu-platform:gke"]["release_channel"] = "NIGHTLY"
        config["gpu-platform:gke"]["gpu_pools"][0]["disk_size_gb"] = 5
        config["gpu-platform:environment"] = "qa"

    project = project_with_stack(tmp_path, "many", mutate)
    assert main(["preview", "many", "--project-dir", str(project)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert sorted(line.split(": ")[1] for line in lines) == [
        "gpu-platform:environment",
        "gpu-platform:gke.gpu_pools[0].disk_size_gb",
        "gpu-platform:gke.release_channel",
    ]


def test_unknown_command_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_quiet_prints_the_summary_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preview", "prod-gke", "--quiet", "--project-dir", str(PROJECT_DIR)]) == 0
    out = capsys.readouterr().out
    assert "└─" not in out
    assert re.match(r"[0-9]+ resources, [0-9]+ Kubernetes objects", out)


def test_schema_violation_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import gpu_platform.infra.preview.manifests as manifests

    def broken(plan):  # type: ignore[no-untyped-def]
        objects = original(plan)
        return [manifests.KubernetesObject(o.resource, {**o.body, "apiVersion": "v1", "kind": "ConfigMap", "data": {"k": 1}}) for o in objects]

    original = manifests.kubernetes_objects
    monkeypatch.setattr(manifests, "kubernetes_objects", broken)
    assert main(["preview", "prod-gke", "--quiet", "--project-dir", str(PROJECT_DIR), "--json", str(tmp_path / "p.json")]) == 1
    out = capsys.readouterr().out
    assert "violation: schema: ConfigMap" in out
    assert json.loads((tmp_path / "p.json").read_text())["violations"][0]["rule"] == "kubernetes-schema"


@pytest.mark.parametrize("flag", ["--json", "--manifests"])
def test_unwritable_output_is_one_line(tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    target = tmp_path / "missing" / "plan.json" if flag == "--json" else blocker
    assert main(["preview", "prod-gke", "--quiet", "--project-dir", str(PROJECT_DIR), flag, str(target)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"gpu-platform: {flag} {target}: cannot write: ")


def test_docs_are_in_sync() -> None:
    assert main(["docs", "--check", "--project-dir", str(PROJECT_DIR)]) == 0


def test_docs_check_fails_on_a_stale_generated_page_and_write_mends_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In a copy of the project's generated files: a hand edit of the CLI reference, and a reference page
    that is missing, are each one line and exit 1; --write restores them and --check passes again."""
    for name in ("Pulumi.yaml", "README.md", "docs", "stacks", "components"):
        source = PROJECT_DIR / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("*.py", "__pycache__", "data", "dashboards"))
        else:
            shutil.copy(source, tmp_path / name)
    cli = tmp_path / "docs" / "reference" / "cli.md"
    cli.write_text(cli.read_text().replace("--no-render", "--no-rendering"))
    (tmp_path / "docs" / "reference" / "policies.md").unlink()
    assert main(["docs", "--check", "--project-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"gpu-platform: {tmp_path / 'docs' / 'reference' / name} is out of date with the code; run: gpu-platform docs --write"
        for name in ("policies.md", "cli.md")
    ]
    assert main(["docs", "--write", "--project-dir", str(tmp_path)]) == 0
    assert main(["docs", "--check", "--project-dir", str(tmp_path)]) == 0
    assert cli.read_text() == (PROJECT_DIR / "docs" / "reference" / "cli.md").read_text()


def test_preflight_refuses_a_stack_of_another_cloud(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "eks", "dev-gke", "--project-dir", str(PROJECT_DIR)]) == 2
    assert capsys.readouterr().err == ("gpu-platform: stack dev-gke deploys to gcp, not aws: preflight eks checks EKS stacks\n")


def test_preflight_eks_asks_aws_and_exits_by_its_findings(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The command end to end with EC2 mocked by moto and a quota that is too small."""
    from moto import mock_aws

    from tests.conftest import stub_aws_clients

    def quotas(stub: Any) -> None:
        for code in ("L-DB2E81BA", "L-3819A6DF"):
            stub.add_response("get_service_quota", {"Quota": {"QuotaCode": code, "Value": 8.0}}, {"ServiceCode": "ec2", "QuotaCode": code})

    stub_aws_clients(monkeypatch, {"service-quotas": quotas})
    with mock_aws():
        code = main(["preflight", "eks", "dev-eks", "--project-dir", str(PROJECT_DIR)])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert "ok: zone ap-northeast-2c offers g4dn.xlarge" in out
    assert any(line.startswith("error: All G and VT Spot Instance Requests (L-3819A6DF) in ap-northeast-2 is 8 vCPUs") for line in out)
    assert out[-1].endswith("would fail a deploy")
