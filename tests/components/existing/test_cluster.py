"""ExistingCluster (issue 37 item 2): the platform's Kubernetes layer onto a cluster it did not create. One child, the
Kubernetes provider on the cluster's kubeconfig (kept secret) and context; the add-ons given it as ``cluster=`` take
that provider and place their pods on the pools the Args describe; nothing is registered on a cloud."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from gpu_platform.components import DaskOperator, DaskOperatorArgs, ExistingCluster, ExistingClusterArgs, SharedDatasets, SharedDatasetsArgs
from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.infra.preview.engine import SECRET_SIG
from tests.components.existing.test_args import L4, SYSTEM
from tests.conftest import Engine, settled_tree

PROVIDER = "pulumi:providers:kubernetes"
ARGS = ExistingClusterArgs.model_validate({"kind": "gke", "context": "team-cluster", "pools": [SYSTEM, L4]})


@pulumi.runtime.test
def test_its_one_child_is_the_provider_on_the_kubeconfig_kept_secret_at_the_context(engine: Engine) -> pulumi.Output[Any]:
    cluster = ExistingCluster("byo", ARGS, kubeconfig="apiVersion: v1\nkind: Config\n")

    def check(_: Any) -> None:
        component = engine.resource("byo")
        assert component.type == "gpu-platform:existing_cluster:ExistingCluster"
        children = [r for r in engine.recorded if r.parent == component.urn]
        assert [(r.type, r.name) for r in children] == [(PROVIDER, "byo-k8s")]  # the frozen child: <name>-k8s
        inputs = children[0].inputs
        assert inputs["context"] == "team-cluster"
        kubeconfig = inputs["kubeconfig"]
        assert isinstance(kubeconfig, dict) and SECRET_SIG.items() <= kubeconfig.items(), "the kubeconfig is not kept secret"
        assert not [r for r in engine.recorded if r.type.startswith(("gcp:", "aws:"))]
        assert cluster.cloud is ClusterKind.GKE and cluster.ready() == []
        assert [s.name for s in cluster.pool_shapes()] == ["system", "gpu-l4"]

    return settled_tree(cluster).apply(check)


@pulumi.runtime.test
def test_without_a_kubeconfig_the_provider_reads_the_ambient_one(engine: Engine) -> pulumi.Output[Any]:
    cluster = ExistingCluster(
        "byo", ExistingClusterArgs.model_validate({"kind": "eks", "pools": [{"name": "system", "role": "system", "machine_type": "m6i.large", "max_nodes": 2}]})
    )

    def check(_: Any) -> None:
        inputs = engine.resource("byo-k8s").inputs
        assert inputs.get("kubeconfig") is None and inputs.get("context") is None
        assert cluster.cloud is ClusterKind.EKS

    return settled_tree(cluster).apply(check)


@pulumi.runtime.test
def test_an_add_on_takes_its_provider_and_places_pods_on_the_described_pools(engine: Engine) -> pulumi.Output[Any]:
    cluster = ExistingCluster("byo", ARGS)
    dask = DaskOperator("dask", DaskOperatorArgs.model_validate({"tenants": [{"name": "vision", "gpu_quota": 4}]}), cluster=cluster)

    def check(_: Any) -> None:
        provider = engine.resource("byo-k8s")
        release = engine.resource("dask-operator")
        assert release.provider is not None and release.provider.startswith(provider.urn)
        worker = dask.cluster_spec["spec"]["worker"]["spec"]
        assert worker["nodeSelector"] == {"cloud.google.com/gke-nodepool": "gpu-l4"}
        assert worker["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]

    return settled_tree(cluster, dask).apply(check)


def test_shared_datasets_refuse_it_naming_what_only_a_created_cluster_has(engine: Engine) -> None:
    cluster = ExistingCluster("byo", ARGS)
    args = SharedDatasetsArgs.model_validate({"datasets": [{"name": "imagenet", "bucket": {"name": "corp-imagenet"}, "tenants": ["vision"]}]})
    with pytest.raises(pulumi.InputPropertyError) as refused:
        SharedDatasets("datasets", args, cluster=cluster, namespaces={})
    assert "an ExistingCluster has none" in str(refused.value)


def test_args_of_another_type_are_refused_in_one_line(engine: Engine) -> None:
    with pytest.raises(pulumi.InputPropertyError, match="args: expected ExistingClusterArgs"):
        ExistingCluster("byo", {"kind": "gke"})  # type: ignore[arg-type]


EKS_ARGS = ExistingClusterArgs.model_validate(
    {
        "kind": "eks",
        "pools": [
            {"name": "system", "role": "system", "machine_type": "m6i.xlarge", "max_nodes": 3},
            {"name": "a10g", "machine_type": "g5.12xlarge", "max_nodes": 4},
        ],
    }
)


@pulumi.runtime.test
def test_an_inference_alb_ingress_uses_the_controller_the_clusters_owner_installed(engine: Engine) -> pulumi.Output[Any]:
    """The AWS Load Balancer Controller is the cluster owner's on an existing cluster: the ALB Ingress needs none from
    the program (a cluster the program creates refuses it without one: tests/infra/test_load_balancing.py)."""
    from gpu_platform.components import GpuInferenceService, GpuInferenceServiceArgs

    cluster = ExistingCluster("byo", EKS_ARGS)
    assert cluster.has_own_ingress_controllers
    args = GpuInferenceServiceArgs.model_validate(
        {"image": "nvcr.io/nvidia/tritonserver:25.01-py3", "pool": "a10g", "gpus": 1, "max_replicas": 2, "ingress": {"hostname": "infer.corp.example"}}
    )
    service = GpuInferenceService("infer", args, cluster=cluster)

    def check(_: Any) -> None:
        (ingress,) = engine.of_type("kubernetes:networking.k8s.io/v1:Ingress")
        assert ingress.inputs["spec"]["ingressClassName"] == "alb"

    return settled_tree(cluster, service).apply(check)
