"""Well-known label keys, the GPU resource name and object names, defined once.

The components put them on nodes and objects; the policy pack, plan-capacity, the simulator and the
CLI read them back. Changing one changes what is deployed (and what the rules look for): they are
public API. tests/components/core/test_labels.py checks that no other module of the package spells one out.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "AWS_ACCELERATOR_LABEL",
    "CAPACITY_LABEL",
    "CAPACITY_RESERVATION_ID_LABEL",
    "CLASS_LABEL",
    "COMPUTE_CLASS_LABEL",
    "DATASET_LABEL",
    "DEVICE_PLUGIN_CONFIG_LABEL",
    "EKS_CAPACITY_LABEL",
    "EKS_NODEGROUP_LABEL",
    "ELB_ROLE_TAG",
    "GCSFUSE_VOLUMES_ANNOTATION",
    "GKE_ACCELERATOR_LABEL",
    "GKE_SPOT_LABEL",
    "GPU_QUOTA_KEY",
    "GPU_RESOURCE",
    "GPU_TEMPLATE_TAG",
    "INSTANCE_TYPE_LABEL",
    "INTERNAL_ELB_ROLE_TAG",
    "KARPENTER_CAPACITY_LABEL",
    "KARPENTER_DISCOVERY_TAG",
    "KARPENTER_NODEPOOL_LABEL",
    "MANAGED_LABELS",
    "NAMESPACE_NAME_LABEL",
    "NODE_COST_LABELS",
    "NODE_POOL_LABEL",
    "NODE_TEMPLATE_PREFIX",
    "OWNER_ANNOTATION",
    "PART_OF_LABEL",
    "PHYSICAL_GPUS_ANNOTATION",
    "POOL_ROLE_LABEL",
    "PRIORITY_CONFIGMAP",
    "PoolRole",
    "SCHEDULER_LABEL",
    "TENANT_LABEL",
    "WORKLOAD_LABEL",
    "ZONE_LABEL",
    "REGION_LABEL",
]


class PoolRole(StrEnum):
    """What a node pool (GKE) or GPU class (EKS) is for; nodes carry it as POOL_ROLE_LABEL."""

    SYSTEM = "system"
    """Controllers and add-ons; no GPUs."""
    GPU = "gpu"
    """GPU workloads: Dask workers, notebooks, training steps."""
    SCHEDULER = "scheduler"
    """The cheap pool Dask schedulers prefer (label dedicated=scheduler; the RAPIDS Dask-scheduler-on-T4 guide)."""


GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource the NVIDIA device plugin advertises: pods request GPUs by it, and GPU nodes
carry the taint of the same key (pools.GPU_TAINT)."""
GPU_QUOTA_KEY = f"requests.{GPU_RESOURCE}"
"""The ResourceQuota key that bounds the GPUs a namespace's pods may request."""
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
"""GKE: the node label naming the GPU model; GKE sets it on every GPU node."""
AWS_ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
"""AWS: the cluster autoscaler's GPU label (it waits for the device plugin instead of scaling up again);
the EKS node groups set it."""
GKE_SPOT_LABEL = "cloud.google.com/gke-spot"
"""GKE: the node label of spot VMs ("true")."""
EKS_CAPACITY_LABEL = "eks.amazonaws.com/capacityType"
"""EKS: the node label of a managed node group's capacity type (SPOT or ON_DEMAND)."""
EKS_NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
"""EKS: the node label naming the managed node group."""
SCHEDULER_LABEL_KEY = "dedicated"
"""The node label key of the scheduler pool (the RAPIDS Dask-scheduler-on-T4 guide's)."""

POOL_ROLE_LABEL = "gpu-platform.io/pool-role"
"""Node label carrying the pool's PoolRole."""
SCHEDULER_LABEL = (SCHEDULER_LABEL_KEY, "scheduler")
"""The node label (key, value) of the scheduler pool, which Dask schedulers select."""
CLASS_LABEL = "gpu-platform.io/gpu-class"
"""Node label (and ASG tag) carrying an EKS node group's GPU class name."""
CAPACITY_LABEL = "gpu-platform.io/capacity"
"""Node label carrying an EKS node group's capacity type (spot or on-demand)."""
WORKLOAD_LABEL = "gpu-platform.io/workload"
"""The default node label key (and taint key) of KubeflowInstall's dedicated training pool."""
OWNER_ANNOTATION = "gpu-platform.io/owner"
"""Namespace annotation naming a Kubeflow tenant's owner."""
TENANT_LABEL = "gpu-platform.io/tenant"
"""Namespace label naming the tenant a namespace belongs to (the policy pack checks its quota)."""
PRIORITY_CONFIGMAP = "cluster-autoscaler-priority-expander"
"""The ConfigMap the cluster autoscaler's priority expander reads (its name is fixed upstream)."""
PART_OF_LABEL = {"app.kubernetes.io/part-of": "gpu-platform"}
"""The label every object the components create carries."""
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
"""Kubernetes' recommended label naming the tool that manages an object."""
MANAGED_LABELS = {MANAGED_BY_LABEL: "pulumi", **PART_OF_LABEL}
"""The labels of objects the components manage directly (not through a chart)."""
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
"""GKE: the node label (and taint key) of a custom ComputeClass; workloads select the class by it."""
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
"""GKE: the node label naming the node pool."""

