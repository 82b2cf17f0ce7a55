"""GpuInferenceService under the recording mock engine: the Deployment on its GPU pool, the Service, the
Ingress of the cluster's load balancer (alb with the controller's annotations on EKS, gce on GKE), the
GPU-utilisation HPA on the Deployment, the alert on a pinned HPA; and every refusal, one line each."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from gpu_platform.components import (
    EksCluster,
    EksClusterArgs,
    GpuGkeCluster,
    GpuGkeClusterArgs,
    SpotFailoverEksNodeGroups,
    SpotFailoverEksNodeGroupsArgs,
)
from gpu_platform.components.core.labels import GPU_RESOURCE
from gpu_platform.components.inference.service import GpuInferenceService, GpuInferenceServiceArgs, InferenceIngressArgs, saturation_rule
from gpu_platform.components.load_balancer.controller import AwsLoadBalancerController, AwsLoadBalancerControllerArgs, LoadBalancer
from tests.components.load_balancer.test_controller import POLICY
from tests.conftest import Engine, settled, settled_tree
from tests.factories import eks, eks_node_groups, gke

IMAGE = "nvcr.io/nvidia/tritonserver:25.01-py3"


def on_eks() -> tuple[EksCluster, SpotFailoverEksNodeGroups, AwsLoadBalancerController]:
    groups = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups())
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks()), gpu_instance_types=groups.instance_types())
    gpu = SpotFailoverEksNodeGroups("c-gpu", groups, cluster=cluster)
    controller = AwsLoadBalancerController("c-alb", AwsLoadBalancerControllerArgs(), cluster=cluster, iam_policy=POLICY)
    return cluster, gpu, controller


def on_gke() -> GpuGkeCluster:
    return GpuGkeCluster("g", GpuGkeClusterArgs.model_validate(gke()))


@pulumi.runtime.test
def test_on_eks_the_service_is_placed_exposed_on_an_alb_and_scaled_on_gpu_utilisation(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu, controller = on_eks()
    crd = pulumi.CustomResource("test:index:Crds", "crds")
    service = GpuInferenceService(
        "c-inference",
        GpuInferenceServiceArgs(image=IMAGE, pool="large", gpus=4),
        cluster=gpu,
        ingress_controller=controller.release,
        prometheus_rule_crd=crd,
    )
    large = next(p for p in gpu.pool_shapes() if p.name == "large")

    def check(resolved: list[Any]) -> None:
        address = resolved[1]
        deployment = engine.resource("c-inference-deployment").inputs
        assert (deployment["metadata"]["name"], deployment["metadata"]["namespace"]) == ("gpu-inference", "inference")
        pod = deployment["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == large.placement.node_selector
        assert pod["tolerations"] == [{"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect.value} for t in large.placement.tolerations]
        (container,) = pod["containers"]
        assert container["image"] == IMAGE
        assert container["resources"]["limits"] == {"cpu": "2", "memory": "8Gi", GPU_RESOURCE: "4"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http"}
        assert "replicas" not in deployment["spec"]  # the HPA owns it
        assert engine.resource("c-inference-deployment").ignore_changes == ["spec.replicas"]
        svc = engine.resource("c-inference-service").inputs["spec"]
        assert svc["ports"] == [{"name": "http", "port": 8000, "protocol": "TCP", "targetPort": "http"}]
        assert svc["selector"] == deployment["spec"]["selector"]["matchLabels"]
        ingress = engine.resource("c-inference-ingress")
        assert ingress.inputs["spec"]["ingressClassName"] == "alb"
        assert ingress.inputs["metadata"]["annotations"] == {
            "alb.ingress.kubernetes.io/scheme": "internet-facing",
            "alb.ingress.kubernetes.io/target-type": "ip",
            "alb.ingress.kubernetes.io/healthcheck-path": "/v2/health/ready",
            "alb.ingress.kubernetes.io/listen-ports": '[{"HTTP":80}]',
        }
        (rule,) = ingress.inputs["spec"]["rules"]
        assert rule["http"]["paths"][0]["backend"]["service"] == {"name": "gpu-inference", "port": {"name": "http"}}
        assert engine.resource("c-alb-release").urn in ingress.depends_on  # the controller's webhooks answer first
        hpa = engine.resource("c-inference-autoscaler-hpa").inputs["spec"]
        assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gpu-inference"}
        assert (hpa["minReplicas"], hpa["maxReplicas"]) == (1, 4)
        assert hpa["metrics"][0]["pods"]["metric"]["name"] == "DCGM_FI_DEV_GPU_UTIL_AVG"
        assert hpa["metrics"][0]["pods"]["target"] == {"type": "AverageValue", "averageValue": "70"}
        alert = engine.resource("c-inference-alert")
        assert alert.inputs["spec"] == {"groups": [saturation_rule(GpuInferenceServiceArgs(image=IMAGE, pool="large", gpus=4))]}
        assert engine.resource("crds").urn in alert.depends_on
        assert address == "gpu-inference.inference.svc:8000"
        assert service.load_balancer == "alb"

    return pulumi.Output.all(settled_tree(cluster, gpu, controller, service), service.service_address).apply(check)


@pulumi.runtime.test
def test_on_gke_the_ingress_is_gkes_own_load_balancer(engine: Engine) -> pulumi.Output[Any]:
    cluster = on_gke()
    service = GpuInferenceService("g-inference", GpuInferenceServiceArgs(image=IMAGE), cluster=cluster)
    t4 = next(p for p in cluster.pool_shapes() if p.name == "t4")

    def check(_: Any) -> None:
        ingress = engine.resource("g-inference-ingress").inputs
        assert ingress["metadata"]["annotations"] == {"kubernetes.io/ingress.class": "gce"}
        assert "ingressClassName" not in ingress["spec"]
        pod = engine.resource("g-inference-deployment").inputs["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == t4.placement.node_selector  # the default pool: the first GPU pool
        assert "g-inference-alert" not in engine.names()  # no PrometheusRule CRD given: no alert
        assert service.load_balancer == "gce"

    return settled_tree(cluster, service).apply(check)


@pulumi.runtime.test
def test_without_an_ingress_there_is_only_the_service(engine: Engine) -> pulumi.Output[Any]:
    cluster = on_gke()
    service = GpuInferenceService("g-inference", GpuInferenceServiceArgs(image=IMAGE, ingress=None), cluster=cluster)

    def check(_: Any) -> None:
        assert "g-inference-ingress" not in engine.names() and "g-inference-service" in engine.names()
        assert service.load_balancer is None

    return settled_tree(cluster, service).apply(check)


def _refused(engine: Engine, build: Any, paths_reasons: list[tuple[str, str]]) -> pulumi.Output[Any]:
    before = engine.names()
    with pytest.raises((pulumi.InputPropertyError, pulumi.InputPropertiesError)) as error:
        build()
    errors = getattr(error.value, "errors", None) or [error.value]
    assert [(e.property_path, e.reason) for e in errors] == paths_reasons
    sentinel = pulumi.ComponentResource("test:index:Sentinel", "sentinel")
    return settled(sentinel).apply(lambda _: _assert_nothing_new(engine, before))


def _assert_nothing_new(engine: Engine, before: set[str]) -> None:
    assert not {n for n in engine.names() - before if n.startswith("bad")}  # refused before registering


@pulumi.runtime.test
def test_fails_when_an_alb_ingress_is_asked_for_on_gke(engine: Engine) -> pulumi.Output[Any]:
    cluster = on_gke()
    args = GpuInferenceServiceArgs(image=IMAGE, ingress=InferenceIngressArgs(load_balancer=LoadBalancer.ALB))
    return _refused(
        engine,
        lambda: GpuInferenceService("bad", args, cluster=cluster),
        [
            ("args.ingress.load_balancer", "load_balancer alb exists on eks clusters, not on gke; use gce or leave load_balancer unset"),
        ],
    )


@pulumi.runtime.test
def test_fails_when_a_gce_ingress_is_asked_for_on_eks(engine: Engine) -> pulumi.Output[Any]:
    _, gpu, controller = on_eks()
    args = GpuInferenceServiceArgs(image=IMAGE, ingress=InferenceIngressArgs(load_balancer=LoadBalancer.GCE))
    return _refused(
        engine,
        lambda: GpuInferenceService("bad", args, cluster=gpu, ingress_controller=controller.release),
        [
            ("args.ingress.load_balancer", "load_balancer gce exists on gke clusters, not on eks; use alb or leave load_balancer unset"),
        ],
    )


@pulumi.runtime.test
def test_fails_when_an_alb_ingress_has_no_controller(engine: Engine) -> pulumi.Output[Any]:
    _, gpu, _ = on_eks()
    return _refused(
        engine,
        lambda: GpuInferenceService("bad", GpuInferenceServiceArgs(image=IMAGE), cluster=gpu),
        [
            ("ingress_controller", "ingress_controller: an ALB Ingress needs the AWS Load Balancer Controller; pass AwsLoadBalancerController(...).release"),
        ],
    )


@pulumi.runtime.test
def test_fails_when_the_pool_is_unknown_or_too_small(engine: Engine) -> pulumi.Output[Any]:
    cluster = on_gke()
    args = GpuInferenceServiceArgs(image=IMAGE, pool="a100", ingress=None)
    _refused(
        engine,
        lambda: GpuInferenceService("bad", args, cluster=cluster),
        [
            ("args.pool", "no pool named a100; use a GPU pool of the cluster (t4)"),
        ],
    )
    args = GpuInferenceServiceArgs(image=IMAGE, pool="system", ingress=None)
    _refused(
        engine,
        lambda: GpuInferenceService("bad", args, cluster=cluster),
        [
            ("args.pool", "pool system has no GPUs; use a GPU pool (t4)"),
        ],
    )
    args = GpuInferenceServiceArgs(image=IMAGE, gpus=4, ingress=None)
    return _refused(
        engine,
        lambda: GpuInferenceService("bad", args, cluster=cluster),
        [
            ("args.gpus", "gpus 4 is more than a node of pool t4 has (2); use at most 2"),
        ],
    )


def _shared_l4(**overrides: Any) -> dict[str, Any]:
    """An L4 pool time-shared 8 ways, 0..2 nodes: 1 physical GPU, 8 schedulable GPUs a node."""
    return {
        "name": "l4",
        "machine_type": "g2-standard-8",
        "accelerator_type": "nvidia-l4",
        "autoscaling": {"scope": "total", "min_nodes": 0, "max_nodes": 2},
        "gpu_sharing": {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 8},
        **overrides,
    }


@pulumi.runtime.test
def test_as_a_library_a_shared_pool_takes_one_gpu_a_container_from_its_shape(engine: Engine) -> pulumi.Output[Any]:
    """No stack here: the component reads the sharing from the cluster's pool shape, so 2 GPUs on the shared
    pool are refused by the one-shared-GPU rule (not as more than the node's 1 physical GPU), and the
    WarmCapacity beside it holds up to the pool's 16 schedulable GPUs (2 nodes x 8), not 2."""
    from gpu_platform.components.warm.warm_capacity import WarmCapacity, WarmCapacityArgs

    cluster = GpuGkeCluster("g", GpuGkeClusterArgs.model_validate(gke(gpu_pools=[_shared_l4()])))
    (shape,) = [s for s in cluster.pool_shapes() if s.name == "l4"]
    assert (shape.gpus_per_node, shape.schedulable_gpus_per_node, shape.max_schedulable_gpus) == (1, 8, 16)
    WarmCapacity("warm", WarmCapacityArgs(pools={"l4": 16}), cluster=cluster)
    with pytest.raises(pulumi.InputPropertyError) as warm:
        WarmCapacity("bad-warm", WarmCapacityArgs(pools={"l4": 17}), cluster=cluster)
    assert (warm.value.property_path, warm.value.reason) == (
        "args.pools.l4",
        "17 warm GPUs exceed the pool's 16 at its maximum (2 nodes x 8); use at most 16",
    )
    args = GpuInferenceServiceArgs(image=IMAGE, pool="l4", gpus=2, ingress=None)
    return _refused(
        engine,
        lambda: GpuInferenceService("bad", args, cluster=cluster),
        [
            (
                "args.gpus",
                "an inference pod asks for 2 GPUs on pool l4, whose GPUs are shared: a container there asks for exactly 1; "
                "use gpus 1 or a pool that does not share its GPUs",
            ),
        ],
    )


@pulumi.runtime.test
def test_fails_when_the_pods_fit_no_node_of_their_pool(engine: Engine) -> pulumi.Output[Any]:
    cluster = on_gke()
    args = GpuInferenceServiceArgs(image=IMAGE, memory="64Gi", ingress=None)
    before = engine.names()
    with pytest.raises(pulumi.InputPropertyError) as error:
        GpuInferenceService("bad", args, cluster=cluster)
    assert error.value.property_path == "args.memory"
    assert error.value.reason.startswith("memory 64Gi of the inference pods fits no node of pool t4 (n1-standard-4)")
    sentinel = pulumi.ComponentResource("test:index:Sentinel", "sentinel")
    return settled(sentinel).apply(lambda _: _assert_nothing_new(engine, before))


@pulumi.runtime.test
def test_an_internal_https_alb_gets_its_scheme_listener_and_certificate(engine: Engine) -> pulumi.Output[Any]:
    _, gpu, controller = on_eks()
    arn = "arn:aws:acm:us-west-2:123456789012:certificate/abc"
    args = GpuInferenceServiceArgs(image=IMAGE, ingress={"certificate_arn": arn, "internal": True, "hostname": "infer.example.com"})
    service = GpuInferenceService("c-inference", args, cluster=gpu, ingress_controller=controller.release)

    def check(_: Any) -> None:
        ingress = engine.resource("c-inference-ingress").inputs
        annotations = ingress["metadata"]["annotations"]
        assert annotations["alb.ingress.kubernetes.io/scheme"] == "internal"
        assert annotations["alb.ingress.kubernetes.io/listen-ports"] == '[{"HTTPS":443}]'
        assert annotations["alb.ingress.kubernetes.io/certificate-arn"] == arn
        assert ingress["spec"]["rules"][0]["host"] == "infer.example.com"

    return settled_tree(service).apply(check)


def test_the_saturation_alert_compares_current_and_maximum_replicas_of_this_hpa() -> None:
    group = saturation_rule(GpuInferenceServiceArgs(image=IMAGE, namespace="serving", name="llm", saturated_for="30m"))
    (rule,) = group["rules"]
    assert rule["alert"] == "GpuInferenceAtMaxReplicas" and rule["for"] == "30m"
    selector = '{namespace="serving",horizontalpodautoscaler="llm"}'
    assert rule["expr"] == (f"kube_horizontalpodautoscaler_status_current_replicas{selector} == kube_horizontalpodautoscaler_spec_max_replicas{selector}")


def test_promtool_accepts_the_saturation_alert(tmp_path: Path) -> None:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("promtool is not installed (Debian's prometheus package; .ci/run installs it)")
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": [saturation_rule(GpuInferenceServiceArgs(image=IMAGE))]}))
    result = subprocess.run([tool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 1 rules found" in result.stdout
