"""DcgmExporter: NVIDIA's dcgm-exporter on GPU nodes only, scraped with the workload's labels.

On GKE the driver comes from GKE: the exporter mounts GKE's driver directory
(/home/kubernetes/bin/nvidia) and runs only the exporter. On EKS the AMI carries the
driver and the device plugin exposes the GPUs. The ServiceMonitor keeps the pod and
namespace labels of the workload using each GPU (honorLabels), which the adapter's
per-pod GPU metrics rely on.
"""

from __future__ import annotations

import difflib
import functools
import json
from enum import StrEnum
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pydantic import BaseModel, Field, field_validator

from gpu_platform.components.kube import ChartVersion, DnsLabel, Duration, PinnedImage, helm_release
from gpu_platform.components.labels import PART_OF_LABEL
from gpu_platform.components.models import check_unique
from gpu_platform.components.numbers import Int
from gpu_platform.components.pools import ARGS_CONFIG

__all__ = [
    "DEFAULT_METRICS",
    "DcgmExporter",
    "DcgmExporterArgs",
    "DcgmMetric",
    "GpuNodeSelection",
]

DCGM_REPOSITORY = "https://nvidia.github.io/dcgm-exporter/helm-charts"
METRICS_PATH = "/etc/dcgm-exporter/gpu-platform-metrics.csv"
MIN_PROBE_DELAY = 20  # below this the exporter restarts in a loop before DCGM is up (the EKS DCGM + GPU HPA guide's finding)


class GpuNodeSelection(StrEnum):
    """How the exporter finds GPU nodes."""

    GKE = "gke"
    """Nodes with cloud.google.com/gke-accelerator (set by GKE on every GPU node)."""
    EKS = "eks"
    """Nodes with k8s.amazonaws.com/accelerator (set by the EKS node groups)."""


_SELECTION_LABEL = {GpuNodeSelection.GKE: "cloud.google.com/gke-accelerator", GpuNodeSelection.EKS: "k8s.amazonaws.com/accelerator"}


@functools.cache
def dcgm_field_names() -> frozenset[str]:
    """DCGM's field names, shipped with their source and date (components/data/dcgm_fields.json)."""
    data = json.loads((Path(__file__).parent / "data" / "dcgm_fields.json").read_text(encoding="utf-8"))
    return frozenset(data["fields"])


class DcgmMetric(BaseModel):
    """One DCGM field the exporter publishes."""

    model_config = ARGS_CONFIG

    field: str = Field(pattern=r"^DCGM_FI_[A-Z0-9_]+$")
    """DCGM field name DCGM has (dcgm_fields.h), e.g. DCGM_FI_DEV_GPU_UTIL. Required."""

    @field_validator("field")
    @classmethod
    def _known_field(cls, value: str) -> str:
        known = dcgm_field_names()
        if value not in known:
            hint = difflib.get_close_matches(value, sorted(known), n=1)
            mean = f"; did you mean {hint[0]}?" if hint else ""
            raise ValueError(f"DCGM has no field {value}{mean} (names from DCGM's dcgm_fields.h)")
        return value
    type: str = Field(pattern=r"^(gauge|counter|label)$")
    """Prometheus type: gauge, counter or label. Required."""
    help: str = Field(min_length=1)
    """Help text. Required."""


DEFAULT_METRICS: tuple[DcgmMetric, ...] = tuple(
    DcgmMetric(field=f, type=t, help=h)
    for f, t, h in (
        ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
        ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
        ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
        ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
        ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
        ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
        ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
        ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
        ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
        ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    )
)
"""Default counters plus utilisation, memory, power and XID errors."""


class DcgmExporterArgs(BaseModel):
    """Inputs of DcgmExporter."""

    model_config = ARGS_CONFIG

    node_selection: GpuNodeSelection
    """gke or eks: which node label marks GPU nodes (and on GKE, GKE's driver paths). Required."""
    namespace: DnsLabel = "dcgm-exporter"
    """Namespace of the exporter (created). Default: dcgm-exporter."""
    chart_version: ChartVersion = "4.8.2"
    """dcgm-exporter chart release. Default: 4.8.2."""
    image: PinnedImage = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"
    """Exporter image, pinned. Default: nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless."""
    probe_initial_delay_seconds: Int = Field(default=45, ge=MIN_PROBE_DELAY, le=600)
    """Initial delay of the liveness and readiness probes (at least 20 s). Default: 45."""
    scrape_interval: Duration = "15s"
    """ServiceMonitor scrape interval. Default: 15s."""
    metrics: list[DcgmMetric] = Field(default_factory=lambda: list(DEFAULT_METRICS), min_length=1)
    """The DCGM fields published. Default: SM/memory clocks, temperature, power, energy, GPU and memory utilisation, framebuffer, XID errors, PCIe replays."""

    @field_validator("metrics")
    @classmethod
    def _needs_utilisation(cls, value: list[DcgmMetric]) -> list[DcgmMetric]:
        fields = [m.field for m in value]
        if "DCGM_FI_DEV_GPU_UTIL" not in fields:
            raise ValueError(
                "metrics must include DCGM_FI_DEV_GPU_UTIL: the GPU custom metrics and alerts are built on it"
            )
        check_unique(fields, "metrics", "a field")
        return value


