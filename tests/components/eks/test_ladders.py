"""EKS classes' capacity ladders (issue 38): a ladder that is a named strategy plans and renders byte for byte as
the capacity it names, on both provisioners; what EKS does not offer (flex-start) or neither provisioner renders
yet (reservations, capacity blocks, on-demand before spot) is refused in one line per problem, every problem of
the stack in one run, through the program's own stack reader (load_stack_config) before any resource."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from gpu_platform.components.pools.ladders import CapacityStrategy, named_ladder
from gpu_platform.infra.preview.engine import run_program
from gpu_platform.infra.stack.read import read_stack_file
from tests.components.eks.test_args import lines_for, refusal
from tests.conftest import PROJECT_DIR, shipped_plan
from tests.factories import eks, eks_stack, gpu_class, prod_eks_raw
from tests.test_readme_blocks import block

P = "gpu-platform:eks_node_groups.classes"


def _as_ladders(config: dict[str, Any], spot_class: str | None = None) -> dict[str, Any]:
    """The stack file's config with every class's capacity stated as the ladder it names (``spot_class``: that
    class made spot first, in both forms)."""
    config = copy.deepcopy(config)
    for cls in config["gpu-platform:eks_node_groups"]["classes"]:
        strategy = CapacityStrategy(cls.pop("capacity", "spot_then_on_demand"))
        if cls["name"] == spot_class:
            strategy = CapacityStrategy.SPOT
        if strategy is not CapacityStrategy.SPOT_THEN_ON_DEMAND:
            cls.pop("fallback_max_nodes", None)
        cls["capacity_ladder"] = [{"kind": r.kind.value} for r in named_ladder(strategy)]
    return config


def _plan_json(stack: str, config: dict[str, Any], secret: set[str]) -> Any:
    return json.loads(json.dumps(run_program(PROJECT_DIR, stack, config, secret).to_json(), sort_keys=True))


@pytest.mark.parametrize("stack", ["dev-eks", "prod-eks"])  # the cluster autoscaler's node groups; Karpenter NodePools
def test_named_ladders_render_byte_for_byte_what_their_capacity_renders(stack: str) -> None:
    config, secret = read_stack_file(PROJECT_DIR, stack)
    expected = json.loads(json.dumps(shipped_plan(stack).to_json(), sort_keys=True))
    assert _plan_json(stack, _as_ladders(config), secret) == expected


def test_a_spot_ladder_renders_what_capacity_spot_renders() -> None:
    config, secret = read_stack_file(PROJECT_DIR, "dev-eks")
    as_capacity = copy.deepcopy(config)
    (t4,) = [c for c in as_capacity["gpu-platform:eks_node_groups"]["classes"] if c["name"] == "t4"]
    t4["capacity"] = "spot"
    t4.pop("fallback_max_nodes", None)
    assert _plan_json("dev-eks", _as_ladders(config, spot_class="t4"), secret) == _plan_json("dev-eks", as_capacity, secret)


FLEX_LINE = f'{P}[0].capacity_ladder[0].kind: flex_start is offered on GKE only (Dynamic Workload Scheduler); on EKS use reservation, capacity_block, spot or on_demand (got "flex_start")'
ID_LINE = (
    f"{P}[1].capacity_ladder[0].reservation: reservation cr-123 is not an EC2 capacity reservation id: cr- and 17 (or 8) "
    'lowercase hex digits, as DescribeCapacityReservations lists it (got "cr-123")'
)
ORDER_LINE = (
    f"{P}[2].capacity_ladder[1]: rung spot comes after reservation(any), which never fails over (it takes on-demand capacity "
    'when no reservation is free); end the ladder there or name the reservation (got "spot")'
)


def _bad_classes() -> list[dict[str, Any]]:
    block = {"kind": "capacity_block", "reservation": "cr-0123456789abcdef0"}
    return [
        gpu_class(capacity_ladder=[{"kind": "flex_start"}, block, {"kind": "spot"}]),
        gpu_class(
            name="large",
            instance_types=["p3.8xlarge"],
            max_nodes=2,
            capacity_ladder=[{"kind": "reservation", "reservation": "cr-123"}, {"kind": "on_demand"}],
        ),
        gpu_class(name="od", instance_types=["g5.xlarge"], capacity_ladder=[{"kind": "reservation"}, {"kind": "spot"}]),
    ]


def test_every_ladder_problem_of_a_node_group_stack_is_one_line_in_one_run_from_the_stack_reader() -> None:
    values = {
        "gpu-platform:eks": eks(),
        "gpu-platform:eks_node_groups": {"classes": _bad_classes()},
        "gpu-platform:cloud": "aws",
        "aws:region": "ap-northeast-2",
    }
    lines = lines_for(values)
    assert [line for line in lines if "capacity_ladder" in line] == [FLEX_LINE, ID_LINE, ORDER_LINE]


def test_every_ladder_problem_of_a_karpenter_stack_is_refused_alike() -> None:
    raw = prod_eks_raw()
    raw["eks_node_groups"]["classes"] = _bad_classes()
    lines = refusal(raw)
    assert [line for line in lines if "capacity_ladder" in line] == [FLEX_LINE, ID_LINE, ORDER_LINE]


def test_a_ladder_may_not_repeat_a_rung() -> None:
    lines = refusal(eks_stack(classes=[gpu_class(capacity_ladder=[{"kind": "spot"}, {"kind": "spot"}])]))
    assert lines == [f'{P}[0].capacity_ladder[1]: rung spot is already rung 0 of the ladder; list each rung once (got "spot")']


def test_a_ladder_and_a_capacity_are_not_both_set() -> None:
    lines = refusal(eks_stack(classes=[gpu_class(capacity="spot", capacity_ladder=[{"kind": "spot"}])]))
    assert lines == [f'{P}[0].capacity_ladder: capacity_ladder replaces capacity; set one of them (got capacity spot and capacity_ladder spot) (got "spot")']


def test_a_fallback_maximum_needs_a_ladder_of_more_than_one_rung() -> None:
    lines = refusal(eks_stack(classes=[gpu_class(capacity_ladder=[{"kind": "on_demand"}], fallback_max_nodes=2)]))
    assert lines == [
        f"{P}[0].fallback_max_nodes: fallback_max_nodes applies to capacity spot_then_on_demand or a capacity_ladder of more than one rung only "
        "(got capacity_ladder on_demand) (got 2)"
    ]


def test_a_managed_node_group_takes_a_reservation_rung_on_a_class_of_one_instance_type_only() -> None:
    """A managed node group targeting a reservation launches only its one instance type; each such rung is refused on a
    class of two types (the cluster autoscaler's groups), naming the rung and the types."""
    shape = {"vcpus": 192, "memory_gib": 2048, "gpus": 8, "gpu_type": "H200"}
    ladder = [
        {"kind": "capacity_block", "reservation": "cr-0a1b2c3d4e5f60718"},
        {"kind": "reservation", "reservation": "cr-0123456789abcdef0"},
        {"kind": "spot"},
    ]
    cls = gpu_class(name="h200", instance_types=["p5e.48xlarge", "p5en.48xlarge"], shape=shape, capacity_ladder=ladder)
    lines = refusal(eks_stack(classes=[cls]))
    assert lines == [
        f"{P}[0].capacity_ladder[{i}].reservation: class h200: {rung} holds one instance type and a managed node group targeting it "
        "launches only that type, but the class lists 2 (p5e.48xlarge, p5en.48xlarge): list the reservation's one instance type, or use "
        f'provisioner karpenter (got "{rung.split("(")[1].rstrip(")")}")'
        for i, rung in enumerate(["capacity_block(cr-0a1b2c3d4e5f60718)", "reservation(cr-0123456789abcdef0)"])
    ]


_CAPACITY_TYPE = {"SPOT": "spot", "ON_DEMAND": "on_demand", "spot": "spot", "on-demand": "on_demand"}


def _ladders(config: dict[str, Any]) -> dict[str, list[str]]:
    return {c["name"]: [r["kind"] for r in c["capacity_ladder"]] for c in config["gpu-platform:eks_node_groups"]["classes"]}


def test_the_rendered_node_groups_and_expander_tiers_follow_each_class_ladder() -> None:
    """dev-eks with ladders: each class's managed node groups, ranked by the priority expander's ConfigMap, buy
    the ladder's rungs in its order."""
    config, secret = read_stack_file(PROJECT_DIR, "dev-eks")
    config = _as_ladders(config)
    plan = _plan_json("dev-eks", config, secret)
    (expander,) = [r for r in plan["resources"] if r["name"].endswith("priority-expander")]
    tiers = yaml.safe_load(expander["inputs"]["data"]["priorities"])
    groups = [r["inputs"] for r in plan["resources"] if r["type"] == "aws:eks/nodeGroup:NodeGroup" and "gpu-platform.io/gpu-class" in r["inputs"]["labels"]]

    def priority(group: dict[str, Any]) -> int:
        return max(p for p, patterns in tiers.items() for pattern in patterns if pattern.startswith(f"^eks-{group['nodeGroupName']}-"))

    rendered: dict[str, list[str]] = {}
    for group in sorted(groups, key=priority, reverse=True):
        rendered.setdefault(group["labels"]["gpu-platform.io/gpu-class"], []).append(_CAPACITY_TYPE[group["capacityType"]])
    assert rendered == _ladders(config)


def test_the_rendered_karpenter_node_pools_follow_each_class_ladder_by_weight() -> None:
    """prod-eks (Karpenter) with ladders: each class's NodePools, heaviest first, allow the ladder's rungs in its order."""
    config, secret = read_stack_file(PROJECT_DIR, "prod-eks")
    config = _as_ladders(config)
    plan = _plan_json("prod-eks", config, secret)
    pools = [r["inputs"] for r in plan["resources"] if r["type"] == "kubernetes:karpenter.sh/v1:NodePool"]
    rendered: dict[str, list[str]] = {}
    for pool in sorted(pools, key=lambda p: p["spec"]["weight"], reverse=True):
        template = pool["spec"]["template"]
        (capacity,) = [r["values"] for r in template["spec"]["requirements"] if r["key"] == "karpenter.sh/capacity-type"]
        rendered.setdefault(template["metadata"]["labels"]["gpu-platform.io/gpu-class"], []).append(_CAPACITY_TYPE[capacity[0]])
    assert rendered == _ladders(config)


GUIDE = "docs/clouds/gke-capacity-ladders.md"
_KIND_OF_LABEL = {"spot": "spot", "on-demand": "on_demand", "reserved": "reservation", "capacity-block": "capacity_block"}
"""The rung kind of each value of a node's capacity label (gpu-platform.io/capacity)."""


def _guides_reserved_ladder(stack: str) -> tuple[dict[str, Any], set[str]]:
    """The stack file's config with the guide's h100 class (capacity_block -> reservation -> spot -> on_demand) added to its own."""
    config, secret = read_stack_file(PROJECT_DIR, stack)
    (h100,) = [c for c in yaml.safe_load(block(GUIDE, "example:eks-ladder-reserved"))["gpu-platform:eks_node_groups"]["classes"] if c["name"] == "h100"]
    groups = config["gpu-platform:eks_node_groups"]
    config["gpu-platform:eks_node_groups"] = {**groups, "classes": [*groups["classes"], h100]}
    return config, secret


def _rungs(config: dict[str, Any]) -> dict[str, list[tuple[str, str | None]]]:
    """Each class's rungs (kind, reservation): its capacity_ladder, or the ladder its capacity names."""
    rungs: dict[str, list[tuple[str, str | None]]] = {}
    for c in config["gpu-platform:eks_node_groups"]["classes"]:
        ladder = c.get("capacity_ladder") or [{"kind": r.kind.value} for r in named_ladder(CapacityStrategy(c.get("capacity", "spot_then_on_demand")))]
        rungs[c["name"]] = [(r["kind"], r.get("reservation")) for r in ladder]
    return rungs


def test_the_guides_reserved_ladder_renders_a_node_group_per_rung_ranked_in_the_ladders_order() -> None:
    """The done-when of issue 38 for the cluster autoscaler: dev-eks with the guide's h100 class. Its managed node
    groups, in the priority expander ConfigMap's order (each on its own priority), buy the ladder's rungs: the
    capacity label and EKS capacity type of each, and the reservation its launch template targets."""
    config, secret = _guides_reserved_ladder("dev-eks")
    plan = _plan_json("dev-eks", config, secret)
    (expander,) = [r for r in plan["resources"] if r["name"].endswith("priority-expander")]
    tiers = yaml.safe_load(expander["inputs"]["data"]["priorities"])
    groups = [r for r in plan["resources"] if r["type"] == "aws:eks/nodeGroup:NodeGroup" and "gpu-platform.io/gpu-class" in r["inputs"]["labels"]]
    templates = {r["name"]: r["inputs"] for r in plan["resources"] if r["type"] == "aws:ec2/launchTemplate:LaunchTemplate"}

    def priority(group: dict[str, Any]) -> int:
        (found,) = [p for p, patterns in tiers.items() for pattern in patterns if pattern.startswith(f"^eks-{group['inputs']['nodeGroupName']}-")]
        return int(found)

    assert len({priority(g) for g in groups}) == len(groups)  # every group its own tier
    rendered: dict[str, list[tuple[str, str | None]]] = {}
    capacity_types: list[str] = []
    for group in sorted(groups, key=priority, reverse=True):
        inputs = group["inputs"]
        template = templates.get(f"{group['name']}-launch-template")
        target = ((template or {}).get("capacityReservationSpecification") or {}).get("capacityReservationTarget") or {}
        kind = _KIND_OF_LABEL[inputs["labels"]["gpu-platform.io/capacity"]]
        rendered.setdefault(inputs["labels"]["gpu-platform.io/gpu-class"], []).append((kind, target.get("capacityReservationId")))
        if inputs["labels"]["gpu-platform.io/gpu-class"] == "h100":
            capacity_types.append(inputs["capacityType"])
            assert ("launchTemplate" in inputs) == (template is not None) and ("diskSize" in inputs) == (template is None)
    assert rendered == _rungs(config)
    assert rendered["h100"][:2] == [("capacity_block", "cr-0a1b2c3d4e5f60718"), ("reservation", "cr-0123456789abcdef0")]
    assert capacity_types == ["CAPACITY_BLOCK", "ON_DEMAND", "SPOT", "ON_DEMAND"]
    block_template = templates["dev-eks-gpu-h100-block-launch-template"]
    assert block_template["instanceMarketOptions"] == {"marketType": "capacity-block"} and block_template["instanceType"] == "p5.48xlarge"
    assert "instanceMarketOptions" not in templates["dev-eks-gpu-h100-reserved-launch-template"]
    assert block_template["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 100  # the class's disk_size_gib, which the group may not set


def test_explicit_expander_tiers_must_rank_a_class_s_groups_in_its_ladder_s_order() -> None:
    """Given tiers that put the spot group above the reservation it falls back from, the stack is refused, naming
    both groups, their rungs and priorities."""
    ladder = [{"kind": "reservation", "reservation": "cr-0123456789abcdef0"}, {"kind": "spot"}, {"kind": "on_demand"}]
    cls = gpu_class(name="h100", instance_types=["p5.48xlarge"], capacity_ladder=ladder)
    tiers = [
        {"priority": 30, "patterns": ["^eks-h100-spot-"]},
        {"priority": 20, "patterns": ["^eks-h100-reserved-"]},
        {"priority": 10, "patterns": ["^eks-h100-on-demand-"]},
    ]
    lines = refusal(eks_stack(classes=[cls], priority_expander={"tiers": tiers}))
    assert lines == [
        "gpu-platform:eks_node_groups.priority_expander.tiers: group h100-spot (rung spot) has priority 30, not below h100-reserved "
        "(rung reservation(cr-0123456789abcdef0), 20), which comes before it in class h100's capacity_ladder; rank the groups in the "
        "ladder's order (got 30)"
    ]


def test_the_guides_reserved_ladder_renders_a_node_pool_per_rung_weighted_in_the_ladders_order() -> None:
    """The done-when of issue 38 for Karpenter: prod-eks with the guide's h100 class. Its NodePools, heaviest first,
    buy the ladder's rungs: the reserved capacity type with the rung's reservation id for the capacity block and the
    ODCR, then spot, then on-demand; the class's EC2NodeClass selects both reservations, and the controller may
    find and launch into them."""
    config, secret = _guides_reserved_ladder("prod-eks")
    plan = _plan_json("prod-eks", config, secret)
    pools = [r["inputs"] for r in plan["resources"] if r["type"] == "kubernetes:karpenter.sh/v1:NodePool"]
    rendered: dict[str, list[tuple[str, str | None]]] = {}
    requirements: dict[str, list[dict[str, Any]]] = {}
    for pool in sorted(pools, key=lambda p: p["spec"]["weight"], reverse=True):
        template = pool["spec"]["template"]
        cls = template["metadata"]["labels"]["gpu-platform.io/gpu-class"]
        found = {r["key"]: r["values"] for r in template["spec"]["requirements"]}
        (reservation,) = found.get("karpenter.k8s.aws/capacity-reservation-id", [None])
        rendered.setdefault(cls, []).append((_KIND_OF_LABEL[template["metadata"]["labels"]["gpu-platform.io/capacity"]], reservation))
        requirements.setdefault(cls, []).append(found)
    assert rendered == _rungs(config)
    assert rendered["h100"][:2] == [("capacity_block", "cr-0a1b2c3d4e5f60718"), ("reservation", "cr-0123456789abcdef0")]
    assert [r["karpenter.sh/capacity-type"] for r in requirements["h100"]] == [["reserved"], ["reserved"], ["spot"], ["on-demand"]]
    assert len({p["spec"]["weight"] for p in pools}) == len(pools)
    node_classes = {
        r["inputs"]["metadata"]["name"]: r["inputs"]["spec"] for r in plan["resources"] if r["type"] == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
    }
    assert node_classes["h100"]["capacityReservationSelectorTerms"] == [{"id": "cr-0a1b2c3d4e5f60718"}, {"id": "cr-0123456789abcdef0"}]
    assert "capacityReservationSelectorTerms" not in node_classes["scheduler"]
    (controller,) = [r["inputs"] for r in plan["resources"] if r["name"] == "prod-eks-gpu-karpenter"]
    assert controller["values"]["settings"]["featureGates"] == {"reservedCapacity": True}


def test_karpenter_takes_any_open_reservation_then_on_demand_in_the_last_rung() -> None:
    """A reservation rung without an id ends the ladder: its NodePool allows reserved then on-demand capacity, and its
    EC2NodeClass selects every open reservation (Karpenter offers only reservations its terms select); the class may
    list several instance types (Karpenter picks the reservation's)."""
    config, secret = read_stack_file(PROJECT_DIR, "prod-eks")
    classes = config["gpu-platform:eks_node_groups"]["classes"]
    classes[0] = {**classes[0], "capacity_ladder": [{"kind": "spot"}, {"kind": "reservation"}]}
    classes[0].pop("capacity", None)
    plan = _plan_json("prod-eks", config, secret)
    name = classes[0]["name"]
    pools = {r["inputs"]["metadata"]["name"]: r["inputs"]["spec"] for r in plan["resources"] if r["type"] == "kubernetes:karpenter.sh/v1:NodePool"}
    reserved = {r["key"]: r["values"] for r in pools[f"{name}-reserved"]["template"]["spec"]["requirements"]}
    assert reserved["karpenter.sh/capacity-type"] == ["reserved", "on-demand"] and "karpenter.k8s.aws/capacity-reservation-id" not in reserved
    assert pools[f"{name}-spot"]["weight"] > pools[f"{name}-reserved"]["weight"]
    (node_class,) = [
        r["inputs"] for r in plan["resources"] if r["type"] == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass" and r["inputs"]["metadata"]["name"] == name
    ]
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [{"instanceMatchCriteria": "open"}]
