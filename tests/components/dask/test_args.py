"""DaskOperatorArgs and its parts (components/dask/args.py): documented defaults, every validator, and the
fit of notebooks and workers on the pools."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from pydantic import ValidationError

from gpu_platform.components import DaskOperatorArgs, RapidsDaskClusterSpec
from gpu_platform.components.dask.args import DaskNotebookArgs, node_room
from gpu_platform.components.pools.shapes import GPU_TAINT
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from tests.components.dask.test_operator import GPU_POOL, SCHEDULER_POOL, refusal
from tests.factories import eks_stack, gpu_class, prod_eks_raw, stack


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
