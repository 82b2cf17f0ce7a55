"""Shared datasets mapped to Kubernetes: the PersistentVolume and claim of one tenant's mount, and a
tenant's pods with the dataset volumes mounted (the Dask cluster spec, the notebook, a PodDefault).

Pure: nothing here registers a resource. SharedDatasets registers the volumes and claims,
DaskOperator and KubeflowInstall's callers the pods.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components.core.labels import DATASET_LABEL, GCSFUSE_VOLUMES_ANNOTATION, MANAGED_LABELS, TENANT_LABEL
from gpu_platform.components.datasets.args import DatasetAccess, DatasetArgs, DatasetMount

__all__ = [
    "GCSFUSE_CAPACITY",
    "claim_args",
    "cluster_spec_with",
    "pod_annotations",
    "pod_default_label",
    "pod_default_spec",
    "pod_with",
    "volume_args",
    "volume_mount_args",
    "volume_name",
]

GCSFUSE_CAPACITY = "5Gi"
"""A Cloud Storage FUSE volume's nominal capacity (a bucket has none; Kubernetes requires one to bind)."""


def volume_name(dataset: DatasetArgs, tenant: str) -> str:
    """The PersistentVolume of ``tenant``'s mount (DatasetArgs.volume_name, the one home of the name)."""
    return dataset.volume_name(tenant)


def _labels(dataset: DatasetArgs, tenant: str) -> dict[str, str]:
    return {**MANAGED_LABELS, DATASET_LABEL: dataset.name, TENANT_LABEL: tenant}


def persistent_volume_spec(
    dataset: DatasetArgs,
    tenant: str,
    csi: k8s.core.v1.CSIPersistentVolumeSourceArgs,
    capacity: str,
    mount_options: Sequence[str],
) -> k8s.core.v1.PersistentVolumeSpecArgs:
    """A static volume for ``tenant``'s claim only (claimRef), kept when released (Retain), in no StorageClass."""
    access = dataset.tenant_access(tenant)
    return k8s.core.v1.PersistentVolumeSpecArgs(
        capacity={"storage": capacity},
        access_modes=[access.access_mode],
        persistent_volume_reclaim_policy="Retain",
        storage_class_name="",
        mount_options=list(mount_options) or None,
        csi=csi,
        claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=tenant, name=dataset.claim),
    )


def volume_args(
    dataset: DatasetArgs,
    tenant: str,
    csi: k8s.core.v1.CSIPersistentVolumeSourceArgs,
    capacity: str,
    mount_options: Sequence[str],
) -> tuple[k8s.meta.v1.ObjectMetaArgs, k8s.core.v1.PersistentVolumeSpecArgs]:
    """The PersistentVolume's metadata and spec."""
    return (
        k8s.meta.v1.ObjectMetaArgs(name=volume_name(dataset, tenant), labels=_labels(dataset, tenant)),
        persistent_volume_spec(dataset, tenant, csi, capacity, mount_options),
    )


def claim_args(dataset: DatasetArgs, tenant: str, capacity: str) -> tuple[k8s.meta.v1.ObjectMetaArgs, k8s.core.v1.PersistentVolumeClaimSpecArgs]:
    """The claim in ``tenant``'s namespace, bound to its volume by name."""
    access = dataset.tenant_access(tenant)
    return (
        k8s.meta.v1.ObjectMetaArgs(name=dataset.claim, namespace=tenant, labels=_labels(dataset, tenant)),
        k8s.core.v1.PersistentVolumeClaimSpecArgs(
            access_modes=[access.access_mode],
            storage_class_name="",
            volume_name=volume_name(dataset, tenant),
            resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": capacity}),
        ),
    )


def csi_source(
    driver: str, handle: pulumi.Input[str], attributes: Mapping[str, pulumi.Input[str]] | None, access: DatasetAccess
) -> k8s.core.v1.CSIPersistentVolumeSourceArgs:
    """The volume's CSI source (read-only for a read-only mount)."""
    return k8s.core.v1.CSIPersistentVolumeSourceArgs(
        driver=driver,
        volume_handle=handle,
        volume_attributes=dict(attributes) if attributes else None,
        read_only=access is DatasetAccess.READ_ONLY or None,
    )


