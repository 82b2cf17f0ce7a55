"""Typed building blocks for what the components put on a cluster: names, Prometheus durations,
pinned chart versions and images, and the Helm release they all use. Go durations (the
autoscaler's flags) live in components/core/durations.py, re-exported here as ``GoDuration``."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Annotated, Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pydantic import AfterValidator

from gpu_platform.components.core.durations import GoDuration
from gpu_platform.components.core.labels import PART_OF_LABEL

__all__ = [
    "OCI_PREFIX",
    "chart_source",
    "ChartRepository",
    "ChartVersion",
    "ComponentNamespace",
    "DnsLabel",
    "KUBE_SYSTEM_ACCOUNTS",
    "NAME_TOTAL_LENGTH_MAX",
    "DnsSubdomain",
    "IngressHost",
    "UrlPath",
    "ip_address",
    "Duration",
    "GoDuration",
    "PinnedImage",
    "PrometheusDuration",
    "image_problem",
    "kube_system_account_problem",
    "kubernetes_owns",
]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")
_SEMVER = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def _dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise ValueError(f"{value!r} is not a DNS label: lowercase letters, digits and '-', at most 63 characters")
    return value


_PROM_MAX_MS = 2**63 - 1
"""Prometheus keeps a duration as an int64 of milliseconds."""


def _in_order(value: str, parts: list[tuple[str, str]], order: list[str], kind: str) -> None:
    """Each unit at most once and in decreasing order (12h7d is refused, 7d12h is not)."""
    ranks = [order.index(unit) for _, unit in parts]
    if any(b <= a for a, b in zip(ranks, ranks[1:], strict=False)):
        units = " ".join(order)
        raise ValueError(f"{value!r}: a {kind} writes each unit once, largest first ({units}), e.g. 1h30m")


def _duration(value: str) -> str:
    if not _DURATION.match(value):
        raise ValueError(f"{value!r} is not a Prometheus duration such as 30s, 5m, 15d or 1h30m")
    parts = re.findall(r"([0-9]+)(ms|s|m|h|d|w|y)", value)
    _in_order(value, parts, ["y", "w", "d", "h", "m", "s", "ms"], "Prometheus duration")
    if sum(int(n) * _UNITS[u] * 1000 for n, u in parts) > _PROM_MAX_MS:
        raise ValueError(f"{value!r} is longer than a Prometheus duration can hold")
    return value


_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CHART_REPOSITORY = re.compile(r"^(https?|oci)://[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[^\s]*)?$")


def _dns_subdomain(value: str) -> str:
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise ValueError(
            f"{value!r} is not a DNS subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters"
        )
    return value


def _chart_repository(value: str) -> str:
    if not _CHART_REPOSITORY.match(value):
        raise ValueError(f"chart repository {value!r} is not an http(s):// or oci:// URL, e.g. https://prometheus-community.github.io/helm-charts")
    return value


def _chart_version(value: str) -> str:
    if not _SEMVER.match(value):
        raise ValueError(f"chart version {value!r} must be one exact release such as 88.5.3, not a range")
    return value


# The image reference grammar of github.com/distribution/reference (regexp.go), which the kubelet's
# image pull (and containerd's, and docker's) parse with: a lowercase repository path under an optional
# registry host and port, an optional tag of at most 128 word characters, dots and dashes, an optional digest.
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_NAME = rf"(?:{_HOST}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(rf"^(?P<name>{_NAME})(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?$")
_WHITESPACE = re.compile(r"\s")
"""Any whitespace character: what str.isspace() calls whitespace (re's Unicode \\s)."""
NAME_TOTAL_LENGTH_MAX = 255
"""distribution/reference's NameTotalLengthMax: the longest repository name (registry and path) it accepts."""


def _quoted(value: str, limit: int = 60) -> str:
    """``value`` quoted for a message, cut to ``limit`` characters (a 5 MB value is not echoed whole)."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + f"... ({len(value)} characters)"


def image_problem(value: str) -> str | None:
    """Why ``value`` is not an image reference the kubelet would pull (distribution/reference's grammar,
    names at most 255 characters, no whitespace: the API server takes a Deployment whose image has a
    trailing space, then every pod of it is refused), or None."""
    if _WHITESPACE.search(value):
        return f"image {_quoted(value)} holds whitespace; an image reference has none (check for a trailing space)"
    match = _REFERENCE.match(value)
    if match is None:
        return (
            f"image {_quoted(value)} is not an image reference: [registry[:port]/]path[:tag][@digest], the path in "
            "lowercase letters, digits and separators (. _ __ -), a tag of at most 128 letters, digits, '_', '.' and '-'"
        )
    if len(match.group("name")) > NAME_TOTAL_LENGTH_MAX:
        return f"image {_quoted(value)} has a name of {len(match.group('name'))} characters; at most {NAME_TOTAL_LENGTH_MAX}"
    return None


def _pinned_image(value: str) -> str:
    if problem := image_problem(value):
        raise ValueError(problem)
    if "@sha256:" in value:
        return value
    name = value.rsplit("/", 1)[-1]
    if ":" not in name or name.rsplit(":", 1)[1] in ("", "latest"):
        raise ValueError(f"image {_quoted(value)} must carry a version tag (never latest) or a digest")
    return value


def kubernetes_owns(namespace: str) -> bool:
    """Whether Kubernetes itself owns ``namespace`` (default and every kube-*): no component or
    tenant may create it."""
    return namespace == "default" or namespace.startswith("kube-")


KUBE_SYSTEM_ACCOUNTS = frozenset(
    {
        "default",  # every namespace's own: a role bound to it is every pod's there that names none
        "aws-node",  # the VPC CNI
        "coredns",
        "kube-proxy",
        "ebs-csi-controller-sa",  # components/eks/args.py EBS_CSI_SERVICE_ACCOUNT
        "fsx-csi-controller-sa",  # components/datasets/args.py FSX_CSI_SERVICE_ACCOUNT
        "cluster-autoscaler",  # components/eks/node_group_args.py AUTOSCALER_SERVICE_ACCOUNT
        "karpenter",  # components/karpenter/args.py KARPENTER_SERVICE_ACCOUNT
    }
)
"""The service accounts in kube-system that belong to Kubernetes, EKS's add-ons or another controller of
this platform: a controller's IAM role (IRSA) trusted by one of them would be given to every pod running
as it (``service_account: default`` is every kube-system pod that names no account)."""


def kube_system_account_problem(name: str) -> str | None:
    """Why a controller with an IAM role may not run in kube-system as ``name``, or None."""
    if name in KUBE_SYSTEM_ACCOUNTS:
        owner = "every kube-system pod that names no service account" if name == "default" else "another controller's"
        return f"service account {name} in kube-system is {owner}; an IAM role trusted by it goes to those pods too: choose a name of its own"
    return None


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
"""A Kubernetes name that must be a DNS label (namespaces, services)."""


def ip_address(value: str) -> bool:
    """Whether ``value`` is an IPv4 or IPv6 address (an Ingress host may not be one)."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _ingress_host(value: str) -> str:
    if ip_address(value):
        raise ValueError(f"host {value} is an IP address; an Ingress rule's host is a DNS name (Kubernetes refuses an IP): leave it out to answer any host")
    if (
        len(value) > 253
        or not re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", value)
        or any(len(p) > 63 for p in value.split("."))
    ):
        raise ValueError(f"host {_quoted(value)} is not a DNS name: lowercase letters, digits, '-' and '.', labels of at most 63, at most 253 in all")
    return value


_URL_PATH = re.compile(r"^/[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$")


def _url_path(value: str) -> str:
    if not _URL_PATH.match(value) or len(value) > 2048:
        raise ValueError(
            f"path {_quoted(value)} is not an absolute URL path: '/' then letters, digits and -._~!$&'()*+,;=:@%/ (no spaces), at most 2048 characters"
        )
    segments = value.split("/")[1:]
    if "//" in value or any(s in (".", "..") for s in segments):
        raise ValueError(
            f"path {_quoted(value)} has an empty, '.' or '..' segment; a load balancer or the server normalises it "
            "to another path than the rule names: write it plainly (e.g. /v2/models)"
        )
    return value


IngressHost = Annotated[str, AfterValidator(_ingress_host)]
"""An Ingress rule's host: a DNS name, never an IP address (the API server refuses one)."""
UrlPath = Annotated[str, AfterValidator(_url_path)]
"""An HTTP path an Ingress routes or a probe asks for: absolute, URL characters only, no empty, '.' or '..' segment."""


def _component_namespace(value: str) -> str:
    if kubernetes_owns(value):
        raise ValueError(
            f"namespace {value} belongs to Kubernetes (default, kube-system, kube-public, kube-node-lease and every kube-*); "
            "a component makes its own namespace: choose another name"
        )
    return value


ComponentNamespace = Annotated[str, AfterValidator(_dns_label), AfterValidator(_component_namespace)]
"""The namespace a component creates and owns: a DNS label that is not Kubernetes' own (default, kube-*)."""
PrometheusDuration = Annotated[str, AfterValidator(_duration)]
"""A Prometheus duration (alert ``for``, scrape and evaluation intervals, retention): 30s, 5m, 15d,
1h30m; integers only, each unit once and largest first, as Prometheus's own parser wants. Not a Go
duration (components/core/durations.py): Prometheus has ``d``, ``w`` and ``y`` and no fractions."""
Duration = PrometheusDuration
"""The Prometheus duration under its earlier name."""
DnsSubdomain = Annotated[str, AfterValidator(_dns_subdomain)]
"""A Kubernetes name that must be a DNS subdomain (StorageClasses and most other objects)."""
ChartRepository = Annotated[str, AfterValidator(_chart_repository)]
"""Where Helm fetches a chart: an http(s) chart repository or an oci:// registry."""
ChartVersion = Annotated[str, AfterValidator(_chart_version)]
"""An exact chart release."""
PinnedImage = Annotated[str, AfterValidator(_pinned_image)]
"""An image reference with a version tag or digest."""


OCI_PREFIX = "oci://"
"""How a chart reference or repository names an OCI registry."""


def chart_source(inputs: Mapping[str, Any]) -> tuple[str, str | None]:
    """(chart name, repository) of a helm.v3.Release's inputs as helm_release declares them: the chart and
    repositoryOpts.repo, or for an OCI chart its full reference split at the last slash."""
    chart = str(inputs.get("chart"))
    if chart.startswith(OCI_PREFIX):
        repository, _, name = chart.rpartition("/")
        return name, repository
    return chart, (inputs.get("repositoryOpts") or {}).get("repo")


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
    skip_crds: bool | None = None,
) -> k8s.helm.v3.Release:
    """A pinned Helm release. helm.v3.Release, not helm.v4.Chart: v4 drops chart hooks
    (kube-prometheus-stack's admission webhook jobs are hooks). ``skip_crds``: leave the chart's crds/
    out (another release manages them). Default: none (Helm installs them). A chart of an OCI registry
    (``repository`` oci://...) is named by its full reference, oci://<registry>/<path>/<chart>, with no
    repositoryOpts: Helm pulls OCI charts by reference and has no index to look a name up in
    (pulumi/pulumi-kubernetes#1892, #2334); see chart_source."""
    oci = repository.startswith(OCI_PREFIX)
    return k8s.helm.v3.Release(
        name,
        k8s.helm.v3.ReleaseArgs(
            name=release_name,
            chart=f"{repository.rstrip('/')}/{chart}" if oci else chart,
            version=version,
            repository_opts=None if oci else k8s.helm.v3.RepositoryOptsArgs(repo=repository),
            namespace=namespace,
            values=values,
            max_history=10,
            skip_crds=skip_crds,
        ),
        opts=opts,
    )


