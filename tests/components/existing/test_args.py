"""ExistingClusterArgs (issue 37 item 2): a cluster the platform did not create, described by its pools; every
default, validator and the shapes it gives every reader."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

from gpu_platform.components import ExistingClusterArgs, ExistingPoolArgs
from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.components.core.labels import EKS_NODEGROUP_LABEL, GPU_RESOURCE, NODE_POOL_LABEL, PoolRole
from gpu_platform.components.pools.shapes import CapacityStrategy, TaintEffect
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.read import load_stack
from tests.conftest import PROJECT_DIR

SYSTEM = {"name": "system", "role": "system", "machine_type": "e2-standard-8", "min_nodes": 2, "max_nodes": 4}
L4 = {"name": "gpu-l4", "machine_type": "g2-standard-24", "accelerator_type": "nvidia-l4", "max_nodes": 8}
EKS_SYSTEM = {"name": "system", "role": "system", "machine_type": "m6i.xlarge", "min_nodes": 2, "max_nodes": 3}
EKS_GPU = {"name": "a10g", "machine_type": "g5.12xlarge", "max_nodes": 4}


def gke(*pools: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    return {"kind": "gke", "pools": list(pools) or [SYSTEM, L4], **overrides}


def refused(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        ExistingClusterArgs.model_validate(data)
    return format_validation_error(info.value, ExistingClusterArgs)


def test_defaults() -> None:
    args = ExistingClusterArgs.model_validate(gke())
    assert (args.context, args.region) == (None, None)
    pool = args.pools[1]
    assert pool.role is PoolRole.GPU  # role: gpu by default
    assert (pool.min_nodes, pool.capacity, pool.zones, pool.labels, pool.gpu_sharing, pool.queued_provisioning) == (
        0,
        CapacityStrategy.ON_DEMAND,
        None,
        {},
        None,
        False,
    )
    assert (pool.node_selector, pool.taints, pool.gpus_per_node, pool.shape, pool.gpu_partition_size) == (None, None, None, None, None)


def test_a_gke_pool_is_selected_by_its_node_pool_label_and_its_gpu_nodes_carry_gkes_gpu_taint_by_default() -> None:
    system, gpu = ExistingClusterArgs.model_validate(gke()).pool_shapes()
    assert gpu.placement.node_selector == {NODE_POOL_LABEL: "gpu-l4"}
    assert [(t.key, t.value, t.effect) for t in gpu.taints] == [(GPU_RESOURCE, "present", TaintEffect.NO_SCHEDULE)]
    assert gpu.placement.tolerations == gpu.taints
    assert system.placement.node_selector == {NODE_POOL_LABEL: "system"} and system.taints == ()


def test_an_eks_group_is_selected_by_its_node_group_label_and_carries_no_taint_by_default() -> None:
    system, gpu = ExistingClusterArgs.model_validate({"kind": "eks", "pools": [EKS_SYSTEM, EKS_GPU]}).pool_shapes()
    assert gpu.placement.node_selector == {EKS_NODEGROUP_LABEL: "a10g"} and gpu.taints == ()
    assert system.placement.node_selector == {EKS_NODEGROUP_LABEL: "system"}


def test_the_shapes_count_what_the_catalog_says_the_machines_hold() -> None:
    """g2-standard-24 carries 2 L4s, 24 vCPUs and 96 GiB; g5.12xlarge 4 A10Gs, 48 vCPUs and 192 GiB."""
    _, l4 = ExistingClusterArgs.model_validate(gke()).pool_shapes()
    assert (l4.vcpus, l4.memory_mib, l4.gpus_per_node, l4.accelerator, l4.max_nodes, l4.max_schedulable_gpus) == (24, 96 * 1024, 2, "nvidia-l4", 8, 16)
    _, a10g = ExistingClusterArgs.model_validate({"kind": "eks", "pools": [EKS_SYSTEM, EKS_GPU]}).pool_shapes()
    assert (a10g.vcpus, a10g.memory_mib, a10g.gpus_per_node, a10g.accelerator, a10g.max_schedulable_gpus) == (48, 192 * 1024, 4, "nvidia-a10g", 16)


def test_a_shared_pool_offers_its_clients_and_a_mig_pool_its_instances() -> None:
    shared = {**L4, "gpu_sharing": {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}}
    _, pool = ExistingClusterArgs.model_validate(gke(SYSTEM, shared)).pool_shapes()
    assert (pool.gpus_per_node, pool.schedulable_gpus_per_node, pool.max_schedulable_gpus) == (2, 8, 64)
    mig = {"name": "a100", "machine_type": "a2-highgpu-1g", "accelerator_type": "nvidia-tesla-a100", "gpu_partition_size": "1g.5gb", "max_nodes": 2}
    _, pool = ExistingClusterArgs.model_validate(gke(SYSTEM, mig)).pool_shapes()
    assert (pool.gpus_per_node, pool.schedulable_gpus_per_node) == (1, 7)  # an A100 40GB cuts into 7 1g.5gb instances


def test_zones_region_and_bounds_are_the_shapes() -> None:
    pool = {**L4, "min_nodes": 1, "zones": ["us-central1-a", "us-central1-b"]}
    _, shape = ExistingClusterArgs.model_validate(gke(SYSTEM, pool, region="us-central1")).pool_shapes()
    assert (shape.zones, shape.zone_count, shape.region, shape.min_nodes, shape.max_nodes) == (("us-central1-a", "us-central1-b"), 2, "us-central1", 1, 8)
    assert shape.zone_names() == ("us-central1-a", "us-central1-b")


def test_the_plan_is_made_once_and_again_after_a_copy_with_changes() -> None:
    args = ExistingClusterArgs.model_validate(gke())
    assert args.plan is args.plan
    bigger = args.model_copy(update={"pools": [args.pools[0], args.pools[1].model_copy(update={"max_nodes": 9})]})
    assert bigger.pool_shapes()[1].max_nodes == 9 and args.pool_shapes()[1].max_nodes == 8


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (gke(SYSTEM, L4, L4), "pools: pools lists a name twice (system, gpu-l4, gpu-l4)"),
        (gke(L4), "pools: exactly one pool has role system, where the platform's controllers run (got none)"),
        (gke(SYSTEM, {**SYSTEM, "name": "system2"}, L4), "pools: exactly one pool has role system, where the platform's controllers run (got system, system2)"),
        (gke(SYSTEM, {k: v for k, v in L4.items() if k != "accelerator_type"}), "pools[1].accelerator_type: a GKE GPU pool names its accelerator type"),
        (gke(SYSTEM, {**L4, "machine_type": "n2-standard-8"}), "pools[1].machine_type: machine_type n2-standard-8"),
        (gke(SYSTEM, {**L4, "min_nodes": 9}), "pools[1].min_nodes: min_nodes 9 is above max_nodes 8; use at most 8"),
        (gke(SYSTEM, {**L4, "zones": ["us-central1-a", "us-central1-a"]}), "pools[1].zones: zones lists a zone twice"),
        (gke(SYSTEM, {**L4, "zones": ["europe-west4-a"]}, region="us-central1"), "pools[1].zones[0]: zone europe-west4-a is not a zone of us-central1"),
        (gke(SYSTEM, {**L4, "zones": ["us-central1-a", "us-central1-f"]}), "pools[1].zones[1]: zone us-central1-f does not offer nvidia-l4"),
        (gke({**SYSTEM, "accelerator_type": "nvidia-l4"}, L4), "pools[0].accelerator_type: accelerator_type applies to GPU pools"),
        (gke(SYSTEM, {**L4, "node_selector": {"bad key!": "x"}}), "pools[1].node_selector.bad key!"),
        (gke(SYSTEM, L4, context="my context"), "context: context must be a kubeconfig context name, without whitespace"),
        (
            {"kind": "eks", "pools": [EKS_SYSTEM, {**EKS_GPU, "accelerator_type": "nvidia-a10g"}]},
            "pools[1].accelerator_type: accelerator_type applies to GKE pools",
        ),
        ({"kind": "eks", "pools": [EKS_SYSTEM, {**EKS_GPU, "queued_provisioning": True}]}, "pools[1].queued_provisioning: queued provisioning is GKE's"),
        ({"kind": "eks", "pools": [EKS_SYSTEM, {**EKS_GPU, "gpus_per_node": 2}]}, "pools[1].gpus_per_node: gpus_per_node 2 contradicts g5.12xlarge"),
        ({"kind": "eks", "pools": [EKS_SYSTEM, {**EKS_GPU, "machine_type": "m6i.xlarge"}]}, "pools[1].instance_types"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_refusals_name_the_key(data: dict[str, Any], line: str) -> None:
    lines = refused(data)
    assert len(lines) == 1 and lines[0].startswith(line), lines


@pytest.mark.parametrize("name", ["dev-gke", "prod-gke", "dev-eks", "prod-eks"])
def test_a_shipped_stacks_pools_described_as_an_existing_cluster_are_the_same_pools(name: str) -> None:
    """of_shapes: the stack's planned pools, described as existing ones, give every reader the same model (what a pod
    selects and tolerates, the machines, the GPUs a pool holds, its bounds and zones)."""
    config = load_stack(PROJECT_DIR, name)
    planned = config.pool_shapes()
    described = ExistingClusterArgs.of_shapes(config.cloud.kind, planned, region=config.region).pool_shapes()

    def model(shape: Any) -> dict[str, Any]:
        fields = dataclasses.asdict(shape)
        fields.pop("per_zone_over")  # how a GKE pool's bounds are written in its stack file, not what it holds
        # The labels the nodes carry: a described pool's include the ones it is selected by (which the cloud sets).
        fields["labels"] = {**shape.labels, **shape.placement.node_selector}
        return {**fields, "schedulable": shape.max_schedulable_gpus}

    assert [model(s) for s in described] == [model(s) for s in planned]
    assert sum(s.max_schedulable_gpus for s in described) > 0


def test_a_pool_given_as_args_or_as_data_is_the_same() -> None:
    pool = ExistingPoolArgs.model_validate(L4)
    assert (
        ExistingClusterArgs(kind=ClusterKind.GKE, pools=[ExistingPoolArgs.model_validate(SYSTEM), pool]).pool_shapes()
        == ExistingClusterArgs.model_validate(gke()).pool_shapes()
    )
