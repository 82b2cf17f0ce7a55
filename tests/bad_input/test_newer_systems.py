"""The newer systems' keys held to the first ones' standard (issue 35): Karpenter, Kueue queues, warm
capacity, shared datasets, the inference service, Headlamp, the load balancer controller. Each hostile
value is refused offline by ``gpu-platform preview`` (exit 2) in one line naming the key, with no
traceback: names checked as Kubernetes will check the names they become, images as the kubelet parses
them, paths as the kubelet and the ingress controller read them, restricted label domains, reserved
namespaces, namespaces and accounts that belong to something else, and the judgment calls
(docs/features/*.md say why)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.bad_input.test_config_mutations import Case, run_case, set_

NS = "gpu-platform:"
DS = NS + "shared_datasets"
NG = NS + "eks_node_groups"
TRITON = "nvcr.io/nvidia/tritonserver:25.01-py3"


def _dataset(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "extra", "bucket": {"name": "rapids-dev-eks-extra-data"}, "tenants": ["team-a"], "deletion_protection": False}
    return {**base, **fields}


def add_dataset(**fields: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        doc["config"][DS]["datasets"].append(copy.deepcopy(_dataset(**fields)))

    return change


def inference(**fields: Any) -> Any:
    return set_(NS + "inference", value={"image": TRITON, **fields})


def ingress(**fields: Any) -> Any:
    return inference(ingress=fields)


def add_dws_pool(doc: dict[str, Any]) -> None:
    """An A100 pool with queued provisioning beside dev-gke's T4 pool (dev-gke has no queues)."""
    doc["config"][NS + "gke"]["gpu_pools"].append(
        {
            "name": "a100-dws",
            "machine_type": "a2-highgpu-8g",
            "accelerator_type": "nvidia-tesla-a100",
            "queued_provisioning": True,
            "autoscaling": {"scope": "total", "min_nodes": 0, "max_nodes": 4},
        }
    )


def budget(schedule: str) -> Any:
    return set_(NG, "karpenter", "disruption", "budgets", 1, value={"nodes": "0", "schedule": schedule, "duration": "10h"})


