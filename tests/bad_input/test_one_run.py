"""Every independent problem in one run, field errors and cross-field problems together (issue 35): the
cross-field checks run on the values that are valid, beside the errors of the values that are not, so a
stack with four independent problems (two of them cross-field) prints four lines in one run, not two
lines in a first run and two in the next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.bad_input.test_config_mutations import Case, run_case

NS = "gpu-platform:"


def _gke(config: dict[str, Any]) -> None:
    config[NS + "monitoring"]["prometheus"]["retention"] = "7days"  # field: not a Prometheus duration
    config[NS + "queues"] = {"tenants": [{"name": "team-a", "weight": -1}]}  # field: weight must be > 0
    config[NS + "monitoring"]["dcgm_exporter"]["node_selection"] = "eks"  # cross-field: the other cloud's selection
    config[NS + "warm_capacity"] = {"pools": {"no-such-pool": 1}}  # cross-field: no such GPU pool


def _eks(config: dict[str, Any]) -> None:
    config[NS + "monitoring"]["prometheus"]["storage_size_gib"] = True  # field: a boolean for a number
    config[NS + "eks_node_groups"]["autoscaler"]["max_node_provision_time"] = "7 minutes"  # field
    config[NS + "monitoring"]["prometheus"]["storage_class"] = "io2"  # cross-field: not a class of the stack
    config[NS + "dask"]["namespace"] = "kube-system"  # cross-field: Kubernetes' own namespace


CASES = {
    "gke": (
        "dev-gke",
        _gke,
        [
            "gpu-platform:monitoring.prometheus.retention: ",
            "gpu-platform:queues.tenants[0].weight: ",
            "gpu-platform:monitoring.dcgm_exporter.node_selection: node_selection eks does not match cloud gcp",
            "gpu-platform:warm_capacity.pools.no-such-pool: no GPU pool",
        ],
    ),
    "eks": (
        "dev-eks",
        _eks,
        [
            "gpu-platform:monitoring.prometheus.storage_size_gib: a whole number expected",
            "gpu-platform:eks_node_groups.autoscaler.max_node_provision_time: ",
            "gpu-platform:monitoring.prometheus.storage_class: no StorageClass io2 in this stack",
            "gpu-platform:dask.namespace: namespace kube-system belongs to Kubernetes",
        ],
    ),
}


@pytest.mark.parametrize("cloud", sorted(CASES))
def test_four_independent_problems_two_cross_field_are_four_lines_in_one_run(cloud: str, tmp_path: Path) -> None:
    stack, change, expected = CASES[cloud]
    code, out, err = run_case(Case(cloud, stack, "", lambda doc: change(doc["config"])), tmp_path)
    lines = err.strip().splitlines()
    assert code == 2, out + err
    assert len(lines) == 4, lines
    for want in expected:
        assert sum(want in line for line in lines) == 1, (want, lines)
    assert "Traceback" not in out + err


def _version_float(config: dict[str, Any]) -> None:
    config[NS + "kubernetes_version"] = 1.30


def test_a_check_about_a_refused_value_waits_for_it(tmp_path: Path) -> None:
    """A refused value's stand-in (the default) never makes a problem of its own: kubernetes_version 1.30
    read as a number is one line, not a second one saying eks.version does not match the default."""
    code, out, err = run_case(Case("v", "dev-eks", "", lambda doc: _version_float(doc["config"])), tmp_path)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "gpu-platform:kubernetes_version: " in lines[0], lines
