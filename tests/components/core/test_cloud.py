"""One ``Cloud`` (components/core/cloud.py): its serialized values, and everything that used to be its own
"which cloud" type derived from it."""

from __future__ import annotations

import pytest

from gpu_platform.components.catalog.zones import unchecked_region, zones_of
from gpu_platform.components.core.cloud import Cloud, ClusterKind
from gpu_platform.components.core.labels import AWS_ACCELERATOR_LABEL, GKE_ACCELERATOR_LABEL
from gpu_platform.components.monitoring.dcgm_args import GpuNodeSelection
from gpu_platform.components.monitoring.prometheus_args import ClusterKind as PrometheusClusterKind
from gpu_platform.components.pools.reserves import ReserveFormula


def test_serialized_values_are_the_stacks_and_the_inputs() -> None:
    assert [c.value for c in Cloud] == ["gcp", "aws"]
    assert [k.value for k in ClusterKind] == ["gke", "eks"]


@pytest.mark.parametrize(
    ("cloud", "kind", "formula", "label"),
    [
        (Cloud.GCP, ClusterKind.GKE, ReserveFormula.GKE, GKE_ACCELERATOR_LABEL),
        (Cloud.AWS, ClusterKind.EKS, ReserveFormula.EKS, AWS_ACCELERATOR_LABEL),
    ],
)
def test_each_cloud_names_its_kind_formula_and_gpu_label(cloud: Cloud, kind: ClusterKind, formula: ReserveFormula, label: str) -> None:
    assert (cloud.kind, kind.cloud) == (kind, cloud)
    assert ReserveFormula.of(cloud) is formula
    assert cloud.accelerator_label == kind.accelerator_label == label


def test_the_old_names_are_the_one_type() -> None:
    assert GpuNodeSelection is ClusterKind and PrometheusClusterKind is ClusterKind
    assert GpuNodeSelection("gke") is ClusterKind.GKE


def test_the_zone_data_is_keyed_by_cloud() -> None:
    assert zones_of(Cloud.GCP, "us-central1") == zones_of("gcp", "us-central1")
    assert "us-central1-a" in (zones_of(Cloud.GCP, "us-central1") or [])
    assert unchecked_region(Cloud.AWS, "xx-nowhere-1") is not None and "aws region xx-nowhere-1" in unchecked_region(Cloud.AWS, "xx-nowhere-1")
