"""Headlamp's intent, asserted on what the cluster gets (issue 27 item 5): the chart rendered offline at its
pin holds no cluster-admin binding and no long-lived token, runs on the system pool, and every tenant's
group can view its own namespace only. Without ../shared/reference/upstream (or kubectl) these skip."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform.components.core.labels import PoolRole
from gpu_platform.components.headlamp.args import HEADLAMP_CHART, HeadlampArgs, headlamp_values
from gpu_platform.components.headlamp.headlamp import VIEWERS_BINDING
from gpu_platform.infra.preview.upstream import load_lock
from tests.conftest import UPSTREAM_DIR, kubectl_or_skip, load_yaml_all, upstream_or_skip
from tests.infra.test_rendered_intent import STACKS, _rendered

TOKEN_SECRET = "kubernetes.io/service-account-token"


@pytest.fixture(params=STACKS)
def stack_rendering(request: pytest.FixtureRequest) -> tuple[str, Any, Any, Any]:
    upstream_or_skip()
    kubectl_or_skip()
    return (request.param, *_rendered(request.param))


def _admin_bindings(bodies: list[dict[str, Any]]) -> list[str]:
    return [
        f"{b['kind']} {b['metadata']['name']}"
        for b in bodies
        if b.get("kind") in ("ClusterRoleBinding", "RoleBinding") and (b.get("roleRef") or {}).get("name") == "cluster-admin"
    ]


def _token_secrets(bodies: list[dict[str, Any]]) -> list[str]:
    return [b["metadata"]["name"] for b in bodies if b.get("kind") == "Secret" and b.get("type") == TOKEN_SECRET]


def _render_chart(values: dict[str, Any]) -> list[dict[str, Any]]:
    import helm_python

    upstream_or_skip()
    pin = next(p for p in load_lock().charts if p.name == HEADLAMP_CHART and p.version == HeadlampArgs().chart_version)
    chart = helm_python.Chart.load(str(UPSTREAM_DIR / "charts" / pin.archive_name))
    out = chart.render(values, name="headlamp", namespace="headlamp")
    return [d for path, text in out.items() if not path.endswith("NOTES.txt") for d in load_yaml_all(text) if d]


def test_the_charts_own_defaults_bind_cluster_admin_and_the_components_values_do_not() -> None:
    # The chart's default (values.yaml clusterRoleBinding.create: true, clusterRoleName: cluster-admin) is
    # what the values must undo: if upstream changed it, this first assertion says so.
    assert _admin_bindings(_render_chart({})) == ["ClusterRoleBinding headlamp-admin"]
    ours = _render_chart(headlamp_values(None))
    assert _admin_bindings(ours) == []
    assert not [b for b in ours if b["kind"] in ("ClusterRoleBinding", "ClusterRole", "Role", "RoleBinding")]
    assert not [b for b in ours if b["kind"] == "Secret"]  # neither a token nor an empty OIDC Secret


def test_no_stack_binds_cluster_admin_or_ships_a_long_lived_token(stack_rendering: tuple[str, Any, Any, Any]) -> None:
    stack, _, plan, rendering = stack_rendering
    bodies = [o.body for o in rendering.objects] + [r.inputs for r in plan.resources if r.type.startswith("kubernetes:rbac")]
    assert _admin_bindings(bodies) == [], stack
    assert _token_secrets([o.body for o in rendering.objects]) == [], stack


def test_headlamp_runs_on_the_system_pool_and_each_tenant_group_views_its_namespace(stack_rendering: tuple[str, Any, Any, Any]) -> None:
    stack, config, plan, rendering = stack_rendering
    deployments = [o.body for o in rendering.objects if o.kind == "Deployment" and o.body["metadata"]["name"] == "headlamp"]
    if not config.headlamp.enabled:
        assert deployments == [], f"{stack}: Headlamp is off, yet rendered"
        pytest.skip(f"{stack} does not enable Headlamp")
    (deployment,) = deployments
    pod = deployment["spec"]["template"]["spec"]
    (system,) = [p for p in config.pool_shapes() if p.role is PoolRole.SYSTEM]
    assert pod["nodeSelector"] == system.placement.node_selector
    assert not any(a.startswith("-use-service-account-token") or "unsafe" in a for a in pod["containers"][0]["args"])
    bindings = {
        r.inputs["metadata"]["namespace"]: r.inputs
        for r in plan.resources
        if r.type == "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding" and r.inputs["metadata"]["name"] == VIEWERS_BINDING
    }
    assert sorted(bindings) == sorted(config.tenant_namespaces()), stack
    for namespace, binding in bindings.items():
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
        assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": config.headlamp.group_of(namespace)}]
