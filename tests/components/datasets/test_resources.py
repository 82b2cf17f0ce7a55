"""The datasets' mapping (components/datasets/resources.py): the claim mounted into a Dask cluster's workers and
scheduler, and the PodDefault that mounts it for the pods that select it."""

from __future__ import annotations

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.labels import GCSFUSE_VOLUMES_ANNOTATION
from gpu_platform.components.datasets.args import (
    DatasetArgs,
    SharedDatasetsArgs,
)
from gpu_platform.components.datasets.resources import cluster_spec_with, pod_default_spec
from tests.components.datasets.test_shared_datasets import dataset


def test_cluster_spec_with_mounts_the_claim_into_workers_and_scheduler_and_annotates_gcsfuse_pods() -> None:
    mounts = SharedDatasetsArgs.model_validate({"datasets": [dataset()]}).tenant_mounts(Cloud.GCP)["team-a"]
    base = {"spec": {"worker": {"spec": {"containers": [{"name": "worker"}]}}, "scheduler": {"spec": {"containers": [{"name": "scheduler"}]}}}}
    spec = cluster_spec_with(base, mounts)
    for role in ("worker", "scheduler"):
        pod = spec["spec"][role]
        assert pod["spec"]["volumes"] == [{"name": "dataset-reference", "persistentVolumeClaim": {"claimName": "dataset-reference", "readOnly": True}}]
        assert pod["spec"]["containers"][0]["volumeMounts"] == [{"name": "dataset-reference", "mountPath": "/datasets/reference", "readOnly": True}]
        assert pod["metadata"]["annotations"] == {GCSFUSE_VOLUMES_ANNOTATION: "true"}
    assert "volumes" not in base["spec"]["worker"]["spec"]  # the input is left as it was
    eks_mounts = SharedDatasetsArgs.model_validate({"datasets": [dataset()]}).tenant_mounts(Cloud.AWS)["team-a"]
    assert "metadata" not in cluster_spec_with(base, eks_mounts)["spec"]["worker"]
    assert cluster_spec_with(base, []) == base


def test_pod_default_mounts_the_dataset_for_pods_that_select_it() -> None:
    args = DatasetArgs.model_validate(dataset())
    (mount,) = SharedDatasetsArgs(datasets=[args]).tenant_mounts(Cloud.GCP)["team-a"]
    spec = pod_default_spec(args, mount, "mount-reference")
    assert spec["selector"] == {"matchLabels": {"mount-reference": "true"}}
    assert spec["volumeMounts"] == [{"name": "dataset-reference", "mountPath": "/datasets/reference", "readOnly": True}]
    assert spec["annotations"] == {GCSFUSE_VOLUMES_ANNOTATION: "true"}
