"""What the add-ons (PrometheusStack, DcgmExporter, DaskOperator, KubeflowInstall,
GpuUtilizationAutoscaler) take as their keyword ``cluster=``: a cluster component itself.

``ClusterComponent`` is what GpuGkeCluster, EksCluster and SpotFailoverEksNodeGroups have in
common for the components that run on them: which cloud (``cloud``), the Kubernetes provider
(``provider``), the pools as workloads see them (``pool_shapes()``), what workloads wait for
(``ready()``) and what the platform scrapes on it (``metric_sources()``). ``on_cluster`` turns
what an add-on was given into an ``OnCluster``: from a cluster component all of the above, the
component's ``opts`` merged with the provider and the wait; from a typed descriptor (what other
Pulumi languages pass, e.g. a ``MonitoredCluster``) only what it says. Anything else is one
``pulumi.InputPropertyError`` naming the keyword and what it accepts, before anything is
registered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.components.core.models import input_error
from gpu_platform.components.monitoring.prometheus_args import ClusterKind, MetricSource
from gpu_platform.components.pools.shapes import NodePoolShape

__all__ = [
    "CLUSTER_COMPONENTS",
    "ClusterComponent",
    "ClusterPools",
    "OnCluster",
    "a_type",
    "check_live",
    "check_pools",
    "clusters_made",
    "on_cluster",
]

CLUSTER_COMPONENTS = "a cluster component (GpuGkeCluster, EksCluster, SpotFailoverEksNodeGroups or KarpenterNodePools)"
"""How an error names what ``cluster=`` accepts."""


_MADE: list[list[ClusterComponent]] = []
"""The cluster components made while ``clusters_made`` is open (innermost last)."""


class clusters_made:  # noqa: N801 (a context manager used as a function)
    """``with clusters_made() as made:`` every cluster component a program makes inside is appended to ``made``, in
    the order made: the offline preview's ``--apply`` takes a program's pools from them (their ``pool_shapes()``)."""

    def __init__(self) -> None:
        self.made: list[ClusterComponent] = []

    def __enter__(self) -> list[ClusterComponent]:
        _MADE.append(self.made)
        return self.made

    def __exit__(self, *exc: object) -> None:
        # By identity: two collectors that made nothing hold equal (empty) lists.
        del _MADE[next(i for i, made in enumerate(_MADE) if made is self.made)]


class ClusterComponent:
    """A cluster the add-ons run on (the keyword ``cluster=`` of every add-on).

    Mixed into GpuGkeCluster, EksCluster and SpotFailoverEksNodeGroups; it declares no
    annotations, so it adds no output. ``provider`` (the cluster's Kubernetes provider) is the
    component's own output.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        made = super().__new__(cls)
        if _MADE:
            _MADE[-1].append(made)
        return made

    @property
    def cloud(self) -> ClusterKind:
        """Which managed Kubernetes the cluster is (gke or eks)."""
        raise NotImplementedError

    def pool_shapes(self) -> list[NodePoolShape]:
        """Every pool of the cluster as workloads see it (what the ``poolShapes`` output holds for
        other languages): DaskOperator places its pods on them, KubeflowInstall its training steps."""
        raise NotImplementedError

    def ready(self) -> list[pulumi.Resource]:
        """What must exist before workloads are deployed (the node pools or node groups, CoreDNS):
        an add-on given this cluster depends on them."""
        raise NotImplementedError

    def metric_sources(self) -> frozenset[MetricSource]:
        """What the cluster's own components put into Prometheus besides kube-prometheus-stack's own
        targets (the cluster autoscaler's ServiceMonitor on EKS). Default: nothing."""
        return frozenset()

    @property
    def has_own_ingress_controllers(self) -> bool:
        """Whether the cluster's owner installed its ingress controllers (an existing cluster's AWS Load Balancer
        Controller), so an add-on's ALB Ingress needs no controller from the program. Default: false (the program
        that creates the cluster installs them)."""
        return False


@dataclass(frozen=True)
class ClusterPools:
    """A cluster as other Pulumi languages describe it to an add-on that places pods on its pools: its kind and
    its pools (the cluster components' ``poolShapes`` outputs). The Kubernetes provider comes in the add-on's
    options; nothing is waited for but what those options name."""

    kind: ClusterKind
    """gke or eks: which load balancers and node labels the cluster has."""
    pools: tuple[NodePoolShape, ...]
    """Every pool of the cluster as workloads see them: GpuGkeCluster's poolShapes, or on EKS the EksCluster's and the node groups' (or NodePools') together."""


@dataclass(frozen=True)
class OnCluster:
    """What an add-on was told about the cluster it runs on."""

    opts: pulumi.ResourceOptions | None
    """The add-on's options: the caller's, with the cluster's provider and wait added when a
    cluster component was given."""
    component: ClusterComponent | None = None
    """The cluster component, when one was given."""
    descriptor: Any = None
    """The typed descriptor, when one was given instead."""

    @property
    def cloud(self) -> ClusterKind | None:
        if self.component is not None:
            return self.component.cloud
        return getattr(self.descriptor, "kind", None)

    def pool_shapes(self) -> list[NodePoolShape]:
        """The cluster's pools: the component's ``pool_shapes()``, a ClusterPools' ``pools``, else none."""
        if self.component is not None:
            return self.component.pool_shapes()
        return list(getattr(self.descriptor, "pools", ()))


def on_cluster(
    cluster: Any,
    opts: pulumi.ResourceOptions | None,
    *,
    descriptors: tuple[type, ...] = (),
    required: bool = False,
    keyword: str = "cluster",
) -> OnCluster:
    """``cluster`` as an add-on takes it: a ClusterComponent (the provider and what workloads wait
    for are merged into ``opts``, the caller's own options taking precedence), one of
    ``descriptors``, or None (refused when ``required``). Anything else is an InputPropertyError
    at ``keyword`` naming what it accepts."""
    accepts = " or ".join([CLUSTER_COMPONENTS, *(f"a {d.__name__}" for d in descriptors)])
    if isinstance(cluster, ClusterComponent):
        provider = getattr(cluster, "provider", None)
        if not isinstance(provider, k8s.Provider):
            raise input_error(
                keyword,
                f"{keyword}: {type(cluster).__name__} {_name(cluster)} has no Kubernetes provider to give "
                f"(build SpotFailoverEksNodeGroups with cluster=<EksCluster>, not its ref); expected {accepts}",
            )
        base = pulumi.ResourceOptions(providers=[provider], depends_on=cluster.ready())
        return OnCluster(pulumi.ResourceOptions.merge(base, opts), component=cluster)
    if descriptors and isinstance(cluster, descriptors):
        return OnCluster(opts, descriptor=cluster)
    if cluster is None and not required:
        return OnCluster(opts)
    raise input_error(keyword, f"{keyword}: expected {accepts} (got {a_type(cluster)})")


def check_live(keyword: str, value: Any, accepts: tuple[type, ...], what: str, *, optional: bool = True) -> None:
    """Refuse a live keyword's value that is none of ``accepts`` (a pulumi.Output always passes:
    its value is checked where it is used): one InputPropertyError naming ``keyword`` and ``what``."""
    if value is None and optional:
        return
    if isinstance(value, pulumi.Output) or (value is not None and isinstance(value, accepts)):
        return
    raise input_error(keyword, f"{keyword}: expected {what} (got {a_type(value)})")


def check_pools(keyword: str, pools: Any) -> list[NodePoolShape]:
    """``pools`` as a list of NodePoolShape, or one InputPropertyError at ``keyword``."""
    if isinstance(pools, ClusterComponent):
        raise input_error(keyword, f"{keyword}: expected a list of NodePoolShape; pass the cluster as cluster= (got {a_type(pools)})")
    if isinstance(pools, Sequence) and not isinstance(pools, (str, bytes)):
        wrong = sorted({type(p).__qualname__ for p in pools if not isinstance(p, NodePoolShape)})
        if not wrong:
            return list(pools)
        shown = "a sequence holding " + ", ".join(wrong)
    else:
        shown = a_type(pools)
    raise input_error(keyword, f"{keyword}: expected a list of NodePoolShape (a cluster's pool_shapes()) (got {shown})")


def a_type(value: Any) -> str:
    """``value`` as an error names it: nothing, a str, an EksClusterRef."""
    if value is None:
        return "nothing"
    name = type(value).__qualname__
    return f"{'an' if name[0] in 'AEIOUaeiou' else 'a'} {name}"


def _name(resource: Any) -> str:
    name = getattr(resource, "_name", None)
    return repr(name) if isinstance(name, str) else ""