# --- a tenant's pods ---------------------------------------------------------------------------


def volume_mount_args(mounts: Sequence[DatasetMount]) -> tuple[list[k8s.core.v1.VolumeArgs], list[k8s.core.v1.VolumeMountArgs]]:
    """The volumes and mounts a Deployment's pod template adds (the Dask notebook)."""
    volumes = [
        k8s.core.v1.VolumeArgs(
            name=m.volume,
            persistent_volume_claim=k8s.core.v1.PersistentVolumeClaimVolumeSourceArgs(claim_name=m.claim, read_only=m.read_only or None),
        )
        for m in mounts
    ]
    volume_mounts = [k8s.core.v1.VolumeMountArgs(name=m.volume, mount_path=m.mount_path, read_only=m.read_only or None) for m in mounts]
    return volumes, volume_mounts


def pod_annotations(mounts: Sequence[DatasetMount]) -> dict[str, str]:
    """Pod annotations the mounts need: GKE's Cloud Storage FUSE sidecar injection."""
    return {GCSFUSE_VOLUMES_ANNOTATION: "true"} if any(m.gcsfuse for m in mounts) else {}


def _volume(m: DatasetMount) -> dict[str, Any]:
    claim: dict[str, Any] = {"claimName": m.claim}
    if m.read_only:
        claim["readOnly"] = True
    return {"name": m.volume, "persistentVolumeClaim": claim}


def _mount(m: DatasetMount) -> dict[str, Any]:
    mount: dict[str, Any] = {"name": m.volume, "mountPath": m.mount_path}
    if m.read_only:
        mount["readOnly"] = True
    return mount


def pod_with(pod: Mapping[str, Any], mounts: Sequence[DatasetMount]) -> dict[str, Any]:
    """A pod spec (API field names) with the mounts' volumes, mounted into every container."""
    out = copy.deepcopy(dict(pod))
    if not mounts:
        return out
    out["volumes"] = [*(out.get("volumes") or []), *(_volume(m) for m in mounts)]
    for container in out.get("containers") or []:
        container["volumeMounts"] = [*(container.get("volumeMounts") or []), *(_mount(m) for m in mounts)]
    return out


def cluster_spec_with(cluster: Mapping[str, Any], mounts: Sequence[DatasetMount]) -> dict[str, Any]:
    """A DaskCluster (kubernetes.dask.org/v1) whose workers and scheduler mount the datasets."""
    out = copy.deepcopy(dict(cluster))
    if not mounts:
        return out
    annotations = pod_annotations(mounts)
    for role in ("worker", "scheduler"):
        part = out["spec"][role]
        part["spec"] = pod_with(part["spec"], mounts)
        if annotations:
            metadata = part.setdefault("metadata", {})
            metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    return out


def pod_default_label(dataset: DatasetArgs) -> str:
    """The pod label (value "true") that selects a dataset's Kubeflow PodDefault."""
    return f"{DATASET_LABEL}-{dataset.name}"


def pod_default_spec(dataset: DatasetArgs, mount: DatasetMount, selector_label: str) -> dict[str, Any]:
    """A Kubeflow PodDefault (kubeflow.org/v1alpha1) that mounts the dataset into the profile's pods
    (notebooks choose it in the UI; pipeline steps carry ``selector_label: "true"``)."""
    spec: dict[str, Any] = {
        "desc": f"Mount the shared dataset {dataset.name} at {mount.mount_path}",
        "selector": {"matchLabels": {selector_label: "true"}},
        "volumes": [_volume(mount)],
        "volumeMounts": [_mount(mount)],
    }
    if annotations := pod_annotations([mount]):
        spec["annotations"] = annotations
    return spec
