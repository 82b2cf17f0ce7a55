"""GpuGkeClusterArgs: every validator refuses a bad value, naming the key and what is allowed.

The configs go through StackConfig, as a stack file's would, and are checked on the line
the user sees: ``gpu-platform:<key path>: <message> (got <value>)``.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gpu_platform.components import GpuGkeClusterArgs
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from tests.factories import a100_pool, gke, stack, t4_pool


def refusal(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate(config)
    return format_validation_error(info.value, StackConfig, "gpu-platform")


def assert_refused(config: dict[str, Any], key: str, *fragments: str) -> None:
    lines = refusal(config)
    matching = [line for line in lines if line.startswith(f"gpu-platform:{key}: ")]
    assert matching, f"no problem reported at {key}; got {lines}"
    for fragment in fragments:
        assert any(fragment in line for line in matching), f"{fragment!r} not in {matching}"


def test_seed_config_is_valid() -> None:
    config = StackConfig.model_validate(stack())
    assert config.gke is not None
    assert config.gke.gpu_pools[0].gpus_per_node == 2


# --- GPU shape ------------------------------------------------------------------------------


# --- images, drivers, placement -------------------------------------------------------------


def test_fails_when_latest_driver_is_asked_on_ubuntu() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(image_type="UBUNTU_CONTAINERD", image_streaming=False, driver_version="LATEST")]),
        "gke.gpu_pools[0].driver_version",
        "driver_version LATEST is offered on COS only",
    )


def test_fails_when_driver_version_is_unknown() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(driver_version="535")]),
        "gke.gpu_pools[0].driver_version",
        "'DEFAULT', 'LATEST' or 'INSTALLATION_DISABLED'",
    )


def test_fails_when_compact_placement_spans_two_zones() -> None:
    assert_refused(
        stack(gpu_pools=[a100_pool(compact_placement=True)]),
        "gke.gpu_pools[0].compact_placement",
        "compact_placement needs exactly one zone (got us-central1-b, us-central1-c)",
    )


# --- autoscaling ----------------------------------------------------------------------------


# --- names, labels and taints ---------------------------------------------------------------


def test_fails_when_pool_names_collide() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(), t4_pool()]),
        "gke.gpu_pools[1].name",
        "pool name t4 is already used by gpu_pools[0]",
    )


def test_fails_when_spot_pair_collides_with_another_pool() -> None:
    assert_refused(
        stack(gpu_pools=[a100_pool(), a100_pool(name="a100-spot", capacity="spot")]),
        "gke.gpu_pools[1].name",
        "node pool name a100-spot is already used by gpu_pools[0]",
    )


def test_fails_when_compute_class_name_is_reserved() -> None:
    assert_refused(
        stack(gpu_pools=[a100_pool(name="gke-a100")]),
        "gke.gpu_pools[0].name",
        "may not start with 'gke' or 'autopilot'",
    )


# --- cluster ----------------------------------------------------------------------------------


def test_fails_when_location_is_neither_region_nor_zone() -> None:
    assert_refused(stack(location="us central"), "gke.location", "is neither a region (us-central1) nor a zone")


def test_fails_when_node_location_is_outside_the_region() -> None:
    assert_refused(
        stack(node_locations=["us-central1-b", "europe-west4-a"]),
        "gke.node_locations[1]",
        "zone europe-west4-a is outside the cluster's region us-central1",
    )


def test_fails_when_pool_zone_is_not_a_cluster_zone() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(node_locations=["us-central1-f"])]),
        "gke.gpu_pools[0].node_locations[0]",
        "zone us-central1-f is not one of the cluster's node locations (us-central1-b, us-central1-c)",
    )


def test_fails_when_there_is_no_gpu_pool() -> None:
    assert_refused(stack(gpu_pools=[]), "gke.gpu_pools", "at least 1 item")


def test_fails_when_release_channel_is_unknown() -> None:
    assert_refused(stack(release_channel="NIGHTLY"), "gke.release_channel", "'RAPID', 'REGULAR', 'STABLE' or 'EXTENDED'")


def test_fails_when_autoscaling_profile_is_unknown() -> None:
    assert_refused(stack(autoscaling_profile="CHEAP"), "gke.autoscaling_profile", "'BALANCED' or 'OPTIMIZE_UTILIZATION'")


def test_fails_when_private_endpoint_lacks_private_nodes() -> None:
    assert_refused(
        stack(control_plane={"private_endpoint": True}),
        "gke.control_plane.private_endpoint",
        "private_endpoint true needs private_nodes true",
    )


def test_fails_when_authorized_network_is_not_a_cidr() -> None:
    assert_refused(
        stack(control_plane={"authorized_networks": [{"cidr_block": "10.0.0.1/8"}]}),
        "gke.control_plane.authorized_networks[0].cidr_block",
        "'10.0.0.1/8' is not a network in CIDR notation",
    )


def test_fails_when_master_range_is_not_a_slash_28() -> None:
    assert_refused(
        stack(control_plane={"private_nodes": True, "master_ipv4_cidr_block": "172.16.0.0/24"}),
        "gke.control_plane.master_ipv4_cidr_block",
        "must be a /28 (got /24)",
    )


def test_fails_when_cloud_nat_has_no_private_nodes() -> None:
    assert_refused(stack(cloud_nat=True), "gke.cloud_nat", "cloud_nat serves private nodes only")


def test_fails_when_resource_label_breaks_gcp_rules() -> None:
    assert_refused(stack(resource_labels={"Team": "ds"}), "gke.resource_labels", "GCP label key 'Team' is invalid")
    assert_refused(stack(resource_labels={"team": "Data.Science"}), "gke.resource_labels", "GCP label value 'Data.Science'")


def test_fails_when_zonal_cluster_lists_its_own_zone() -> None:
    assert_refused(
        stack(location="us-central1-b", node_locations=["us-central1-b", "us-central1-c"]),
        "gke.node_locations[0]",
        "zone us-central1-b is the zonal cluster's own location; list only the additional zones",
    )


def test_fails_when_configured_pool_names_repeat() -> None:
    assert_refused(
        stack(gpu_pools=[a100_pool(name="x"), t4_pool(name="x")]),
        "gke.gpu_pools[1].name",
        "pool name x is already used by gpu_pools[0]",
    )


def test_fails_when_disk_type_is_not_offered_on_the_machine() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(disk_type="hyperdisk-balanced")]),
        "gke.gpu_pools[0].disk_type",
        "disk_type hyperdisk-balanced is not offered on n1-standard-4; use pd-standard, pd-balanced, pd-ssd",
    )


def test_fails_when_fallback_max_is_set_without_fallback() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(fallback_max_nodes=2)]),
        "gke.gpu_pools[0].fallback_max_nodes",
        "applies to a pool of more than one capacity rung, such as capacity spot_then_on_demand (got capacity on_demand)",
    )


def test_valid_edge_cases_are_accepted() -> None:
    StackConfig.model_validate(stack(min_master_version="latest"))
    StackConfig.model_validate(stack(gpu_pools=[t4_pool(machine_type="n1-highcpu-16")]))
    StackConfig.model_validate(stack(gpu_pools=[a100_pool(machine_type="a3-highgpu-1g", accelerator_type="nvidia-h100-80gb", disk_type="hyperdisk-balanced")]))
    StackConfig.model_validate(stack(location="us-central1-b", node_locations=["us-central1-c"]))


def test_fails_when_cluster_name_is_too_long() -> None:
    assert_refused(stack(cluster_name="a" * 41), "gke.cluster_name", "at most 40 characters")


def test_fails_when_nodes_get_a_basic_role() -> None:
    assert_refused(stack(extra_node_roles=["roles/editor"]), "gke.extra_node_roles", "roles/editor is a basic role")


def test_fails_when_min_master_version_is_malformed() -> None:
    assert_refused(stack(min_master_version="newest"), "gke.min_master_version", "is not a GKE version")


def test_fails_when_cluster_key_is_misspelt() -> None:
    assert_refused(stack(deletion_protect=False), "gke.deletion_protect", "did you mean deletion_protection?")


def test_fails_when_scheduler_pool_gets_an_unknown_gpu() -> None:
    assert_refused(
        stack(scheduler_pool={"accelerator_type": "nvidia-tesla-k80"}),
        "gke.scheduler_pool.accelerator_type",
        "is not a known GKE accelerator",
    )


def test_args_are_frozen() -> None:
    args = GpuGkeClusterArgs.model_validate(gke())
    with pytest.raises(ValidationError):
        args.location = "europe-west4"  # type: ignore[misc]


def test_python_callers_get_the_same_refusal() -> None:
    with pytest.raises(ValidationError) as info:
        GpuGkeClusterArgs.model_validate(gke(gpu_pools=[t4_pool(accelerator_count=3)]))
    (error,) = info.value.errors()
    assert error["loc"] == ("gpu_pools", 0, "accelerator_count")
    assert "use 1, 2 or 4" in error["msg"]


def test_pool_shapes_describe_every_pool_in_total_nodes() -> None:
    args = GpuGkeClusterArgs.model_validate(gke(scheduler_pool={}, gpu_pools=[t4_pool(), a100_pool(fallback_max_nodes=3)]))
    shapes = {s.name: s for s in args.pool_shapes()}
    assert [s.role for s in args.pool_shapes()] == ["system", "scheduler", "gpu", "gpu"]
    system = shapes["system"]
    assert (system.vcpus, system.memory_mib, system.gpus_per_node) == (4, 16 * 1024, 0)
    assert (system.min_nodes, system.max_nodes) == (2, 6)  # 1..3 per zone on two zones
    t4 = shapes["t4"]
    assert (t4.machine_type, t4.gpus_per_node, t4.accelerator) == ("n1-standard-4", 2, "nvidia-tesla-t4")
    assert (t4.min_nodes, t4.max_nodes) == (2, 40)  # the seed's 1..20 per zone on zones b and c
    assert t4.placement.node_selector == {"cloud.google.com/gke-nodepool": "t4"}
    assert [str(t) for t in t4.taints] == ["nvidia.com/gpu=present:NoSchedule"]
    a100 = shapes["a100"]
    assert (a100.min_nodes, a100.max_nodes) == (0, 8 + 3)  # spot 0..8 plus at most 3 on-demand
    assert a100.placement.node_selector == {"cloud.google.com/compute-class": "a100"}
    assert a100.labels["cloud.google.com/compute-class"] == "a100"
    assert shapes["scheduler"].labels["dedicated"] == "scheduler"
    assert (shapes["scheduler"].min_nodes, shapes["scheduler"].max_nodes) == (0, 4)