NODE_TEMPLATE_PREFIX = "k8s.io/cluster-autoscaler/node-template"
"""The prefix of the tags that tell the cluster autoscaler what a node of an empty EKS node group will
have (labels, taints, resources)."""
GPU_TEMPLATE_TAG = f"{NODE_TEMPLATE_PREFIX}/resources/{GPU_RESOURCE}"
"""The tag that tells the cluster autoscaler how many GPUs a node of an empty EKS node group will
have. The component sets it on each GPU node group (and its ASG), so the policy pack reads the GPUs
per node of an instance type the catalog does not know from the node group itself."""

DATASET_LABEL = "gpu-platform.io/dataset"
"""The label naming the shared dataset a PersistentVolume, its claims and a Kubeflow PodDefault belong to."""
GCSFUSE_VOLUMES_ANNOTATION = "gke-gcsfuse/volumes"
"""GKE: the pod annotation ("true") that makes GKE inject the Cloud Storage FUSE sidecar into a pod
that mounts a gcsfuse.csi.storage.gke.io volume; without it the mount never happens."""
ELB_ROLE_TAG = "kubernetes.io/role/elb"
"""The subnet tag (value 1) by which the AWS Load Balancer Controller finds the public subnets of
internet-facing load balancers."""
INTERNAL_ELB_ROLE_TAG = "kubernetes.io/role/internal-elb"
"""The subnet tag (value 1) by which the AWS Load Balancer Controller finds the private subnets of
internal load balancers."""
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label Kubernetes sets on every Namespace to its own name: Kueue's namespace selectors pick the
tenants' namespaces by it."""
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
"""The node label naming which entry of the NVIDIA device plugin's config map a node runs with (the chart's
config manager reads it): an EKS GPU class that shares its GPUs labels its nodes with its name."""
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
"""The kubelet's well-known label of a node's instance type (Karpenter NodePools require it)."""
ZONE_LABEL = "topology.kubernetes.io/zone"
"""The well-known label of a node's zone (Karpenter NodePools require it from the plan's zones)."""
REGION_LABEL = "topology.kubernetes.io/region"
"""The well-known label of a node's region."""
KARPENTER_NODEPOOL_LABEL = "karpenter.sh/nodepool"
"""The label Karpenter puts on every node it provisions: the NodePool's name (<class>-spot, <class>-on-demand)."""
PHYSICAL_GPUS_ANNOTATION = "gpu-platform.io/physical-gpus"
"""The annotation of a Karpenter NodePool saying the most physical GPUs it launches (its maximum nodes times the plan's
NodePoolShape.gpus_per_node): its nvidia.com/gpu limit counts a shared GPU once per client, and the policy pack's
GPU budget counts physical GPUs, as it does for GKE node pools and EKS node groups."""
KARPENTER_CAPACITY_LABEL = "karpenter.sh/capacity-type"
"""Karpenter's capacity type requirement and node label: spot, on-demand (or reserved)."""
CAPACITY_RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
"""Karpenter's node label and NodePool requirement key: the id of the capacity reservation (or capacity block) a
reserved node runs in."""
KARPENTER_DISCOVERY_TAG = "karpenter.sh/discovery"
"""The AWS tag (value: the cluster name) by which EC2NodeClasses select subnets and security groups."""
NODE_COST_LABELS = (
    INSTANCE_TYPE_LABEL,
    GKE_ACCELERATOR_LABEL,
    GKE_SPOT_LABEL,
    EKS_CAPACITY_LABEL,
    CAPACITY_LABEL,
    KARPENTER_CAPACITY_LABEL,
)
"""The node labels kube-state-metrics exports (kube_node_labels) so `gpu-platform report` prices each GPU node:
its machine or instance type, its GPU (GCP N1 machines pay it apart) and its capacity type (spot or on-demand)."""