def exec_kubeconfig(cluster_name: str, server: str, ca_data: str, credential: dict[str, Any]) -> str:
    """A kubeconfig for one cluster whose user runs an exec credential plugin (``credential``:
    command, args and the plugin's options), as EKS and GKE both hand them out."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"certificate-authority-data": ca_data, "server": server}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "preferences": {},
        "users": [{"name": cluster_name, "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", **credential}}}],
    }
    return yaml.safe_dump(config, sort_keys=False)


def component_namespace(name: str, namespace: str, opts: pulumi.ResourceOptions) -> k8s.core.v1.Namespace:
    """The namespace a component installs into, labelled as the platform's (child ``<name>-namespace``)."""
    return k8s.core.v1.Namespace(
        f"{name}-namespace",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace, labels=dict(PART_OF_LABEL)),
        opts=opts,
    )


def prefix_ingress_spec(
    class_name: str | None, host: str | None, path: str, service: pulumi.Input[str], port: k8s.networking.v1.ServiceBackendPortArgs
) -> k8s.networking.v1.IngressSpecArgs:
    """An Ingress spec sending ``host`` (any host when None) and every path under ``path`` to one Service port."""
    return k8s.networking.v1.IngressSpecArgs(
        ingress_class_name=class_name,
        rules=[
            k8s.networking.v1.IngressRuleArgs(
                host=host,
                http=k8s.networking.v1.HTTPIngressRuleValueArgs(
                    paths=[
                        k8s.networking.v1.HTTPIngressPathArgs(
                            path=path,
                            path_type="Prefix",
                            backend=k8s.networking.v1.IngressBackendArgs(service=k8s.networking.v1.IngressServiceBackendArgs(name=service, port=port)),
                        )
                    ]
                ),
            )
        ],
    )
