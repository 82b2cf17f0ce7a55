"""`gpu-platform preview --program` on a program of another project that composes the components by
instance (examples/composed, project acme-gpu): its own config namespaces are accepted (its
project's, Pulumi.yaml's and those it reads through pulumi.Config), a namespace it never reads is
refused in one line, and the plan and the tree name its project."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from gpu_platform.infra.cli import main
from gpu_platform.infra.testing import preview_program
from tests.conftest import PROJECT_DIR

COMPOSED = PROJECT_DIR / "examples" / "composed"


@pytest.fixture
def composed(tmp_path: Path) -> Path:
    """examples/composed copied to a folder of its own, as another team's repository."""
    return Path(shutil.copytree(COMPOSED, tmp_path / "acme", ignore=shutil.ignore_patterns("__pycache__")))


@pytest.mark.parametrize(
    ("stack", "cluster", "addons"),
    [
        ("gke", "gpu-platform:gpu_gke_cluster:GpuGkeCluster", {"PrometheusStack", "DcgmExporter", "DaskOperator", "KubeflowInstall"}),
        (
            "eks",
            "gpu-platform:eks_cluster:EksCluster",
            {"PrometheusStack", "SpotFailoverEksNodeGroups", "DcgmExporter", "DaskOperator", "GpuUtilizationAutoscaler"},
        ),
    ],
)
def test_a_program_passing_the_cluster_component_previews_clean(
    composed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], stack: str, cluster: str, addons: set[str]
) -> None:
    plan_file = tmp_path / "plan.json"
    assert main(["preview", "--program", str(composed), stack, "--no-render", "--json", str(plan_file)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Stack {stack} (acme-gpu): ")
    assert "0 schema violations; policy pack: 0 mandatory" in out
    document = json.loads(plan_file.read_text())
    assert (document["project"], document["stack"], document["violations"]) == ("acme-gpu", stack, [])
    assert all(r["urn"].startswith(f"urn:pulumi:{stack}::acme-gpu::") for r in document["resources"])
    components = {r["type"].rsplit(":", 1)[1]: r for r in document["resources"] if not r["custom"]}
    assert cluster.rsplit(":", 1)[1] in components and addons <= set(components)
    # The add-ons run through the cluster's Kubernetes provider, with the team from acme:team.
    (provider,) = [r["urn"] for r in document["resources"] if r["type"] == "pulumi:providers:kubernetes"]
    k8s = [r for r in document["resources"] if r["type"].startswith("kubernetes:")]
    assert k8s and {r["options"]["provider"].split("::id")[0].rsplit("::", 1)[0] for r in k8s} <= {provider.rsplit("::", 1)[0]}
    assert any(r["name"] == "ml-dask-vision-namespace" or r["inputs"].get("metadata", {}).get("name") == "vision" for r in k8s)


def test_the_testing_module_previews_it_with_its_project(composed: Path) -> None:
    plan = preview_program(composed, "gke")
    plan.assert_no_violations()
    assert plan.project == "acme-gpu"


def _stack(program: Path, name: str, config: str) -> None:
    (program / f"Pulumi.{name}.yaml").write_text(textwrap.dedent(config))


def test_a_namespace_the_program_never_reads_is_refused_in_one_line(composed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = (composed / "Pulumi.gke.yaml").read_text().replace("acme:team: vision", "acmee:team: vision")
    (composed / "Pulumi.typo.yaml").write_text(stack)
    assert main(["preview", "--program", str(composed), "typo", "--no-render", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "gpu-platform: acmee:team: unknown config namespace 'acmee'; did you mean acme:team? "
        "(the program reads acme-gpu:, aws:, gcp:, kubernetes:, pulumi:, random:, acme:; nothing else is used)"
    ]


def test_a_namespace_looked_up_and_unset_counts_as_read(tmp_path: Path) -> None:
    """pulumi.Config("feature").get("x") reads the namespace even when the stack sets other keys of it."""
    (tmp_path / "Pulumi.yaml").write_text("name: mine\nruntime: python\nconfig:\n  declared:size: 3\n")
    (tmp_path / "__main__.py").write_text(
        textwrap.dedent("""
        import pulumi
        pulumi.export("flag", pulumi.Config("feature").get("flag") or "unset")
    """)
    )
    _stack(
        tmp_path,
        "dev",
        """
        config:
          feature:other: 1
          declared:size: 4
    """,
    )
    plan = preview_program(tmp_path)
    assert plan.outputs == {"flag": "unset"}
    _stack(
        tmp_path,
        "dev",
        """
        config:
          unread:flag: 1
    """,
    )
    with pytest.raises(Exception) as info:
        preview_program(tmp_path)
    assert info.value.lines == [  # type: ignore[attr-defined]
        "unread:flag: unknown config namespace 'unread' "
        "(the program reads mine:, aws:, gcp:, kubernetes:, pulumi:, random:, declared:, feature:; nothing else is used)"
    ]


def test_a_misspelt_namespace_is_named_when_the_program_fails_without_it(composed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """acmee:cloud leaves acme:cloud unset, so the program fails (Pulumi's missing-config error): the
    unread namespace is the cause, said in one line, exit 2."""
    stack = (composed / "Pulumi.gke.yaml").read_text().replace("acme:cloud: gcp", "acmee:cloud: gcp")
    (composed / "Pulumi.typo.yaml").write_text(stack)
    assert main(["preview", "--program", str(composed), "typo", "--no-render", "--quiet"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "gpu-platform: acmee:cloud: unknown config namespace 'acmee'; did you mean acme:cloud? "
        "(the program reads acme-gpu:, aws:, gcp:, kubernetes:, pulumi:, random:, acme:; nothing else is used)"
    ]
