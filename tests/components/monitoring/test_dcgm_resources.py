"""The dcgm-exporter chart values: GPU nodes only, and GKE's driver paths."""

from __future__ import annotations

import pytest

from gpu_platform.components import (
    DcgmExporterArgs,
)
from gpu_platform.components.monitoring.dcgm_resources import dcgm_values


@pytest.mark.parametrize(("selection", "label"), [("gke", "cloud.google.com/gke-accelerator"), ("eks", "k8s.amazonaws.com/accelerator")])
def test_exporter_runs_on_gpu_nodes_only(selection: str, label: str) -> None:
    values = dcgm_values(DcgmExporterArgs(node_selection=selection), "m")
    (term,) = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": label, "operator": "Exists"}]}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["tolerations"]
    assert values["serviceMonitor"]["honorLabels"] is True
    assert values["livenessProbe"]["initialDelaySeconds"] >= 20 and values["readinessProbe"]["initialDelaySeconds"] >= 20
    assert values["image"] == {"repository": "nvcr.io/nvidia/k8s/dcgm-exporter", "tag": "4.5.3-4.8.2-distroless"}
    assert values["arguments"] == ["-f", "/etc/dcgm-exporter/gpu-platform-metrics.csv"]


def test_gke_driver_paths() -> None:
    gke = dcgm_values(DcgmExporterArgs(node_selection="gke"), "m")
    assert {"name": "nvidia-install-dir-host", "hostPath": "/home/kubernetes/bin/nvidia"} in gke["extraHostVolumes"]
    assert {"name": "nvidia-install-dir-host", "mountPath": "/usr/local/nvidia", "readOnly": True} in gke["extraVolumeMounts"]
    assert {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"} in gke["extraEnv"]
    eks = dcgm_values(DcgmExporterArgs(node_selection="eks"), "m")
    assert "extraHostVolumes" not in eks and "extraEnv" not in eks  # the AMI carries the driver
