"""The package as other teams use it: a built wheel, installed into a fresh virtualenv,
runs the example consumer program under mocks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
from pathlib import Path

from tests.conftest import PROJECT_DIR

RUNNER = """
import json, runpy, sys
import pulumi
from pulumi.runtime.sync_await import _sync_await
from gpu_platform.infra.preview import RecordingMocks, RecordingMonitor
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


def test_example_consumer_runs_from_a_built_wheel(tmp_path: Path) -> None:
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
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True, capture_output=True, text=True).stdout.strip())
    # The dependencies come from this test environment's site-packages, as a plain path:
    # its .pth files (this checkout's editable install among them) are not processed.
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)], check=True, capture_output=True, timeout=300)

    runner = tmp_path / "run.py"
    runner.write_text(textwrap.dedent(RUNNER))
    result = subprocess.run(
        [str(python), str(runner), str(PROJECT_DIR / "examples" / "consumer" / "__main__.py")],
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
    readme = (PROJECT_DIR / "README.md").read_text()
    shown = re.search(r"<!-- example:consumer -->\s*```python\n(.+?)\n```", readme, re.S)
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
