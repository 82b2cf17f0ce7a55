"""PrometheusStack under the recording mock engine: its releases, alerts and outputs."""

from __future__ import annotations

import json
from typing import Any

import pulumi

from gpu_platform.components import (
    PrometheusStack,
    PrometheusStackArgs,
)
from gpu_platform.components.monitoring.prometheus_args import (
    MetricSource,
    MonitoredCluster,
)
from tests.conftest import Engine, settled

EKS = MonitoredCluster(kind="eks", sources=frozenset({MetricSource.DCGM_EXPORTER, MetricSource.CLUSTER_AUTOSCALER}))


@pulumi.runtime.test
def test_prometheus_stack_alerts_follow_the_cluster(engine: Engine) -> pulumi.Output[Any]:
    gke = MonitoredCluster(kind="gke", sources=frozenset({MetricSource.DCGM_EXPORTER}))
    stack = PrometheusStack("mon", PrometheusStackArgs(), grafana_admin_password="pw", cluster=gke)

    def check(_: Any) -> None:
        (group,) = engine.resource("mon-gpu-alerts").inputs["spec"]["groups"]
        assert "NodeGroupScaleUpFailing" not in {r["alert"] for r in group["rules"]}  # GKE's autoscaler is out of reach
        values = engine.resource("mon-release").inputs["values"]
        assert values["kubeDns"] == {"enabled": True} and values["kubeEtcd"] == {"enabled": False}

    return settled(stack, stack.release, stack.alerts).apply(check)


@pulumi.runtime.test
def test_prometheus_stack_resources(engine: Engine) -> pulumi.Output[Any]:
    stack = PrometheusStack("mon", PrometheusStackArgs(), grafana_admin_password="pw-placeholder", cluster=EKS)

    def check(_: Any) -> None:
        release = engine.resource("mon-release").inputs
        assert (release["chart"], release["version"], release["name"]) == ("kube-prometheus-stack", "88.5.3", "kube-prometheus-stack")
        assert release["repositoryOpts"] == {"repo": "https://prometheus-community.github.io/helm-charts"}
        adapter = engine.resource("mon-adapter").inputs
        assert adapter["values"]["prometheus"]["url"] == "http://kube-prometheus-stack-prometheus.prometheus.svc"
        secret = engine.resource("mon-grafana-admin").inputs
        # the password is a Pulumi secret end to end
        assert secret["stringData"]["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"
        assert "pw-placeholder" not in json.dumps(release) + json.dumps(adapter)
        rule = engine.resource("mon-gpu-alerts")
        assert rule.type == "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
        assert engine.resource("mon-release").urn in rule.depends_on
        dashboard = engine.resource("mon-platform-dashboard").inputs
        assert dashboard["metadata"]["labels"] == {"grafana_dashboard": "1"}

    def check_all(values: list[Any]) -> None:
        check(values[0])
        assert values[1:] == ["http://kube-prometheus-stack-prometheus.prometheus.svc:9090", "kube-prometheus-stack-grafana"]

    return pulumi.Output.all(settled(stack, stack.release, stack.adapter, stack.alerts), stack.prometheus_url, stack.grafana_service_name).apply(check_all)