CASES = [
    # shared datasets: composed names, mount paths, KMS key
    Case(
        "dataset-name-too-long",
        "dev-eks",
        "gpu-platform:shared_datasets.datasets[0].name: dataset name of 60 characters",
        set_(DS, "datasets", 0, "name", value="d" * 60),
    ),
    Case(
        "dataset-same-persistent-volume",
        "dev-eks",
        "gpu-platform:shared_datasets.datasets[1].name: dataset x-dataset-y mounted by team makes PersistentVolume team-dataset-x-dataset-y",
        lambda doc: _same_volume(doc),
    ),
    Case(
        "dataset-same-mount-path",
        "dev-eks",
        "gpu-platform:shared_datasets.datasets[1].mount_path: tenant team-a mounts dataset reference at /datasets/reference",
        add_dataset(mount_path="/datasets/reference"),
    ),
    Case(
        "dataset-over-platform-config",
        "dev-eks",
        "gpu-platform:shared_datasets.datasets[0].mount_path: mount_path /etc/gpu-platform/dask is over /etc",
        set_(DS, "datasets", 0, "mount_path", value="/etc/gpu-platform/dask"),
    ),
    Case(
        "dataset-over-etc",
        "dev-gke",
        "gpu-platform:shared_datasets.datasets[0].mount_path: mount_path /etc is over /etc",
        set_(DS, "datasets", 0, "mount_path", value="/etc"),
    ),
    Case(
        "dataset-dotdot-path",
        "dev-eks",
        "gpu-platform:shared_datasets.datasets[0].mount_path: mount_path /datasets/../etc has an empty, '.' or '..' segment",
        set_(DS, "datasets", 0, "mount_path", value="/datasets/../etc"),
    ),
    Case(
        "dataset-double-slash",
        "dev-gke",
        "gpu-platform:shared_datasets.datasets[0].mount_path: ",
        set_(DS, "datasets", 0, "mount_path", value="/datasets//reference"),
    ),
    Case(
        "dataset-kms-wildcard", "dev-eks", "gpu-platform:shared_datasets.datasets[0].fsx.kms_key_id: ", set_(DS, "datasets", 0, "fsx", "kms_key_id", value="*")
    ),
    Case(
        "dataset-kms-alias",
        "dev-eks",
        "gpu-platform:shared_datasets.datasets[0].fsx.kms_key_id: ",
        set_(DS, "datasets", 0, "fsx", "kms_key_id", value="alias/aws/fsx"),
    ),
    # Karpenter: restricted label domains, its namespace, cron
    Case(
        "class-label-karpenter-sh",
        "prod-eks",
        "gpu-platform:eks_node_groups.classes[0].labels.",
        set_(NG, "classes", 0, "labels", value={"karpenter.sh/capacity-type": "spot"}),
    ),
    Case(
        "class-label-karpenter-aws",
        "prod-eks",
        "gpu-platform:eks_node_groups.classes[0].labels.",
        set_(NG, "classes", 0, "labels", value={"karpenter.k8s.aws/instance-gpu-count": "1"}),
    ),
    Case(
        "class-label-kubernetes-io",
        "prod-eks",
        "gpu-platform:eks_node_groups.classes[0].labels.",
        set_(NG, "classes", 0, "labels", value={"node.kubernetes.io/role": "gpu"}),
    ),
    Case("class-label-k8s-io", "prod-eks", "gpu-platform:eks_node_groups.classes[0].labels.", set_(NG, "classes", 0, "labels", value={"k8s.io/team": "a"})),
    Case(
        "karpenter-namespace-not-created",
        "prod-eks",
        "gpu-platform:eks_node_groups.karpenter.namespace: Karpenter runs in kube-system",
        set_(NG, "karpenter", "namespace", value="karpenter"),
    ),
    Case(
        "karpenter-cron-out-of-range",
        "prod-eks",
        "gpu-platform:eks_node_groups.karpenter.disruption.budgets[1].schedule: schedule '99 99 * * *': minute '99' is out of range",
        budget("99 99 * * *"),
    ),
    Case("karpenter-cron-weekday-8", "prod-eks", "gpu-platform:eks_node_groups.karpenter.disruption.budgets[1].schedule: ", budget("0 8 * * 8")),
    Case("karpenter-cron-four-fields", "prod-eks", "gpu-platform:eks_node_groups.karpenter.disruption.budgets[1].schedule: ", budget("0 8 * *")),
    # Kueue: a namespace that belongs to something else
    Case(
        "kueue-kube-system",
        "prod-eks",
        "gpu-platform:queues.namespace: namespace kube-system belongs to Kubernetes",
        set_(NS + "queues", value={"namespace": "kube-system"}),
    ),
    Case(
        "kueue-default",
        "prod-gke",
        "gpu-platform:queues.namespace: namespace default belongs to Kubernetes",
        set_(NS + "queues", value={"namespace": "default"}),
    ),
    Case(
        "kueue-monitoring-namespace",
        "prod-gke",
        "gpu-platform:queues.namespace: namespace prometheus is already the monitoring stack's",
        set_(NS + "queues", value={"namespace": "prometheus"}),
    ),
    # GKE's queued provisioning (DWS): a pool whose nodes come only for a ProvisioningRequest, in a stack whose
    # queues would never make one (docs/clouds/gke-dws.md)
    Case(
        "dws-pool-without-queues",
        "dev-gke",
        "gpu-platform:gke.gpu_pools[1].queued_provisioning: pool a100-dws has queued_provisioning but the stack has no queues, "
        "and GKE gives this pool nodes only for a ProvisioningRequest, which the queues' admission check makes; "
        "add gpu-platform:queues or turn queued_provisioning off (got true)",
        add_dws_pool,
    ),
    Case(
        "kueue-tenant-namespace",
        "prod-gke",
        "gpu-platform:queues.namespace: namespace analytics is already a Dask tenant's",
        set_(NS + "queues", value={"namespace": "analytics"}),
    ),
    # warm capacity, Headlamp, inference: reserved namespaces
    Case(
        "warm-kube-public",
        "dev-gke",
        "gpu-platform:warm_capacity.namespace: namespace kube-public belongs to Kubernetes",
        set_(NS + "warm_capacity", value={"pools": {"t4": 1}, "namespace": "kube-public"}),
    ),
    Case(
        "headlamp-kube-node-lease",
        "prod-gke",
        "gpu-platform:headlamp.namespace: namespace kube-node-lease belongs to Kubernetes",
        set_(NS + "headlamp", "namespace", value="kube-node-lease"),
    ),
    Case("inference-default-namespace", "dev-eks", "gpu-platform:inference.namespace: namespace default belongs to Kubernetes", inference(namespace="default")),
    # Headlamp: granted to everyone
    Case(
        "headlamp-system-authenticated",
        "prod-gke",
        "gpu-platform:headlamp.groups.analytics: group system:authenticated is one Kubernetes itself fills",
        set_(NS + "headlamp", "groups", value={"analytics": "system:authenticated"}),
    ),
    # the load balancer controller's account
    Case(
        "lb-default-service-account",
        "dev-eks",
        "gpu-platform:aws_load_balancer_controller.service_account: service account default in kube-system",
        set_(NS + "aws_load_balancer_controller", value={"service_account": "default"}),
    ),
    Case(
        "lb-karpenter-service-account",
        "dev-eks",
        "gpu-platform:aws_load_balancer_controller.service_account: service account karpenter in kube-system is another controller's",
        set_(NS + "aws_load_balancer_controller", value={"service_account": "karpenter"}),
    ),
    # inference: hosts, paths, images, shared GPUs
    Case("ingress-host-ipv4", "dev-eks", "gpu-platform:inference.ingress.hostname: host 10.0.0.1 is an IP address", ingress(hostname="10.0.0.1")),
    Case("ingress-host-ipv6", "dev-eks", "gpu-platform:inference.ingress.hostname: host ::1 is an IP address", ingress(hostname="::1")),
    Case("ingress-path-double-slash", "dev-eks", "gpu-platform:inference.ingress.path: path '/v2//models' has an empty", ingress(path="/v2//models")),
    Case("ingress-path-dotdot", "dev-eks", "gpu-platform:inference.ingress.path: path '/models/..' has an empty", ingress(path="/models/..")),
    Case("ingress-path-space", "dev-eks", "gpu-platform:inference.ingress.path: ", ingress(path="/v2/ models")),
    Case("health-path-dotdot", "dev-eks", "gpu-platform:inference.health_path: ", inference(health_path="/v2/../health")),
    Case(
        "image-trailing-space",
        "dev-eks",
        "gpu-platform:inference.image: image 'nvcr.io/nvidia/tritonserver:25.01-py3 ' holds whitespace",
        inference(image=TRITON + " "),
    ),
    Case("image-five-megabytes", "dev-eks", "gpu-platform:inference.image: ", inference(image="a" * 5_000_000 + ":1")),
    Case(
        "image-uppercase-path",
        "dev-eks",
        "gpu-platform:inference.image: image 'nvcr.io/NVIDIA/tritonserver:25.01-py3' is not an image reference",
        inference(image="nvcr.io/NVIDIA/tritonserver:25.01-py3"),
    ),
    Case("image-long-tag", "dev-eks", "gpu-platform:inference.image: ", inference(image="nvcr.io/nvidia/tritonserver:" + "t" * 129)),
    Case("image-name-too-long", "dev-eks", "gpu-platform:inference.image: ", inference(image="r.io/" + "a" * 300 + ":1")),
    Case(
        "warm-image-bad",
        "dev-gke",
        "gpu-platform:warm_capacity.image: ",
        set_(NS + "warm_capacity", value={"pools": {"t4": 1}, "image": "registry.k8s.io/pause:3.10\n"}),
    ),
]


