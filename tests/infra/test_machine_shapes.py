"""The catalog's escape hatch: a pool or class states the shape of a machine or instance type
the catalog does not know, and everything that reads shapes uses it (the pool plan, fit
checks, plan-capacity, the autoscaler's node templates, the policy pack, preflight). A stated
shape is refused only where it contradicts itself, the type's name or the catalog: one line
naming the key."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from gpu_platform.components import EksCluster, EksClusterArgs, SpotFailoverEksNodeGroups, SpotFailoverEksNodeGroupsArgs
from gpu_platform.components.catalog.gpus import AWS_INSTANCE_TYPES, GCP_ACCELERATORS, GCP_MACHINE_SHAPES, gcp_name_states
from gpu_platform.components.core.labels import GPU_TEMPLATE_TAG
from gpu_platform.components.pools.reserves import KUBELET_DEFAULT_MAX_PODS, allocatable
from gpu_platform.infra.capacity import CapacityInputs, plan
from gpu_platform.infra.stack.errors import ConfigError
from gpu_platform.infra.stack.read import config_for_engine, load_stack_config
from gpu_platform.policies.evaluate import evaluate, load_policy_config
from gpu_platform.policies.rules import Resource
from tests.conftest import Engine, settled_tree
from tests.factories import eks, eks_node_groups, gke, gpu_class, t4_pool

A4 = {
    "name": "b200",
    "machine_type": "a4-highgpu-8g",
    "accelerator_type": "nvidia-b200",
    "shape": {"vcpus": 224, "memory_gib": 3968},
    "autoscaling": {"scope": "total", "max_nodes": 2},
}
"""GCP's A4 (8x B200, 224 vCPUs, 3968 GB), which the catalog does not know."""
P5EN = {"name": "h200", "instance_types": ["p5en.48xlarge"], "max_nodes": 2, "shape": {"vcpus": 192, "memory_gib": 2048, "gpus": 8, "gpu_type": "H200"}}
"""EC2's p5en.48xlarge (8x H200), as ec2:DescribeInstanceTypes reports it (moto's data)."""


def _load(values: dict[str, Any]) -> Any:
    values = {"gpu-platform:monitoring": {"enabled": False}, **values}
    pulumi.runtime.set_all_config(config_for_engine(values), [])
    return load_stack_config()


def gcp(*pools: dict[str, Any], system: dict[str, Any] | None = None) -> Any:
    cluster = gke(gpu_pools=list(pools) or [t4_pool()], **({"system_pool": system} if system else {}))
    return _load({"gpu-platform:cloud": "gcp", "gcp:project": "ml-platform", "gpu-platform:gke": cluster})


def aws(*classes: dict[str, Any], system: dict[str, Any] | None = None) -> Any:
    cluster = eks(**({"system_node_group": system} if system else {}))
    return _load({"gpu-platform:cloud": "aws", "gpu-platform:eks": cluster, "gpu-platform:eks_node_groups": eks_node_groups(classes=list(classes))})


def one_line(build: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ConfigError) as info:
        build(*args, **kwargs)
    assert len(info.value.lines) == 1, info.value.lines
    return info.value.lines[0]


# --- accepted, and used as stated -------------------------------------------------------


def test_a_gke_pool_of_a_type_the_catalog_lacks_plans_with_its_stated_shape() -> None:
    assert "a4-highgpu-8g" not in GCP_MACHINE_SHAPES and "nvidia-b200" not in GCP_ACCELERATORS
    config = gcp(A4)
    (b200,) = [s for s in config.pool_shapes() if s.name == "b200"]
    # The GPUs come from the name (-8g) when neither accelerator_count nor shape.gpus says.
    assert (b200.vcpus, b200.memory_mib, b200.gpus_per_node, b200.accelerator) == (224, 3968 * 1024, 8, "nvidia-b200")
    assert config.gke.gpu_pools[0].gpus_per_node == 8


def test_a_stated_shape_that_agrees_with_the_catalog_is_accepted() -> None:
    pool = t4_pool(shape={"vcpus": 4, "memory_gib": 15, "gpus": 2, "gpu_type": "nvidia-tesla-t4"})
    (t4,) = [s for s in gcp(pool).pool_shapes() if s.name == "t4"]
    assert (t4.vcpus, t4.memory_mib, t4.gpus_per_node) == (4, 15 * 1024, 2)


