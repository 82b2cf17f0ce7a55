"""DcgmExporter's chart values: the metrics CSV, node selection, tolerations, probes and the ServiceMonitor that keeps workload labels."""

from __future__ import annotations

from typing import Any

from gpu_platform.components.core.labels import GPU_RESOURCE
from gpu_platform.components.monitoring.dcgm_args import METRICS_PATH, DcgmExporterArgs, DcgmMetric, GpuNodeSelection

__all__ = ["dcgm_values", "metrics_csv"]


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
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": args.node_selection.accelerator_label, "operator": "Exists"}]}]
                }
            }
        },
        # GPU nodes carry the GPU taint and may carry pool taints (compute classes,
        # training pools): a node agent tolerates them all.
        "tolerations": [
            {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
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
