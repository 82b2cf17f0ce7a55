"""The cluster protocol (components/core/cluster.py): what an add-on accepts as ``cluster=`` and the checks of
live keywords, each refusal an InputPropertyError naming the keyword and what it accepts."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.components.core.cluster import ClusterComponent, ClusterPools, a_type, check_live, check_pools, on_cluster
from tests.components.pools.test_awaits import gpu_pool
from tests.conftest import Engine

POOLS = ClusterPools(kind=ClusterKind.GKE, pools=(gpu_pool("t4", 0),))


def test_a_type_names_what_was_given() -> None:
    assert a_type(None) == "nothing"
    assert a_type("x") == "a str"
    assert a_type(POOLS) == "a ClusterPools"
    assert a_type(1) == "an int"


def test_no_cluster_is_accepted_unless_required() -> None:
    opts = pulumi.ResourceOptions(protect=True)
    placed = on_cluster(None, opts)
    assert placed.opts is opts and placed.cloud is None and placed.pool_shapes() == []
    with pytest.raises(pulumi.InputPropertyError) as info:
        on_cluster(None, None, required=True)
    assert info.value.property_path == "cluster"
    assert info.value.reason.startswith("cluster: expected ") and info.value.reason.endswith("(got nothing)")


def test_a_descriptor_gives_its_kind_and_pools() -> None:
    placed = on_cluster(POOLS, None, descriptors=(ClusterPools,))
    assert placed.descriptor is POOLS and placed.cloud is ClusterKind.GKE
    assert [p.name for p in placed.pool_shapes()] == ["t4"]


def test_fails_when_the_cluster_is_something_else_naming_the_keyword() -> None:
    with pytest.raises(pulumi.InputPropertyError) as info:
        on_cluster("my-cluster", None, descriptors=(ClusterPools,), keyword="target")
    assert info.value.property_path == "target"
    assert info.value.reason.startswith("target: expected ") and "a ClusterPools" in info.value.reason
    assert info.value.reason.endswith("(got a str)")


def test_fails_when_a_cluster_component_has_no_provider() -> None:
    class NoProvider(ClusterComponent):
        provider = None

    with pytest.raises(pulumi.InputPropertyError) as info:
        on_cluster(NoProvider(), None)
    assert "NoProvider" in info.value.reason and "has no Kubernetes provider to give" in info.value.reason


def test_check_live() -> None:
    check_live("password", None, (str,), "a str")  # optional
    check_live("password", "pw", (str,), "a str")
    with pytest.raises(pulumi.InputPropertyError) as info:
        check_live("password", None, (str,), "a str", optional=False)
    assert info.value.reason == "password: expected a str (got nothing)"
    with pytest.raises(pulumi.InputPropertyError) as info:
        check_live("password", 3, (str,), "a str or an Output")
    assert info.value.reason == "password: expected a str or an Output (got an int)"


@pulumi.runtime.test
def test_check_live_passes_an_output_to_be_checked_where_it_is_used(engine: Engine) -> None:
    check_live("password", pulumi.Output.from_input(3), (str,), "a str")
    assert engine.recorded == []


def test_check_pools() -> None:
    pools: Any = [gpu_pool("t4", 0)]
    assert check_pools("pools", tuple(pools)) == pools
    with pytest.raises(pulumi.InputPropertyError) as info:
        check_pools("pools", [gpu_pool("t4", 0), "a100", 3])
    assert info.value.reason == "pools: expected a list of NodePoolShape (a cluster's pool_shapes()) (got a sequence holding int, str)"
    with pytest.raises(pulumi.InputPropertyError) as info:
        check_pools("pools", "t4")
    assert info.value.reason.endswith("(got a str)")
