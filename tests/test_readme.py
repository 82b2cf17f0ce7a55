"""The README's promises: two quick-start commands, a consumer example that runs, a current reference."""

from __future__ import annotations

import re
import runpy
import subprocess
import textwrap
from pathlib import Path

import pulumi
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.infra.docs import sync_docs
from gpu_platform.infra.preview.engine import RecordingMocks, RecordingMonitor
from tests.conftest import PROJECT_DIR

README = (PROJECT_DIR / "README.md").read_text()


def block(marker: str, language: str) -> str:
    m = re.search(rf"<!-- {marker} -->\s*```{language}\n(.+?)\n```", README, re.S)
    assert m, f"README has no {marker} block"
    return m.group(1)


def test_quick_start_has_two_one_line_commands() -> None:
    preview = block("quickstart:preview", "sh")
    tests = block("quickstart:test", "sh")
    assert "\n" not in preview and "\n" not in tests
    assert preview.startswith("python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && ")
    assert preview.endswith("gpu-platform preview dev-gke")
    assert tests.startswith("python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && ")
    assert tests.endswith("python -m pytest")


def test_ci_runs_the_readme_test_command() -> None:
    script = (PROJECT_DIR / ".ci" / "run").read_text()
    extractor = script.split("test_command=$(python3 - <<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    printed = subprocess.run(["python3", "-c", extractor], cwd=PROJECT_DIR, capture_output=True, text=True, check=True).stdout.strip()
    assert printed == block("quickstart:test", "sh")
    assert 'bash -c "${test_command}"' in script


def test_consumer_example_runs_under_mocks(tmp_path: Path) -> None:
    program = tmp_path / "__main__.py"
    program.write_text(textwrap.dedent(block("example:consumer", "python")))
    monitor = RecordingMonitor(RecordingMocks())
    pulumi.runtime.set_all_config({}, [])
    pulumi.runtime.set_mocks(monitor.mocks, project="consumer", stack="dev", preview=True, monitor=monitor)
    pulumi.runtime.settings.ROOT.set(None)
    _sync_await(pulumi.runtime.run_in_stack(lambda: runpy.run_path(str(program), run_name="__main__")))
    by_name = {r.name: r for r in monitor.recorded}
    assert by_name["ml"].type == "gpu-platform:gpu_gke_cluster:GpuGkeCluster"
    assert by_name["ml-l4-spot"].inputs["nodeConfig"]["spot"] is True
    assert by_name["ml-l4-on-demand"].inputs["nodeConfig"]["guestAccelerators"][0]["count"] == 1
    assert by_name["ml-l4-compute-class"].inputs["spec"]["priorities"][0] == {"nodepools": ["l4-spot"]}
    assert "kubeconfig" in monitor.stack_outputs


def test_config_reference_and_pulumi_yaml_are_generated_from_the_models() -> None:
    assert sync_docs(PROJECT_DIR) == [], "run: gpu-platform docs --write"


def test_the_readme_opens_with_a_table_of_contents_that_reaches_every_section() -> None:
    toc = README.split("<!-- toc:start -->", 1)[1].split("<!-- toc:end -->", 1)[0]
    assert README.index("<!-- toc:start -->") < README.index("## ")  # before the first section
    headings = re.findall(r"^## (.+)$", re.sub(r"```.*?```", "", README, flags=re.S), re.M)
    for heading in headings:
        assert f"[{heading}](#" in toc, heading
    for wanted in ("Quick start", "Consumer quick start", "Create your own stack", "Teardown", "Reference"):
        assert any(h.startswith(wanted) for h in headings), wanted


def test_the_reference_pages_are_linked_and_cover_every_component() -> None:
    from gpu_platform import components

    assert "(stacks/README.md)" in README and "(components/README.md)" in README
    reference = (PROJECT_DIR / "components" / "README.md").read_text()
    for name in components.__all__:
        value = getattr(components, name)
        if isinstance(value, type) and issubclass(value, pulumi.ComponentResource):
            assert f"\n## {name}\n" in reference, name
    assert "#### StackConfig" in (PROJECT_DIR / "stacks" / "README.md").read_text()


def test_the_machine_catalog_is_listed_from_the_data() -> None:
    from gpu_platform.components.gpu_catalog import AWS_INSTANCE_TYPES, GCP_ACCELERATORS, GCP_MACHINE_SHAPES

    reference = (PROJECT_DIR / "components" / "README.md").read_text()
    catalog = reference.split("## Machine catalog\n", 1)[1]
    for name in [*GCP_ACCELERATORS, *GCP_MACHINE_SHAPES, *AWS_INSTANCE_TYPES]:
        assert f"| `{name}` |" in catalog, name
    assert "(components/README.md#machine-catalog)" in README


def test_the_report_port_forward_reaches_the_prometheus_the_stack_deploys() -> None:
    from gpu_platform.components import PrometheusStackArgs

    command = next(line for line in README.splitlines() if "port-forward" in line and line.startswith("kubectl"))
    namespace = PrometheusStackArgs.model_fields["namespace"].default
    assert f"kubectl -n {namespace} port-forward" in command
    assert "pulumi stack output prometheusUrl" in command  # the service the output names


def test_teardown_says_how_to_lift_every_protection() -> None:
    teardown = README.split("## Teardown\n", 1)[1].split("\n## ", 1)[0]
    for flag in ("deletion_protection", "keep_volumes_on_delete", "keep_volume_on_delete", "pulumi destroy", "pulumi state unprotect"):
        assert flag in teardown, flag


def test_composed_example_runs_under_mocks(tmp_path: Path) -> None:
    """The README's composition example as printed: the add-ons take the cluster component itself."""
    program = tmp_path / "__main__.py"
    program.write_text(textwrap.dedent(block("example:composed", "python")))
    monitor = RecordingMonitor(RecordingMocks())
    pulumi.runtime.set_all_config({"consumer:grafana_admin_password": "not-a-password"}, ["consumer:grafana_admin_password"])
    pulumi.runtime.set_mocks(monitor.mocks, project="consumer", stack="dev", preview=True, monitor=monitor)
    pulumi.runtime.settings.ROOT.set(None)
    _sync_await(pulumi.runtime.run_in_stack(lambda: runpy.run_path(str(program), run_name="__main__")))
    by_name = {r.name: r for r in monitor.recorded}
    provider = by_name["ml-k8s"].urn
    for addon in ("ml-monitoring", "ml-dcgm", "ml-dask"):
        assert by_name[addon].provider is None and any(d.endswith("::ml-l4") for d in by_name[addon].depends_on)
    assert by_name["ml-dcgm-release"].provider.startswith(provider)
    # GKE's kind: kube-dns scraped, CoreDNS not; the DCGM alerts ship, as scrapes= says dcgm-exporter follows.
    values = by_name["ml-monitoring-release"].inputs["values"]
    assert (values["kubeDns"]["enabled"], values["coreDns"]["enabled"]) == (True, False)
    rules = by_name["ml-monitoring-gpu-alerts"].inputs["spec"]["groups"]
    assert "DcgmExporterDown" in {r.get("alert") for g in rules for r in g["rules"]}
    # The Dask notebook and workers are placed on the cluster's L4 pool.
    spec = by_name["ml-dask-team-a-dask-cluster-spec"].inputs["data"]
    assert "l4" in str(spec)