def test_an_n1_custom_type_reads_its_size_from_the_name_and_its_limits_from_the_catalog() -> None:
    pool = t4_pool(machine_type="n1-custom-8-30720", accelerator_count=1, shape={"vcpus": 8, "memory_gib": 30})
    (t4,) = [s for s in gcp(pool).pool_shapes() if s.name == "t4"]
    assert (t4.vcpus, t4.memory_mib, t4.gpus_per_node) == (8, 30720, 1)
    assert gcp_name_states("n1-custom-8-30720") == {"vcpus": 8, "memory_mib": 30720}
    assert gcp_name_states("c3-standard-8-lssd") == {"vcpus": 8}
    assert gcp_name_states("a3-ultragpu-8g") == {"gpus": 8}
    assert gcp_name_states("e2-medium") == {}


def test_a_gke_system_pool_of_a_type_the_catalog_lacks() -> None:
    config = gcp(system={"machine_type": "c3-standard-8", "shape": {"vcpus": 8, "memory_gib": 32}})
    (system,) = [s for s in config.pool_shapes() if s.name == "system"]
    assert (system.vcpus, system.memory_mib, system.gpus_per_node) == (8, 32 * 1024, 0)


def test_an_eks_class_of_a_type_the_catalog_lacks_plans_with_its_stated_shape() -> None:
    assert "p5en.48xlarge" not in AWS_INSTANCE_TYPES
    config = aws(P5EN, system={"instance_types": ["m7a.large"], "shape": {"vcpus": 2, "memory_gib": 8}})
    shapes = {s.name: s for s in config.pool_shapes()}
    h200 = shapes["h200"]
    assert (h200.vcpus, h200.memory_mib, h200.gpus_per_node, h200.accelerator) == (192, 2048 * 1024, 8, "nvidia-h200")
    assert (shapes["system"].vcpus, shapes["system"].memory_mib) == (2, 8192)
    # The EKS reserve counts the kubelet's default pods for a type whose ENI limits the catalog lacks.
    assert allocatable(h200).max_pods == KUBELET_DEFAULT_MAX_PODS


def test_plan_capacity_fits_jobs_to_the_stated_shape() -> None:
    (b200,) = [s for s in gcp(A4).pool_shapes() if s.name == "b200"]
    inputs = CapacityInputs.model_validate(
        {"steps": [{"name": "train", "cpu": 20, "memory": "300Gi", "gpus": 1}], "run_duration": "1h", "runs": 16, "window": "1h"}
    )
    result = plan(b200, inputs)
    # 224 vCPUs fit 10 steps of 20 (after reserves) but the 8 GPUs fit 8: GPUs decide.
    assert (result.jobs_per_node, result.limited_by) == (8, "gpus of step train")
    assert result.nodes_needed == 2


def _dask_on_a4(**dask: Any) -> Any:
    return _load({"gpu-platform:cloud": "gcp", "gcp:project": "ml-platform", "gpu-platform:gke": gke(gpu_pools=[A4]), "gpu-platform:dask": dask})


def test_the_dask_fit_checks_measure_against_the_stated_shape() -> None:
    """A worker fits a node of 224 vCPUs and 3968 GiB (the stated shape), not of any catalog type."""
    _dask_on_a4(worker_cpu="200", worker_memory="3000Gi", tenants=[{"name": "team-a", "gpu_quota": 16, "notebook": {"gpus": 8}}])
    line = one_line(_dask_on_a4, worker_cpu="230", worker_memory="16Gi")
    assert line.startswith("gpu-platform:dask.worker_cpu: worker_cpu 230 of the Dask workers fits no node of pool b200 (a4-highgpu-8g)"), line
    line = one_line(_dask_on_a4, worker_memory="4000Gi")
    assert line.startswith("gpu-platform:dask.worker_memory: worker_memory 4000Gi of the Dask workers fits no node of pool b200"), line


# --- refused: one line naming the key -------------------------------------------------


