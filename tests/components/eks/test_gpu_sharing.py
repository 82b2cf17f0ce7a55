"""GPU sharing on EKS as on GKE: a time-sliced (or MPS) class advertises GPUs x clients, the autoscaler's
node template says so (scale from zero), the device plugin's pinned chart carries the class's config, and
the rules are GKE's (one home: components/pools/sharing.py)."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
import yaml
from pydantic import ValidationError

from gpu_platform.components import GpuNodePoolArgs, SpotFailoverEksNodeGroupsArgs
from gpu_platform.components.eks.node_group_args import GpuClassArgs
from gpu_platform.components.eks.node_group_resources import sharing_config
from gpu_platform.components.pools.sharing import GpuSharing, mig_sharing_problem, shared_request_problem
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from tests.components.eks.test_node_groups import ASG_TAG, build, done
from tests.conftest import Engine, upstream_or_skip
from tests.factories import eks_stack, gpu_class, recipe_stack, t4_pool

TIME_SLICED = {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 4}
TEMPLATE = "k8s.io/cluster-autoscaler/node-template"


@pulumi.runtime.test
def test_a_time_sliced_class_scales_from_zero_with_gpus_times_clients(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build(
        classes=[
            gpu_class(),  # p3.2xlarge, 1 V100, not shared
            gpu_class(name="large", instance_types=["p3.8xlarge"], max_nodes=2, gpu_sharing=TIME_SLICED),  # 4 V100s
        ]
    )

    def check() -> None:
        tags: dict[str, dict[str, str]] = {}
        for t in engine.of_type(ASG_TAG):
            tags.setdefault(t.inputs["autoscalingGroupName"], {})[t.inputs["tag"]["key"]] = t.inputs["tag"]["value"]
        for asg, group in tags.items():
            gpus = group[f"{TEMPLATE}/resources/nvidia.com/gpu"]
            if "-large-" in asg:
                # An empty group's node template: 4 GPUs x 4 clients, and the label that picks the config.
                assert gpus == "16"
                assert group[f"{TEMPLATE}/label/nvidia.com/device-plugin.config"] == "large"
            else:
                assert gpus == "1"
                assert f"{TEMPLATE}/label/nvidia.com/device-plugin.config" not in group
        assert len(tags) == 4
        # The node groups' own labels carry the config name the chart's config manager reads.
        for group in engine.of_type("aws:eks/nodeGroup:NodeGroup"):
            shared = group.name.startswith("c-gpu-large")
            assert (group.inputs["labels"].get("nvidia.com/device-plugin.config") == "large") is shared
        (release,) = [r for r in engine.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "nvidia-device-plugin"]
        assert (release.inputs["version"], release.inputs["name"]) == ("0.20.0", "nvidia-device-plugin-sharing")
        values = release.inputs["values"]
        assert yaml.safe_load(values["config"]["map"]["large"]) == {
            "version": "v1",
            "flags": {"migStrategy": "none"},
            "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
        }
        term = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
        assert term["matchExpressions"][0]["values"] == ["large-on-demand", "large-spot"]
        # The plain DaemonSet keeps the unshared groups only: one device plugin per node.
        (daemonset,) = engine.of_type("kubernetes:apps/v1:DaemonSet")
        plain = daemonset.inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
        assert plain["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [
            "small-on-demand",
            "small-spot",
        ]

    return done(cluster, gpu, check)


@pulumi.runtime.test
def test_no_sharing_no_chart(engine: Engine) -> pulumi.Output[Any]:
    cluster, gpu = build()

    def check() -> None:
        assert not [r for r in engine.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "nvidia-device-plugin"]

    return done(cluster, gpu, check)


def test_mps_uses_the_device_plugins_mps_config() -> None:
    config = sharing_config(GpuSharing(strategy="MPS", max_shared_clients_per_gpu=2))
    assert config["sharing"] == {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}


def test_the_config_renders_in_the_pinned_chart() -> None:
    """The chart turns the class's config into its ConfigMap entry and runs its config manager on the label."""
    import helm_python

    from gpu_platform.components.eks.node_group_resources import device_plugin_sharing_values

    chart = helm_python.Chart.load(str(upstream_or_skip() / "charts" / "nvidia-device-plugin-0.20.0.tgz"))
    cls = GpuClassArgs.model_validate(gpu_class(gpu_sharing=TIME_SLICED))
    out = chart.render(device_plugin_sharing_values([cls], ["small-spot"]), name="nvidia-device-plugin-sharing", namespace="kube-system")
    docs = [d for p, t in out.items() if not p.endswith("NOTES.txt") for d in yaml.safe_load_all(t) if d]
    (configmap,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert yaml.safe_load(configmap["data"]["small"]) == sharing_config(cls.gpu_sharing)  # type: ignore[arg-type]
    plugin = next(d for d in docs if d["kind"] == "DaemonSet" and "mps" not in d["metadata"]["name"])
    env = {e["name"]: e.get("value") for c in plugin["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
    assert env["NODE_LABEL"] == "nvidia.com/device-plugin.config"


def test_sharing_defaults_to_none_and_the_chart_to_0_20_0() -> None:
    assert GpuClassArgs.model_validate(gpu_class()).gpu_sharing is None
    assert GpuClassArgs.model_validate(gpu_class()).advertised_gpus == 1
    assert SpotFailoverEksNodeGroupsArgs.model_validate({"classes": [gpu_class()]}).device_plugin_chart_version == "0.20.0"


def test_fails_when_a_bottlerocket_class_shares_its_gpus() -> None:
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate(eks_stack(classes=[gpu_class(ami_type="BOTTLEROCKET_x86_64_NVIDIA", gpu_sharing=TIME_SLICED)]))
    assert format_validation_error(info.value, StackConfig, "gpu-platform") == [
        "gpu-platform:eks_node_groups.classes[0].gpu_sharing: gpu_sharing needs the device plugin this component "
        "installs; ami_type BOTTLEROCKET_x86_64_NVIDIA ships its own, which does not read it: use AL2023_x86_64_NVIDIA "
        '(got "TIME_SHARING")',
    ]


def test_fails_when_clients_per_gpu_are_out_of_range() -> None:
    with pytest.raises(ValidationError) as info:
        GpuClassArgs.model_validate(gpu_class(gpu_sharing={"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 1}))
    assert info.value.errors()[0]["loc"] == ("gpu_sharing", "max_shared_clients_per_gpu")


def test_the_same_rules_as_gke_one_home() -> None:
    sharing = GpuSharing(strategy="TIME_SHARING", max_shared_clients_per_gpu=2)
    assert mig_sharing_problem(sharing, None) is None
    assert mig_sharing_problem(None, "1g.5gb") is None
    assert mig_sharing_problem(sharing, "1g.5gb") == (
        "gpu_sharing TIME_SHARING and gpu_partition_size 1g.5gb are exclusive: share whole GPUs or partition them with MIG, not both; remove one"
    )
    assert shared_request_problem("the notebook", 1, "t4") is None
    assert shared_request_problem("the notebook", 2, "t4") == (
        "the notebook asks for 2 GPUs on pool t4, whose GPUs are shared: a container there asks for exactly 1"
    )
    # GKE reads the same rule: sharing on a MIG pool is refused.
    with pytest.raises(ValidationError) as info:
        GpuNodePoolArgs.model_validate(
            {
                "name": "a100",
                "machine_type": "a2-highgpu-1g",
                "accelerator_type": "nvidia-tesla-a100",
                "autoscaling": {"scope": "total", "max_nodes": 2},
                "gpu_partition_size": "1g.5gb",
                "gpu_sharing": {"strategy": "TIME_SHARING", "max_shared_clients_per_gpu": 2},
            }
        )
    (error,) = info.value.errors()
    assert error["loc"] == ("gpu_sharing",) and "exclusive" in error["msg"]
    # and MIG only where the GPU has it (GKE's catalog rule, unchanged)
    with pytest.raises(ValidationError):
        GpuNodePoolArgs.model_validate(t4_pool(gpu_partition_size="1g.5gb"))


def test_the_dask_scheduler_recipe() -> None:
    """The recipe of docs/clouds/eks-gpu-sharing.md on prod-eks's classes (cluster autoscaler): the scheduler class time-sliced four
    ways, so its 4 T4 nodes advertise 16 GPUs and the autoscaler's empty-group template says 4 per node."""
    config = recipe_stack()
    assert config.eks_node_groups is not None
    (scheduler,) = [c for c in config.eks_node_groups.classes if c.name == "scheduler"]
    assert scheduler.gpu_sharing == GpuSharing(strategy="TIME_SHARING", max_shared_clients_per_gpu=4)
    assert scheduler.advertised_gpus == 4
