"""One capacity model per pool: what a pool offers (its schedulable GPUs once shared, its zones) is the plan's
NodePoolShape, and every tool reads it there. On a stack with a time-shared L4 pool (GKE) and a time-shared
class (EKS), Kueue's objects, plan-capacity, simulate's node capacity and the local (kwok) nodes report the
same schedulable GPU count for the same pool; the literal amounts make a reader that counts physical GPUs
itself (1 L4 a node, 1 T4 a node) fail here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.components.core.labels import GPU_RESOURCE
from tests.conftest import PROJECT_DIR

L4_CLIENTS = 8
"""The GKE pool: 1 L4 a node, time-shared 8 ways, 0..8 nodes: 8 schedulable GPUs a node, 64 in all."""
T4_CLIENTS = 4
"""The EKS class: dev-eks's t4 (g4dn.xlarge, 1 T4), time-shared 4 ways; 0..4 spot and 0..4 on-demand
fallback nodes: 4 schedulable GPUs a node, 32 in all."""


def _gke(config: dict[str, Any]) -> None:
    config["gpu-platform:gke"]["gpu_pools"].append(
        {
            "name": "l4",
            "machine_type": "g2-standard-8",
            "accelerator_type": "nvidia-l4",
            "accelerator_count": 1,
            "capacity": "on_demand",
            "autoscaling": {"scope": "total", "min_nodes": 0, "max_nodes": 8},
            "gpu_sharing": {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": L4_CLIENTS},
        }
    )
    config["gpu-platform:queues"] = {}


def _eks(config: dict[str, Any]) -> None:
    (t4,) = [c for c in config["gpu-platform:eks_node_groups"]["classes"] if c["name"] == "t4"]
    t4["gpu_sharing"] = {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": T4_CLIENTS}
    config["gpu-platform:queues"] = {}


# stack -> (the shipped stack it changes, the change, the shared pool, its schedulable GPUs a node, its max nodes)
STACKS = {
    "shared-gke": ("dev-gke", _gke, "l4", L4_CLIENTS, 8),
    "shared-eks": ("dev-eks", _eks, "t4", T4_CLIENTS, 8),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project with the two stacks."""
    root = tmp_path_factory.mktemp("shared")
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "stacks").mkdir()
    for name, (base, change, *_) in STACKS.items():
        document = yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{base}.yaml").read_text())
        change(document["config"])
        (root / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(document))
    return root


def _kueue_gpus(stack: Any, pool: str) -> int:
    """The nvidia.com/gpu Kueue's objects hold of ``pool``'s flavors (its one, or one per rung of a stated ladder:
    components/queues/plan.py flavor_slots): the Cohort's and every ClusterQueue's nominal quota."""
    from gpu_platform.components.queues.plan import flavor_slots

    plan = stack.queues_plan
    (shape,) = [s for s in stack.pool_shapes() if s.name == pool]
    flavors = {slot.name for slot in flavor_slots(shape)}
    assert flavors <= {f["metadata"]["name"] for f in plan.flavors}, flavors
    total = 0
    for body in [plan.cohort, *plan.cluster_queues]:
        for group in body["spec"].get("resourceGroups", []):
            for entry in group["flavors"]:
                if entry["name"] in flavors:
                    total += sum(r["nominalQuota"] for r in entry["resources"] if r["name"] == GPU_RESOURCE)
    return total


