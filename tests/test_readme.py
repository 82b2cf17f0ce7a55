"""The README's and the docs site's promises: two quick-start commands, a consumer example that runs, a
current reference, links that arrive."""

from __future__ import annotations

import re
import runpy
import subprocess
import textwrap
from pathlib import Path

import pulumi
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.infra.preview.engine import RecordingMocks, RecordingMonitor
from tests.conftest import PROJECT_DIR

README = (PROJECT_DIR / "README.md").read_text()
PAGES = sorted((PROJECT_DIR / "docs").rglob("*.md"))
"""The docs site's pages (mkdocs.yml's docs_dir)."""


def page(path: str) -> str:
    """The text of a docs page, by its path under docs/."""
    return (PROJECT_DIR / "docs" / path).read_text()


def block(marker: str, language: str, text: str = README) -> str:
    m = re.search(rf"<!-- {marker} -->\s*```{language}\n(.+?)\n```", text, re.S)
    assert m, f"no {marker} block"
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
    program.write_text(textwrap.dedent(block("example:consumer", "python", page("getting-started/library.md"))))
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


def test_the_generated_references_are_current() -> None:
    """docs/reference/*.md, the README's contents, the stacks/ and components/ READMEs and Pulumi.yaml's
    config section are what the code generates today (the CLI reference from the parser the CLI runs)."""
    from gpu_platform.infra.cli.app import build_parser
    from gpu_platform.infra.cli.docs import stale_docs

    assert stale_docs(PROJECT_DIR, build_parser()) == [], "run: gpu-platform docs --write"
    assert {p.name for p in (PROJECT_DIR / "docs" / "reference").iterdir()} == {
        "index.md",
        "components.md",
        "stack-config.md",
        "cli.md",
        "policies.md",
        "catalog.md",
    }