def metrics_csv(metrics: list[DcgmMetric]) -> str:
    """The exporter's counters file: "field, type, help" per line."""
    return "".join(f"{m.field}, {m.type}, {m.help}\n" for m in metrics)


def dcgm_values(args: DcgmExporterArgs, metrics_config_map: str) -> dict[str, Any]:
    """dcgm-exporter chart values."""
    repository, tag = args.image.rsplit(":", 1) if "@" not in args.image else (args.image, "")
    values: dict[str, Any] = {
        "image": {"repository": repository, "tag": tag},
        "arguments": ["-f", METRICS_PATH],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": _SELECTION_LABEL[args.node_selection], "operator": "Exists"}]}
                    ]
                }
            }
        },
        # GPU nodes carry the GPU taint and may carry pool taints (compute classes,
        # training pools): a node agent tolerates them all.
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"operator": "Exists"},
        ],
        "serviceMonitor": {"enabled": True, "interval": args.scrape_interval, "honorLabels": True},
        "livenessProbe": {"initialDelaySeconds": args.probe_initial_delay_seconds},
        "readinessProbe": {"initialDelaySeconds": args.probe_initial_delay_seconds},
        "extraConfigMapVolumes": [
            {
                "name": "gpu-platform-metrics",
                "configMap": {"name": metrics_config_map, "items": [{"key": "metrics", "path": "metrics.csv"}]},
            }
        ],
        "extraVolumeMounts": [{"name": "gpu-platform-metrics", "mountPath": METRICS_PATH, "subPath": "metrics.csv"}],
    }
    if args.node_selection is GpuNodeSelection.GKE:
        # GKE installs the driver on the host; the exporter reads NVML from there.
        values["extraHostVolumes"] = [
            {"name": "nvidia-install-dir-host", "hostPath": "/home/kubernetes/bin/nvidia"},
            {"name": "vulkan-icd-mount", "hostPath": "/home/kubernetes/bin/nvidia/vulkan/icd.d"},
        ]
        values["extraVolumeMounts"] += [
            {"name": "nvidia-install-dir-host", "mountPath": "/usr/local/nvidia", "readOnly": True},
            {"name": "vulkan-icd-mount", "mountPath": "/etc/vulkan/icd.d", "readOnly": True},
        ]
        values["extraEnv"] = [
            {"name": "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "value": "device-name"},
            {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"},
        ]
        # The exporter requests no GPU, so it sees the devices only when privileged; the
        # chart's default allowPrivilegeEscalation false would make the API server refuse that.
        values["securityContext"] = {"privileged": True, "allowPrivilegeEscalation": True}
    return values


class DcgmExporter(pulumi.ComponentResource):
    """dcgm-exporter on GPU nodes with a ServiceMonitor that keeps workload labels."""

    namespace: pulumi.Output[str]
    """The exporter's namespace."""
    release: k8s.helm.v3.Release
    """The dcgm-exporter Helm release."""

    def __init__(
        self,
        name: str,
        args: DcgmExporterArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        service_monitor_crd: pulumi.Resource | None,
    ) -> None:
        """``service_monitor_crd``: what installs the ServiceMonitor CRD the chart's ServiceMonitor needs
        (PrometheusStack.release); the release waits for it. None only when the CRD is already on the cluster."""
        super().__init__("gpu-platform:dcgm_exporter:DcgmExporter", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels=dict(PART_OF_LABEL)),
            opts=child,
        )
        ns = namespace.metadata.name
        metrics = k8s.core.v1.ConfigMap(
            f"{name}-metrics",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="gpu-platform-dcgm-metrics", namespace=ns),
            data={"metrics": metrics_csv(args.metrics)},
            opts=child,
        )
        self.release = helm_release(
            f"{name}-release",
            chart="dcgm-exporter",
            version=args.chart_version,
            repository=DCGM_REPOSITORY,
            namespace=ns,
            release_name="dcgm-exporter",
            values=dcgm_values(args, "gpu-platform-dcgm-metrics"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[r for r in (metrics, service_monitor_crd) if r]),
        )
        self.namespace = ns
        self.register_outputs({"namespace": self.namespace})
