"""Monitoring guardrails: DCGM exporter probes that let DCGM start, metrics that survive."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpu_platform.policies.rules.base import Resource, ResourceRule, RuleConfig
from gpu_platform.policies.rules.supply_chain import HELM_CHART, HELM_RELEASE, _containers

MIN_DCGM_PROBE_DELAY = 20


def _chart(r: Resource) -> str:
    return str(r.props.get("chart") or "").rsplit("/", 1)[-1]


def check_dcgm_probes(r: Resource, config: RuleConfig) -> Iterator[str]:
    if r.type in (HELM_RELEASE, HELM_CHART) and _chart(r) == "dcgm-exporter":
        values = r.props.get("values") or {}
        for probe in ("livenessProbe", "readinessProbe"):
            delay = (values.get(probe) or {}).get("initialDelaySeconds")
            if delay is not None and int(delay) < MIN_DCGM_PROBE_DELAY:
                yield f"{probe}.initialDelaySeconds is {delay}; DCGM needs at least {MIN_DCGM_PROBE_DELAY} s or the exporter restarts in a loop"
    for container in _containers(r):
        if "dcgm-exporter" not in str(container.get("image", "")):
            continue
        for probe in ("livenessProbe", "readinessProbe"):
            spec: dict[str, Any] = container.get(probe) or {}
            if spec and int(spec.get("initialDelaySeconds") or 0) < MIN_DCGM_PROBE_DELAY:
                yield (
                    f"container {container.get('name')} {probe}.initialDelaySeconds is {spec.get('initialDelaySeconds') or 0}; "
                    f"DCGM needs at least {MIN_DCGM_PROBE_DELAY} s"
                )


def check_metrics_retained(r: Resource, config: RuleConfig) -> Iterator[str]:
    if r.type not in (HELM_RELEASE, HELM_CHART) or _chart(r) != "kube-prometheus-stack":
        return
    spec = ((r.props.get("values") or {}).get("prometheus") or {}).get("prometheusSpec") or {}
    if not (spec.get("storageSpec") or {}).get("volumeClaimTemplate"):
        yield "Prometheus keeps its samples on an emptyDir: they are lost when the pod moves"
    elif ((spec.get("persistentVolumeClaimRetentionPolicy") or {}).get("whenDeleted")) != "Retain":
        yield "the metrics volume is deleted with the StatefulSet (persistentVolumeClaimRetentionPolicy.whenDeleted is not Retain)"


RULES = [
    ResourceRule(
        "dcgm-probe-delay",
        "DCGM exporter probes wait at least 20 s, so the exporter is not restarted before DCGM is up.",
        "Set the exporter's probe initialDelaySeconds to 20 or more (DcgmExporter refuses less).",
        check_dcgm_probes,
    ),
    ResourceRule(
        "metrics-storage-retained",
        "Prometheus keeps its samples on a persistent volume that outlives the release.",
        "Give Prometheus a volumeClaimTemplate and persistentVolumeClaimRetentionPolicy whenDeleted Retain (PrometheusStack keep_volume_on_delete).",
        check_metrics_retained,
    ),
]