def test_the_readme_is_a_front_door() -> None:
    """Under 400 lines: what it is, the two quick-start commands, a table of every component, links into
    docs/; the guides and manuals live in docs/ (issue 33 item 4)."""
    headings = re.findall(r"^## (.+)$", re.sub(r"```.*?```", "", README, flags=re.S), re.M)
    assert headings == ["Quick start", "Components", "Documentation"]
    assert len(README.splitlines()) < 400
    table = README.split("<!-- components:start -->", 1)[1].split("<!-- components:end -->", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| [`")]
    assert len(rows) == len(_defined_components())
    for cls in _defined_components():
        assert f"| [`{cls.__name__}`](docs/reference/components.md#{cls.__name__.lower()}) | " in table, cls
    # The site's home shows the same quick start (included from the README) and the same table.
    home = page("index.md")
    assert '--8<-- "README.md:quickstart"' in home
    assert "<!-- --8<-- [start:quickstart] -->" in README and "<!-- --8<-- [end:quickstart] -->" in README
    assert table.replace("](docs/", "](") in home


def test_every_docs_page_is_reached_from_the_readme() -> None:
    """The README links the docs' index, and the index (with the README) links every other page."""
    assert "(docs/index.md)" in README
    linked = {(PROJECT_DIR / "docs" / link).resolve() for link in _links(page("index.md"))}
    linked |= {(PROJECT_DIR / link).resolve() for link in _links(README)}
    for path in PAGES:
        assert path.name == "index.md" and path.parent.name == "docs" or path.resolve() in linked, path.relative_to(PROJECT_DIR)


def _defined_components() -> set[type]:
    """Every ComponentResource subclass a module under components/ defines, found by importing each file."""
    import importlib

    for path in (PROJECT_DIR / "components").rglob("*.py"):
        parts = path.relative_to(PROJECT_DIR).with_suffix("").parts
        if parts[-1] != "__init__" and not parts[-1].startswith("_"):
            importlib.import_module("gpu_platform." + ".".join(parts))
    found: set[type] = set()
    todo = list(pulumi.ComponentResource.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        # The provider's classes wrap these for other languages (docs/getting-started/other-languages.md).
        if (
            cls.__module__.startswith("gpu_platform.components.")
            and not cls.__module__.startswith("gpu_platform.components.provider")
            and not cls.__name__.startswith("_")
        ):
            found.add(cls)
    return found


def test_the_reference_pages_are_linked_and_cover_every_component() -> None:
    """Every component a module of components/ defines has its section, its Args and every Args key in the
    component reference; the README's stacks/ and components/ folders point at the references."""
    import inspect

    from pydantic import BaseModel

    links = page("reference/index.md")
    for name in ("components.md", "stack-config.md", "cli.md", "policies.md", "catalog.md"):
        assert f"]({name})" in links, name
    reference = page("reference/components.md")
    defined = _defined_components()
    assert len(defined) >= 15
    for cls in defined:
        section = reference.split(f"\n## {cls.__name__}\n", 1)[1].split("\n## ", 1)[0]
        args = inspect.signature(cls.__init__).parameters["args"].annotation
        name = args if isinstance(args, str) else args.__name__
        assert f"- Args: [{name}](#{name.lower()})" in section, cls
        model = next(m for m in vars(inspect.getmodule(cls)).values() if isinstance(m, type) and issubclass(m, BaseModel) and m.__name__ == name)
        table = reference.split(f"\n#### {name}\n", 1)[1].split("\n#### ", 1)[0]
        for key in model.model_fields:
            assert f"\n| `{key}` | " in table, (name, key)
    assert "#### StackConfig" in page("reference/stack-config.md")
    assert "(../docs/reference/stack-config.md)" in (PROJECT_DIR / "stacks" / "README.md").read_text()
    assert "(../docs/reference/components.md)" in (PROJECT_DIR / "components" / "README.md").read_text()


def test_the_reference_gives_each_key_its_type_default_and_allowed_values() -> None:
    """One row read back against the model it documents: GpuNodePoolArgs.capacity (an enum with a default)
    and .accelerator_count (bounds, no default), and a required key."""
    table = page("reference/stack-config.md").split("\n#### GpuNodePoolArgs\n", 1)[1].split("\n#### ", 1)[0]
    rows = {line.split(" | ")[0].strip("| `"): line.split(" | ")[1:4] for line in table.splitlines() if line.startswith("| `")}
    assert rows["capacity"] == ["CapacityStrategy (enum)", "`on_demand`", "one of `on_demand`, `spot`, `spot_then_on_demand`"]
    assert rows["accelerator_count"] == ["int or null", "none", ">= 1; <= 16"]
    assert rows["accelerator_type"][1] == "required"


def test_the_cli_reference_lists_every_command_and_flag_of_the_parser() -> None:
    import argparse

    from gpu_platform.infra.cli.app import build_parser

    reference = page("reference/cli.md")

    def walk(parser: argparse.ArgumentParser, title: str) -> int:
        section = reference.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
        seen = 0
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                seen += sum(walk(sub, f"{title} {name}") for name, sub in action.choices.items())
            elif action.dest not in ("help", "debug"):
                shown = action.option_strings[0] if action.option_strings else action.metavar or action.dest
                assert f"| `{shown}" in section, (title, shown)
                seen += 1
        return seen

    assert walk(build_parser(), "gpu-platform") > 60


def test_the_policy_pack_page_lists_every_rule_and_says_how_many() -> None:
    """The guide's own table (what each rule stops, in words) holds each of the pack's rules once."""
    from gpu_platform.policies.rules import RULES

    guide = page("operating/policy-pack.md")
    resource_rules = sum(1 for r in RULES if type(r).__name__ == "ResourceRule")
    assert f"pack of {len(RULES)} rules" in guide and f"({resource_rules} rules)" in guide and f"({len(RULES) - resource_rules})" in guide
    assert sorted(re.findall(r"^\| `([a-z0-9-]+)` \|", guide, re.M)) == sorted(r.name for r in RULES)


def test_the_policy_reference_lists_every_rule_and_says_how_many() -> None:
    from gpu_platform.policies.rules import RULES

    reference = page("reference/policies.md")
    assert f"has {len(RULES)} rules" in reference
    for rule in RULES:
        assert f"| [`{rule.name}`](#{rule.name}) |" in reference and f"\n### {rule.name}\n" in reference, rule.name
        for setting in rule.config.model_fields:
            assert f"| `{setting}` |" in reference.split(f"\n### {rule.name}\n", 1)[1].split("\n### ", 1)[0], (rule.name, setting)


def test_the_machine_catalog_is_listed_from_the_data() -> None:
    from gpu_platform.components.catalog.gpus import AWS_INSTANCE_TYPES, GCP_ACCELERATORS, GCP_MACHINE_SHAPES

    catalog = page("reference/catalog.md")
    for name in [*GCP_ACCELERATORS, *GCP_MACHINE_SHAPES, *AWS_INSTANCE_TYPES]:
        assert f"| `{name}` |" in catalog, name
    assert "](catalog.md)" in page("reference/index.md")


def test_the_report_port_forward_reaches_the_prometheus_the_stack_deploys() -> None:
    from gpu_platform.components import PrometheusStackArgs

    command = next(line for line in page("commands/report.md").splitlines() if "port-forward" in line and line.startswith("kubectl"))
    namespace = PrometheusStackArgs.model_fields["namespace"].default
    assert f"kubectl -n {namespace} port-forward" in command
    assert "pulumi stack output prometheusUrl" in command  # the service the output names


def test_teardown_says_how_to_lift_every_protection() -> None:
    teardown = page("operating/teardown.md")
    for flag in ("deletion_protection", "keep_volumes_on_delete", "keep_volume_on_delete", "pulumi destroy", "pulumi state unprotect"):
        assert flag in teardown, flag


def test_composed_example_runs_under_mocks(tmp_path: Path) -> None:
    """The README's composition example as printed: the add-ons take the cluster component itself."""
    program = tmp_path / "__main__.py"
    program.write_text(textwrap.dedent(block("example:composed", "python", page("getting-started/library.md"))))
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


# --- the README says one thing, and it is true (issue 25) ------------------------------------

DOCS = [PROJECT_DIR / "README.md", PROJECT_DIR / "components" / "README.md", PROJECT_DIR / "stacks" / "README.md", *PAGES]


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a markdown file: its headings (duplicates suffixed -1, -2...) and <a id/name>."""
    from gpu_platform.infra.docs import anchor as heading_anchor

    found: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        m = re.match(r"^#{1,6} (.+)$", line)
        if m:
            base = heading_anchor(m.group(1))
            anchor, n = base, 0
            while anchor in found:
                n += 1
                anchor = f"{base}-{n}"
            found.add(anchor)
    found |= set(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", text))
    return found


def _links(text: str) -> list[str]:
    without_code = re.sub(r"```.*?```", "", text, flags=re.S)
    without_code = re.sub(r"`[^`\n]*`", "", without_code)
    return re.findall(r"\]\(([^)\s]+)\)", without_code)


def test_every_link_between_the_docs_reaches_its_file_and_anchor() -> None:
    checked = 0
    for doc in DOCS:
        for link in _links(doc.read_text()):
            if re.match(r"^[a-z]+:", link):
                continue  # http(s), mailto: not ours
            path, _, anchor = link.partition("#")
            target = (doc.parent / path).resolve() if path else doc
            assert target.exists(), f"{doc.relative_to(PROJECT_DIR)}: link {link}: no {target}"
            if anchor and target.suffix == ".md":
                assert anchor in _anchors(target.read_text()), f"{doc.relative_to(PROJECT_DIR)}: link {link}: no such heading"
                checked += 1
    assert checked > 50, "the anchors were found and checked"


def test_the_anchor_check_catches_a_broken_one() -> None:
    assert "gpuutilizationautoscalerargs" in _anchors(page("reference/components.md"))
    assert "no-such-heading" not in _anchors(README)


def test_the_readme_states_the_stack_name_rule_the_code_enforces() -> None:
    import pytest

    from gpu_platform.infra.stack.errors import PreviewError
    from gpu_platform.infra.stack.read import check_stack_name

    assert "A stack name is Pulumi's: 1 to 100 letters, digits, `-`, `_` and `.`" in page("getting-started/create-a-stack.md")
    assert not any("Stack names are lowercase" in doc.read_text() for doc in DOCS), "one rule, said once"
    for good in ("Team_dev.2", "a" * 100, "dev-gke"):
        check_stack_name(good)
    for bad in ("team/dev", "dev gke", "a" * 101, "../x", ""):
        with pytest.raises(PreviewError):
            check_stack_name(bad)


def test_the_report_reproduction_states_the_prometheus_flags_the_tests_use() -> None:
    from tests.infra import report_workload

    source = (PROJECT_DIR / "tests" / "infra" / "report_workload.py").read_text()
    assert '"--storage.tsdb.retention.time=100y"' in source and 'f"--query.lookback-delta={LOOKBACK}"' in source
    shown = page("commands/report.md")
    assert f"prometheus --query.lookback-delta={report_workload.LOOKBACK} --storage.tsdb.retention.time=100y" in shown
    assert "promtool tsdb create-blocks-from openmetrics" in shown and "promtool tsdb create-blocks-from openmetrics" in source


def _plain_python() -> str:
    """An interpreter outside the project's virtualenv, as a user's `python` may be."""
    import sys

    return getattr(sys, "_base_executable", None) or sys.executable


def test_the_readme_scripts_run_as_written_from_the_repository_root() -> None:
    import os

    text = "\n".join(doc.read_text() for doc in DOCS)
    scripts = sorted(set(re.findall(r"`(?:\.venv/bin/)?python ((?:tests|examples)/[\w/.-]+\.py)", text)))
    assert {"examples/report/make_sample.py", "tests/benchmarks/render_preview.py"} <= set(scripts)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    has_package = subprocess.run([_plain_python(), "-c", "import gpu_platform"], cwd="/", env=env, capture_output=True, timeout=60).returncode == 0
    runnable = has_package or (PROJECT_DIR / ".venv" / "bin" / "python").is_file()
    for script in scripts:
        done = subprocess.run([_plain_python(), script, "--help"], cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=60)
        if runnable:  # this Python has the package, or the script goes on under ./.venv
            assert done.returncode == 0 and done.stdout.startswith("usage:"), (script, done.stderr)
        else:  # neither: one line saying how to install it
            assert done.returncode == 1 and done.stderr.strip().endswith("or create .venv as the README's quick start does"), done.stderr


def test_make_sample_writes_its_three_files_beside_others(tmp_path: Path) -> None:
    """It writes report.json and the plots into a folder holding other files (its own folder
    holds the script): `report --out` alone would refuse that folder."""
    import os
    import shutil

    import pytest

    if not (shutil.which("promtool") and shutil.which("prometheus")):
        pytest.skip("promtool and prometheus not installed (Debian's prometheus package; .ci/run installs it)")
    (tmp_path / "make_sample.py").write_text("# the script's neighbour\n")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run(
        [_plain_python(), "examples/report/make_sample.py", "--out", str(tmp_path)],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpus.png", "make_sample.py", "report.json", "wait_times.png"]
    # The table docs/commands/report.md shows is what it prints: each row's label and value on one line of its output.
    table = re.search(r"\n```\n(│ GPU pods .+?)\n```", page("commands/report.md"), re.S)
    assert table
    for row in table.group(1).splitlines():
        label, value = (cell.strip() for cell in row.strip("│").split("│"))
        assert any(label in line and value in line for line in done.stdout.splitlines()), row


def test_ci_runs_the_readme_apply_stacks_command() -> None:
    """The commands that run the long tests (docs/development.md), the tests needing the local control plane, apply every stack to a real API server and
    put the Kubeflow stacks through the real engine (docs/commands/preview.md) are the ones .ci/run runs, word for
    word, after the test command, and the last ones."""
    long_runs = "GPU_PLATFORM_LONG_RUNS=1 .venv/bin/python -m pytest -p no:cacheprovider -m long"
    commands = [
        long_runs,
        "GPU_PLATFORM_CONTROL_PLANE=1 .venv/bin/python -m pytest -p no:cacheprovider -n 0 tests/apply tests/engine",
        "GPU_PLATFORM_APPLY_STACKS=1 .venv/bin/python -m pytest -p no:cacheprovider --dist load tests/apply/test_apply_stacks.py",
        "GPU_PLATFORM_KUEUE_E2E=1 .venv/bin/python -m pytest -p no:cacheprovider -n 0 tests/apply/test_kueue_dws_admission.py tests/apply/test_kueue_rung_admission.py",
        "GPU_PLATFORM_ENGINE_STACKS=1 .venv/bin/python -m pytest -p no:cacheprovider -n 0 tests/engine/test_engine_stacks.py",
        "GPU_PLATFORM_ENGINE_STACKS=1 .venv/bin/python -m pytest -p no:cacheprovider -n 0 tests/engine/test_engine_kubeflow.py",
    ]
    script = (PROJECT_DIR / ".ci" / "run").read_text()
    after = script.index('bash -c "${test_command}"')
    for command in commands:
        assert f"```sh\n{command}\n```" in page("development.md" if command == long_runs else "commands/preview.md")
        assert script.index(command) > after
    assert script.rstrip().endswith(commands[-1])
    assert [line for line in script[after:].splitlines() if line and not line.startswith("#")][1:] == commands