GKE_CONTRADICTIONS = {
    "gpus-vs-name": (dict(A4, shape={"vcpus": 224, "memory_gib": 3968, "gpus": 4}), "gpu_pools[0].shape.gpus", "a4-highgpu-8g carries 8 GPUs"),
    "vcpus-vs-name": (
        dict(A4, machine_type="g2-standard-200", accelerator_type="nvidia-l4", accelerator_count=8),
        "gpu_pools[0].shape.vcpus",
        "g2-standard-200 has 200 vCPUs",
    ),
    "more-gpus-than-the-gpu-allows": (
        dict(A4, machine_type="g2-standard-224", accelerator_type="nvidia-l4", accelerator_count=16),
        "gpu_pools[0].accelerator_count",
        "at most 8",
    ),
    "vcpus-vs-catalog": (t4_pool(shape={"vcpus": 8, "memory_gib": 15}), "gpu_pools[0].shape.vcpus", "the catalog: n1-standard-4 has 4 vCPUs"),
    "memory-vs-catalog": (t4_pool(shape={"vcpus": 4, "memory_gib": 16}), "gpu_pools[0].shape.memory_gib", "n1-standard-4 has 15 GiB"),
    "gpu-type-vs-pool": (
        dict(A4, shape={"vcpus": 224, "memory_gib": 3968, "gpu_type": "nvidia-h100-80gb"}),
        "gpu_pools[0].shape.gpu_type",
        "contradicts accelerator_type nvidia-b200",
    ),
    "gpus-vs-accelerator-count": (
        dict(A4, accelerator_count=8, shape={"vcpus": 224, "memory_gib": 3968, "gpus": 4}),
        "gpu_pools[0].shape.gpus",
        "contradicts accelerator_count 8",
    ),
    "gpu-family": (
        t4_pool(machine_type="c3-standard-8", accelerator_count=1, shape={"vcpus": 8, "memory_gib": 32}),
        "gpu_pools[0].machine_type",
        "runs on n1 machines",
    ),
    "n1-limit": (
        t4_pool(machine_type="n1-custom-64-61440", accelerator_count=1, shape={"vcpus": 64, "memory_gib": 60}),
        "gpu_pools[0].shape.vcpus",
        "at most 48",
    ),
    "custom-memory-vs-name": (
        t4_pool(machine_type="n1-custom-8-30720", accelerator_count=1, shape={"vcpus": 8, "memory_gib": 31}),
        "gpu_pools[0].shape.memory_gib",
        "30720 MiB",
    ),
    "unknown-gpu-on-n1": (
        dict(A4, machine_type="n1-custom-8-30720", shape={"vcpus": 8, "memory_gib": 30}, accelerator_count=1),
        "gpu_pools[0].accelerator_type",
        "does not attach to N1",
    ),
    "not-a-gke-gpu-name": (dict(A4, accelerator_type="B200"), "gpu_pools[0].accelerator_type", "nvidia-<model>"),
    "no-gpus-at-all": (dict(A4, machine_type="a4-highgpu"), "gpu_pools[0].accelerator_count", "needs GPUs on every machine"),
    "gpu-type-with-zero-gpus": (
        dict(A4, shape={"vcpus": 224, "memory_gib": 3968, "gpus": 0, "gpu_type": "nvidia-b200"}),
        "gpu_pools[0].shape.gpus",
        "contradicts gpu_type",
    ),
    "unknown-without-shape": ({k: v for k, v in A4.items() if k != "shape"}, "gpu_pools[0].accelerator_type", "or state the machine's shape"),
    "bad-partition-form": (dict(A4, gpu_partition_size="half"), "gpu_pools[0].gpu_partition_size", "<n>g.<memory>gb"),
}


@pytest.mark.parametrize(("pool", "key", "message"), GKE_CONTRADICTIONS.values(), ids=GKE_CONTRADICTIONS.keys())
def test_a_contradicting_gke_shape_is_one_line_naming_the_key(pool: dict[str, Any], key: str, message: str) -> None:
    line = one_line(gcp, pool)
    assert line.startswith(f"gpu-platform:gke.{key}: "), line
    assert message in line


