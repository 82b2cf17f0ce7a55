"""Telemetry and GPU autoscaling: PrometheusStack, DcgmExporter and GpuUtilizationAutoscaler, each with its Args and its mapping to chart values, and the dashboards."""
