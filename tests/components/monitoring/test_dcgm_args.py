"""DcgmExporterArgs: the default metrics and every validator."""

from __future__ import annotations

from gpu_platform.components import (
    DcgmExporterArgs,
)
from gpu_platform.components.monitoring.dcgm_args import DEFAULT_METRICS
from gpu_platform.components.monitoring.dcgm_resources import metrics_csv
from tests.conftest import refused


def test_default_metrics() -> None:
    fields = [m.field for m in DcgmExporterArgs(node_selection="gke").metrics]
    assert fields == [m.field for m in DEFAULT_METRICS]
    for needed in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_XID_ERRORS"):
        assert needed in fields
    assert metrics_csv(list(DEFAULT_METRICS)).splitlines()[5] == "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %)."


def test_fails_when_probe_delay_is_below_20_seconds() -> None:
    (line,) = refused(DcgmExporterArgs, {"node_selection": "gke", "probe_initial_delay_seconds": 10})
    assert line.startswith("probe_initial_delay_seconds: Input should be greater than or equal to 20 (got 10)")


def test_fails_when_gpu_utilisation_is_not_exported() -> None:
    (line,) = refused(DcgmExporterArgs, {"node_selection": "eks", "metrics": [{"field": "DCGM_FI_DEV_GPU_TEMP", "type": "gauge", "help": "t"}]})
    assert "metrics must include DCGM_FI_DEV_GPU_UTIL" in line


def test_fails_when_image_floats() -> None:
    (line,) = refused(DcgmExporterArgs, {"node_selection": "gke", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:latest"})
    assert "must carry a version tag (never latest)" in line


def test_fails_when_node_selection_is_missing() -> None:
    assert refused(DcgmExporterArgs, {}) == ["node_selection: required (got nothing)"]
