"""One ladder, the same order in every rendered layer (issue 38 item 2): a shipped stack whose pool states a capacity
ladder is previewed through the program (`gpu-platform preview --json`: the stack file, the infra program, the
recorded plan) and each layer is read back from the plan alone, then checked to follow the ladder in its order.

GKE (prod-gke, its A100 pool given the guide's ladder reservation -> flex_start -> spot -> on_demand, its Kueue on):
the node pools, each read as the rung it buys; the ComputeClass's priorities; Kueue's ResourceFlavors, each read as
the node pool it selects, in the order every tenant's ClusterQueue lists them.

EKS (prod-eks with the guide's h100 class, capacity_block -> reservation -> spot -> on_demand, on either provisioner):
the managed node groups in the priority expander's order, or the Karpenter NodePools by weight, and the Kueue
flavors in each queue's order, each read as the capacity label (gpu-platform.io/capacity) its nodes carry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.components.pools.ladders import CapacityRung
from gpu_platform.infra.cli import main
from tests.components.eks.test_ladders import _guides_reserved_ladder, _plan_json
from tests.components.gke.test_ladders import rung_of
from tests.policies.test_stacks import project
from tests.test_readme_blocks import block

GUIDE = "docs/clouds/capacity-ladders.md"


def _guides_ladder() -> list[dict[str, Any]]:
    pools = yaml.safe_load(block(GUIDE, "example:gke-ladder"))["gpu-platform:gke"]["gpu_pools"]
    (a100,) = [p for p in pools if p["name"] == "a100"]
    ladder: list[dict[str, Any]] = a100["capacity_ladder"]
    return ladder


def _plan(tmp_path: Path, name: str, base: str, mutate: Any, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    root = project(tmp_path, name, base, mutate)
    code = main(["preview", name, "--quiet", "--project-dir", str(root), "--no-render", "--offline", "--json", str(tmp_path / "plan.json")])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    resources: list[dict[str, Any]] = json.loads((tmp_path / "plan.json").read_text())["resources"]
    return resources


def _of(resources: list[dict[str, Any]], type_: str) -> list[dict[str, Any]]:
    return [r["inputs"] for r in resources if r["type"] == type_]


def test_a_gke_ladder_has_the_same_order_in_node_pools_compute_class_and_kueue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ladder = _guides_ladder()

    def mutate(config: dict[str, Any]) -> None:
        (a100,) = [p for p in config["gpu-platform:gke"]["gpu_pools"] if p["name"] == "a100"]
        del a100["capacity"]
        a100["capacity_ladder"] = ladder

    resources = _plan(tmp_path, "prod-ladder", "prod-gke", mutate, capsys)
    rungs = [CapacityRung.model_validate(r) for r in ladder]

    # The ComputeClass: its node pools in priority order, each read as the rung it buys from its own inputs.
    (spec,) = [c["spec"] for c in _of(resources, "kubernetes:cloud.google.com/v1:ComputeClass") if c["metadata"]["name"] == "a100"]
    class_order = [p for entry in spec["priorities"] for p in entry["nodepools"]]
    pools = {p["name"]: p for p in _of(resources, "gcp:container/nodePool:NodePool")}
    assert [rung_of(pools[name]) for name in class_order] == rungs

    # Kueue: the flavors that select the class's nodes, each read as the node pool it selects, in each queue's order.
    flavors = {f["metadata"]["name"]: f["spec"].get("nodeLabels", {}) for f in _of(resources, "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")}
    selects = {name: labels["cloud.google.com/gke-nodepool"] for name, labels in flavors.items() if labels.get("cloud.google.com/compute-class") == "a100"}
    queues = _of(resources, "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    assert len(queues) == 4
    for queue in queues:
        listed = [f["name"] for group in queue["spec"]["resourceGroups"] for f in group["flavors"]]
        assert [selects[f] for f in listed if f in selects] == class_order, queue["metadata"]["name"]
        assert queue["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    # The Dask tenants' quotas (analytics 16, research 8) on their home pool, split down the ladder: the reservation's
    # node pool holds 16 one-GPU nodes, flex-start 8.
    nominal = {
        q["metadata"]["name"]: [
            next(r["nominalQuota"] for r in f["resources"] if r["name"] == "nvidia.com/gpu")
            for group in q["spec"]["resourceGroups"]
            for f in group["flavors"]
            if f["name"] in selects
        ]
        for q in queues
    }
    assert nominal["analytics"] == [16, 0, 0, 0] and nominal["research"] == [0, 8, 0, 0]


def _rung_flavors(resources: list[dict[str, Any]], cls: str) -> list[list[str]]:
    """Each ClusterQueue's flavors of class ``cls``'s rungs, in the queue's order, each read as the capacity label it selects."""
    flavors = {f["metadata"]["name"]: f["spec"].get("nodeLabels", {}) for f in _of(resources, "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")}
    selects = {
        n: labels["gpu-platform.io/capacity"]
        for n, labels in flavors.items()
        if labels.get("gpu-platform.io/gpu-class") == cls and "gpu-platform.io/capacity" in labels
    }
    queues = _of(resources, "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    assert queues
    return [[selects[f["name"]] for group in q["spec"]["resourceGroups"] for f in group["flavors"] if f["name"] in selects] for q in queues]


@pytest.mark.parametrize("provisioner", ["cluster-autoscaler", "karpenter"])
def test_an_eks_ladder_has_the_same_order_in_its_node_groups_or_node_pools_and_kueue(provisioner: str) -> None:
    """prod-eks with the guide's h100 class (capacity_block -> reservation -> spot -> on_demand), on the cluster autoscaler
    (its managed node groups, in the priority expander ConfigMap's order) and on Karpenter (its NodePools, heaviest
    first), and its Kueue: each layer read back from the program's recorded plan, in the ladder's order."""
    config, secret = _guides_reserved_ladder("prod-eks")
    groups = config["gpu-platform:eks_node_groups"]
    if provisioner == "cluster-autoscaler":
        config["gpu-platform:eks_node_groups"] = {k: v for k, v in groups.items() if k not in ("provisioner", "karpenter")}
    else:
        assert groups["provisioner"] == "karpenter"
    resources = _plan_json("prod-eks", config, secret)["resources"]
    (h100,) = [c for c in config["gpu-platform:eks_node_groups"]["classes"] if c["name"] == "h100"]
    ladder = [
        {"capacity_block": "capacity-block", "reservation": "reserved", "spot": "spot", "on_demand": "on-demand"}[r["kind"]] for r in h100["capacity_ladder"]
    ]
    assert ladder == ["capacity-block", "reserved", "spot", "on-demand"]

    if provisioner == "cluster-autoscaler":
        (expander,) = [r["inputs"] for r in resources if r["name"].endswith("priority-expander")]
        tiers = yaml.safe_load(expander["data"]["priorities"])
        nodes = [g for g in _of(resources, "aws:eks/nodeGroup:NodeGroup") if g["labels"].get("gpu-platform.io/gpu-class") == "h100"]

        def priority(group: dict[str, Any]) -> int:
            (found,) = [p for p, patterns in tiers.items() for pattern in patterns if pattern.startswith(f"^eks-{group['nodeGroupName']}-")]
            return int(found)

        assert not _of(resources, "kubernetes:karpenter.sh/v1:NodePool")
        ordered = [g["labels"]["gpu-platform.io/capacity"] for g in sorted(nodes, key=priority, reverse=True)]
    else:
        pools = [
            p
            for p in _of(resources, "kubernetes:karpenter.sh/v1:NodePool")
            if p["spec"]["template"]["metadata"]["labels"].get("gpu-platform.io/gpu-class") == "h100"
        ]
        assert not [g for g in _of(resources, "aws:eks/nodeGroup:NodeGroup") if g["labels"].get("gpu-platform.io/gpu-class") == "h100"]
        ordered = [
            p["spec"]["template"]["metadata"]["labels"]["gpu-platform.io/capacity"] for p in sorted(pools, key=lambda p: p["spec"]["weight"], reverse=True)
        ]
    assert ordered == ladder
    assert _rung_flavors(resources, "h100") == [ladder] * 4  # every tenant's ClusterQueue (two Dask, two Kubeflow)
