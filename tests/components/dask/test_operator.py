"""DaskOperator and RapidsDaskClusterSpec: the seed's RBAC, quotas, notebook and prepuller,
and the DaskCluster spec checked against the CRD the dask-kubernetes wheel ships."""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate
import pulumi
import pytest
import yaml
from pydantic import ValidationError

from gpu_platform.components import DaskOperator, DaskOperatorArgs, RapidsDaskClusterSpec
from gpu_platform.components.dask.args import GPU_NODE_LABELS, DaskNotebookArgs, node_room, operator_chart_dir
from gpu_platform.components.dask.resources import operator_values
from gpu_platform.components.pools.reserves import ReserveFormula
from gpu_platform.components.pools.shapes import GPU_TAINT, CapacityStrategy, NodePoolShape, PoolPlacement, Taint
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from tests.components.monitoring.test_upstream_schemas import unknown_keys
from tests.conftest import Engine, settled, settled_tree
from tests.factories import eks_stack, gpu_class, prod_eks_raw, stack

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
    crd = yaml.safe_load((operator_chart_dir() / "crds" / "daskcluster.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version["schema"]["openAPIV3Schema"]


def refusal(dask: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate({**stack(), "dask": dask})
    return format_validation_error(info.value, StackConfig, "gpu-platform")


# --- Args -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dask", "line"),
    [
        (
            {"tenants": [{"name": "Team_A", "gpu_quota": 4}]},
            "gpu-platform:dask.tenants[0].name: 'Team_A' is not a DNS label: lowercase letters, digits and '-', at most 63 characters (got \"Team_A\")",
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 4}, {"name": "a", "gpu_quota": 4}]},
            'gpu-platform:dask.tenants: tenants lists a name twice (a, a); each tenant is one namespace (got [{"name": "a", "gpu_quota": 4}, {"name": "a", "gpu_quota": 4}])',
        ),
        (
            {"worker_gpus": 2, "tenants": [{"name": "a", "gpu_quota": 4}]},
            "gpu-platform:dask.worker_gpus: worker_gpus 2 is not supported: dask-cuda-worker starts one Dask worker per GPU of its pod while the DaskAutoscaler counts Dask workers, so a pod with more GPUs makes the autoscaler start and stop the wrong number of pods; use 1 (got 2)",
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 4, "notebook": {"memory": "16Gi"}}]},
            "gpu-platform:dask.tenants[0].notebook.memory: memory 16Gi of tenant a's notebook fits no node of pool t4 (n1-standard-4), whose nodes leave 12188Mi memory to pods after the kubelet's reserves (gke) and the DaemonSets; use at most 12188Mi (got \"16Gi\")",
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 4, "notebook": {"cpu": "4"}}]},
            "gpu-platform:dask.tenants[0].notebook.cpu: cpu 4 of tenant a's notebook fits no node of pool t4 (n1-standard-4), whose nodes leave 3620m CPU to pods after the kubelet's reserves (gke) and the DaemonSets; use at most 3620m (got \"4\")",
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 4, "notebook": {"gpus": 0, "memory": "64Gi"}}]},
            "gpu-platform:dask.tenants[0].notebook.memory: memory 64Gi of tenant a's notebook fits no node of pool system (e2-standard-4), whose nodes leave 13109Mi memory to pods after the kubelet's reserves (gke) and the DaemonSets; use at most 13109Mi (got \"64Gi\")",
        ),
        (
            {"worker_memory": "13Gi", "tenants": [{"name": "a", "gpu_quota": 4}]},
            'gpu-platform:dask.worker_memory: worker_memory 13Gi of the Dask workers fits no node of pool t4 (n1-standard-4), whose nodes leave 12188Mi memory to pods after the kubelet\'s reserves (gke) and the DaemonSets; use at most 12188Mi (got "13Gi")',
        ),
        (
            {"worker_cpu": "3700m", "tenants": [{"name": "a", "gpu_quota": 4}]},
            'gpu-platform:dask.worker_cpu: worker_cpu 3700m of the Dask workers fits no node of pool t4 (n1-standard-4), whose nodes leave 3620m CPU to pods after the kubelet\'s reserves (gke) and the DaemonSets; use at most 3620m (got "3700m")',
        ),
        (
            {"tenants": [{"name": "dask-operator", "gpu_quota": 4}]},
            'gpu-platform:dask.tenants[0].name: tenant dask-operator is the operator namespace; choose another name (got "dask-operator")',
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 2, "notebook": {"gpus": 1}}]},
            "gpu-platform:dask.tenants[0].gpu_quota: gpu_quota 2 of tenant a cannot run one Dask cluster: one worker needs 1, the scheduler 1 and the notebook 1; use at least 3 (got 2)",
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 4, "shared_cluster": {"min_workers": 0, "max_workers": 4}}]},
            "gpu-platform:dask.tenants[0].shared_cluster.max_workers: max_workers 4 needs 5 GPUs with the scheduler, more than gpu_quota 4; lower max_workers or raise gpu_quota (got 4)",
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 8, "cpu_quota": "1", "notebook": {}}]},
            'gpu-platform:dask.tenants[0]: tenant a needs 2000m cpu (the notebook: 2), more than cpu_quota 1; raise cpu_quota (got "1")',
        ),
        (
            {"scope": "namespaced", "tenants": [{"name": "a", "gpu_quota": 8, "memory_quota": "8Gi", "notebook": {}}]},
            "gpu-platform:dask.tenants[0]: tenant a needs 8448Mi memory (the notebook: 8Gi, the operator: 256Mi), more than "
            'memory_quota 8Gi; raise memory_quota (got "8Gi")',
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 8, "notebook": {"gpus": 4}}]},
            "gpu-platform:dask.tenants[0].notebook.gpus: gpus 4 of tenant a's notebook fits no node of pool t4 (n1-standard-4), "
            'which has 2 GPUs a node; use at most 2 (got "4")',
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 8, "cpu_quota": "4", "shared_cluster": {"max_workers": 4}}]},
            "gpu-platform:dask.tenants[0].shared_cluster.max_workers: max_workers 4 needs 5000m cpu "
            "(4 workers: 1, the scheduler: 1), more than cpu_quota 4; use max_workers 3 or raise cpu_quota (got 4)",
        ),
        # The scheduler and the notebook alone fill the quota: fewer workers cannot help.
        (
            {"tenants": [{"name": "a", "gpu_quota": 8, "cpu_quota": "3", "notebook": {}, "shared_cluster": {"max_workers": 1}}]},
            "gpu-platform:dask.tenants[0].shared_cluster.max_workers: max_workers 1 needs 4000m cpu (1 worker: 1, the scheduler: 1, "
            "the notebook: 2), more than cpu_quota 3; raise cpu_quota (got 1)",
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 8, "memory_quota": "24Gi", "notebook": {}, "shared_cluster": {"max_workers": 3}}]},
            "gpu-platform:dask.tenants[0].shared_cluster.max_workers: max_workers 3 needs 25600Mi memory "
            "(3 workers: 5Gi, the scheduler: 2Gi, the notebook: 8Gi), more than memory_quota 24Gi; use "
            "max_workers 2 or raise memory_quota (got 3)",
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 9, "shared_cluster": {"min_workers": 5, "max_workers": 4}}]},
            "gpu-platform:dask.tenants[0].shared_cluster.min_workers: min_workers 5 is above max_workers 4; use at most 4 (got 5)",
        ),
        (
            {"rapids_image": "nvcr.io/nvidia/rapidsai/base"},
            "gpu-platform:dask.rapids_image: image 'nvcr.io/nvidia/rapidsai/base' must carry a version tag (never latest) or a digest (got \"nvcr.io/nvidia/rapidsai/base\")",
        ),
        (
            {"tenants": [{"name": "a", "gpu_quota": 4, "notebook": {"image": "rapidsai/notebooks:latest"}}]},
            "gpu-platform:dask.tenants[0].notebook.image: image 'rapidsai/notebooks:latest' must carry a version tag (never latest) or a digest (got \"rapidsai/notebooks:latest\")",
        ),
        (
            {"scope": "namespaced", "namespace": "a", "tenants": [{"name": "a", "gpu_quota": 4}]},
            'gpu-platform:dask.tenants[0].name: tenant a is the operator namespace; choose another name (got "a")',
        ),
        *[
            (
                {"scope": scope, "tenants": [{"name": reserved, "gpu_quota": 4}]},
                f'gpu-platform:dask.tenants[0].name: namespace {reserved} belongs to Kubernetes; choose another name (got "{reserved}")',
            )
            for scope in ("cluster", "namespaced")
            for reserved in ("default", "kube-system", "kube-public", "kube-node-lease")
        ],
        ({"tenants": [{"name": "a", "gpu_quota": 0}]}, "gpu-platform:dask.tenants[0].gpu_quota: Input should be greater than or equal to 1 (got 0)"),
        (
            {"tenants": [{"name": "a", "gpu_quota": 4, "memory_quota": "64GB"}]},
            "gpu-platform:dask.tenants[0].memory_quota: String should match pattern '^[0-9]+(Ki|Mi|Gi|Ti)$' (got \"64GB\")",
        ),
        (
            {"chart_version": "2026.*"},
            "gpu-platform:dask.chart_version: chart version '2026.*' must be one exact release such as 88.5.3, not a range (got \"2026.*\")",
        ),
    ],
)
def test_fails_when_a_dask_value_is_wrong(dask: dict[str, Any], line: str) -> None:
    assert refusal(dask) == [line]


