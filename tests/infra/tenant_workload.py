"""A hand-made half hour on the prod-gke stack's A100 pools whose per-tenant truth is computed here, second
by second, from the pods and nodes (not from infra/report/tenants.py): two tenants of the stack (the Dask
tenant analytics, the Kubeflow tenant team-nlp) and a namespace that is no tenant (sandbox), on a spot
and an on-demand a2-highgpu-8g and an on-demand a2-highgpu-1g that comes and goes; the on-demand 8-GPU
node holds no pod from 600 s to 900 s (an idle gap). Kueue's metrics for the two tenants' ClusterQueues
are written beside kube-state-metrics': pending workloads, the admission wait histogram, the GPU quota
in use and the nominal quota."""

from __future__ import annotations

import json
from pathlib import Path

from tests.infra.report_workload import Node, Pod, Workload

SECONDS = 1800
STACK = "prod-gke"
SPOT, ON_DEMAND, SMALL = "gke-a100x8-spot-0", "gke-a100x8-od-0", "gke-a100-od-0"
UNPRICED = "gke-x9-0"
"""A GPU node of a type the price table does not have: its GPU-hours count, it costs 0 and is named."""
TENANTS = ("analytics", "team-nlp")
"""The stack's tenants with pods here (the stack has research and team-vision too: rows with nothing)."""
BUCKETS = [1.0, *(2.5 * 2**i for i in range(15))]
"""Kueue 0.19.2's admission wait buckets (pkg/metrics/metrics.go: generateExponentialBuckets(16), 1 then
2.5 x 2^i: 1, 2.5, 5, 10, ... 40960 s) and +Inf."""
ROLES = ("leader", "follower")
"""Kueue labels each series with the replica's role (replica_role); a follower of an HA install reports the
same queues again, which the report must not count twice."""
NOMINAL = {"analytics": 8, "team-nlp": 16}

# namespace, name, GPUs, created, scheduled, runtime, node
PODS = (
    ("analytics", "w1", 4, 0, 5, 595, SPOT),
    ("analytics", "w2", 2, 10, 40, 560, ON_DEMAND),
    ("team-nlp", "s1", 2, 100, 103, 900, SPOT),
    ("team-nlp", "s2", 1, 250, 320, 1000, SMALL),
    ("analytics", "w3", 8, 880, 900, 290, ON_DEMAND),
    ("sandbox", "x1", 1, 1300, 1302, 300, SPOT),
    ("team-nlp", "s3", 4, 1400, 1460, 300, SPOT),
)


def node_labels(machine: str, spot: bool) -> dict[str, str]:
    labels = {
        "label_node_kubernetes_io_instance_type": machine,
        "label_cloud_google_com_gke_accelerator": "nvidia-tesla-a100",
    }
    if spot:
        labels["label_cloud_google_com_gke_spot"] = "true"
    return labels


def tenant_workload(start: int) -> Workload:
    w = Workload(start=start, seconds=SECONDS)
    w.nodes = [
        Node(SPOT, ready=0, gpus=8, free=8, labels=node_labels("a2-highgpu-8g", True)),
        Node(ON_DEMAND, ready=0, gpus=8, free=8, removed=1200, labels=node_labels("a2-highgpu-8g", False)),
        Node(SMALL, ready=300, gpus=1, free=1, removed=1500, labels=node_labels("a2-highgpu-1g", False)),
        Node(UNPRICED, ready=0, gpus=2, free=2, removed=600, labels=node_labels("x9-mega", False)),
    ]
    for namespace, name, gpus, created, scheduled, runtime, node in PODS:
        w.pods.append(Pod(namespace, name, gpus, created, runtime, 0, scheduled=scheduled, node=node))
    w.extra = kueue_metrics(w)
    return w


def _queue_pods(w: Workload, tenant: str) -> list[Pod]:
    return [p for p in w.pods if p.namespace == tenant]


