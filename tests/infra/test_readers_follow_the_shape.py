"""Every reader takes a pool's GPUs and zones from the plan (issue 34 item 1): preflight gke, preflight eks, the
report's prices and the policy pack.

Two proofs. The plan's shapes (StackConfig.pool_shapes()) are patched to numbers no catalog or stack file holds
(5 GPUs and 11 vCPUs per node, one zone), and each reader must follow them: a reader that computes a pool's GPUs
or zones itself keeps the unpatched figures and fails here. A static check then keeps the catalog lookups and
zone derivations out of those readers' source.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import pytest

from gpu_platform.components.pools.shapes import NodePoolShape
from gpu_platform.components.pools.sharing import GpuSharing
from gpu_platform.infra.preflight_gke import preflight_gke
from gpu_platform.infra.stack.model import StackConfig
from tests.conftest import PROJECT_DIR
from tests.factories import stack

GPUS, VCPUS = 5, 11
"""What the patched plan says one GPU node holds: no catalog row has a 5-GPU, 11-vCPU machine."""


def patched(shapes: list[NodePoolShape], zones: tuple[str, ...] | None = None) -> list[NodePoolShape]:
    """``shapes`` with every GPU pool holding GPUS GPUs and VCPUS vCPUs per node (and in ``zones``, when given)."""
    out = []
    for s in shapes:
        if s.gpus_per_node:
            s = dataclasses.replace(s, gpus_per_node=GPUS, vcpus=VCPUS)
            if zones is not None:
                s = dataclasses.replace(s, zones=zones, zone_count=len(zones))
        out.append(s)
    return out


@pytest.fixture
def plan_says(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    original = StackConfig.pool_shapes
    monkeypatch.setattr(StackConfig, "pool_shapes", lambda self: patched(original(self), ("us-central1-a",) if self.gke is not None else None))
    yield


# --- preflight gke --------------------------------------------------------------------------------


class _Accelerators:
    def list(self, project: str, zone: str) -> list[Any]:
        from types import SimpleNamespace

        return [SimpleNamespace(name="nvidia-tesla-t4")]


class _Regions:
    def get(self, project: str, region: str) -> Any:
        from types import SimpleNamespace

        quota = [SimpleNamespace(metric=m, limit=10_000, usage=0) for m in ("CPUS", "NVIDIA_T4_GPUS", "PREEMPTIBLE_NVIDIA_T4_GPUS")]
        return SimpleNamespace(quotas=quota)


class _Reservations:
    def list(self, project: str, zone: str) -> list[Any]:
        return []


def test_preflight_gke_takes_the_zones_gpus_and_vcpus_from_the_plan(plan_says: None) -> None:
    from gpu_platform.infra.preflight_gke import ComputeClients

    config = StackConfig.model_validate({**stack(), "monitoring": {"enabled": False}})  # t4: 2 GPUs, n1-standard-4, zones b and c
    offline = [str(f) for f in preflight_gke(config, None, None)]
    assert "ok: pool t4: nvidia-tesla-t4 is offered in us-central1-a by the shipped data (2026-11)" in offline
    online = [str(f) for f in preflight_gke(config, "p", ComputeClients(_Accelerators(), _Regions(), _Reservations()))]
    (gpus,) = [line for line in online if "quota NVIDIA_T4_GPUS" in line]
    # max_nodes 20 per zone over the stack's two zones: the node pool's 40 nodes (the plan's), each with the shape's 5 GPUs.
    assert gpus.endswith("the node pools need at most 200"), gpus
    (cpus,) = [line for line in online if "quota CPUS" in line]
    vcpus = sum(n.max_total * (VCPUS if p.shape.gpus_per_node else p.shape.vcpus) for p in config.gke.plan for n in p.node_pools)
    assert vcpus == 40 * VCPUS + 24 and cpus.endswith(f"the node pools need at most {vcpus}"), cpus
    assert "ok: pool t4: nvidia-tesla-t4 is offered in us-central1-a by the Compute API" in online


# --- preflight eks --------------------------------------------------------------------------------


def test_preflight_eks_takes_the_zones_and_vcpus_from_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3
    from moto import mock_aws

    from gpu_platform.infra.preflight import preflight_eks
    from tests.factories import eks, eks_node_groups, gpu_class
    from tests.infra.test_preflight import G_ON_DEMAND, G_SPOT, REGION, quotas

    original = StackConfig.pool_shapes
    monkeypatch.setattr(StackConfig, "pool_shapes", lambda self: patched(original(self), ("ap-northeast-2c",)))
    config = StackConfig.model_validate(
        {
            "cloud": "aws",
            "eks": eks(),
            "eks_node_groups": eks_node_groups(classes=[gpu_class(name="t4", instance_types=["g4dn.xlarge"], max_nodes=4)]),
            "monitoring": {"enabled": False},
        }
    )
    with mock_aws():
        out = [str(f) for f in preflight_eks(config, REGION, boto3.client("ec2", region_name=REGION), quotas({G_ON_DEMAND: 64, G_SPOT: 64}))]
    assert [line for line in out if line.startswith("ok: zone")] == ["ok: zone ap-northeast-2c offers g4dn.xlarge"]
    # EC2 says 4 vCPUs and 1 GPU; the plan says 11 and 5: the comparison is with the plan.
    assert any(line.startswith("error: class t4: EC2 reports g4dn.xlarge as (4, 16384, 'T4', 1)") and "(11, 16384, 'T4', 5)" in line for line in out), out
    assert sum(f"the node groups need at most {4 * VCPUS}" in line for line in out) == 2, out  # on-demand and spot, 4 nodes x 11 vCPUs


# --- the report's prices ----------------------------------------------------------------------------


def test_the_report_prices_a_node_by_its_pool_s_physical_gpus() -> None:
    """A time-shared N1 T4 node advertises 2 GPUs x 4 clients = 8 nvidia.com/gpu; GCP bills its 2 physical GPUs."""
    from gpu_platform.infra.report.tenants import ksm_label, node_price
    from gpu_platform.infra.simulate.prices import PriceTable

    config = StackConfig.model_validate({**stack(), "monitoring": {"enabled": False}})
    (t4,) = [s for s in config.pool_shapes() if s.name == "t4"]
    shared = dataclasses.replace(t4, gpu_sharing=GpuSharing.model_validate({"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}))
    assert (shared.gpus_per_node, shared.schedulable_gpus_per_node) == (2, 8)
    labels = {ksm_label("node.kubernetes.io/instance-type"): "n1-standard-4", ksm_label("cloud.google.com/gke-accelerator"): "nvidia-tesla-t4", "gpus": "8"}
    prices = PriceTable.shipped()
    table = prices.region("gcp", "us-central1")
    machine, gpu = table.machines["n1-standard-4"].on_demand, table.gpus["nvidia-tesla-t4"].on_demand
    assert machine is not None and gpu is not None
    assert node_price(labels, prices, "gcp", "us-central1", [shared]).per_hour == pytest.approx(machine + 2 * gpu)
    # The plan's count, whatever it is: 5 GPUs per node of the patched pool.
    five = dataclasses.replace(shared, gpus_per_node=GPUS, gpu_sharing=None)
    assert node_price({**labels, "gpus": str(GPUS)}, prices, "gcp", "us-central1", [five]).per_hour == pytest.approx(machine + GPUS * gpu)


# --- the policy pack ------------------------------------------------------------------------------


def test_the_policy_pack_counts_an_eks_node_group_by_the_plan_s_gpus() -> None:
    """The components write the plan's physical GPUs per node on each node group (its GPU tag); the pack counts those,
    not the catalog's (g4dn.12xlarge has 4 GPUs in the catalog; the plans here say 5, then 2)."""
    from gpu_platform.components.core.labels import GPU_TEMPLATE_TAG
    from gpu_platform.policies.rules.base import Resource, gpu_pool_gpus

    for gpus in (GPUS, 2):
        props = {"instanceTypes": ["g4dn.12xlarge"], "scalingConfig": {"maxSize": 3}, "tags": {GPU_TEMPLATE_TAG: str(gpus)}}
        assert gpu_pool_gpus(Resource("aws:eks/nodeGroup:NodeGroup", "g", "urn:pulumi:s::p::aws:eks/nodeGroup:NodeGroup::g", props)) == 3 * gpus
    untagged = {"instanceTypes": ["g4dn.12xlarge"], "scalingConfig": {"maxSize": 3}}  # a node group the components did not make
    assert gpu_pool_gpus(Resource("aws:eks/nodeGroup:NodeGroup", "g", "urn:pulumi:s::p::aws:eks/nodeGroup:NodeGroup::g", untagged)) == 12


