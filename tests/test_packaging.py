"""The package as other teams use it: a built wheel, installed into a fresh virtualenv, imports
every public name, runs the CLI's offline preview of a shipped stack, and runs the example
consumer program under mocks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

RUNNER = """
import json, runpy, sys
import pulumi
from pulumi.runtime.sync_await import _sync_await
from gpu_platform.infra.preview.engine import RecordingMocks, RecordingMonitor
from gpu_platform import components

monitor = RecordingMonitor(RecordingMocks())
pulumi.runtime.set_mocks(monitor.mocks, project="gpu-platform-consumer", stack="dev", preview=True, monitor=monitor)
pulumi.runtime.settings.ROOT.set(None)
_sync_await(pulumi.runtime.run_in_stack(lambda: runpy.run_path(sys.argv[1], run_name="__main__")))
print(json.dumps({
    "components": components.__file__,
    "resources": {r.name: r.type for r in monitor.recorded},
    "outputs": sorted(monitor.stack_outputs),
}))
"""


@dataclass(frozen=True)
class Installed:
    venv: Path
    python: Path
    purelib: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel built from this checkout, installed alone into a fresh virtualenv."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(PROJECT_DIR)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("gpu_platform-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True, capture_output=True, text=True
        ).stdout.strip()
    )
    # The dependencies come from this test environment's site-packages, as a plain path:
    # its .pth files (this checkout's editable install among them) are not processed.
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)], check=True, capture_output=True, timeout=300
    )
    return Installed(venv, python, purelib)


IMPORT_EVERYTHING = """
import importlib, json, pkgutil, sys
from importlib import resources
import gpu_platform
modules, names = [], 0
for info in pkgutil.walk_packages(gpu_platform.__path__, "gpu_platform."):
    if info.name.endswith(".__main__"):
        continue  # the Pulumi program and the policy pack's entry point run, not import
    module = importlib.import_module(info.name)
    modules.append((info.name, module.__file__))
    for name in getattr(module, "__all__", ()):
        getattr(module, name)
        names += 1
