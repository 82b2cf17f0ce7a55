"""DcgmExporter under the recording mock engine."""

from __future__ import annotations

from typing import Any

import pulumi

from gpu_platform.components import (
    DcgmExporter,
    DcgmExporterArgs,
)
from tests.conftest import Engine, settled


@pulumi.runtime.test
def test_dcgm_exporter_resources(engine: Engine) -> pulumi.Output[Any]:
    crd = pulumi.CustomResource("kubernetes:helm.sh/v3:Release", "monitoring")  # what installs the ServiceMonitor CRD
    exporter = DcgmExporter("dcgm", DcgmExporterArgs(node_selection="gke"), service_monitor_crd=crd)

    def check(_: Any) -> None:
        release = engine.resource("dcgm-release").inputs
        assert (release["chart"], release["version"]) == ("dcgm-exporter", "4.8.2")
        assert release["repositoryOpts"] == {"repo": "https://nvidia.github.io/dcgm-exporter/helm-charts"}
        metrics = engine.resource("dcgm-metrics").inputs
        assert metrics["data"]["metrics"].startswith("DCGM_FI_DEV_SM_CLOCK, gauge")
        assert release["values"]["extraConfigMapVolumes"][0]["configMap"]["name"] == metrics["metadata"]["name"]
        assert release["values"]["serviceMonitor"]["enabled"] is True
        assert engine.resource("monitoring").urn in engine.resource("dcgm-release").depends_on  # its ServiceMonitor after the CRD

    return settled(exporter, exporter.release, crd).apply(check)