@pytest.mark.parametrize("stack_name", ["dev-eks", "prod-eks"])
def test_every_eks_node_group_carries_the_plan_s_gpus(stack_name: str) -> None:
    from gpu_platform.components.core.labels import GPU_TEMPLATE_TAG
    from tests.conftest import shipped_plan

    plan = shipped_plan(stack_name)
    shapes = {s.name: s for s in plan.stack_config.pool_shapes()}
    groups = [r for r in plan.resources if r.type == "aws:eks/nodeGroup:NodeGroup" and GPU_TEMPLATE_TAG in (r.inputs.get("tags") or {})]
    for r in groups:
        shape = shapes[r.inputs["tags"]["gpu-platform.io/gpu-class"]]
        assert r.inputs["tags"][GPU_TEMPLATE_TAG] == str(shape.gpus_per_node), r.name


# --- none of them computes it itself --------------------------------------------------------------

READERS = ["infra/preflight.py", "infra/preflight_gke.py", *sorted(str(p.relative_to(PROJECT_DIR)) for p in (PROJECT_DIR / "infra" / "report").glob("*.py"))]
READERS += sorted(str(p.relative_to(PROJECT_DIR)) for p in (PROJECT_DIR / "policies").rglob("*.py"))

DERIVATIONS = {
    r"\baccelerator_count\b": "a pool's GPUs per node from its Args",
    r"\.gpu_count\b": "GPUs per node from the catalog",
    r"\bconfigured_zones\b|\.zones\.names\b|\bcluster_zones\(": "a pool's zones from the Args",
    r"\bnode_range\(|\bpool_zone_count\(": "a pool's node count from its bounds",
    r"instance_shape\.(vcpus|memory_mib)": "a class's shape from the catalog",
}
ALLOWED = {
    # The one fallback for a node group the components did not make (no GPU tag): see eks_gpus_per_node.
    ("policies/rules/base.py", r"\.gpu_count\b"),
    # A Compute Engine reservation's own AcceleratorConfig.accelerator_count (what it reserves), compared with the plan's GPUs.
    ("infra/preflight_gke.py", r"\baccelerator_count\b"),
}


