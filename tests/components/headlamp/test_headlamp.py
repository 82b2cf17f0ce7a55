"""Headlamp (issue 27 item 5): the cluster UI without cluster-admin, each tenant's group bound to ``view`` in
its own namespace, on the system pool; and the stack setting that makes it one setting away."""

from __future__ import annotations

from typing import Any

import pulumi

from gpu_platform.components import GpuGkeCluster, GpuGkeClusterArgs, Headlamp, HeadlampArgs
from gpu_platform.infra.stack.headlamp import HeadlampConfig
from gpu_platform.infra.stack.model import StackConfig
from tests.conftest import Engine, refused, settled
from tests.factories import gke, stack

# --- HeadlampArgs ----------------------------------------------------------------------------


@pulumi.runtime.test
def test_headlamp_on_a_cluster_binds_view_per_tenant_and_runs_on_the_system_pool(engine: Engine) -> pulumi.Output[Any]:
    cluster = GpuGkeCluster("gke", GpuGkeClusterArgs.model_validate(gke(project="ml-platform")))
    ui = Headlamp(
        "ui",
        HeadlampArgs(tenants=[{"namespace": "vision", "group": "vision-viewers"}, {"namespace": "nlp", "group": "nlp@example.com"}]),
        cluster=cluster,
    )

    def check(_: Any) -> None:
        release = engine.resource("ui-release")
        assert (release.inputs["chart"], release.inputs["version"]) == ("headlamp", "0.45.0")
        assert release.inputs["repositoryOpts"] == {"repo": "https://kubernetes-sigs.github.io/headlamp/"}
        assert release.inputs["values"]["clusterRoleBinding"] == {"create": False}
        assert release.inputs["values"]["nodeSelector"] == {"cloud.google.com/gke-nodepool": "system"}
        bindings = {r.name: r.inputs for r in engine.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")}
        assert set(bindings) == {"ui-vision-viewers", "ui-nlp-viewers"}
        vision = bindings["ui-vision-viewers"]
        assert vision["metadata"]["namespace"] == "vision"
        assert vision["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
        assert vision["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "vision-viewers"}]
        assert bindings["ui-nlp-viewers"]["subjects"][0]["name"] == "nlp@example.com"
        assert not engine.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")

    return settled(ui, ui.release, *ui.viewer_bindings.values()).apply(check)


# --- The stack setting -----------------------------------------------------------------------


def test_the_setting_is_off_by_default() -> None:
    config = HeadlampConfig()
    assert (config.enabled, config.namespace, config.chart_version, config.viewer_group, config.groups) == (
        False,
        "headlamp",
        "0.45.0",
        "{tenant}-viewers",
        {},
    )


def test_the_stack_setting_is_off_by_default() -> None:
    config = StackConfig.model_validate({**stack(), "monitoring": {"enabled": False}})
    assert config.headlamp == HeadlampConfig() and config.headlamp.enabled is False


def test_each_tenant_gets_its_group_from_the_template_or_its_own_entry() -> None:
    config = HeadlampConfig(enabled=True, viewer_group="{tenant}@example.com", groups={"nlp": "nlp-readers"})
    args = config.args(["vision", "nlp"])
    assert [(t.namespace, t.group) for t in args.tenants] == [("vision", "vision@example.com"), ("nlp", "nlp-readers")]


def test_fails_when_viewer_group_does_not_name_the_tenant() -> None:
    (line,) = refused(HeadlampConfig, {"viewer_group": "everyone"})
    assert line.startswith("viewer_group: viewer_group must hold {tenant} exactly once")


def _dask_tenant(name: str) -> dict[str, Any]:
    return {"name": name, "gpu_quota": 2}


def test_fails_when_groups_names_a_tenant_the_stack_does_not_have() -> None:
    data = {
        **stack(),
        "monitoring": {"enabled": False},
        "dask": {"tenants": [_dask_tenant("vision")]},
        "headlamp": {"enabled": True, "groups": {"visoin": "vision-team"}},
    }
    (line,) = refused(StackConfig, data)
    assert line.startswith("headlamp.groups.visoin: the stack has no tenant visoin (tenants: vision); remove it or fix the name")


def test_a_group_for_a_known_tenant_is_accepted() -> None:
    data = {
        **stack(),
        "monitoring": {"enabled": False},
        "dask": {"tenants": [_dask_tenant("vision")]},
        "headlamp": {"enabled": True, "groups": {"vision": "vision-team"}},
    }
    config = StackConfig.model_validate(data)
    assert config.headlamp.args(config.tenant_namespaces()).tenants[0].group == "vision-team"


def test_fails_when_headlamp_takes_a_tenants_namespace() -> None:
    data = {**stack(), "monitoring": {"enabled": False}, "dask": {"tenants": [_dask_tenant("vision")]}, "headlamp": {"enabled": True, "namespace": "vision"}}
    (line,) = refused(StackConfig, data)
    assert line.startswith("headlamp.namespace: namespace vision is already a Dask tenant's; choose another name")
