"""GPU sharing where Karpenter provisions (issue 28 item 3), on what the cluster gets: the karpenter chart
rendered at its pin with the controller's values turns the NodeOverlay feature gate on exactly when a class
shares its GPUs, and a shared class's NodeOverlay, as the plan writes it, is accepted by a real Kubernetes
1.34 API server holding karpenter-crd 1.14.1's NodeOverlay CRD (its schema and CEL rules), which refuses
an overlay on a standard resource. The fixture is prod-eks with its Dask scheduler class time-sliced four
ways (the scheduler recipe of docs/clouds/eks-gpu-sharing.md). Without ../shared/reference/upstream or the control plane these skip."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform.components.eks.node_group_args import SpotFailoverEksNodeGroupsArgs
from gpu_platform.components.karpenter.args import KARPENTER_CHART, KARPENTER_CRD_CHART
from gpu_platform.components.karpenter.plan import node_overlays, plan_node_pools
from gpu_platform.components.karpenter.resources import controller_values
from gpu_platform.infra.preview.upstream import load_lock
from tests.conftest import UPSTREAM_DIR, load_yaml_all, upstream_or_skip
from tests.factories import prod_eks_raw

SHARED = {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}


def _fixture() -> SpotFailoverEksNodeGroupsArgs:
    """prod-eks's classes (Karpenter), its scheduler class (g4dn.xlarge, one T4) time-sliced four ways."""
    raw = prod_eks_raw()["eks_node_groups"]
    for cls in raw["classes"]:
        if cls["name"] == "scheduler":
            cls["gpu_sharing"] = SHARED
    return SpotFailoverEksNodeGroupsArgs.model_validate(raw)


def _chart(name: str, version: str) -> Any:
    import helm_python

    upstream_or_skip()
    pin = next(p for p in load_lock().charts if p.name.rsplit("/", 1)[-1] == name and p.version == version)
    return helm_python.Chart.load(str(UPSTREAM_DIR / "charts" / pin.archive_name))


def _render(name: str, version: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    out = _chart(name, version).render(values, name=name, namespace="kube-system")
    return [d for path, text in out.items() if not path.endswith("NOTES.txt") for d in load_yaml_all(text) if d]


@pytest.mark.parametrize("shared", [True, False])
def test_the_rendered_controller_has_the_node_overlay_gate_exactly_when_a_class_shares(shared: bool) -> None:
    args = _fixture() if shared else SpotFailoverEksNodeGroupsArgs.model_validate(prod_eks_raw()["eks_node_groups"])
    overlays = node_overlays(plan_node_pools(args))
    assert bool(overlays) is shared
    values = controller_values(args.karpenter, "prod-eks", "prod-eks", "arn:aws:iam::1:role/k", {}, node_overlay=bool(overlays))
    (deployment,) = [d for d in _render(KARPENTER_CHART, args.karpenter.chart_version, values) if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    gates = dict(g.split("=") for g in next(e["value"] for e in container["env"] if e["name"] == "FEATURE_GATES").split(","))
    assert gates["NodeOverlay"] == ("true" if shared else "false")
    assert gates["ReservedCapacity"] == "true"  # the chart's other gates stay its own


def test_the_overlay_is_gpus_times_clients_on_the_scheduler_class_only() -> None:
    args = _fixture()
    (overlay,) = node_overlays(plan_node_pools(args))
    scheduler = next(c for c in args.classes if c.name == "scheduler")
    assert overlay["metadata"]["name"] == "scheduler"
    assert overlay["spec"]["capacity"] == {"nvidia.com/gpu": str(scheduler.instance_shape.gpu_count * 4)} == {"nvidia.com/gpu": "4"}
    pools = [p.name for p in plan_node_pools(args) if p.cls.name == "scheduler"]
    assert overlay["spec"]["requirements"][0] == {"key": "karpenter.sh/nodepool", "operator": "In", "values": sorted(pools)}
    assert overlay["spec"]["requirements"][1] == {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge"]}


def test_a_real_api_server_accepts_the_overlay_under_karpenters_crd_and_refuses_a_standard_resource(control_plane: Any) -> None:
    from gpu_platform.infra.apply.apply import ApplyObject, Server, apply_objects, engine_order

    args = _fixture()
    crds = [d for d in _render(KARPENTER_CRD_CHART, args.karpenter.chart_version, {}) if d["kind"] == "CustomResourceDefinition"]
    (crd,) = [c for c in crds if c["metadata"]["name"] == "nodeoverlays.karpenter.sh"]
    (overlay,) = node_overlays(plan_node_pools(args))
    server = Server(control_plane.api_client())
    result = apply_objects(server, engine_order(None, [ApplyObject(crd, "test"), ApplyObject(overlay, "test")]))
    assert not result.refusals, result.refusals[0].line
    bad = {**overlay, "metadata": {"name": "cpu-overlay"}, "spec": {**overlay["spec"], "capacity": {"cpu": "8"}}}
    refused = apply_objects(server, [ApplyObject(bad, "test")])
    assert [r.line.split(": ", 1)[0] for r in refused.refusals] == ["NodeOverlay cpu-overlay (test)"]
    assert "invalid resource restricted" in refused.refusals[0].line
