"""The GKE pools' Args (components/gke/pool_args.py): each pool validator refuses a bad value, naming the key and
what is allowed, on the line the user sees."""

from __future__ import annotations

from tests.components.gke.test_args import assert_refused, refusal
from tests.factories import a100_pool, stack, t4_pool


def test_fails_when_three_t4s_are_asked_for() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(accelerator_count=3)]),
        "gke.gpu_pools[0].accelerator_count",
        "accelerator_count 3 is not offered for nvidia-tesla-t4; use 1, 2 or 4",
        "(got 3)",
    )


def test_fails_when_t4_is_put_on_an_a2_machine() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(machine_type="a2-highgpu-2g")]),
        "gke.gpu_pools[0].accelerator_type",
        "accelerator_type nvidia-tesla-t4 does not run on a2-highgpu-2g",
    )


def test_fails_when_n1_pool_omits_the_gpu_count() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(accelerator_count=None)]),
        "gke.gpu_pools[0].accelerator_count",
        "accelerator_count is required for nvidia-tesla-t4 on n1-standard-4; use 1, 2 or 4",
    )


def test_fails_when_a2_count_contradicts_the_machine_type() -> None:
    assert_refused(
        stack(gpu_pools=[a100_pool(accelerator_count=2)]),
        "gke.gpu_pools[0].accelerator_count",
        "fixes 1x nvidia-tesla-a100; use 1 or leave it unset",
    )


def test_fails_when_n1_machine_is_too_large_for_its_gpus() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(machine_type="n1-standard-96", accelerator_count=2)]),
        "gke.gpu_pools[0].machine_type",
        "too large for 2x nvidia-tesla-t4 (at most 48 vCPUs",
    )


def test_fails_when_accelerator_is_unknown() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(accelerator_type="nvidia-tesla-k80")]),
        "gke.gpu_pools[0].accelerator_type",
        "'nvidia-tesla-k80' is not a known GKE accelerator",
    )


def test_fails_when_mig_partition_is_asked_of_a_t4() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(gpu_partition_size="1g.5gb")]),
        "gke.gpu_pools[0].gpu_partition_size",
        "not offered for nvidia-tesla-t4; allowed: none (MIG needs A100 or H100)",
    )


def test_fails_when_mig_partition_does_not_exist_on_a100() -> None:
    assert_refused(
        stack(gpu_pools=[a100_pool(gpu_partition_size="1g.10gb")]),
        "gke.gpu_pools[0].gpu_partition_size",
        "allowed: 1g.5gb, 2g.10gb, 3g.20gb, 7g.40gb",
    )


def test_fails_when_gpu_sharing_allows_one_client() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(gpu_sharing={"strategy": "MPS", "max_shared_clients_per_gpu": 1})]),
        "gke.gpu_pools[0].gpu_sharing.max_shared_clients_per_gpu",
        "greater than or equal to 2",
    )


def test_fails_when_gpu_sharing_strategy_is_unknown() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(gpu_sharing={"strategy": "SLICING", "max_shared_clients_per_gpu": 4})]),
        "gke.gpu_pools[0].gpu_sharing.strategy",
        "'TIME_SHARING' or 'MPS'",
    )


def test_fails_when_image_streaming_is_on_ubuntu() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(image_type="UBUNTU_CONTAINERD")]),
        "gke.gpu_pools[0].image_streaming",
        "image streaming needs image_type COS_CONTAINERD (got image_type UBUNTU_CONTAINERD)",
    )


def test_fails_when_compact_placement_is_asked_of_n1() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(compact_placement=True, node_locations=["us-central1-b"])]),
        "gke.gpu_pools[0].compact_placement",
        "compact_placement is not offered for n1-standard-4 (N1)",
    )


def test_fails_when_queued_provisioning_has_per_zone_bounds_and_spot() -> None:
    assert_refused(
        stack(gpu_pools=[a100_pool(queued_provisioning=True, capacity="spot", autoscaling={"scope": "per_zone", "min_nodes": 1, "max_nodes": 4})]),
        "gke.gpu_pools[0].queued_provisioning",
        "queued_provisioning needs capacity on_demand (got spot)",
        "autoscaling.scope total (got per_zone)",
        "autoscaling.min_nodes 0 (got 1)",
    )


def test_fails_when_queued_provisioning_is_balanced() -> None:
    assert_refused(
        stack(gpu_pools=[a100_pool(capacity="on_demand", queued_provisioning=True, location_policy="BALANCED")]),
        "gke.gpu_pools[0].queued_provisioning",
        "location_policy ANY (got BALANCED)",
    )


def test_fails_when_migrate_back_to_spot_without_fallback() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(migrate_back_to_spot=True)]),
        "gke.gpu_pools[0].migrate_back_to_spot",
        "applies to a pool of more than one capacity rung, such as capacity spot_then_on_demand (got capacity on_demand)",
    )


def test_fails_when_capacity_strategy_is_unknown() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(capacity="preemptible")]),
        "gke.gpu_pools[0].capacity",
        "'on_demand', 'spot' or 'spot_then_on_demand'",
    )


