"""Which cloud, defined once: ``Cloud`` (where a stack deploys: gcp or aws) and ``ClusterKind`` (the managed
Kubernetes it runs: gke or eks), each naming the other.

Every reader asks these instead of comparing strings: the stack config (``cloud: gcp``), the zone data
(components/catalog/data/zones.json is keyed by cloud), the kubelet's reserve formula of a pool
(``ReserveFormula.of(cloud)``), the exporter's GPU-node label and the monitoring of a managed control
plane (``ClusterKind``), plan-capacity, the simulator and the price table. The serialized values are
public: stack files and component inputs carry them.
"""

from __future__ import annotations

from enum import StrEnum

from gpu_platform.components.core.labels import AWS_ACCELERATOR_LABEL, GKE_ACCELERATOR_LABEL

__all__ = ["Cloud", "ClusterKind"]


class Cloud(StrEnum):
    """Where a stack deploys."""

    GCP = "gcp"
    """Google Cloud: a GKE cluster (GpuGkeCluster)."""
    AWS = "aws"
    """AWS: an EKS cluster (EksCluster) and its GPU node groups (SpotFailoverEksNodeGroups)."""

    @property
    def kind(self) -> ClusterKind:
        """The managed Kubernetes the platform runs on this cloud."""
        return ClusterKind.GKE if self is Cloud.GCP else ClusterKind.EKS

    @property
    def accelerator_label(self) -> str:
        """The node label naming the GPU model on GPU nodes (GKE sets it; the EKS node groups set theirs)."""
        return self.kind.accelerator_label


class ClusterKind(StrEnum):
    """The managed Kubernetes under the stack: what its control plane and DNS expose to an in-cluster
    Prometheus, and which label marks its GPU nodes."""

    GKE = "gke"
    """GKE: etcd, the scheduler and the controller manager run out of reach; kube-proxy binds its metrics to
    localhost (or is absent under Dataplane V2); cluster DNS is kube-dns (metrics on 10054/10055), not CoreDNS.
    GPU nodes carry cloud.google.com/gke-accelerator (set by GKE on every GPU node)."""
    EKS = "eks"
    """EKS: etcd, the scheduler and the controller manager run out of reach; the kube-proxy add-on binds its
    metrics to 127.0.0.1:10249; cluster DNS is CoreDNS (metrics on 9153). GPU nodes carry
    k8s.amazonaws.com/accelerator (set by the EKS node groups)."""

    @property
    def cloud(self) -> Cloud:
        """The cloud this Kubernetes runs on."""
        return Cloud.GCP if self is ClusterKind.GKE else Cloud.AWS

    @property
    def accelerator_label(self) -> str:
        """The node label naming the GPU model on GPU nodes."""
        return GKE_ACCELERATOR_LABEL if self is ClusterKind.GKE else AWS_ACCELERATOR_LABEL
