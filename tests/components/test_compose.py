"""Components compose by instance: a cluster component passed as ``cluster=`` is what every add-on
runs on (its provider, its kind, its pools, what it scrapes), the typed descriptors stay accepted,
and a wrong object is a pulumi.InputPropertyError naming the keyword and what it accepts.

Each add-on is checked against every cluster component it can run on by building it twice in
one program: once given the cluster component, once given what a program passed before
(the descriptor, the pools, the provider and the wait in ``opts``); both must register the same
resources with the same provider and the same waits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from gpu_platform.components import (
    DaskOperator,
    DaskOperatorArgs,
    DcgmExporter,
    DcgmExporterArgs,
    EksCluster,
    EksClusterArgs,
    GpuGkeCluster,
    GpuGkeClusterArgs,
    GpuUtilizationAutoscaler,
    GpuUtilizationAutoscalerArgs,
    KubeflowInstall,
    KubeflowInstallArgs,
    Kueue,
    KueueArgs,
    MetricSource,
    MonitoredCluster,
    PrometheusStack,
    PrometheusStackArgs,
    SpotFailoverEksNodeGroups,
    SpotFailoverEksNodeGroupsArgs,
)
from gpu_platform.components.core.cluster import ClusterComponent
from gpu_platform.components.monitoring.prometheus_args import ClusterKind
from gpu_platform.infra.testing import run_components
from tests.factories import eks, eks_node_groups, gke, gpu_class, t4_pool

TRAINING = {
    "labels": {"gpu-platform.io/workload": "training"},
    "taints": [{"key": "gpu-platform.io/workload", "value": "training", "effect": "NoSchedule"}],
}
PASSWORD = "not-a-real-password"


def gke_cluster() -> GpuGkeCluster:
    return GpuGkeCluster("gke", GpuGkeClusterArgs.model_validate(gke(project="ml-platform", scheduler_pool={}, gpu_pools=[t4_pool(**TRAINING)])))


def eks_cluster() -> EksCluster:
    return EksCluster("eks", EksClusterArgs.model_validate(eks()))


def eks_node_groups_on(cluster: EksCluster, **keywords: Any) -> SpotFailoverEksNodeGroups:
    groups = eks_node_groups(
        classes=[gpu_class(**TRAINING), gpu_class(name="sched", role="scheduler", instance_types=["g4dn.xlarge"], capacity="on_demand", max_nodes=2)]
    )
    return SpotFailoverEksNodeGroups("eks-gpu", SpotFailoverEksNodeGroupsArgs.model_validate(groups), cluster=cluster, **keywords)


CLUSTERS: dict[str, Callable[[], ClusterComponent]] = {
    "GpuGkeCluster": gke_cluster,
    "EksCluster": eks_cluster,
    "SpotFailoverEksNodeGroups": lambda: eks_node_groups_on(eks_cluster()),
}


def old_way(cluster: ClusterComponent) -> pulumi.ResourceOptions:
    """What a program passed before: the cluster's provider and what the add-on waits for."""
    return pulumi.ResourceOptions(providers=[cluster.provider], depends_on=cluster.ready())


def under(plan: Any, component: str) -> list[tuple[str, str, str, str | None, list[str]]]:
    """Every resource below ``component`` (by name), its name's role, inputs, provider and waits,
    with the component's name taken out, so two builds of one add-on compare."""
    by_urn = {r.urn: r for r in plan.resources}
    top = next(r for r in plan.resources if r.name == component and not r.custom)

    def inside(r: Any) -> bool:
        while r.parent is not None:
            if r.parent == top.urn:
                return True
            r = by_urn[r.parent]
        return False

    def strip(text: str) -> str:
        return text.replace(component, "<name>")

    rows = [(r.type, strip(r.name), strip(repr(r.inputs)), r.provider, sorted(strip(d) for d in r.depends_on)) for r in plan.resources if inside(r)]
    rows.append((top.type, "<name>", "", top.provider, sorted(top.depends_on)))
    return sorted(rows)


