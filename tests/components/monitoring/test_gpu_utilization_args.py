"""GpuUtilizationAutoscalerArgs: its defaults and validators."""

from __future__ import annotations

from gpu_platform.components import (
    GpuUtilizationAutoscalerArgs,
)
from tests.conftest import refused


def test_fails_when_metric_is_not_exposed() -> None:
    (line,) = refused(GpuUtilizationAutoscalerArgs, {"deployment": "infer", "namespace": "ml", "max_replicas": 4, "metric": "DCGM_FI_DEV_FB_USED"})
    assert line.startswith("metric: metric DCGM_FI_DEV_FB_USED is not exposed by the adapter rules; use DCGM_FI_DEV_GPU_UTIL or DCGM_FI_DEV_GPU_UTIL_AVG")


def test_fails_when_min_replicas_exceed_max() -> None:
    (line,) = refused(GpuUtilizationAutoscalerArgs, {"deployment": "infer", "namespace": "ml", "min_replicas": 5, "max_replicas": 4})
    assert line.startswith("min_replicas: min_replicas 5 is above max_replicas 4")


def test_autoscaler_defaults() -> None:
    args = GpuUtilizationAutoscalerArgs(deployment="infer", namespace="ml", max_replicas=4)
    assert (args.min_replicas, args.target_utilization_percent, args.metric) == (1, 70, "DCGM_FI_DEV_GPU_UTIL_AVG")