def _same_volume(doc: dict[str, Any]) -> None:
    """Tenant team-dataset-x's dataset y and tenant team's dataset x-dataset-y: one PersistentVolume name,
    team-dataset-x-dataset-y (<tenant>-dataset-<name>)."""
    config = doc["config"]
    config[NS + "dask"]["tenants"][0]["name"] = "team-dataset-x"
    config[NS + "dask"]["tenants"][1]["name"] = "team"
    config[DS]["datasets"] = [
        _dataset(name="y", bucket={"name": "rapids-one"}, tenants=["team-dataset-x"]),
        _dataset(name="x-dataset-y", bucket={"name": "rapids-two"}, tenants=["team"]),
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_value_of_a_newer_system_is_refused_in_one_line(case: Case, tmp_path: Path) -> None:
    code, out, err = run_case(case, tmp_path)
    both = out + err
    lines = err.strip().splitlines()
    assert code == 2, both[:2000]
    assert "Traceback" not in both
    assert len(lines) == 1, lines
    assert case.expect in lines[0], lines[0][:2000]
    assert len(lines[0]) < 1000, len(lines[0])


def test_the_shipped_cron_and_images_still_read() -> None:
    from gpu_platform.components.core.durations import cron_problem
    from gpu_platform.components.core.kube import image_problem

    assert cron_problem("0 8 * * mon-fri") is None and cron_problem("@daily") is None and cron_problem("*/15 0-6 1,15 jan-jun ?") is None
    for image in (TRITON, "registry.k8s.io/pause:3.10", "localhost:5000/a/b:1", "[::1]:5000/x:1", "busybox@sha256:" + "a" * 64):
        assert image_problem(image) is None, image