def same_as_before(build_new: Callable[[ClusterComponent], Any], build_old: Callable[[ClusterComponent], Any], cluster: str) -> Any:
    """Build one add-on by instance (as ``by-instance``) and the way programs did before (as ``by-hand``) on one
    cluster; both register the same resources, provider and waits. Returns the plan."""

    def program() -> None:
        target = CLUSTERS[cluster]()
        build_new(target)
        build_old(target)

    plan = run_components(program)
    new, old = under(plan, "by-instance"), under(plan, "by-hand")
    assert new == old
    custom = [row for row in new if row[1] != "<name>"]
    assert custom, "the add-on registered nothing"
    # Every Kubernetes object of the add-on is created through the cluster's provider.
    provider = next(r.urn for r in plan.resources if r.type == "pulumi:providers:kubernetes")
    kubernetes = [row for row in custom if row[0].startswith("kubernetes:")]
    assert kubernetes and all(row[3] is not None and row[3].startswith(provider) for row in kubernetes)
    return plan


def component(plan: Any, name: str) -> Any:
    return next(r for r in plan.resources if r.name == name and not r.custom)


# --- each add-on on each cluster component ------------------------------------------------------


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
def test_prometheus_stack_takes_the_cluster_component(cluster: str) -> None:
    def new(target: ClusterComponent) -> None:
        PrometheusStack("by-instance", PrometheusStackArgs(namespace="by-instance"), cluster=target, grafana_admin_password=PASSWORD)

    def old(target: ClusterComponent) -> None:
        monitored = MonitoredCluster(kind=target.cloud, sources=target.metric_sources())
        PrometheusStack("by-hand", PrometheusStackArgs(namespace="by-hand"), old_way(target), cluster=monitored, grafana_admin_password=PASSWORD)

    plan = same_as_before(new, old, cluster)
    values = next(r for r in plan.resources if r.name == "by-instance-release").inputs["values"]
    # The cluster's kind decides the DNS target: kube-dns on GKE, CoreDNS on EKS.
    expected_kind = ClusterKind.GKE if cluster == "GpuGkeCluster" else ClusterKind.EKS
    assert values["coreDns"]["enabled"] is (expected_kind is ClusterKind.EKS)
    assert values["kubeDns"]["enabled"] is (expected_kind is ClusterKind.GKE)


def test_prometheus_stack_scrapes_what_the_node_groups_ship_and_what_it_is_told() -> None:
    """The autoscaler's ServiceMonitor ships with the node groups given service_monitor_crd: its
    alerts ship on a stack given those node groups; dcgm-exporter's only when ``scrapes`` says so."""
    captured: dict[str, Any] = {}

    def program() -> None:
        eks = eks_cluster()
        first = PrometheusStack("first", PrometheusStackArgs(namespace="first"), cluster=eks, grafana_admin_password=PASSWORD)
        gpu = eks_node_groups_on(eks, service_monitor_crd=first.release)
        captured["sources"] = (eks.metric_sources(), gpu.metric_sources())
        PrometheusStack("by-groups", PrometheusStackArgs(namespace="by-groups"), cluster=gpu, grafana_admin_password=PASSWORD)
        PrometheusStack("told", PrometheusStackArgs(namespace="told"), cluster=gpu, grafana_admin_password=PASSWORD, scrapes=[MetricSource.DCGM_EXPORTER])

    plan = run_components(program)
    assert captured["sources"] == (frozenset(), frozenset({MetricSource.CLUSTER_AUTOSCALER}))

    def alerts(name: str) -> set[str]:
        rule = next(r for r in plan.resources if r.name == f"{name}-gpu-alerts")
        return {a["alert"] for g in rule.inputs["spec"]["groups"] for a in g["rules"] if "alert" in a}

    assert "NodeGroupScaleUpFailing" not in alerts("first")
    assert "NodeGroupScaleUpFailing" in alerts("by-groups")
    assert "DcgmExporterDown" not in alerts("by-groups")
    assert {"NodeGroupScaleUpFailing", "DcgmExporterDown"} <= alerts("told")


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
def test_dcgm_exporter_takes_the_cluster_component(cluster: str) -> None:
    def selection(target: ClusterComponent) -> str:
        return target.cloud.value

    same_as_before(
        lambda t: DcgmExporter("by-instance", DcgmExporterArgs(node_selection=selection(t), namespace="by-instance"), cluster=t, service_monitor_crd=None),
        lambda t: DcgmExporter("by-hand", DcgmExporterArgs(node_selection=selection(t), namespace="by-hand"), old_way(t), service_monitor_crd=None),
        cluster,
    )