SYSTEM_CONTRADICTIONS = {
    "gpus-on-a-cpu-pool": (
        {"machine_type": "c3-standard-8", "shape": {"vcpus": 8, "memory_gib": 32, "gpus": 1}},
        "system_pool.shape.gpus",
        "contradicts a CPU pool",
    ),
    "vcpus-vs-name": ({"machine_type": "c3-standard-8", "shape": {"vcpus": 4, "memory_gib": 32}}, "system_pool.shape.vcpus", "c3-standard-8 has 8 vCPUs"),
    "unknown-without-shape": ({"machine_type": "c3-standard-8"}, "system_pool.machine_type", "or state its shape"),
    "not-a-machine-type-name": (
        {"machine_type": "C3_STANDARD", "shape": {"vcpus": 8, "memory_gib": 32}},
        "system_pool.machine_type",
        "not a Compute Engine machine type name",
    ),
}


@pytest.mark.parametrize(("system", "key", "message"), SYSTEM_CONTRADICTIONS.values(), ids=SYSTEM_CONTRADICTIONS.keys())
def test_a_contradicting_system_pool_shape_is_one_line_naming_the_key(system: dict[str, Any], key: str, message: str) -> None:
    line = one_line(gcp, system=system)
    assert line.startswith(f"gpu-platform:gke.{key}: "), line
    assert message in line


def _shape(**changes: Any) -> dict[str, Any]:
    return dict(P5EN, shape={**P5EN["shape"], **changes})


EKS_CONTRADICTIONS = {
    "gpu-class-without-gpus": (dict(P5EN, shape={"vcpus": 192, "memory_gib": 2048}), "classes[0].shape.gpus", "a GPU class needs shape.gpus"),
    "gpu-class-without-gpu-type": (_shape(gpu_type=None), "classes[0].shape.gpu_type", "a GPU class needs shape.gpu_type"),
    "more-gpus-than-the-gpu-allows": (_shape(gpu_type="H100", gpus=16), "classes[0].shape.gpus", "at most 8"),
    "known-type-of-another-shape": (
        dict(P5EN, instance_types=["p5en.48xlarge", "p5.48xlarge"]),
        "classes[0].shape.gpu_type",
        "p5.48xlarge (192 vCPUs, 2048 GiB, 8x H100)",
    ),
    "known-type-memory": (
        dict(P5EN, instance_types=["p3.2xlarge"], shape={"vcpus": 8, "memory_gib": 64, "gpus": 1, "gpu_type": "V100"}),
        "classes[0].shape.memory_gib",
        "contradicts the catalog",
    ),
    "cpu-type-in-a-gpu-class": (dict(P5EN, instance_types=["p5en.48xlarge", "m6i.large"]), "classes[0].instance_types", "is a CPU instance type"),
    "not-an-instance-type-name": (dict(P5EN, instance_types=["P5EN-48XL"]), "classes[0].instance_types", "not an EC2 instance type name"),
    "unknown-without-shape": ({k: v for k, v in P5EN.items() if k != "shape"}, "classes[0].instance_types", "or state the shape"),
    "gpu-type-with-zero-gpus": (_shape(gpus=0), "classes[0].shape.gpus", "contradicts gpu_type"),
}


@pytest.mark.parametrize(("cls", "key", "message"), EKS_CONTRADICTIONS.values(), ids=EKS_CONTRADICTIONS.keys())
def test_a_contradicting_eks_shape_is_one_line_naming_the_key(cls: dict[str, Any], key: str, message: str) -> None:
    line = one_line(aws, cls)
    assert line.startswith(f"gpu-platform:eks_node_groups.{key}: "), line
    assert message in line


def test_a_cpu_node_group_refuses_gpus_in_its_shape() -> None:
    system = {"instance_types": ["m7a.large"], "shape": {"vcpus": 2, "memory_gib": 8, "gpus": 1, "gpu_type": "T4"}}
    with pytest.raises(ConfigError) as info:
        aws(P5EN, system=system)
    # Both fields contradict a CPU node group: one line each, in one run (issue 35).
    assert [line.split(": ", 1)[0] for line in info.value.lines] == [
        "gpu-platform:eks.system_node_group.shape.gpus",
        "gpu-platform:eks.system_node_group.shape.gpu_type",
    ]
    assert all("contradicts a CPU node group" in line for line in info.value.lines)


# --- the deployed objects use the stated shape -------------------------------------------


