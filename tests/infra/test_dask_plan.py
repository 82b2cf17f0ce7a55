"""Every stack composes the Dask operator; dev-gke's plan shows what the Dask issue promises."""

from __future__ import annotations


import pytest

from infra.preview import Plan
from tests.conftest import PROJECT_DIR
from tests.conftest import shipped_plan as plan

STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))


def kinds(p: Plan, namespace: str) -> set[str]:
    return {r.inputs["kind"] for r in p.resources if (r.inputs.get("metadata") or {}).get("namespace") == namespace and "kind" in r.inputs}


def test_dev_gke_has_the_operator_two_tenants_the_prepuller_and_the_scheduler_affinity() -> None:
    p = plan("dev-gke")
    (release,) = [r for r in p.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "dask-kubernetes-operator"]
    assert release.inputs["version"] == "2026.3.0"
    for tenant in ("team-a", "team-b"):
        assert {"ServiceAccount", "Role", "RoleBinding", "ResourceQuota", "LimitRange", "Deployment", "Service", "ConfigMap"} <= kinds(p, tenant)
    (prepuller,) = [r for r in p.of_type("kubernetes:apps/v1:DaemonSet") if r.inputs["metadata"]["name"] == "rapids-prepuller"]
    terms = prepuller.inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert {"key": "cloud.google.com/gke-accelerator", "operator": "Exists"} in [e for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"]]
    scheduler = p.outputs["daskClusterSpec"]["spec"]["scheduler"]["spec"]
    (preferred,) = scheduler["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred == {"weight": 100, "preference": {"matchExpressions": [{"key": "dedicated", "operator": "In", "values": ["scheduler"]}]}}
    (shared,) = p.of_type("kubernetes:kubernetes.dask.org/v1:DaskCluster")
    assert shared.inputs["spec"]["scheduler"]["spec"]["affinity"] == scheduler["affinity"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_runs_dask_with_tenant_quotas(stack: str) -> None:
    p = plan(stack)
    assert p.outputs["daskTenants"]
    quotas = {r.inputs["metadata"]["namespace"] for r in p.of_type("kubernetes:core/v1:ResourceQuota")}
    assert set(p.outputs["daskTenants"]) <= quotas
