"""HeadlampArgs and the chart values (components/headlamp/args.py): the defaults, every validator, and values that
turn off the chart's cluster-admin binding and place the pod."""

from __future__ import annotations

from gpu_platform.components import HeadlampArgs
from gpu_platform.components.headlamp.args import headlamp_values
from gpu_platform.components.pools.shapes import PoolPlacement, Taint
from tests.conftest import refused


def test_defaults() -> None:
    args = HeadlampArgs()
    assert (args.namespace, args.chart_version, args.tenants) == ("headlamp", "0.45.0", [])


def test_fails_when_a_tenant_namespace_belongs_to_kubernetes() -> None:
    (line,) = refused(HeadlampArgs, {"tenants": [{"namespace": "kube-system", "group": "ops"}]})
    assert line.startswith("tenants[0].namespace: namespace kube-system belongs to Kubernetes, not a tenant; name a tenant namespace")


def test_fails_when_a_namespace_is_bound_twice() -> None:
    (line,) = refused(HeadlampArgs, {"tenants": [{"namespace": "vision", "group": "a"}, {"namespace": "vision", "group": "b"}]})
    assert line.startswith("tenants: tenants lists a namespace twice (vision, vision); one group per tenant namespace")


def test_fails_when_a_group_holds_whitespace() -> None:
    (line,) = refused(HeadlampArgs, {"tenants": [{"namespace": "vision", "group": "vision viewers"}]})
    assert line.startswith("tenants[0].group:")


def test_values_turn_off_the_cluster_admin_binding_and_keep_per_user_login() -> None:
    values = headlamp_values(None)
    assert values["clusterRoleBinding"] == {"create": False}  # the chart binds cluster-admin by default
    assert values["config"]["unsafeUseServiceAccountToken"] is False
    assert values["config"]["oidc"]["secret"] == {"create": False}
    assert "nodeSelector" not in values


def test_values_place_the_pod_on_the_given_pool() -> None:
    taint = Taint(key="dedicated", value="system", effect="NoSchedule")
    values = headlamp_values(PoolPlacement({"cloud.google.com/gke-nodepool": "system"}, (taint,)))
    assert values["nodeSelector"] == {"cloud.google.com/gke-nodepool": "system"}
    assert values["tolerations"] == [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}]
