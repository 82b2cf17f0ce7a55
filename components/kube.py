"""Typed building blocks for what the components put on a cluster: names, durations,
pinned chart versions and images, and the Helm release they all use."""

from __future__ import annotations

import re
from typing import Annotated, Any

import pulumi
import pulumi_kubernetes as k8s
from pydantic import AfterValidator

__all__ = [
    "ChartVersion",
    "DnsLabel",
    "Duration",
    "GoDuration",
    "PinnedImage",
    "duration_seconds",
    "helm_release",
]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")
_GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
_SEMVER = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def _dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise ValueError(f"{value!r} is not a DNS label: lowercase letters, digits and '-', at most 63 characters")
    return value


def _duration(value: str) -> str:
    if not _DURATION.match(value):
        raise ValueError(f"{value!r} is not a Prometheus duration such as 30s, 5m, 15d or 1h30m")
    return value


def _go_duration(value: str) -> str:
    if not _GO_DURATION.match(value):
        raise ValueError(f"{value!r} is not a Go duration such as 90s, 7m or 1h30m (units ns, us, ms, s, m, h; no d)")
    return value


def _chart_version(value: str) -> str:
    if not _SEMVER.match(value):
        raise ValueError(f"chart version {value!r} must be one exact release such as 88.5.3, not a range")
    return value


def _pinned_image(value: str) -> str:
    if "@sha256:" in value:
        return value
    name = value.rsplit("/", 1)[-1]
    if ":" not in name or name.rsplit(":", 1)[1] in ("", "latest"):
        raise ValueError(f"image {value!r} must carry a version tag (never latest) or a digest")
    return value


def kubernetes_owns(namespace: str) -> bool:
    """Whether Kubernetes itself owns ``namespace`` (default and every kube-*): no component or
    tenant may create it."""
    return namespace == "default" or namespace.startswith("kube-")


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
"""A Kubernetes name that must be a DNS label (namespaces, services)."""
Duration = Annotated[str, AfterValidator(_duration)]
"""A Prometheus duration: 30s, 5m, 15d, 1h30m."""
GoDuration = Annotated[str, AfterValidator(_go_duration)]
"""A duration as Go's time.ParseDuration reads it (the cluster autoscaler's flags): 90s, 7m, 1h30m."""
ChartVersion = Annotated[str, AfterValidator(_chart_version)]
"""An exact chart release."""
PinnedImage = Annotated[str, AfterValidator(_pinned_image)]
"""An image reference with a version tag or digest."""


def duration_seconds(value: str) -> float:
    return sum(int(n) * _UNITS[u] for n, u in re.findall(r"([0-9]+)(ms|s|m|h|d|w|y)", value))


def helm_release(
    name: str,
    *,
    chart: str,
    version: str,
    repository: str,
    namespace: pulumi.Input[str],
    values: dict[str, Any],
    opts: pulumi.ResourceOptions,
    release_name: str | None = None,
) -> k8s.helm.v3.Release:
    """A pinned Helm release. helm.v3.Release, not helm.v4.Chart: v4 drops chart hooks
    (kube-prometheus-stack's admission webhook jobs are hooks)."""
    return k8s.helm.v3.Release(
        name,
        k8s.helm.v3.ReleaseArgs(
            name=release_name,
            chart=chart,
            version=version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repository),
            namespace=namespace,
            values=values,
            max_history=10,
        ),
        opts=opts,
    )