def test_fails_when_a_notebook_is_bigger_than_an_eks_gpu_node() -> None:
    # dev-eks: g4dn.xlarge is 16 GiB in all; the EKS AMI reserves 255Mi + 11Mi x 29 pods (its ENI limit), eviction 100Mi.
    config = {
        **eks_stack(classes=[gpu_class(instance_types=["g4dn.xlarge"])]),
        "dask": {"tenants": [{"name": "a", "gpu_quota": 4, "notebook": {"memory": "16Gi"}}]},
    }
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate(config)
    assert format_validation_error(info.value, StackConfig, "gpu-platform") == [
        "gpu-platform:dask.tenants[0].notebook.memory: memory 16Gi of tenant a's notebook fits no node of pool small "
        "(g4dn.xlarge), whose nodes leave 15198Mi memory to pods after the kubelet's reserves (eks) and the DaemonSets; "
        'use at most 15198Mi (got "16Gi")'
    ]


def test_the_default_notebook_and_workers_fit_the_dev_gpu_nodes() -> None:
    # dev-gke's n1-standard-4 with two T4s (two workers per node) and dev-eks's g4dn.xlarge.
    for config in (stack(), eks_stack(classes=[gpu_class(instance_types=["g4dn.xlarge"])])):
        parsed = StackConfig.model_validate({**config, "dask": {"tenants": [{"name": "a", "gpu_quota": 4, "notebook": {}}]}})
        assert parsed.dask is not None and parsed.dask.placement_problems(parsed.pool_shapes()) == []
    assert 2 * 1000 <= node_room(GPU_POOL)[0] and 2 * 5 * 1024 <= node_room(GPU_POOL)[1]


