"""The Kubeflow plan (components/kubeflow/plan.py): the pinned manifest sources in order, where training runs, and
the capacity check."""

from __future__ import annotations

import pytest

from gpu_platform.components import KubeflowInstallArgs, Taint, TrainingPoolSelector
from gpu_platform.components.kubeflow.args import EDITION_FOOTPRINT, Edition
from gpu_platform.components.kubeflow.plan import capacity_problem, manifest_sources, training_placement
from tests.components.kubeflow.test_install import GPU, PLATFORM, TRAINING, TRAINING_POOL, shape


def test_manifest_sources_are_pinned_and_ordered() -> None:
    assert manifest_sources(KubeflowInstallArgs(release="2.15.0")) == [
        ("cluster-scoped", "https://github.com/kubeflow/pipelines//manifests/kustomize/cluster-scoped-resources?ref=2.15.0"),
        ("pipelines", "https://github.com/kubeflow/pipelines//manifests/kustomize/env/platform-agnostic?ref=2.15.0"),
    ]
    assert manifest_sources(KubeflowInstallArgs.model_validate(PLATFORM)) == [("platform", "https://github.com/kubeflow/manifests//example?ref=v1.10.2")]


def test_training_placement_uses_the_matching_pool() -> None:
    other = shape("t4", taints=(GPU,))
    assert training_placement(TrainingPoolSelector(), [other, TRAINING_POOL]) == TRAINING_POOL.placement


def test_training_placement_over_several_pools_selects_the_label() -> None:
    second = shape("train2", labels={"gpu-platform.io/workload": "training"}, taints=(GPU, TRAINING, Taint(key="x.io/y", value="z")))
    placement = training_placement(TrainingPoolSelector(), [TRAINING_POOL, second])
    assert placement.node_selector == {"gpu-platform.io/workload": "training"}
    assert [str(t) for t in placement.tolerations] == [
        "nvidia.com/gpu=present:NoSchedule",
        "gpu-platform.io/workload=training:NoSchedule",
        "x.io/y=z:NoSchedule",
    ]


def test_training_placement_fails_when_no_pool_matches() -> None:
    labelled_only = shape("t4", labels={"gpu-platform.io/workload": "training"}, taints=(GPU,))
    with pytest.raises(ValueError, match="no pool carries label gpu-platform.io/workload=training and taint gpu-platform.io/workload=training:NoSchedule"):
        training_placement(TrainingPoolSelector(), [labelled_only])


def test_capacity_check() -> None:
    small = shape("system", role="system", machine_type="e2-standard-4", vcpus=4, memory_mib=16384, max_nodes=2)
    problem = capacity_problem(Edition.PLATFORM, [small], 30)
    assert problem == (
        "the platform edition needs 8 vCPU and 16 GiB on the system pool; system (2x e2-standard-4) offer 5.6 vCPU "
        "and 22.4 GiB after the 30% reserve: raise the system pool's max_nodes or machine type"
    )
    assert capacity_problem(Edition.PIPELINES, [small], 30) is None
    assert capacity_problem(Edition.PLATFORM, [small.__class__(**{**small.__dict__, "max_nodes": 3})], 30) is None
    assert EDITION_FOOTPRINT[Edition.PLATFORM].memory_mib == 16384  # kubeflow/manifests: about 16 GB, 8 CPU