@pytest.mark.parametrize("cluster", ["GpuGkeCluster", "EksCluster"])
def test_dcgm_exporter_refuses_a_node_selection_of_the_other_cloud(cluster: str) -> None:
    other = "eks" if cluster == "GpuGkeCluster" else "gke"
    own = "gke" if cluster == "GpuGkeCluster" else "eks"

    def program() -> None:
        DcgmExporter("dcgm", DcgmExporterArgs(node_selection=other), cluster=CLUSTERS[cluster](), service_monitor_crd=None)

    with pytest.raises(pulumi.InputPropertyError) as info:
        run_components(program)
    assert info.value.property_path == "args.node_selection"
    assert info.value.reason == (f"args.node_selection {other} does not match cluster, a {own} cluster; use {own} (got {other!r})")


@pytest.mark.parametrize("cluster", ["GpuGkeCluster", "SpotFailoverEksNodeGroups"])
def test_dask_operator_is_placed_on_the_cluster_components_pools(cluster: str) -> None:
    args = DaskOperatorArgs.model_validate({"tenants": [{"name": "team-a", "gpu_quota": 4, "notebook": {"gpus": 1}}]})
    plan = same_as_before(
        lambda t: DaskOperator("by-instance", args.model_copy(update={"namespace": "by-instance"}), cluster=t),
        lambda t: DaskOperator("by-hand", args.model_copy(update={"namespace": "by-hand"}), old_way(t), pools=t.pool_shapes()),
        cluster,
    )
    # Placed: the notebook asks for the pool's label (not the unplaced default).
    notebook = next(r for r in plan.resources if r.name.startswith("by-instance-") and r.inputs.get("kind") == "Deployment")
    assert notebook.inputs["spec"]["template"]["spec"]["nodeSelector"]


def test_the_eks_node_groups_give_the_clusters_pools_and_theirs() -> None:
    captured: dict[str, Any] = {}

    def program() -> None:
        eks = eks_cluster()
        gpu = eks_node_groups_on(eks)
        captured["names"] = ([p.name for p in eks.pool_shapes()], [p.name for p in gpu.pool_shapes()])
        captured["ready"] = (len(eks.ready()), len(gpu.ready()), len(gpu.node_groups))

    run_components(program)
    assert captured["names"] == (["system"], ["system", "small", "sched"])
    system, groups, node_groups = captured["ready"]
    assert groups == system + node_groups


def test_node_groups_built_with_the_eks_cluster_are_those_built_with_its_ref_and_provider() -> None:
    def program() -> None:
        eks = eks_cluster()
        groups = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups())
        SpotFailoverEksNodeGroups("by-instance", groups, cluster=eks)
        SpotFailoverEksNodeGroups("by-hand", groups, pulumi.ResourceOptions(providers=[eks.provider]), cluster=eks.ref)

    plan = run_components(program)
    by_instance, by_hand = under(plan, "by-instance"), under(plan, "by-hand")
    assert by_instance == by_hand
    provider = next(r.urn for r in plan.resources if r.type == "pulumi:providers:kubernetes")
    kubernetes = [row for row in by_instance if row[0].startswith("kubernetes:")]
    assert kubernetes and all(row[3] is not None and row[3].startswith(provider) for row in kubernetes)


@pytest.mark.parametrize("cluster", ["GpuGkeCluster", "SpotFailoverEksNodeGroups"])
def test_kubeflow_install_runs_training_on_the_cluster_components_pools(cluster: str) -> None:
    plan = same_as_before(
        lambda t: KubeflowInstall("by-instance", KubeflowInstallArgs(), cluster=t),
        lambda t: KubeflowInstall("by-hand", KubeflowInstallArgs(), old_way(t), training_pools=t.pool_shapes()),
        cluster,
    )
    assert component(plan, "by-instance").type == "gpu-platform:kubeflow_install:KubeflowInstall"


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
def test_gpu_utilization_autoscaler_takes_the_cluster_component(cluster: str) -> None:
    args = GpuUtilizationAutoscalerArgs(deployment="inference", namespace="serving", max_replicas=4)
    same_as_before(
        lambda t: GpuUtilizationAutoscaler("by-instance", args, cluster=t),
        lambda t: GpuUtilizationAutoscaler("by-hand", args, old_way(t)),
        cluster,
    )


