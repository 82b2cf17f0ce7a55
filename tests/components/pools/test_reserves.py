"""The kubelet's reserves (components/pools/reserves.py): GKE's documented tiers, the EKS AMIs' per-pod memory,
each cloud's formula, the documented defaults, and what a node leaves for pods."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.pools.reserves import (
    KUBELET_DEFAULT_MAX_PODS,
    DaemonSetOverhead,
    NodeReserves,
    ReserveFormula,
    allocatable,
    eks_default_max_pods,
    eks_reserved_memory_mib,
    gke_reserved_cpu_millicores,
    gke_reserved_memory_mib,
)
from tests.components.pools.test_awaits import gpu_pool


def test_each_cloud_has_its_formula() -> None:
    assert ReserveFormula.of(Cloud.GCP) is ReserveFormula.GKE
    assert ReserveFormula.of(Cloud.AWS) is ReserveFormula.EKS


def test_documented_defaults() -> None:
    reserves = NodeReserves()
    assert (reserves.formula, reserves.max_pods, reserves.eviction_memory, reserves.extra_cpu, reserves.extra_memory) == (None, None, 100, 0, 0)
    assert (DaemonSetOverhead().cpu, DaemonSetOverhead().memory) == (300, 512)


def test_gke_tiers() -> None:
    assert gke_reserved_memory_mib(512) == 255  # under 1 GiB
    assert gke_reserved_memory_mib(4096) == 1024  # 25% of the first 4 GiB
    assert gke_reserved_memory_mib(8192) == 1024 + 820  # + 20% of the next 4 GiB, rounded up
    assert gke_reserved_cpu_millicores(1) == 60 and gke_reserved_cpu_millicores(4) == 80 and gke_reserved_cpu_millicores(8) == 90


def test_eks_memory_is_255_plus_11_per_pod_and_max_pods_come_from_the_catalog() -> None:
    assert eks_reserved_memory_mib(29) == 255 + 11 * 29
    assert eks_default_max_pods("g4dn.xlarge") == 29
    assert eks_default_max_pods("no-such.type") == KUBELET_DEFAULT_MAX_PODS == 110


def test_allocatable_takes_reserves_eviction_and_daemonsets() -> None:
    pool = gpu_pool("t4", 0)  # n1-standard-8: 8 vCPUs, 30720 MiB, 2 GPUs, GKE's formula
    node = allocatable(pool)
    assert (node.formula, node.max_pods, node.gpus) == ("gke", None, 2)
    assert node.cpu == 8000 - 90 - 300
    assert node.memory_mib == 30720 - gke_reserved_memory_mib(30720) - 100 - 512
    extra = allocatable(pool, NodeReserves(extra_cpu="1", extra_memory="1Gi"))
    assert (node.cpu - extra.cpu, node.memory_mib - extra.memory_mib) == (1000, 1024)


def test_the_eks_formula_counts_pods_and_the_none_formula_only_eviction() -> None:
    eks = dataclasses.replace(gpu_pool("g4", 0), machine_type="g4dn.xlarge", reserve_formula=ReserveFormula.EKS)
    node = allocatable(eks)
    assert (node.formula, node.max_pods, node.reserved_memory_mib) == ("eks", 29, 255 + 11 * 29 + 100)
    bare = allocatable(gpu_pool("t4", 0), NodeReserves(formula=ReserveFormula.NONE), DaemonSetOverhead(cpu=0, memory=0))
    assert (bare.cpu, bare.memory_mib) == (8000, 30720 - 100)


def test_a_node_never_leaves_less_than_nothing() -> None:
    tiny = dataclasses.replace(gpu_pool("tiny", 0), vcpus=1, memory_mib=512)
    node = allocatable(tiny, daemonsets=DaemonSetOverhead(cpu="4", memory="4Gi"))
    assert (node.cpu, node.memory_mib) == (0, 0)


def test_fails_when_max_pods_is_out_of_range() -> None:
    with pytest.raises(ValidationError) as info:
        NodeReserves(max_pods=0)
    assert info.value.errors()[0]["loc"] == ("max_pods",)