def test_fails_when_autoscaling_scope_is_missing() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(autoscaling={"min_nodes": 1, "max_nodes": 20})]),
        "gke.gpu_pools[0].autoscaling.scope",
        "required (got nothing)",
    )


def test_fails_when_min_nodes_exceed_max_nodes() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(autoscaling={"scope": "per_zone", "min_nodes": 21, "max_nodes": 20})]),
        "gke.gpu_pools[0].autoscaling.min_nodes",
        "min_nodes 21 is above max_nodes 20; use at most 20",
    )


def test_fails_when_max_nodes_is_zero() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(autoscaling={"scope": "total", "max_nodes": 0})]),
        "gke.gpu_pools[0].autoscaling.max_nodes",
        "greater than or equal to 1",
    )


def test_fails_when_location_policy_is_unknown() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(location_policy="RANDOM")]),
        "gke.gpu_pools[0].location_policy",
        "'BALANCED' or 'ANY'",
    )


def test_fails_when_pool_name_is_not_a_gke_name() -> None:
    assert_refused(stack(gpu_pools=[t4_pool(name="T4_Pool")]), "gke.gpu_pools[0].name", "'T4_Pool' is not a valid pool name")


def test_fails_when_pool_label_uses_a_managed_prefix() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(labels={"cloud.google.com/gke-nodepool": "x"})]),
        "gke.gpu_pools[0].labels.cloud.google.com/gke-nodepool",
        "is under cloud.google.com/, which the kubelet, the cloud or Karpenter manages",
    )


def test_fails_when_label_value_is_invalid() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(labels={"team": "data science"})]),
        "gke.gpu_pools[0].labels.team",
        "is not a valid Kubernetes label value",
    )


def test_fails_when_taint_has_no_value() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(taints=[{"key": "dedicated", "value": ""}])]),
        "gke.gpu_pools[0].taints[0].value",
        "at least 1 character",
    )


def test_fails_when_gpu_taint_is_declared_by_hand() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(taints=[{"key": "nvidia.com/gpu", "value": "present"}])]),
        "gke.gpu_pools[0].taints",
        "taint nvidia.com/gpu is managed by the component",
    )


def test_fails_when_taint_effect_is_unknown() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(taints=[{"key": "dedicated", "value": "x", "effect": "NoRun"}])]),
        "gke.gpu_pools[0].taints[0].effect",
        "'NoSchedule', 'PreferNoSchedule' or 'NoExecute'",
    )


def test_fails_when_pool_key_is_misspelt() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(acelerator_count=2)]),
        "gke.gpu_pools[0].acelerator_count",
        "unknown key; did you mean accelerator_count?",
    )


# --- the capacity ladder -----------------------------------------------------------------------


def test_fails_when_a_ladder_and_a_capacity_are_both_set() -> None:
    assert_refused(
        stack(gpu_pools=[a100_pool(capacity_ladder=[{"kind": "spot"}, {"kind": "on_demand"}])]),
        "gke.gpu_pools[0].capacity_ladder",
        "capacity_ladder replaces capacity; set one of them (got capacity spot_then_on_demand and capacity_ladder spot -> on_demand)",
    )


def test_fails_when_a_gke_ladder_has_a_capacity_block_and_a_rung_after_any_reservation() -> None:
    ladder = [{"kind": "capacity_block", "reservation": "cr-0123456789abcdef0"}, {"kind": "reservation"}, {"kind": "on_demand"}]
    lines = refusal(stack(gpu_pools=[t4_pool(capacity_ladder=ladder)]))
    assert lines == [
        'gpu-platform:gke.gpu_pools[0].capacity_ladder[0].kind: capacity_block is offered on EKS only (EC2 capacity blocks); on GKE use reservation, flex_start, spot or on_demand (got "capacity_block")',
        "gpu-platform:gke.gpu_pools[0].capacity_ladder[2]: rung on_demand comes after reservation(any), which never fails over (it takes on-demand "
        'capacity when no reservation is free); end the ladder there or name the reservation (got "on_demand")',
    ]


def test_fails_when_a_fallback_maximum_is_given_to_a_one_rung_ladder() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(capacity_ladder=[{"kind": "reservation", "reservation": "t4-res"}], fallback_max_nodes=2)]),
        "gke.gpu_pools[0].fallback_max_nodes",
        "(got capacity_ladder reservation(t4-res))",
    )


def test_fails_when_queued_provisioning_is_given_a_ladder() -> None:
    pool = t4_pool(
        capacity_ladder=[{"kind": "flex_start"}, {"kind": "on_demand"}],
        queued_provisioning=True,
        autoscaling={"scope": "total", "min_nodes": 0, "max_nodes": 4},
    )
    assert_refused(stack(gpu_pools=[pool]), "gke.gpu_pools[0].queued_provisioning", "capacity on_demand (got capacity_ladder flex_start(168h) -> on_demand)")


def test_fails_when_a_ladder_pool_would_name_a_reserved_compute_class() -> None:
    assert_refused(
        stack(gpu_pools=[t4_pool(name="gke-t4", capacity_ladder=[{"kind": "flex_start"}, {"kind": "on_demand"}])]),
        "gke.gpu_pools[0].name",
        "would name a ComputeClass",
    )
