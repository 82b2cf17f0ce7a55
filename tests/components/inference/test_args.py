"""GpuInferenceServiceArgs (components/inference/args.py): the documented defaults and every validator."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gpu_platform.components.inference.service import GpuInferenceServiceArgs, InferenceIngressArgs
from gpu_platform.components.load_balancer.controller import LoadBalancer
from tests.components.inference.test_service import IMAGE


def test_inference_defaults() -> None:
    args = GpuInferenceServiceArgs(image=IMAGE)
    assert (args.name, args.namespace, args.port, args.health_path, args.pool, args.gpus) == (
        "gpu-inference",
        "inference",
        8000,
        "/v2/health/ready",
        None,
        1,
    )
    assert (args.cpu, args.memory, args.command, args.args) == ("2", "8Gi", [], [])
    assert (args.min_replicas, args.max_replicas, args.target_utilization_percent, args.metric, args.saturated_for) == (
        1,
        4,
        70,
        "DCGM_FI_DEV_GPU_UTIL_AVG",
        "15m",
    )
    # The Ingress is on by default, on the cluster's own load balancer.
    assert args.ingress == InferenceIngressArgs()
    ingress = InferenceIngressArgs()
    assert (ingress.load_balancer, ingress.hostname, ingress.path, ingress.internal, ingress.certificate_arn) == (None, None, "/", False, None)
    from gpu_platform.components.core.cloud import ClusterKind

    assert (ingress.resolved(ClusterKind.EKS), ingress.resolved(ClusterKind.GKE)) == (LoadBalancer.ALB, LoadBalancer.GCE)


@pytest.mark.parametrize(
    ("value", "loc", "message"),
    [
        ({"image": "tritonserver"}, ("image",), "Value error, image 'tritonserver' must carry a version tag (never latest) or a digest"),
        ({"min_replicas": 5}, ("min_replicas",), "min_replicas 5 is above max_replicas 4; use at most 4"),
        (
            {"metric": "DCGM_FI_DEV_FB_USED"},
            ("metric",),
            "metric DCGM_FI_DEV_FB_USED is not exposed by the adapter rules; use DCGM_FI_DEV_GPU_UTIL or DCGM_FI_DEV_GPU_UTIL_AVG",
        ),
        ({"gpus": 0}, ("gpus",), "Input should be greater than or equal to 1"),
        ({"port": 70000}, ("port",), "Input should be less than or equal to 65535"),
        ({"cpu": "two"}, ("cpu",), None),
        ({"memory": "8G"}, ("memory",), None),
        ({"health_path": "ready"}, ("health_path",), None),
        ({"saturated_for": "15 minutes"}, ("saturated_for",), None),
        ({"namespace": "Inference"}, ("namespace",), None),
        (
            {"ingress": {"load_balancer": "gce", "certificate_arn": "arn:aws:acm:us-west-2:123456789012:certificate/abc"}},
            ("ingress", "certificate_arn"),
            "certificate_arn applies to load_balancer alb, not gce; remove it (GKE takes certificates from a ManagedCertificate)",
        ),
        ({"ingress": {"load_balancer": "gce", "internal": True}}, ("ingress", "internal"), "internal applies to load_balancer alb, not gce; remove it"),
        ({"ingress": {"load_balancer": "nlb"}}, ("ingress", "load_balancer"), "Input should be 'alb' or 'gce'"),
        ({"ingress": {"certificate_arn": "not-an-arn"}}, ("ingress", "certificate_arn"), None),
        ({"replicas": 2}, ("replicas",), "Extra inputs are not permitted"),
    ],
)
def test_fails_when_an_inference_value_is_wrong(value: dict[str, Any], loc: tuple[str, ...], message: str | None) -> None:
    with pytest.raises(ValidationError) as error:
        GpuInferenceServiceArgs.model_validate({"image": IMAGE, **value})
    (problem,) = error.value.errors()
    assert problem["loc"] == loc
    if message is not None:
        assert problem["msg"] == message


def test_fails_when_the_image_is_missing() -> None:
    with pytest.raises(ValidationError) as error:
        GpuInferenceServiceArgs.model_validate({})
    assert [(e["loc"], e["msg"]) for e in error.value.errors()] == [(("image",), "Field required")]
