"""Supply-chain and secret guardrails: images and charts pinned, no plaintext secrets in
Helm values or container env."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from gpu_platform.policies.rules.base import Resource, ResourceRule, RuleConfig

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_CHART = "kubernetes:helm.sh/v4:Chart"
KUSTOMIZE_DIRECTORY = "kubernetes:kustomize/v2:Directory"

_SEMVER = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$")
_SENSITIVE = re.compile(r"(password|passwd|token|apikey|api_key|secretkey|secret_key|credentials|privatekey)$", re.I)
_FLOATING_REFS = {"main", "master", "head", "latest", "trunk", "develop"}


def _pod_specs(r: Resource) -> Iterator[Mapping[str, Any]]:
    """Pod specs of a Kubernetes workload or DaskCluster, wherever the kind keeps them."""
    props = r.props
    kind = props.get("kind")
    spec = props.get("spec") or {}
    if kind == "Pod":
        yield spec
    elif kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        yield (spec.get("template") or {}).get("spec") or {}
    elif kind == "CronJob":
        yield (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    elif kind == "DaskCluster":
        yield (spec.get("scheduler") or {}).get("spec") or {}
        yield (spec.get("worker") or {}).get("spec") or {}
    elif kind == "DaskWorkerGroup":
        yield (spec.get("worker") or {}).get("spec") or {}


def _containers(r: Resource) -> Iterator[Mapping[str, Any]]:
    for pod in _pod_specs(r):
        yield from pod.get("initContainers") or []
        yield from pod.get("containers") or []


def image_problem(image: str) -> str | None:
    """Why an image reference is not pinned, or None."""
    if "@sha256:" in image:
        return None
    name = image.rsplit("/", 1)[-1]
    if ":" not in name:
        return f"image {image} has no tag (it means latest)"
    tag = name.rsplit(":", 1)[1]
    if tag == "latest":
        return f"image {image} uses the floating tag latest"
    return None


def _helm_images(values: Any, path: str = "values") -> Iterator[tuple[str, str]]:
    """(path, problem) for image settings in Helm values: {repository|name, tag} maps and image strings."""
    if isinstance(values, Mapping):
        if ("repository" in values or "name" in values) and "tag" in values:
            tag = values.get("tag")
            if tag in ("latest", "", None) and not values.get("digest"):
                yield path, f"{path}.tag is {tag!r}: pin a version"
        for key, value in values.items():
            if key == "image" and isinstance(value, str):
                problem = image_problem(value)
                if problem:
                    yield f"{path}.image", problem
            else:
                yield from _helm_images(value, f"{path}.{key}")
    elif isinstance(values, list):
        for i, item in enumerate(values):
            yield from _helm_images(item, f"{path}[{i}]")


def check_images_pinned(r: Resource, config: RuleConfig) -> Iterator[str]:
    for container in _containers(r):
        image = str(container.get("image") or "")
        problem = image_problem(image) if image else f"container {container.get('name')} has no image"
        if problem:
            yield f"container {container.get('name')}: {problem}"
    if r.type in (HELM_RELEASE, HELM_CHART):
        for _, problem in _helm_images(r.props.get("values") or {}):
            yield problem


def check_charts_pinned(r: Resource, config: RuleConfig) -> Iterator[str]:
    if r.type in (HELM_RELEASE, HELM_CHART):
        version = str(r.props.get("version") or "")
        if not version:
            yield f"chart {r.props.get('chart')} has no version: each deploy takes whatever is newest"
        elif not _SEMVER.match(version):
            yield f"chart {r.props.get('chart')} version {version!r} is a range, not one release"
    if r.type == KUSTOMIZE_DIRECTORY:
        directory = str(r.props.get("directory") or "")
        if "://" in directory or directory.startswith("git@"):
            ref = re.search(r"[?&]ref=([^&]+)", directory)
            if not ref or ref.group(1).lower() in _FLOATING_REFS:
                yield f"kustomize source {directory} is not pinned to a release tag or commit (?ref=...)"


def _plaintext_in(values: Any, path: str) -> Iterator[str]:
    if isinstance(values, Mapping):
        for key, value in values.items():
            where = f"{path}.{key}"
            if isinstance(value, str) and value and _SENSITIVE.search(str(key)):
                yield where
            else:
                yield from _plaintext_in(value, where)
    elif isinstance(values, list):
        for i, item in enumerate(values):
            yield from _plaintext_in(item, f"{path}[{i}]")


def check_no_plaintext_secrets(r: Resource, config: RuleConfig) -> Iterator[str]:
    if r.type in (HELM_RELEASE, HELM_CHART):
        for where in _plaintext_in(r.props.get("values") or {}, "values"):
            yield f"{where} holds a secret in plain text; reference an existing Kubernetes Secret instead"
    for container in _containers(r):
        for env in container.get("env") or []:
            if _SENSITIVE.search(str(env.get("name", "")).replace("_", "")) and env.get("value"):
                yield (f"container {container.get('name')} env {env.get('name')} holds a secret in plain text; use valueFrom.secretKeyRef")


RULES = [
    ResourceRule(
        "images-pinned",
        "Container images are pinned to a version or digest, never latest or untagged.",
        "Give every image an explicit version tag (or @sha256 digest).",
        check_images_pinned,
    ),
    ResourceRule(
        "charts-pinned",
        "Helm charts and kustomize sources are pinned to one release.",
        "Set the chart's exact version; pin git sources with ?ref=<tag or commit>.",
        check_charts_pinned,
    ),
    ResourceRule(
        "no-plaintext-secrets",
        "No password, token or key in plain text in Helm values or container env.",
        "Store it in a Kubernetes Secret built from a Pulumi secret and reference it (existingSecret, secretKeyRef).",
        check_no_plaintext_secrets,
    ),
]