def test_given_options_keep_precedence_and_add_to_the_wait() -> None:
    """``opts`` are the caller's: a depends_on given there is kept beside the cluster's."""

    def program() -> None:
        gke = gke_cluster()
        GpuUtilizationAutoscaler(
            "hpa", GpuUtilizationAutoscalerArgs(deployment="d", namespace="n", max_replicas=2), pulumi.ResourceOptions(depends_on=[gke.cluster]), cluster=gke
        )

    plan = run_components(program)
    hpa = component(plan, "hpa")
    waits = {d.rsplit("::", 1)[1] for d in hpa.depends_on}
    assert waits == {"gke-cluster", "gke-system", "gke-scheduler", "gke-t4"}


# --- wrong objects --------------------------------------------------------------------------------


def refusal(build: Callable[[], Any]) -> pulumi.InputPropertyError:
    with pytest.raises(pulumi.InputPropertyError) as info:
        run_components(build)
    return info.value


ACCEPTS = "a cluster component (GpuGkeCluster, EksCluster, SpotFailoverEksNodeGroups or KarpenterNodePools)"
WRONG: dict[str, Callable[[], Any]] = {
    "a str": lambda: "gke",
    "a Provider": lambda: gke_cluster().provider,
    "an EksClusterRef": lambda: eks_cluster().ref,
}


@pytest.mark.parametrize("wrong", sorted(WRONG))
@pytest.mark.parametrize(
    ("addon", "accepts"),
    [
        ("PrometheusStack", f"{ACCEPTS} or a MonitoredCluster"),
        ("DcgmExporter", ACCEPTS),
        ("DaskOperator", ACCEPTS),
        ("KubeflowInstall", ACCEPTS),
        ("GpuUtilizationAutoscaler", ACCEPTS),
    ],
)
def test_a_wrong_cluster_is_an_input_error_naming_cluster(addon: str, accepts: str, wrong: str) -> None:
    build = {
        "PrometheusStack": lambda c: PrometheusStack("a", PrometheusStackArgs(), cluster=c, grafana_admin_password=PASSWORD),
        "DcgmExporter": lambda c: DcgmExporter("a", DcgmExporterArgs(node_selection="gke"), cluster=c, service_monitor_crd=None),
        "DaskOperator": lambda c: DaskOperator("a", DaskOperatorArgs(), cluster=c),
        "KubeflowInstall": lambda c: KubeflowInstall("a", KubeflowInstallArgs(), cluster=c),
        "GpuUtilizationAutoscaler": lambda c: GpuUtilizationAutoscaler(
            "a", GpuUtilizationAutoscalerArgs(deployment="d", namespace="n", max_replicas=2), cluster=c
        ),
    }[addon]
    error = refusal(lambda: build(WRONG[wrong]()))
    assert error.property_path == "cluster"
    assert error.reason == f"cluster: expected {accepts} (got {wrong})"


def test_the_monitored_cluster_descriptor_is_for_prometheus_only() -> None:
    error = refusal(lambda: DaskOperator("a", DaskOperatorArgs(), cluster=MonitoredCluster(kind="gke")))
    assert (error.property_path, error.reason) == ("cluster", f"cluster: expected {ACCEPTS} (got a MonitoredCluster)")


def test_prometheus_needs_a_cluster() -> None:
    error = refusal(lambda: PrometheusStack("a", PrometheusStackArgs(), cluster=None, grafana_admin_password=PASSWORD))  # type: ignore[arg-type]
    assert error.reason == f"cluster: expected {ACCEPTS} or a MonitoredCluster (got nothing)"


def test_kubeflow_needs_a_cluster_or_training_pools() -> None:
    error = refusal(lambda: KubeflowInstall("a", KubeflowInstallArgs()))
    assert (error.property_path, error.reason) == ("cluster", f"cluster: expected {ACCEPTS}, or training_pools= (got nothing)")


def test_node_groups_built_on_a_ref_have_no_provider_to_give() -> None:
    def program() -> None:
        eks = eks_cluster()
        groups = SpotFailoverEksNodeGroups(
            "g", SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups()), pulumi.ResourceOptions(providers=[eks.provider]), cluster=eks.ref
        )
        GpuUtilizationAutoscaler("a", GpuUtilizationAutoscalerArgs(deployment="d", namespace="n", max_replicas=2), cluster=groups)

    error = refusal(program)
    assert error.property_path == "cluster"
    assert error.reason.startswith(
        "cluster: SpotFailoverEksNodeGroups 'g' has no Kubernetes provider to give (build SpotFailoverEksNodeGroups with cluster=<EksCluster>"
    )