@pytest.mark.parametrize("path", READERS)
def test_no_reader_computes_a_pool_s_gpus_or_zones(path: str) -> None:
    text = (PROJECT_DIR / path).read_text(encoding="utf-8")
    found = [f"{what} ({pattern})" for pattern, what in DERIVATIONS.items() if (path, pattern) not in ALLOWED and re.search(pattern, text)]
    assert not found, f"{path} computes {', '.join(found)}: take it from StackConfig.pool_shapes() (NodePoolShape)"


def test_the_policy_pack_counts_a_karpenter_node_pool_by_the_plan_s_physical_gpus() -> None:
    """A shared class's NodePool limits nvidia.com/gpu as advertised (GPUs x clients); the pack's budget counts the plan's
    physical GPUs, which the components write on it. A NodePool the components did not make counts by its limit."""
    from gpu_platform.components.core.labels import PHYSICAL_GPUS_ANNOTATION
    from gpu_platform.policies.rules.base import Resource
    from gpu_platform.policies.rules.karpenter import KARPENTER_NODE_POOL, node_pool_gpus

    spec = {"limits": {"nvidia.com/gpu": "160"}, "template": {"spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}}}
    ours = {"metadata": {"name": "t4-spot", "annotations": {PHYSICAL_GPUS_ANNOTATION: "20"}}, "spec": spec}
    assert node_pool_gpus(Resource(KARPENTER_NODE_POOL, "p", "urn:pulumi:s::p::x::p", ours)) == 20
    assert node_pool_gpus(Resource(KARPENTER_NODE_POOL, "p", "urn:pulumi:s::p::x::p", {"metadata": {"name": "x"}, "spec": spec})) == 160


def test_every_karpenter_node_pool_carries_the_plan_s_physical_gpus() -> None:
    """prod-eks (Karpenter): each GPU NodePool's annotation is its tier's maximum nodes times the class's shape's GPUs."""
    from gpu_platform.components.core.labels import PHYSICAL_GPUS_ANNOTATION
    from tests.conftest import shipped_plan

    plan = shipped_plan("prod-eks")
    shapes = {s.name: s for s in plan.stack_config.pool_shapes()}
    pools = [r for r in plan.resources if r.type == "kubernetes:karpenter.sh/v1:NodePool"]
    assert pools
    for r in pools:
        shape = shapes[r.inputs["spec"]["template"]["spec"]["nodeClassRef"]["name"]]
        cap = r.inputs["metadata"]["name"].removeprefix(shape.name + "-")
        tier = next(p for p in plan.stack_config.eks_node_groups.classes if p.name == shape.name)
        maximum = next(g.max_nodes for g in tier.node_groups() if g.capacity.value == cap)
        assert r.inputs["metadata"]["annotations"][PHYSICAL_GPUS_ANNOTATION] == str(maximum * shape.gpus_per_node), r.name
