"""Every independent cross-field problem of a stack is reported in one run, one line each
(issue 25): a new user's stack with five problems takes one run to list them, not five."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.infra.cli import main
from tests.conftest import PROJECT_DIR

NS = "gpu-platform:"


def _gke(config: dict[str, Any]) -> None:
    config[NS + "monitoring"]["dcgm_exporter"]["node_selection"] = "eks"  # the other cloud's selection
    config[NS + "gke"]["managed_dcgm_metrics"] = True  # and dcgm-exporter: two collectors
    config[NS + "gke"]["dataplane_v2"] = False  # the Dask tenants' NetworkPolicy not enforced
    config[NS + "dask"]["tenants"][0]["isolated"] = True
    config[NS + "dask"]["tenants"][1]["isolated"] = False
    config[NS + "dask"]["namespace"] = "kube-system"  # Kubernetes' own namespace
    config[NS + "monitoring"]["prometheus"]["namespace"] = "team-b"  # a Dask tenant's namespace


def _eks(config: dict[str, Any]) -> None:
    config[NS + "eks_node_groups"]["autoscaler"]["image"] = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.30.0"
    config[NS + "monitoring"]["dcgm_exporter"]["node_selection"] = "gke"
    config[NS + "monitoring"]["prometheus"]["storage_class"] = "io2"  # not a class of the stack
    config[NS + "eks"]["network_policy"] = False
    config[NS + "dask"]["tenants"][0]["isolated"] = True
    config[NS + "dask"]["tenants"][1]["isolated"] = False
    config[NS + "dask"]["namespace"] = "kube-system"


CASES: dict[str, tuple[str, Callable[[dict[str, Any]], None], list[str]]] = {
    "gke": (
        "dev-gke",
        _gke,
        [
            "gpu-platform:monitoring.dcgm_exporter.node_selection: node_selection eks does not match cloud gcp; use gke",
            "gpu-platform:monitoring.dcgm_exporter: dcgm_exporter and gke.managed_dcgm_metrics both collect GPU telemetry; keep one",
            "gpu-platform:dask.namespace: namespace kube-system belongs to Kubernetes",
            "gpu-platform:dask.tenants[1].name: namespace team-b is already the monitoring stack's",
            "gpu-platform:dask.tenants[0].isolated: tenant team-a is isolated by a NetworkPolicy this cluster would not enforce (gke.dataplane_v2 is false)",
        ],
    ),
    "eks": (
        "dev-eks",
        _eks,
        [
            "gpu-platform:eks_node_groups.autoscaler.image: ",
            "gpu-platform:monitoring.dcgm_exporter.node_selection: node_selection gke does not match cloud aws; use eks",
            "gpu-platform:monitoring.prometheus.storage_class: no StorageClass io2 in this stack",
            "gpu-platform:dask.namespace: namespace kube-system belongs to Kubernetes",
            "gpu-platform:dask.tenants[0].isolated: tenant team-a is isolated by a NetworkPolicy this cluster would not enforce (eks.network_policy is false)",
        ],
    ),
}


def _project(root: Path, stack: str, change: Callable[[dict[str, Any]], None]) -> Path:
    (root / "stacks").mkdir(parents=True)
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "infra").symlink_to(PROJECT_DIR / "infra")
    document = yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    change(document["config"])
    (root / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(document))
    return root


@pytest.mark.parametrize("cloud", sorted(CASES))
def test_five_independent_cross_field_problems_are_five_lines_in_one_run(cloud: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack, change, expected = CASES[cloud]
    root = _project(tmp_path, stack, change)
    assert main(["preview", stack, "--quiet", "--no-render", "--project-dir", str(root)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 5, lines
    for want in expected:
        assert sum(want in line for line in lines) == 1, (want, lines)
    assert all(line.startswith("gpu-platform: gpu-platform:") and "(got " in line for line in lines), lines
    assert captured.out == "" and "Traceback" not in captured.err


@pytest.mark.parametrize("cloud", sorted(CASES))
def test_each_problem_alone_is_one_line(cloud: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The five are independent: a stack with only the first is one line (the rest clean)."""
    stack, _, expected = CASES[cloud]

    def first(config: dict[str, Any]) -> None:
        if cloud == "gke":
            config[NS + "monitoring"]["dcgm_exporter"]["node_selection"] = "eks"
        else:
            config[NS + "eks_node_groups"]["autoscaler"]["image"] = "registry.k8s.io/autoscaling/cluster-autoscaler:v1.30.0"

    root = _project(tmp_path, stack, first)
    assert main(["preview", stack, "--quiet", "--no-render", "--project-dir", str(root)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and expected[0] in lines[0], lines
