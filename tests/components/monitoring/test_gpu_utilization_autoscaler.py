"""GpuUtilizationAutoscaler under the recording mock engine: a valid autoscaling/v2 HPA."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pulumi

from gpu_platform.components import (
    GpuUtilizationAutoscaler,
    GpuUtilizationAutoscalerArgs,
)
from tests.conftest import Engine, settled


@pulumi.runtime.test
def test_hpa_is_a_valid_autoscaling_v2_object(engine: Engine) -> pulumi.Output[Any]:
    hpa = GpuUtilizationAutoscaler("infer", GpuUtilizationAutoscalerArgs(deployment="infer", namespace="ml", max_replicas=4))

    def check(_: Any) -> None:
        body = engine.resource("infer-hpa").inputs
        kubernetes_validate.validate(body, "1.34", strict=True)
        (metric,) = body["spec"]["metrics"]
        assert metric == {"type": "Pods", "pods": {"metric": {"name": "DCGM_FI_DEV_GPU_UTIL_AVG"}, "target": {"type": "AverageValue", "averageValue": "70"}}}
        assert body["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "infer"}

    return settled(hpa, hpa.hpa).apply(check)
