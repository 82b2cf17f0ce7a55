"""The EKS stacks' plans show what the EKS issue promises: two node groups per class (SPOT and
ON_DEMAND), scale-from-zero tags on every GPU group's ASG, the priority-expander ConfigMap
ordering them, and the autoscaler's failover flags."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from gpu_platform.infra.preview.engine import Plan
from tests.conftest import shipped_plan as plan

TEMPLATE = "k8s.io/cluster-autoscaler/node-template"


def gpu_groups(p: Plan) -> dict[str, dict]:
    return {r.inputs["nodeGroupName"]: r.inputs for r in p.of_type("aws:eks/nodeGroup:NodeGroup") if r.inputs["amiType"] != "AL2023_x86_64_STANDARD"}


def priorities(p: Plan) -> dict[int, list[str]]:
    (configmap,) = [r for r in p.of_type("kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"] == "cluster-autoscaler-priority-expander"]
    return yaml.safe_load(configmap.inputs["data"]["priorities"])


def rank(p: Plan, group: str) -> int:
    from gpu_platform.components.eks.node_group_args import example_asg_name

    asg = example_asg_name(group)
    return max(prio for prio, patterns in priorities(p).items() if any(re.search(x, asg) for x in patterns))


def test_prod_eks_reproduces_the_seed_layout() -> None:
    """prod-eks provisions with Karpenter: the seed's four tiers are NodePools, ranked by weight in the seed's
    order (spot-small > on-demand-small > spot-large > on-demand-large), each with its own capacity type,
    generated labels and the training taint."""
    p = plan("prod-eks")
    pools = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in p.of_type("kubernetes:karpenter.sh/v1:NodePool")}
    gpu = {n: s for n, s in pools.items() if s["template"]["metadata"]["labels"]["gpu-platform.io/pool-role"] == "gpu"}

    def requirement(spec: dict[str, Any], key: str) -> tuple[str, ...]:
        return tuple(next(r["values"] for r in spec["template"]["spec"]["requirements"] if r["key"] == key))

    assert {(n, requirement(s, "karpenter.sh/capacity-type"), requirement(s, "node.kubernetes.io/instance-type")) for n, s in gpu.items()} == {
        ("small-spot", ("spot",), ("p3.2xlarge",)),
        ("small-on-demand", ("on-demand",), ("p3.2xlarge",)),
        ("large-spot", ("spot",), ("p3.8xlarge",)),
        ("large-on-demand", ("on-demand",), ("p3.8xlarge",)),
    }
    order = sorted(gpu, key=lambda n: -gpu[n]["weight"])
    assert order == ["small-spot", "small-on-demand", "large-spot", "large-on-demand"]
    # The seed's mistake, fixed: on-demand tiers carry on-demand labels.
    assert gpu["small-on-demand"]["template"]["metadata"]["labels"]["gpu-platform.io/capacity"] == "on-demand"
    for spec in gpu.values():
        assert spec["template"]["metadata"]["labels"]["gpu-platform.io/workload"] == "training"
        assert {"key": "gpu-platform.io/workload", "value": "training", "effect": "NoSchedule"} in spec["template"]["spec"]["taints"]
    assert not p.of_type("aws:eks/nodeGroup:NodeGroup")[1:]  # only the system node group


@pytest.mark.parametrize("stack", ["dev-eks"])  # prod-eks provisions with Karpenter
def test_every_gpu_group_scales_from_zero_under_the_failover_flags(stack: str) -> None:
    p = plan(stack)
    groups = gpu_groups(p)
    tags: dict[str, dict[str, str]] = {}
    for t in p.of_type("aws:autoscaling/tag:Tag"):
        tags.setdefault(t.inputs["autoscalingGroupName"], {})[t.inputs["tag"]["key"]] = t.inputs["tag"]["value"]
    by_group = {re.match(r"eks-(.+)-[0-9a-f]{8}-", asg).group(1): v for asg, v in tags.items()}  # type: ignore[union-attr]
    assert set(by_group) == set(groups)
    for name, group in groups.items():
        assert group["scalingConfig"]["minSize"] == 0
        t = by_group[name]
        assert t["k8s.io/cluster-autoscaler/enabled"] == "true"
        assert t[f"{TEMPLATE}/taint/nvidia.com/gpu"] == "present:NoSchedule"
        assert int(t[f"{TEMPLATE}/resources/nvidia.com/gpu"]) >= 1
        assert t[f"{TEMPLATE}/resources/ephemeral-storage"].endswith("Gi")
        assert t[f"{TEMPLATE}/label/eks.amazonaws.com/capacityType"] == group["capacityType"]
        for key, value in group["labels"].items():
            assert t[f"{TEMPLATE}/label/{key}"] == value
        if group["capacityType"] == "ON_DEMAND" and name.replace("on-demand", "spot") in groups:
            assert rank(p, name) < rank(p, name.replace("on-demand", "spot"))
    (release,) = [r for r in p.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "cluster-autoscaler"]
    args = release.inputs["values"]["extraArgs"]
    assert args["max-node-provision-time"] == "7m"
    assert args["expander"].split(",")[0] == "priority"


def test_dev_eks_leaves_out_the_zone_without_gpus() -> None:
    p = plan("dev-eks")
    zones = {s.inputs["availabilityZone"] for s in p.of_type("aws:ec2/subnet:Subnet")}
    assert zones == {"ap-northeast-2a", "ap-northeast-2c"}
    assert any("were not checked for g4dn.xlarge offline" in n for n in p.notices)
    assert {g["instanceTypes"][0] for g in gpu_groups(p).values()} == {"g4dn.xlarge"}
    assert gpu_groups(p)["t4-spot"]["scalingConfig"]["maxSize"] == 4


def test_prod_eks_runs_kubeflow_pipelines_on_the_training_classes() -> None:
    p = plan("prod-eks")
    directories = {r.name: r.inputs["directory"] for r in p.of_type("kubernetes:kustomize/v2:Directory")}
    assert all("?ref=2.17.0" in d or "ref=2.17.0" in d for d in directories.values()), directories
    storage = p.outputs["kubeflowStorage"]
    assert (storage["artifactStore"]["storage"], storage["database"]["storage"]) == ("1000Gi", "200Gi")
    placement = p.outputs["kubeflowTrainingPlacement"]
    assert placement["nodeSelector"] == {"gpu-platform.io/workload": "training"}
    quotas = {r.inputs["metadata"]["namespace"]: r.inputs["spec"]["hard"] for r in p.of_type("kubernetes:core/v1:ResourceQuota")}
    assert {ns: quotas[ns]["requests.nvidia.com/gpu"] for ns in ("team-nlp", "team-vision")} == {"team-nlp": "16", "team-vision": "16"}
    document = json.dumps(p.to_json())
    assert "12341234" not in document and "user@example.com" not in document
