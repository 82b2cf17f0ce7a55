"""The dask-kubernetes-operator chart's values (components/dask/resources.py), checked against the chart the
operator's wheel ships."""

from __future__ import annotations

from gpu_platform.components import DaskOperatorArgs
from gpu_platform.components.dask.args import operator_chart_dir
from gpu_platform.components.dask.resources import operator_values
from tests.components.monitoring.test_upstream_schemas import unknown_keys
from tests.conftest import load_yaml


def test_operator_values_exist_in_the_wheels_chart() -> None:
    reference = load_yaml((operator_chart_dir() / "values.yaml").read_text())
    for watch in (None, "team-a"):
        values = operator_values(DaskOperatorArgs(), watch)
        assert list(unknown_keys(values, reference)) == []
        assert values["image"]["name"] == reference["image"]["name"]
    assert operator_values(DaskOperatorArgs(), None)["kopfArgs"] == reference["kopfArgs"] == ["--all-namespaces"]
    assert operator_values(DaskOperatorArgs(), "team-a")["kopfArgs"] == ["--namespace", "team-a"]
    assert operator_values(DaskOperatorArgs(), "team-a")["rbac"] == {"create": True, "cluster": False}
