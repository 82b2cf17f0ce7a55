"""DcgmExporterArgs: which GPU nodes, which DCGM fields (checked against DCGM's own list), probes and the chart version."""

from __future__ import annotations

import difflib
import functools
import json
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.components.core.kube import ChartVersion, DnsLabel, PinnedImage, PrometheusDuration
from gpu_platform.components.core.models import ARGS_CONFIG, check_unique
from gpu_platform.components.core.numbers import Int

__all__ = ["DEFAULT_METRICS", "DcgmExporterArgs", "DcgmMetric", "GpuNodeSelection"]

DCGM_REPOSITORY = "https://nvidia.github.io/dcgm-exporter/helm-charts"
METRICS_PATH = "/etc/dcgm-exporter/gpu-platform-metrics.csv"
MIN_PROBE_DELAY = 20  # below this the exporter restarts in a loop before DCGM is up (the EKS DCGM + GPU HPA guide's finding)


GpuNodeSelection = ClusterKind
"""How the exporter finds GPU nodes: by the accelerator label of the cluster's kind (gke: GKE's
cloud.google.com/gke-accelerator; eks: the EKS node groups' k8s.amazonaws.com/accelerator). It is
components.core.cloud.ClusterKind under the name the exporter's inputs have always used."""


@functools.cache
def dcgm_field_names() -> frozenset[str]:
    """DCGM's field names, shipped with their source and date (components/monitoring/data/dcgm_fields.json)."""
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
    scrape_interval: PrometheusDuration = "15s"
    """ServiceMonitor scrape interval. Default: 15s."""
    metrics: list[DcgmMetric] = Field(default_factory=lambda: list(DEFAULT_METRICS), min_length=1)
    """The DCGM fields published. Default: SM/memory clocks, temperature, power, energy, GPU and memory utilisation, framebuffer, XID errors, PCIe replays."""

    @field_validator("metrics")
    @classmethod
    def _needs_utilisation(cls, value: list[DcgmMetric]) -> list[DcgmMetric]:
        fields = [m.field for m in value]
        if "DCGM_FI_DEV_GPU_UTIL" not in fields:
            raise ValueError("metrics must include DCGM_FI_DEV_GPU_UTIL: the GPU custom metrics and alerts are built on it")
        check_unique(fields, "metrics", "a field")
        return value