@pulumi.runtime.test
def test_the_autoscaler_and_the_policy_pack_see_the_stated_gpus(engine: Engine) -> pulumi.Output[Any]:
    args = SpotFailoverEksNodeGroupsArgs.model_validate(eks_node_groups(classes=[gpu_class(), P5EN]))
    cluster = EksCluster("c", EksClusterArgs.model_validate(eks()), gpu_instance_types=args.instance_types())
    gpu = SpotFailoverEksNodeGroups("c-gpu", args, opts=pulumi.ResourceOptions(providers=[cluster.provider]), cluster=cluster.ref)

    def check() -> None:
        groups = {g.name: g for g in engine.of_type("aws:eks/nodeGroup:NodeGroup")}
        spot = groups["c-gpu-h200-spot"].inputs
        assert spot["instanceTypes"] == ["p5en.48xlarge"]
        assert spot["labels"]["k8s.amazonaws.com/accelerator"] == "nvidia-h200"
        assert spot["tags"][GPU_TEMPLATE_TAG] == "8"
        asg_tags = {
            t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in engine.of_type("aws:autoscaling/tag:Tag") if t.name.startswith("c-gpu-h200-spot-")
        }
        assert asg_tags[GPU_TEMPLATE_TAG] == "8"
        # The policy pack counts 8 GPUs a node from the node group itself: 2 nodes x 8 = 16 per group.
        resources = [Resource(g.type, g.name, g.urn, g.inputs, False) for g in groups.values()]
        tight = load_policy_config({"gpu-pool-bounded": {"maxGpusPerPool": 15}})
        bounded = [f for f in evaluate(resources, tight) if f.rule == "gpu-pool-bounded"]
        assert sorted(f.resource for f in bounded) == ["c-gpu-h200-on-demand", "c-gpu-h200-spot"]
        assert all("16 GPUs" in f.message for f in bounded)

    return pulumi.Output.all(settled_tree(cluster, gpu), cluster.kubeconfig).apply(lambda _: check())


def test_a_gpu_type_outside_an_allow_list_is_refused_and_any_type_is_allowed_by_default() -> None:
    group = Resource(
        "aws:eks/nodeGroup:NodeGroup",
        "c-h200-spot",
        "urn:pulumi:dev::gpu-platform::aws:eks/nodeGroup:NodeGroup::c-h200-spot",
        {
            "instanceTypes": ["p5en.48xlarge"],
            "tags": {GPU_TEMPLATE_TAG: "8"},
            "scalingConfig": {"minSize": 0, "maxSize": 2},
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
        },
        False,
    )
    assert [f for f in evaluate([group]) if f.rule == "gpu-type-allowed"] == []
    listed = load_policy_config({"gpu-type-allowed": {"allowedGpuTypes": ["p5.48xlarge"]}})
    (finding,) = [f for f in evaluate([group], listed) if f.rule == "gpu-type-allowed"]
    assert "GPU instance type p5en.48xlarge is not allowed" in finding.message


def test_a_gke_cluster_of_a_type_the_catalog_lacks_deploys_its_stated_gpus_and_passes_the_checks() -> None:
    """The whole component under the recording engine, schema and policy checks included: the node
    pools carry the type and its 8 GPUs, the ComputeClass orders them."""
    from gpu_platform.components import GpuGkeCluster, GpuGkeClusterArgs
    from gpu_platform.infra.testing import run_components

    args = GpuGkeClusterArgs.model_validate(gke(gpu_pools=[dict(A4, capacity="spot_then_on_demand")], project="ml-platform"))
    plan = run_components(lambda: GpuGkeCluster("c", args))
    plan.assert_no_violations()
    pools = {r.name: r.inputs for r in plan.of_type("gcp:container/nodePool:NodePool")}
    for name in ("c-b200-spot", "c-b200-on-demand"):
        node = pools[name]["nodeConfig"]
        assert node["machineType"] == "a4-highgpu-8g"
        assert [(a["type"], a["count"]) for a in node["guestAccelerators"]] == [("nvidia-b200", 8)]
    (compute_class,) = plan.of_type("kubernetes:cloud.google.com/v1:ComputeClass")
    assert [p["nodepools"] for p in compute_class.inputs["spec"]["priorities"]] == [["b200-spot"], ["b200-on-demand"]]