def _plan_capacity(project: Path, stack: str, pool: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    from gpu_platform.infra.cli import main

    out = project / f"{stack}-capacity.json"
    args = ["plan-capacity", stack, "--pool", pool, "--cpu", "100m", "--memory", "256", "--gpus", "1"]
    args += ["--run-duration", "10m", "--runs", "16", "--nodes", "1", "--json", str(out), "--project-dir", str(project)]
    main(args)
    return json.loads(out.read_text()), capsys.readouterr().out


@pytest.mark.parametrize("name", list(STACKS))
def test_a_shared_pool_reports_the_same_schedulable_gpus_in_every_tool(name: str, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.apply.nodes import pool_nodes
    from gpu_platform.infra.simulate.runs import configurations

    _, _, pool, per_node, max_nodes = STACKS[name]
    (config,) = configurations(project, name, [], [], 1)
    stack = config.stack
    (shape,) = [s for s in stack.pool_shapes() if s.name == pool]
    assert (shape.gpus_per_node, shape.schedulable_gpus_per_node, shape.max_nodes) == (1, per_node, max_nodes)

    # Kueue: the pool's flavor holds max nodes x the schedulable GPUs a node (64 L4 slices; 32 T4 slices).
    assert _kueue_gpus(stack, pool) == max_nodes * per_node

    # plan-capacity: a one-GPU step fits per_node times on a node, and the output says the GPUs are shared.
    document, printed = _plan_capacity(project, name, pool, capsys)
    assert document["node"]["gpus"] == per_node and document["jobs_per_node"] == per_node
    assert (document["physical_gpus_per_node"], document["units_per_gpu"]) == (1, per_node)
    assert f"shared by {per_node} clients (TIME_SHARING): {per_node} schedulable GPUs" in printed
    assert f"jobs per node: {per_node} (limited by gpus of step step)" in printed

    # simulate: every model group of the pool (its spot and on-demand groups) offers per_node GPUs a node.
    groups = [g for g in config.inputs.groups if g.pool == pool]
    assert groups and {g.allocatable.gpus for g in groups} == {per_node}
    assert {g.gpus_per_node for g in groups} == {1}, "physical GPUs stay what is paid for"

    # The local nodes: kwok nodes of the pool advertise per_node nvidia.com/gpu.
    nodes = [n for n in pool_nodes(stack.pool_shapes()) if n["metadata"]["labels"]["gpu-platform.io/kwok-pool"] == pool]
    assert nodes and {n["status"]["allocatable"][GPU_RESOURCE] for n in nodes} == {str(per_node)}


def test_the_local_nodes_carry_the_pools_zones_and_region(project: Path) -> None:
    from gpu_platform.infra.apply.nodes import pool_nodes
    from gpu_platform.infra.stack.read import load_stack

    stack = load_stack(project, "shared-gke")
    nodes = pool_nodes(stack.pool_shapes(), {"l4": 4, "t4": 3})
    zones = {
        pool: [n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes if n["metadata"]["labels"]["gpu-platform.io/kwok-pool"] == pool]
        for pool in ("l4", "t4")
    }
    # Spread over the cluster's node locations, node i in zone i mod 2.
    assert zones == {"l4": ["us-central1-b", "us-central1-c"] * 2, "t4": ["us-central1-b", "us-central1-c", "us-central1-b"]}
    assert {n["metadata"]["labels"]["topology.kubernetes.io/region"] for n in nodes} == {"us-central1"}
    eks = load_stack(project, "shared-eks")
    labels = [n["metadata"]["labels"] for n in pool_nodes(eks.pool_shapes(), {"t4": 2})]
    assert {(lb["topology.kubernetes.io/zone"], lb["topology.kubernetes.io/region"]) for lb in labels} == {
        ("ap-northeast-2a", "ap-northeast-2"),
        ("ap-northeast-2c", "ap-northeast-2"),
    }


def test_simulate_runs_clients_times_the_pods_a_node_on_a_shared_pool(project: Path) -> None:
    """16 one-GPU pods on the L4 pool shared 8 ways: two nodes of 8 pods each (not 16 nodes of one)."""
    from gpu_platform.infra.simulate.inputs import Job, PodSpec, Resources, Stage
    from gpu_platform.infra.simulate.prices import PriceTable
    from gpu_platform.infra.simulate.runs import configurations, run

    (config,) = configurations(project, "shared-gke", [], [], 1)
    pod = PodSpec("worker", Resources(cpu=100, memory=256, gpus=1), pools=("l4",), tolerations=None)
    jobs = [Job(0.0, "default", f"j{i}", (Stage.of((pod,), 3600.0),)) for i in range(16)]
    outcome = run(config.inputs, jobs, None, PriceTable.shipped())
    placed: dict[str, int] = {}
    for record in outcome.trace.pods:
        if record.node is not None and record.running is not None:
            placed[record.node] = placed.get(record.node, 0) + 1
    assert sorted(placed.values()) == [L4_CLIENTS, L4_CLIENTS]


# --- cross-feature checks on the model: one line naming both keys ---------------------------------------------

IMAGE = "nvcr.io/nvidia/tritonserver:25.01-py3"


def _lines(project: Path, name: str, base: str, change: Any) -> list[str]:
    """The ConfigError lines of stack ``name``: ``base`` changed by ``change``."""
    from gpu_platform.infra.stack.errors import ConfigError
    from gpu_platform.infra.stack.read import load_stack

    document = yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{base}.yaml").read_text())
    change(document["config"])
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError) as error:
        load_stack(project, name)
    return list(error.value.lines)


def test_inference_replicas_above_what_their_pool_can_ever_hold_are_refused(project: Path) -> None:
    """dev-gke's t4 pool holds 80 GPUs at its maximum (40 nodes x 2): 81 one-GPU replicas never fit, 80 do."""

    def replicas(count: int) -> Any:
        def change(config: dict[str, Any]) -> None:
            config["gpu-platform:inference"] = {"image": IMAGE, "pool": "t4", "max_replicas": count}

        return change

    assert _lines(project, "replicas-81", "dev-gke", replicas(81)) == [
        "gpu-platform:inference.max_replicas: max_replicas 81 x gpus 1 = 81 GPUs, more than pool t4 holds at its maximum "
        "(40 nodes x 2 = 80); lower max_replicas or raise the pool's max_nodes (got 81)"
    ]
    # On the L4 pool shared 8 ways the same count is the schedulable one: 8 nodes x 8 = 64.
    _, change, *_ = STACKS["shared-gke"]

    def shared(config: dict[str, Any]) -> None:
        change(config)
        config["gpu-platform:inference"] = {"image": IMAGE, "pool": "l4", "max_replicas": 65}

    assert _lines(project, "replicas-65", "dev-gke", shared) == [
        "gpu-platform:inference.max_replicas: max_replicas 65 x gpus 1 = 65 GPUs, more than pool l4 holds at its maximum "
        "(8 nodes x 8 = 64); lower max_replicas or raise the pool's max_nodes (got 65)"
    ]


def test_warm_capacity_and_inference_on_a_queued_provisioning_pool_are_refused(project: Path) -> None:
    """A queued-provisioning pool's nodes come only for a ProvisioningRequest: placeholders and replicas never land."""

    def change(config: dict[str, Any]) -> None:
        config["gpu-platform:gke"]["gpu_pools"].append(
            {
                "name": "dws",
                "machine_type": "a2-highgpu-1g",
                "accelerator_type": "nvidia-tesla-a100",
                "capacity": "on_demand",
                "location_policy": "ANY",
                "queued_provisioning": True,
                "autoscaling": {"scope": "total", "min_nodes": 0, "max_nodes": 4},
            }
        )
        # With the queues, which a queued pool needs (else refused on its own: tests/components/queues/test_dws.py).
        config["gpu-platform:queues"] = {}
        config["gpu-platform:warm_capacity"] = {"pools": {"dws": 1}}
        config["gpu-platform:inference"] = {"image": IMAGE, "pool": "dws", "max_replicas": 2}

    lines = _lines(project, "queued", "dev-gke", change)
    assert sorted(lines) == [
        "gpu-platform:inference.pool: pool dws has queued_provisioning: its nodes come only for a ProvisioningRequest, "
        'so the inference pods can never land there; use a GPU pool without it (scheduler, t4) (got "dws")',
        "gpu-platform:warm_capacity.pools.dws: pool dws has queued_provisioning: its nodes come only for a "
        "ProvisioningRequest, so placeholder pods can never land there; remove the pool from warm capacity or turn "
        "queued_provisioning off (got 1)",
    ]


def test_dask_workers_and_notebooks_on_a_queued_provisioning_pool_are_refused(project: Path) -> None:
    """dev-gke's Dask workers and GPU notebooks land on its first GPU pool: queued, they would wait for good."""

    def change(config: dict[str, Any]) -> None:
        (t4,) = config["gpu-platform:gke"]["gpu_pools"]
        t4.update(queued_provisioning=True, location_policy="ANY", autoscaling={"scope": "total", "min_nodes": 0, "max_nodes": 40})
        config["gpu-platform:queues"] = {}  # what a DWS pool needs (its ProvisioningRequests come from the queues)

    assert _lines(project, "queued-dask", "dev-gke", change) == [
        "gpu-platform:dask: the Dask workers, tenant team-a's notebook, tenant team-b's notebook are placed on pool t4, which "
        "has queued_provisioning: its nodes come only for a ProvisioningRequest, so these pods can never land there; put a "
        'GPU pool without queued_provisioning first among the pools, or turn queued_provisioning off (got "t4")'
    ]