data = [
    resources.files("gpu_platform.components.monitoring").joinpath("dashboards/gpu-platform.json").is_file(),
    resources.files("gpu_platform.components.catalog").joinpath("data/zones.json").is_file(),
    resources.files("gpu_platform.components.catalog").joinpath("data/gpu_zones.json").is_file(),
    resources.files("gpu_platform.components.monitoring").joinpath("data/dcgm_fields.json").is_file(),
    resources.files("gpu_platform.components").joinpath("py.typed").is_file(),
    resources.files("gpu_platform.infra.preview").joinpath("upstream.lock.yaml").is_file(),
    resources.files("gpu_platform.infra.simulate").joinpath("prices.json").is_file(),
    resources.files("gpu_platform.policies").joinpath("PulumiPolicy.yaml").is_file(),
]
print(json.dumps({"modules": modules, "names": names, "data": data, "bare": [m for m in ("components", "infra", "policies") if importlib.util.find_spec(m)]}))
"""


def test_every_module_and_public_name_imports_from_the_wheel(installed: Installed) -> None:
    result = subprocess.run([str(installed.python), "-c", IMPORT_EVERYTHING], cwd=installed.venv, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    modules = dict(report["modules"])
    # Every module of the checkout is in the wheel, and comes from it.
    in_checkout = {
        "gpu_platform." + ".".join(p.relative_to(PROJECT_DIR).with_suffix("").parts).removesuffix(".__init__")
        for top in ("components", "infra", "policies")
        for p in (PROJECT_DIR / top).rglob("*.py")
        if p.name != "__main__.py"
    }
    assert in_checkout <= set(modules), sorted(in_checkout - set(modules))
    assert all(path.startswith(str(installed.purelib)) for path in modules.values())
    assert report["names"] > 100 and all(report["data"])
    assert report["bare"] == [], "the wheel must install nothing but gpu_platform"


def test_the_cli_previews_a_shipped_stack_from_the_wheel(installed: Installed, tmp_path: Path) -> None:
    cli = installed.venv / "bin" / "gpu-platform"
    plan = tmp_path / "plan.json"
    result = subprocess.run(
        [str(cli), "preview", "dev-gke", "--project-dir", str(PROJECT_DIR), "--no-render", "--quiet", "--json", str(plan)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(plan.read_text())
    types = {r["type"] for r in document["resources"]}
    assert "gpu-platform:gpu_gke_cluster:GpuGkeCluster" in types and "gcp:container/cluster:Cluster" in types
    # That the script's interpreter takes every module from the wheel, not the checkout, is the import test's.


def test_the_consumer_program_previews_from_the_wheel_through_the_cli_and_the_testing_module(installed: Installed, tmp_path: Path) -> None:
    program = tmp_path / "consumer"
    program.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        (program / name).write_text((PROJECT_DIR / "examples" / "consumer" / name).read_text())
    cli = installed.venv / "bin" / "gpu-platform"
    result = subprocess.run(
        [str(cli), "preview", "--program", str(program), "--no-render", "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "13 resources" in result.stdout
    probe = (
        "from gpu_platform.infra.testing import preview_program; import gpu_platform.infra.testing as t; "
        f"p = preview_program({str(program)!r}); p.assert_no_violations(); print(t.__file__, len(p.resources))"
    )
    result = subprocess.run([str(installed.python), "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    where, count = result.stdout.split()
    assert where.startswith(str(installed.purelib)) and count == "13"


BYO_NETWORK_RUN = """
import contextlib, io, json, sys
from gpu_platform.infra.cli import main
from gpu_platform.infra.testing import preview_program
program, plan = sys.argv[1], sys.argv[2]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["preview", "--program", program, "--no-render", "--quiet", "--json", plan])
p = preview_program(program)
p.assert_no_violations()
print(json.dumps({"code": code, "cli": out.getvalue(), "group": p.resource("ml-eks-cluster").inputs["vpcConfig"]["securityGroupIds"][0], "warnings": len(p.warnings)}))
"""


def test_the_byo_network_example_previews_from_the_wheel_outside_the_repository(installed: Installed, tmp_path: Path) -> None:
    """A program outside the repository makes a GCP network and an AWS VPC and puts a cluster on
    each: it previews from the installed wheel through the CLI and through the testing module, in one
    interpreter (the program imports the providers' compute and EC2 modules, seconds each time; the CLI's
    console script is run by the tests above)."""
    program = tmp_path / "byo-network"
    program.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        (program / name).write_text((PROJECT_DIR / "examples" / "byo-network" / name).read_text())
    plan = tmp_path / "plan.json"
    result = subprocess.run([str(installed.python), "-c", BYO_NETWORK_RUN, str(program), str(plan)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, report["cli"]
    document = json.loads(plan.read_text())
    by_name = {r["name"]: r for r in document["resources"]}
    assert by_name["ml-gke-cluster"]["inputs"]["network"] == "ml-net"
    assert by_name["ml-eks-cluster"]["inputs"]["vpcConfig"]["subnetIds"][0] == "ml-private-a-id"
    assert "warning: EksCluster ml-eks: args.vpc.vpc_id: an Output, so its form (vpc-...) is not checked before deploy" in report["cli"]
    assert (report["group"], report["warnings"]) == ("ml-api-from-vpn-id", 8)


def test_the_readme_consumer_example_runs_as_printed_from_a_built_wheel(installed: Installed, tmp_path: Path) -> None:
    """The consumer block of docs/getting-started/library.md, exactly as printed (examples/consumer itself previews from
    the wheel above), under mocks in the fresh virtualenv."""
    python, purelib = installed.python, installed.purelib
    runner = tmp_path / "run.py"
    runner.write_text(textwrap.dedent(RUNNER))
    shown = re.search(r"<!-- example:consumer -->\s*```python\n(.+?)\n```", (PROJECT_DIR / "docs" / "getting-started" / "library.md").read_text(), re.S)
    assert shown
    program = tmp_path / "__main__.py"
    program.write_text(shown.group(1) + "\n")
    result = subprocess.run(
        [str(python), str(runner), str(program)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["components"].startswith(str(purelib)), "components must come from the wheel, not the checkout"
    assert report["resources"]["ml"] == "gpu-platform:gpu_gke_cluster:GpuGkeCluster"
    assert report["resources"]["ml-l4-compute-class"] == "kubernetes:cloud.google.com/v1:ComputeClass"
    assert report["outputs"] == ["kubeconfig"]


def test_readme_shows_the_example_consumer() -> None:
    shown = re.search(r"<!-- example:consumer -->\s*```python\n(.+?)\n```", (PROJECT_DIR / "docs" / "getting-started" / "library.md").read_text(), re.S)
    assert shown
    program = (PROJECT_DIR / "examples" / "consumer" / "__main__.py").read_text()
    assert shown.group(1).strip() in program


def test_version_is_semantic_and_in_the_changelog() -> None:
    version = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["project"]["version"]
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version)
    changelog = (PROJECT_DIR / "CHANGELOG.md").read_text()
    (latest,) = re.findall(r"^## ([0-9.]+)", changelog, re.M)[:1]
    assert latest == version
    requirement = (PROJECT_DIR / "examples" / "consumer" / "requirements.txt").read_text()
    major, minor, _ = version.split(".")
    assert f"gpu-platform~={major}.{minor}" in requirement