def kueue_metrics(w: Workload) -> list[str]:
    """Kueue's series at a 1 s scrape, by the names and labels Kueue 0.19.2 exports (pkg/metrics/metrics.go:
    pending_workloads{cluster_queue,status,replica_role}, admission_wait_time_seconds{cluster_queue,
    priority_class,replica_role}, cluster_queue_resource_usage and _nominal_quota{cohort,cluster_queue,flavor,
    resource,replica_role}), from a leader and a follower replica: each pod is one workload, admitted when
    it is scheduled."""
    out = ["# TYPE kueue_pending_workloads gauge"]
    for tenant in TENANTS:
        pods = _queue_pods(w, tenant)
        for role in ROLES:
            for status in ("active", "inadmissible"):
                series = f'kueue_pending_workloads{{cluster_queue="{tenant}",status="{status}",replica_role="{role}"}}'
                for t in range(w.seconds):
                    value = sum(1 for p in pods if p.created <= t < (p.scheduled or 0)) if status == "active" else 0
                    out.append(f"{series} {value} {w.start + t}")
    # The histogram's series, as gauges of their own names (a backfill needs no counter semantics):
    # each exists from the queue's first admission on, as client_golang exports a histogram vector.
    # No priority class: priority_class is empty, which Prometheus stores as no label.
    out.append("# TYPE kueue_admission_wait_time_seconds_bucket gauge")
    sums: list[str] = []
    for tenant in TENANTS:
        pods = _queue_pods(w, tenant)
        first = min(p.scheduled or 0 for p in pods)
        for role in ROLES:
            for le in [*BUCKETS, float("inf")]:
                label = "+Inf" if le == float("inf") else f"{le:g}"
                series = f'kueue_admission_wait_time_seconds_bucket{{cluster_queue="{tenant}",replica_role="{role}",le="{label}"}}'
                for t in range(first, w.seconds):
                    count = sum(1 for p in pods if (p.scheduled or 0) <= t and (p.scheduled or 0) - p.created <= le)
                    out.append(f"{series} {count} {w.start + t}")
            series = f'kueue_admission_wait_time_seconds_sum{{cluster_queue="{tenant}",replica_role="{role}"}}'
            for t in range(first, w.seconds):
                total = sum((p.scheduled or 0) - p.created for p in pods if (p.scheduled or 0) <= t)
                sums.append(f"{series} {total} {w.start + t}")
    out += ["# TYPE kueue_admission_wait_time_seconds_sum gauge", *sums]
    quota = 'cohort="gpu-platform",cluster_queue="{tenant}",flavor="nvidia-tesla-a100-a100x8",resource="nvidia.com/gpu",replica_role="{role}"'
    out.append("# TYPE kueue_cluster_queue_resource_usage gauge")
    for tenant in TENANTS:
        pods = _queue_pods(w, tenant)
        for role in ROLES:
            series = f"kueue_cluster_queue_resource_usage{{{quota.format(tenant=tenant, role=role)}}}"
            for t in range(w.seconds):
                out.append(f"{series} {sum(p.gpus for p in pods if (p.scheduled or 0) <= t < p.finished)} {w.start + t}")
    out.append("# TYPE kueue_cluster_queue_nominal_quota gauge")
    for tenant in TENANTS:
        for role in ROLES:
            series = f"kueue_cluster_queue_nominal_quota{{{quota.format(tenant=tenant, role=role)}}}"
            out += [f"{series} {NOMINAL[tenant]} {w.start + t}" for t in range(w.seconds)]
    return out


# --- the truth -----------------------------------------------------------------------------------


def hourly_prices(project: Path) -> dict[tuple[str, bool], float]:
    """(machine type, spot) -> USD per hour, from the shipped price table's us-central1 (the stack's region)."""
    table = json.loads((project / "infra" / "simulate" / "prices.json").read_text())
    region = next(r for r in table["gcp"] if r["region"] == "us-central1")
    return {
        (machine, spot): region["machines"][machine]["spot" if spot else "on_demand"]
        for machine in ("a2-highgpu-8g", "a2-highgpu-1g")
        for spot in (True, False)
    }


def truth(w: Workload, prices: dict[tuple[str, bool], float], a: int = 0, b: int = SECONDS) -> dict[str, dict[str, float]]:
    """tenant (the namespace; idle) -> gpu_seconds, cost, spot_gpu_seconds over [a, b), second by second."""
    out: dict[str, dict[str, float]] = {}

    def add(who: str, key: str, value: float) -> None:
        out.setdefault(who, {"gpu_seconds": 0.0, "cost": 0.0, "spot_gpu_seconds": 0.0})[key] += value

    for t in range(a, b):
        for node in w.nodes:
            if not node.ready <= t < (node.removed if node.removed is not None else w.seconds):
                continue
            spot = "label_cloud_google_com_gke_spot" in node.labels
            per_second = prices.get((node.labels["label_node_kubernetes_io_instance_type"], spot), 0.0) / 3600
            running = [p for p in w.pods if p.node == node.name and (p.scheduled or 0) <= t < p.finished]
            held = sum(p.gpus for p in running)
            for p in running:
                add(p.namespace, "gpu_seconds", p.gpus)
                add(p.namespace, "cost", per_second * p.gpus / node.gpus)
                if spot:
                    add(p.namespace, "spot_gpu_seconds", p.gpus)
            add("idle", "gpu_seconds", node.gpus - held)
            add("idle", "cost", per_second * (node.gpus - held) / node.gpus)
            add("total", "gpu_seconds", node.gpus)
            add("total", "cost", per_second)
    return out
