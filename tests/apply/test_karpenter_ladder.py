"""An EKS class's capacity ladder where Karpenter provisions (issue 38), on what the cluster gets: the guide's h100
class (capacity_block -> reservation -> spot -> on_demand, docs/clouds/gke-capacity-ladders.md) added to prod-eks's
classes. Its NodePools and EC2NodeClass, as the plan writes them, are accepted by a real Kubernetes 1.34 API server
holding karpenter-crd 1.14.1's CRDs (their schemas and CEL rules: the reserved capacity type, the
capacity-reservation-id requirement key, the selector terms' id exclusivity), which refuses a selector term naming
an id beside other fields; and the controller rendered at its pin with the plan's values runs the ReservedCapacity
gate. Without ../shared/reference/upstream or the control plane these skip."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_platform.components.eks.node_group_args import SpotFailoverEksNodeGroupsArgs
from gpu_platform.components.karpenter.args import KARPENTER_CHART, KARPENTER_CRD_CHART
from gpu_platform.components.karpenter.plan import plan_node_pools, reservation_terms
from gpu_platform.components.karpenter.resources import controller_values, node_class_spec, node_pool_spec
from tests.apply.test_karpenter_overlay import _render
from tests.factories import prod_eks_raw
from tests.test_readme_blocks import block

GUIDE = "docs/clouds/gke-capacity-ladders.md"
ZONES = ("us-west-2a", "us-west-2b")


def _fixture() -> SpotFailoverEksNodeGroupsArgs:
    raw = prod_eks_raw()["eks_node_groups"]
    (h100,) = [c for c in yaml.safe_load(block(GUIDE, "example:eks-ladder-reserved"))["gpu-platform:eks_node_groups"]["classes"] if c["name"] == "h100"]
    raw["classes"].append(h100)
    return SpotFailoverEksNodeGroupsArgs.model_validate(raw)


def _objects(args: SpotFailoverEksNodeGroupsArgs) -> list[dict[str, Any]]:
    """The h100 class's EC2NodeClass and NodePools, as KarpenterNodePools writes them."""
    (h100,) = [c for c in args.classes if c.name == "h100"]
    node_class = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "h100"},
        "spec": node_class_spec(h100, args.karpenter, "prod-eks", "KarpenterNodeRole-prod-eks", {}),
    }
    pools = [
        {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": p.name}, "spec": node_pool_spec(p, args.karpenter, ZONES)}
        for p in plan_node_pools(args)
        if p.cls.name == "h100"
    ]
    return [node_class, *pools]


def test_the_rendered_controller_runs_the_reserved_capacity_gate() -> None:
    args = _fixture()
    reserved = any(reservation_terms(c) for c in args.classes)
    values = controller_values(args.karpenter, "prod-eks", "prod-eks", "arn:aws:iam::1:role/k", {}, reserved_capacity=reserved)
    (deployment,) = [d for d in _render(KARPENTER_CHART, args.karpenter.chart_version, values) if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    gates = dict(g.split("=") for g in next(e["value"] for e in container["env"] if e["name"] == "FEATURE_GATES").split(","))
    assert reserved and gates["ReservedCapacity"] == "true" and gates["NodeOverlay"] == "false"


def test_a_real_api_server_accepts_the_ladders_node_pools_and_node_class(control_plane: Any) -> None:
    from gpu_platform.infra.apply.apply import ApplyObject, Server, apply_objects, engine_order

    args = _fixture()
    crds = [d for d in _render(KARPENTER_CRD_CHART, args.karpenter.chart_version, {}) if d["kind"] == "CustomResourceDefinition"]
    wanted = {"nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"}
    objects = _objects(args)
    assert [o["metadata"]["name"] for o in objects] == ["h100", "h100-block", "h100-reserved", "h100-spot", "h100-on-demand"]
    server = Server(control_plane.api_client())
    applied = [ApplyObject(c, "test") for c in crds if c["metadata"]["name"] in wanted] + [ApplyObject(o, "test") for o in objects]
    result = apply_objects(server, engine_order(None, applied))
    assert not result.refusals, result.refusals[0].line
    bad = {**objects[0], "metadata": {"name": "h100-bad"}}
    bad["spec"] = {**bad["spec"], "capacityReservationSelectorTerms": [{"id": "cr-0123456789abcdef0", "instanceMatchCriteria": "open"}]}
    refused = apply_objects(server, [ApplyObject(bad, "test")])
    assert [r.line.split(": ", 1)[0] for r in refused.refusals] == ["EC2NodeClass h100-bad (test)"]
    assert "'id' is mutually exclusive" in refused.refusals[0].line


@pytest.mark.parametrize("pool", ["h100-block", "h100-reserved"])
def test_each_reserved_rung_requires_its_own_reservation(pool: str) -> None:
    (body,) = [o for o in _objects(_fixture()) if o["metadata"]["name"] == pool]
    found = {r["key"]: r["values"] for r in body["spec"]["template"]["spec"]["requirements"]}
    reservation = {"h100-block": "cr-0a1b2c3d4e5f60718", "h100-reserved": "cr-0123456789abcdef0"}[pool]
    assert found["karpenter.sh/capacity-type"] == ["reserved"] and found["karpenter.k8s.aws/capacity-reservation-id"] == [reservation]
