"""DaskOperator and RapidsDaskClusterSpec: the seed's RBAC, quotas, notebook and prepuller,
and the DaskCluster spec checked against the CRD the dask-kubernetes wheel ships."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate
import pulumi
import pytest
import yaml
from pydantic import ValidationError

from gpu_platform.components import DaskOperator, DaskOperatorArgs, RapidsDaskClusterSpec
from gpu_platform.components.dask.args import GPU_NODE_LABELS, operator_chart_dir
from gpu_platform.components.pools.reserves import ReserveFormula
from gpu_platform.components.pools.shapes import GPU_TAINT, CapacityStrategy, NodePoolShape, PoolPlacement, Taint
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from tests.conftest import Engine, load_yaml, settled, settled_tree
from tests.factories import stack

SCHEDULER_POOL = NodePoolShape(
    "scheduler",
    "scheduler",
    "n1-standard-2",
    2,
    7680,
    1,
    "nvidia-tesla-t4",
    CapacityStrategy.ON_DEMAND,
    0,
    4,
    {"dedicated": "scheduler"},
    (GPU_TAINT,),
    PoolPlacement({"cloud.google.com/gke-nodepool": "scheduler"}, (GPU_TAINT,)),
    reserve_formula=ReserveFormula.GKE,
)
TRAINING = Taint(key="gpu-platform.io/workload", value="training")
GPU_POOL = NodePoolShape(
    "t4",
    "gpu",
    "n1-standard-4",
    4,
    15360,
    2,
    "nvidia-tesla-t4",
    CapacityStrategy.ON_DEMAND,
    2,
    40,
    {},
    (GPU_TAINT, TRAINING),
    PoolPlacement({"cloud.google.com/gke-nodepool": "t4"}, (GPU_TAINT, TRAINING)),
    reserve_formula=ReserveFormula.GKE,
)
TENANTS = [
    {"name": "team-a", "gpu_quota": 8, "notebook": {"gpus": 1}},
    {"name": "team-b", "gpu_quota": 4, "cpu_quota": "16", "memory_quota": "64Gi", "shared_cluster": {"min_workers": 1, "max_workers": 3}},
]


@cache
def daskcluster_schema() -> dict[str, Any]:
    crd = load_yaml((operator_chart_dir() / "crds" / "daskcluster.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version["schema"]["openAPIV3Schema"]


def refusal(dask: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate({**stack(), "dask": dask})
    return format_validation_error(info.value, StackConfig, "gpu-platform")


# --- Args -------------------------------------------------------------------------------------


@pulumi.runtime.test
def test_fails_when_the_component_gets_a_notebook_its_pool_cannot_hold(engine: Engine) -> pulumi.Output[Any]:
    args = DaskOperatorArgs.model_validate({"tenants": [{"name": "a", "gpu_quota": 4, "notebook": {"memory": "16Gi"}}]})
    with pytest.raises(pulumi.InputPropertyError) as error:
        DaskOperator("d", args, pools=[SCHEDULER_POOL, GPU_POOL])
    assert error.value.property_path == "args.tenants[0].notebook.memory"
    assert error.value.reason.startswith("memory 16Gi of tenant a's notebook fits no node of pool t4")
    # Registered after the refusal: once it is recorded, anything the refused component declared would be too.
    sentinel = pulumi.ComponentResource("test:index:Sentinel", "sentinel")
    return settled(sentinel).apply(lambda _: assert_only(engine.names(), {"sentinel"}))


def assert_only(names: set[str], expected: set[str]) -> None:
    assert names == expected  # refused before anything registered


# --- the DaskCluster spec ----------------------------------------------------------------------


def test_spec_is_make_cluster_spec_plus_placement() -> None:
    from dask_kubernetes.operator import make_cluster_spec

    spec = RapidsDaskClusterSpec.for_pools("rapids", [SCHEDULER_POOL, GPU_POOL], n_workers=3).to_dict()
    expected = make_cluster_spec(
        name="rapids",
        image=RapidsDaskClusterSpec(name="x").image,
        n_workers=3,
        resources={"requests": {"cpu": "1", "memory": "5Gi"}, "limits": {"cpu": "1", "memory": "5Gi", "nvidia.com/gpu": "1"}},
        worker_command="dask-cuda-worker",
    )
    worker, scheduler = expected["spec"]["worker"]["spec"], expected["spec"]["scheduler"]["spec"]
    # Requests equal limits: dask-cuda-worker sizes its memory from the cgroup, never the LimitRange default.
    scheduler["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "memory": "2Gi"},
        "limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"},
    }
    for pod in (worker, scheduler):
        pod["containers"][0].pop("env")
    worker["tolerations"] = [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "gpu-platform.io/workload", "operator": "Equal", "value": "training", "effect": "NoSchedule"},
    ]
    worker["nodeSelector"] = {"cloud.google.com/gke-nodepool": "t4"}
    scheduler["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
    scheduler["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": {"matchExpressions": [{"key": "dedicated", "operator": "In", "values": ["scheduler"]}]}}
            ]
        }
    }
    assert spec == expected
    assert worker["containers"][0]["args"][0] == "dask-cuda-worker"
    probes = scheduler["containers"][0]
    assert probes["readinessProbe"]["httpGet"] == {"port": "http-dashboard", "path": "/health"}
    assert probes["livenessProbe"]["initialDelaySeconds"] == 15 and probes["livenessProbe"]["periodSeconds"] == 20


def test_spec_validates_against_the_crd_and_kubernetes() -> None:
    spec = RapidsDaskClusterSpec.for_pools("rapids", [SCHEDULER_POOL, GPU_POOL]).to_dict()
    validator = jsonschema.Draft7Validator(daskcluster_schema())
    assert list(validator.iter_errors(spec)) == []
    for part in ("worker", "scheduler"):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": spec["spec"][part]["spec"]}
        kubernetes_validate.validate(pod, "1.34", strict=True)
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": spec["spec"]["scheduler"]["service"]}
    kubernetes_validate.validate(service, "1.34", strict=True)


@pytest.mark.parametrize("path", [("spec", "scheduler", "service"), ("spec", "worker", "spec"), ("spec",), ("spec", "scheduler", "spec")])
def test_the_crd_check_fails_when_a_required_field_is_removed(path: tuple[str, ...]) -> None:
    spec = copy.deepcopy(RapidsDaskClusterSpec(name="rapids").to_dict())
    node = spec
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    errors = list(jsonschema.Draft7Validator(daskcluster_schema()).iter_errors(spec))
    assert [e.message for e in errors] == [f"'{path[-1]}' is a required property"]


def test_without_a_scheduler_pool_the_scheduler_tolerates_the_gpu_pool() -> None:
    spec = RapidsDaskClusterSpec.for_pools("rapids", [GPU_POOL]).to_dict()
    tolerations = spec["spec"]["scheduler"]["spec"]["tolerations"]
    assert {t["key"] for t in tolerations} == {"nvidia.com/gpu", "gpu-platform.io/workload"}


# --- the component under mocks -----------------------------------------------------------------


def build(**overrides: Any) -> DaskOperator:
    args = DaskOperatorArgs.model_validate({"tenants": TENANTS, **overrides})
    return DaskOperator("d", args, pools=[SCHEDULER_POOL, GPU_POOL])


@pulumi.runtime.test
def test_each_tenant_gets_the_seeds_rbac_and_a_gpu_quota(engine: Engine) -> pulumi.Output[Any]:
    operator = build()

    def check(_: Any) -> None:
        for tenant in ("team-a", "team-b"):
            role = engine.resource(f"d-{tenant}-role").inputs
            assert role["metadata"]["namespace"] == tenant and role["metadata"]["name"] == "rapids-dask"
            # The seed's multi-tenant example, verbatim.
            assert role["rules"] == [
                {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": [""], "resources": ["pods", "services"], "verbs": ["get", "list", "watch", "create", "delete"]},
                {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get", "list"]},
                {"apiGroups": ["kubernetes.dask.org"], "resources": ["*"], "verbs": ["*"]},
            ]
            binding = engine.resource(f"d-{tenant}-rolebinding").inputs
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rapids-dask", "namespace": tenant}]
            assert binding["roleRef"]["name"] == "rapids-dask"
            ns = engine.resource(f"d-{tenant}").inputs
            assert ns["metadata"]["labels"]["gpu-platform.io/tenant"] == tenant
        assert engine.resource("d-team-a-gpu-quota").inputs["spec"]["hard"] == {"requests.nvidia.com/gpu": "8"}
        assert engine.resource("d-team-b-gpu-quota").inputs["spec"]["hard"] == {
            "requests.nvidia.com/gpu": "4",
            "requests.cpu": "16",
            "requests.memory": "64Gi",
        }
        (limit,) = engine.resource("d-team-a-limits").inputs["spec"]["limits"]
        assert limit == {
            "type": "Container",
            "defaultRequest": {"cpu": "1", "memory": "4Gi"},
            "default": {"memory": "4Gi"},
        }
        # A GPU max would become every container's default GPU limit (and request).
        assert "max" not in limit and "nvidia.com/gpu" not in limit["default"]

    return settled_tree(operator).apply(check)


@pulumi.runtime.test
def test_notebook_is_the_seeds(engine: Engine) -> pulumi.Output[Any]:
    operator = build()

    def check(_: Any) -> None:
        assert "d-team-b-notebook" not in engine.names()
        pod = engine.resource("d-team-a-notebook").inputs["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert pod["serviceAccountName"] == "rapids-dask"
        assert container["image"] == "nvcr.io/nvidia/rapidsai/notebooks:26.02-cuda12-py3.13"
        assert container["env"] == [{"name": "DASK_DISTRIBUTED__DASHBOARD__LINK", "value": "/proxy/{host}:{port}/status"}]
        assert container["ports"] == [{"containerPort": 8888, "name": "notebook"}]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
        # jupyter_core reads /etc/jupyter whatever the user; the RAPIDS images run as rapids, not root.
        assert container["volumeMounts"][0]["mountPath"] == "/etc/jupyter/jupyter_server_config.py"
        assert pod["nodeSelector"] == {"cloud.google.com/gke-nodepool": "t4"}
        config = engine.resource("d-team-a-proxy-config").inputs
        assert config["metadata"]["name"] == "jupyter-server-proxy-config"
        assert config["data"]["jupyter_server_config.py"] == "c.ServerProxy.host_allowlist = lambda app, host: True\n"
        assert container["resources"]["requests"] == {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}
        assert container["volumeMounts"][1] == {"name": "dask-cluster-spec", "mountPath": "/etc/gpu-platform/dask", "readOnly": True}
        assert {"name": "dask-cluster-spec", "configMap": {"name": "dask-cluster-spec"}} in pod["volumes"]
        service = engine.resource("d-team-a-notebook-service").inputs["spec"]
        assert service["ports"] == [{"name": "notebook", "port": 8888, "targetPort": "notebook"}]

    return pulumi.Output.all(settled_tree(operator), operator.notebook_services["team-a"]).apply(
        lambda v: check(v) if v[1] == "rapids-notebook.team-a.svc:8888" else pytest.fail(v[1])
    )


@pulumi.runtime.test
def test_prepuller_runs_on_gpu_nodes_only(engine: Engine) -> pulumi.Output[Any]:
    operator = build()

    def check(_: Any) -> None:
        ds = engine.resource("d-prepuller").inputs
        assert ds["metadata"]["namespace"] == "dask-operator"
        pod = ds["spec"]["template"]["spec"]
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert [t["matchExpressions"] for t in terms] == [[{"key": k, "operator": "Exists"}] for k in GPU_NODE_LABELS]
        assert {(t["key"], t["value"]) for t in pod["tolerations"]} == {("nvidia.com/gpu", "present"), ("gpu-platform.io/workload", "training")}
        assert [c["image"] for c in pod["initContainers"]] == [
            "nvcr.io/nvidia/rapidsai/base:26.02-cuda12-py3.13",
            "nvcr.io/nvidia/rapidsai/notebooks:26.02-cuda12-py3.13",
        ]
        assert all(c["command"] == ["sh", "-c", "true"] for c in pod["initContainers"])
        assert pod["containers"][0]["image"] == "registry.k8s.io/pause:3.10"

    return settled_tree(operator).apply(check)


@pulumi.runtime.test
def test_cluster_wide_operator_and_the_shared_cluster(engine: Engine) -> pulumi.Output[Any]:
    operator = build()

    def check(_: Any) -> None:
        (release,) = engine.of_type("kubernetes:helm.sh/v3:Release")
        assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == (
            "dask-kubernetes-operator",
            "2026.3.0",
            "dask-operator",
        )
        assert release.inputs["repositoryOpts"]["repo"] == "https://helm.dask.org"
        cluster = engine.resource("d-team-b-shared-cluster")
        assert cluster.inputs["kind"] == "DaskCluster" and cluster.inputs["metadata"]["namespace"] == "team-b"
        assert cluster.inputs["spec"]["worker"]["replicas"] == 1
        assert release.urn in cluster.depends_on  # the CRDs come with the chart
        body = {k: cluster.inputs[k] for k in ("apiVersion", "kind", "metadata", "spec")}
        assert list(jsonschema.Draft7Validator(daskcluster_schema()).iter_errors(body)) == []
        scaler = engine.resource("d-team-b-shared-autoscaler").inputs
        assert scaler["kind"] == "DaskAutoscaler" and scaler["spec"] == {"cluster": "shared", "minimum": 1, "maximum": 3}

    return settled_tree(operator).apply(check)


@pulumi.runtime.test
def test_namespaced_operators_one_per_tenant(engine: Engine) -> pulumi.Output[Any]:
    operator = build(scope="namespaced")

    def check(_: Any) -> None:
        releases = {r.inputs["namespace"]: r.inputs["values"] for r in engine.of_type("kubernetes:helm.sh/v3:Release")}
        assert sorted(releases) == ["team-a", "team-b"]
        assert releases["team-a"]["kopfArgs"] == ["--namespace", "team-a"]
        assert releases["team-a"]["rbac"]["cluster"] is False

    return settled_tree(operator).apply(check)


@pulumi.runtime.test
def test_every_tenant_gets_the_placed_cluster_spec_for_its_notebook(engine: Engine) -> pulumi.Output[Any]:
    operator = build()

    def check(_: Any) -> None:
        for tenant in ("team-a", "team-b"):
            config = engine.resource(f"d-{tenant}-dask-cluster-spec").inputs
            assert config["metadata"]["name"] == "dask-cluster-spec" and config["metadata"]["namespace"] == tenant
            # The very dict the platform uses (placed on the pools, with resources), as KubeCluster takes it.
            assert yaml.safe_load(config["data"]["cluster.yaml"]) == operator.cluster_spec
        assert operator.cluster_spec["spec"]["worker"]["spec"]["nodeSelector"] == {"cloud.google.com/gke-nodepool": "t4"}

    return settled_tree(operator).apply(check)


def test_the_placed_spec_carries_worker_resources() -> None:
    spec = RapidsDaskClusterSpec.for_pools("rapids", [SCHEDULER_POOL, GPU_POOL]).to_dict()["spec"]
    (worker,) = spec["worker"]["spec"]["containers"]
    assert worker["resources"] == {
        "requests": {"cpu": "1", "memory": "5Gi"},
        "limits": {"cpu": "1", "memory": "5Gi", "nvidia.com/gpu": "1"},
    }


@pulumi.runtime.test
def test_worker_resources_reach_the_shared_cluster(engine: Engine) -> pulumi.Output[Any]:
    operator = build(worker_cpu="1500m", worker_memory="6Gi")

    def check(_: Any) -> None:
        body = engine.resource("d-team-b-shared-cluster").inputs
        (worker,) = body["spec"]["worker"]["spec"]["containers"]
        assert worker["resources"]["requests"] == {"cpu": "1500m", "memory": "6Gi"}
        assert worker["resources"]["limits"] == {"cpu": "1500m", "memory": "6Gi", "nvidia.com/gpu": "1"}
        (scheduler,) = body["spec"]["scheduler"]["spec"]["containers"]
        assert scheduler["resources"]["requests"] == {"cpu": "1", "memory": "2Gi"}
        crd = {k: body[k] for k in ("apiVersion", "kind", "metadata", "spec")}
        assert list(jsonschema.Draft7Validator(daskcluster_schema()).iter_errors(crd)) == []

    return settled_tree(operator).apply(check)


@pulumi.runtime.test
def test_tenants_are_isolated_from_other_namespaces(engine: Engine) -> pulumi.Output[Any]:
    """The notebook has no login: only the tenant's own pods and the cluster-wide operator
    (it calls the schedulers) reach its pods; a tenant may opt out."""
    operator = build(tenants=[TENANTS[0], {**TENANTS[1], "isolated": False}])

    def check(_: Any) -> None:
        policy = engine.resource("d-team-a-isolation").inputs
        kubernetes_validate.validate(policy, "1.34", strict=True)
        assert policy["metadata"]["namespace"] == "team-a" and policy["metadata"]["name"] == "tenant-isolation"
        assert policy["spec"]["podSelector"] == {} and policy["spec"]["policyTypes"] == ["Ingress"]
        assert policy["spec"]["ingress"] == [
            {
                "from": [
                    {"podSelector": {}},
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "dask-operator"}}},
                ]
            }
        ]
        assert [p.name for p in engine.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")] == ["d-team-a-isolation"]

    return settled_tree(operator).apply(check)


@pulumi.runtime.test
def test_a_namespaced_operator_is_inside_the_tenants_isolation(engine: Engine) -> pulumi.Output[Any]:
    operator = build(scope="namespaced")

    def check(_: Any) -> None:
        for tenant in ("team-a", "team-b"):
            assert engine.resource(f"d-{tenant}-isolation").inputs["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]

    return settled_tree(operator).apply(check)


def test_the_scheduler_prefers_its_pool_and_may_spill() -> None:
    """A preference, not a requirement: a required scheduler pool would cap how many Dask
    clusters run at its GPUs; the EKS derived order ranks the scheduler group first instead."""
    spec = RapidsDaskClusterSpec.for_pools("rapids", [SCHEDULER_POOL, GPU_POOL]).to_dict()["spec"]["scheduler"]["spec"]
    assert "nodeSelector" not in spec
    pinned = RapidsDaskClusterSpec(name="x", scheduler_node_selector={"dedicated": "scheduler"}).to_dict()
    assert pinned["spec"]["scheduler"]["spec"]["nodeSelector"] == {"dedicated": "scheduler"}


def test_fails_when_gke_would_not_enforce_the_isolation() -> None:
    config = {**stack(), "dask": {"tenants": [{"name": "a", "gpu_quota": 4}]}}
    config["gke"] = {**config["gke"], "dataplane_v2": False}
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate(copy.deepcopy(config))
    assert format_validation_error(info.value, StackConfig, "gpu-platform") == [
        "gpu-platform:dask.tenants[0].isolated: tenant a is isolated by a NetworkPolicy this cluster would not enforce "
        "(gke.dataplane_v2 is false); turn enforcement on, or set isolated: false to run without isolation (got true)"
    ]
    config["dask"]["tenants"][0]["isolated"] = False
    assert StackConfig.model_validate(config).dask is not None
