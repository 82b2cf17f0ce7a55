"""Well-known label keys and object names, defined once.

The components put them on nodes and objects; the policy pack and the CLI read them back.
Changing one changes what is deployed (and what the rules look for): they are public API.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "CAPACITY_LABEL",
    "CLASS_LABEL",
    "COMPUTE_CLASS_LABEL",
    "NODE_POOL_LABEL",
    "MANAGED_LABELS",
    "PART_OF_LABEL",
    "POOL_ROLE_LABEL",
    "PRIORITY_CONFIGMAP",
    "PoolRole",
    "SCHEDULER_LABEL",
    "TENANT_LABEL",
]


class PoolRole(StrEnum):
    """What a node pool (GKE) or GPU class (EKS) is for; nodes carry it as POOL_ROLE_LABEL."""

    SYSTEM = "system"
    """Controllers and add-ons; no GPUs."""
    GPU = "gpu"
    """GPU workloads: Dask workers, notebooks, training steps."""
    SCHEDULER = "scheduler"
    """The cheap pool Dask schedulers prefer (label dedicated=scheduler; the RAPIDS Dask-scheduler-on-T4 guide)."""


POOL_ROLE_LABEL = "gpu-platform.io/pool-role"
"""Node label carrying the pool's PoolRole."""
SCHEDULER_LABEL = ("dedicated", "scheduler")
"""The node label (key, value) of the scheduler pool, which Dask schedulers select."""
CLASS_LABEL = "gpu-platform.io/gpu-class"
"""Node label (and ASG tag) carrying an EKS node group's GPU class name."""
CAPACITY_LABEL = "gpu-platform.io/capacity"
"""Node label carrying an EKS node group's capacity type (spot or on-demand)."""
TENANT_LABEL = "gpu-platform.io/tenant"
"""Namespace label naming the tenant a namespace belongs to (the policy pack checks its quota)."""
PRIORITY_CONFIGMAP = "cluster-autoscaler-priority-expander"
"""The ConfigMap the cluster autoscaler's priority expander reads (its name is fixed upstream)."""
PART_OF_LABEL = {"app.kubernetes.io/part-of": "gpu-platform"}
"""The label every object the components create carries."""
MANAGED_LABELS = {"app.kubernetes.io/managed-by": "pulumi", **PART_OF_LABEL}
"""The labels of objects the components manage directly (not through a chart)."""
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
"""GKE: the node label (and taint key) of a custom ComputeClass; workloads select the class by it."""
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
"""GKE: the node label naming the node pool."""

GPU_TEMPLATE_TAG = "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"
"""The tag that tells the cluster autoscaler how many GPUs a node of an empty EKS node group will
have. The component sets it on each GPU node group (and its ASG), so the policy pack reads the GPUs
per node of an instance type the catalog does not know from the node group itself."""