def test_fails_when_the_spec_is_bigger_than_its_pools() -> None:
    with pytest.raises(ValidationError) as error:
        RapidsDaskClusterSpec.for_pools("rapids", [SCHEDULER_POOL, GPU_POOL], worker_memory="16Gi")
    (problem,) = error.value.errors()
    assert problem["loc"] == ("worker_memory",)
    assert re.fullmatch(r"worker_memory 16Gi of the Dask workers fits no node of pool t4 .*; use at most 12188Mi", problem["msg"])
    with pytest.raises(ValidationError) as error:
        RapidsDaskClusterSpec.for_pools("rapids", [SCHEDULER_POOL, GPU_POOL], scheduler_cpu="2")
    (problem,) = error.value.errors()
    assert problem["loc"] == ("scheduler_cpu",)
    assert re.fullmatch(r"scheduler_cpu 2 of the Dask scheduler fits no node of pool scheduler \(n1-standard-2\).*; use at most 1630m", problem["msg"])
    with pytest.raises(ValidationError, match="gpus_per_worker 2 is not supported: dask-cuda-worker starts one Dask worker per GPU"):
        RapidsDaskClusterSpec(name="x", gpus_per_worker=2)


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


def test_dask_defaults() -> None:
    args = DaskOperatorArgs()
    assert (args.tenants, args.scope.value, args.namespace, args.chart_version, args.prepull) == ([], "cluster", "dask-operator", "2026.3.0", True)
    assert (args.worker_gpus, args.worker_cpu, args.worker_memory) == (1, "1", "5Gi")
    notebook = DaskNotebookArgs()
    assert (notebook.gpus, notebook.cpu, notebook.memory) == (1, "2", "8Gi")
    spec = RapidsDaskClusterSpec(name="x")
    assert spec.scheduler_node_labels == {"dedicated": "scheduler"}
    assert spec.scheduler_tolerations == [GPU_TAINT] and spec.worker_tolerations == [GPU_TAINT]
    assert (spec.gpus_per_worker, spec.worker_cpu, spec.worker_memory) == (1, "1", "5Gi")
    assert (spec.scheduler_gpus, spec.scheduler_cpu, spec.scheduler_memory) == (1, "1", "2Gi")


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


def test_operator_values_exist_in_the_wheels_chart() -> None:
    reference = yaml.safe_load((operator_chart_dir() / "values.yaml").read_text())
    for watch in (None, "team-a"):
        values = operator_values(DaskOperatorArgs(), watch)
        assert list(unknown_keys(values, reference)) == []
        assert values["image"]["name"] == reference["image"]["name"]
    assert operator_values(DaskOperatorArgs(), None)["kopfArgs"] == reference["kopfArgs"] == ["--all-namespaces"]
    assert operator_values(DaskOperatorArgs(), "team-a")["kopfArgs"] == ["--namespace", "team-a"]
    assert operator_values(DaskOperatorArgs(), "team-a")["rbac"] == {"create": True, "cluster": False}


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


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("team-nlp", "namespace team-nlp is already a Kubeflow tenant's; choose another name"),
        ("kubeflow", "namespace kubeflow is already Kubeflow (pipelines)'s; choose another name"),
        ("prometheus", "namespace prometheus is already the monitoring stack's; choose another name"),
        ("dask-operator", "tenant dask-operator is the operator namespace; choose another name"),
        ("kube-flow", "namespace kube-flow belongs to Kubernetes; choose another name"),
    ],
)
def test_fails_when_a_dask_tenant_takes_another_components_namespace(name: str, message: str) -> None:
    """One namespace, two owners: two Namespace resources, AlreadyExists at the first `pulumi up`."""
    raw = prod_eks_raw()
    assert StackConfig.model_validate(copy.deepcopy(raw)).dask is not None  # the shipped names are all distinct
    raw["dask"]["tenants"][0]["name"] = name
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate(raw)
    (line,) = format_validation_error(info.value, StackConfig, "gpu-platform")
    assert line == f'gpu-platform:dask.tenants[0].name: {message} (got "{name}")'


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