@pytest.mark.parametrize(
    ("keyword", "build", "reason"),
    [
        (
            "grafana_admin_password",
            lambda: PrometheusStack("a", PrometheusStackArgs(), cluster=gke_cluster(), grafana_admin_password=42),
            "grafana_admin_password: expected a string or a pulumi.Output[str] (pass a secret) (got an int)",
        ),
        (
            "scrapes",
            lambda: PrometheusStack("a", PrometheusStackArgs(), cluster=gke_cluster(), grafana_admin_password=PASSWORD, scrapes=["dcgm"]),
            "scrapes: expected MetricSource values (prometheus, kube-state-metrics, node-exporter, kubelet, apiserver, "
            "dcgm-exporter, cluster-autoscaler) (got ['dcgm'])",
        ),
        (
            "service_monitor_crd",
            lambda: DcgmExporter("a", DcgmExporterArgs(node_selection="gke"), service_monitor_crd="prometheus"),
            "service_monitor_crd: expected the resource that installs the ServiceMonitor CRD (PrometheusStack.release) or None (got a str)",
        ),
        (
            "pools",
            lambda: DaskOperator("a", DaskOperatorArgs(), pools=gke_cluster()),
            "pools: expected a list of NodePoolShape; pass the cluster as cluster= (got a GpuGkeCluster)",
        ),
        (
            "pools",
            lambda: DaskOperator("a", DaskOperatorArgs(), pools=[{"name": "t4"}]),
            "pools: expected a list of NodePoolShape (a cluster's pool_shapes()) (got a sequence holding dict)",
        ),
        (
            "pools",
            lambda: (lambda c: DaskOperator("a", DaskOperatorArgs(), pools=c.pool_shapes(), cluster=c))(gke_cluster()),
            "pools: the cluster component given as cluster= gives them; pass cluster= or pools=, not both",
        ),
        (
            "training_pools",
            lambda: KubeflowInstall("a", KubeflowInstallArgs(), training_pools="gpu"),
            "training_pools: expected a list of NodePoolShape (a cluster's pool_shapes()) (got a str)",
        ),
        (
            "training_pools",
            lambda: (lambda c: KubeflowInstall("a", KubeflowInstallArgs(), training_pools=c.pool_shapes(), cluster=c))(gke_cluster()),
            "training_pools: the cluster component given as cluster= gives them; pass cluster= or training_pools=, not both",
        ),
        (
            "dex_password_hash",
            lambda: KubeflowInstall("a", KubeflowInstallArgs(), cluster=gke_cluster(), dex_password_hash=b"$2y$"),
            "dex_password_hash: expected a string or a pulumi.Output[str] (pass a secret) (got a bytes)",
        ),
        (
            "oidc_client_secret",
            lambda: KubeflowInstall("a", KubeflowInstallArgs(), cluster=gke_cluster(), oidc_client_secret=1),
            "oidc_client_secret: expected a string or a pulumi.Output[str] (pass a secret) (got an int)",
        ),
        (
            "cluster",
            lambda: SpotFailoverEksNodeGroups("a", SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups()), cluster=gke_cluster()),
            "cluster: expected an EksCluster or an EksClusterRef (EksCluster.ref) (got a GpuGkeCluster)",
        ),
        (
            "service_monitor_crd",
            lambda: Kueue("a", KueueArgs(), tenants=[], cluster=gke_cluster(), service_monitor_crd="prometheus"),
            "service_monitor_crd: expected the resource that installs the ServiceMonitor CRD (PrometheusStack.release) or None (got a str)",
        ),
        (
            "service_monitor_crd",
            lambda: eks_node_groups_on(eks_cluster(), service_monitor_crd="release"),
            "service_monitor_crd: expected the resource that installs the ServiceMonitor CRD (PrometheusStack.release) (got a str)",
        ),
    ],
)
def test_a_wrong_live_input_is_an_input_error_naming_it(keyword: str, build: Callable[[], Any], reason: str) -> None:
    error = refusal(build)
    assert (error.property_path, error.reason) == (keyword, reason)
