"""Every stack composes the Dask operator; dev-gke's plan shows what the Dask issue promises."""

from __future__ import annotations

import copy

import jsonschema
import pytest

from gpu_platform.infra.kubernetes_api import crd_schema
from gpu_platform.infra.preview.engine import Plan
from gpu_platform.infra.preview.manifests import KubernetesObject, kubernetes_objects, unknown_fields, validate_objects
from tests.conftest import PROJECT_DIR
from tests.conftest import shipped_plan as plan

STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))


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


def dask_objects(stack: str) -> list[KubernetesObject]:
    return [o for o in kubernetes_objects(plan(stack)) if o.api_version == "kubernetes.dask.org/v1"]


@pytest.mark.parametrize("stack", STACKS)
def test_the_shipped_dask_objects_declare_only_fields_their_crds_know(stack: str) -> None:
    objects = dask_objects(stack)
    assert {o.kind for o in objects} == {"DaskCluster", "DaskAutoscaler"}
    assert validate_objects(objects, "1.34") == []


@pytest.mark.parametrize(
    ("kind", "path", "key", "line"),
    [
        ("DaskCluster", ("spec",), "idleTimout", "DaskCluster shared: spec.idleTimout: unknown field 'idleTimout'; did you mean 'idleTimeout'?"),
        (
            "DaskCluster",
            ("spec", "worker", "spec"),
            "nodeSelecter",
            "DaskCluster shared: spec.worker.spec.nodeSelecter: unknown field 'nodeSelecter'; did you mean 'nodeSelector'?",
        ),
        ("DaskAutoscaler", ("spec",), "maximun", "DaskAutoscaler shared: spec.maximun: unknown field 'maximun'; did you mean 'maximum'?"),
    ],
)
def test_fails_when_a_dask_object_has_a_misspelt_key(kind: str, path: tuple[str, ...], key: str, line: str) -> None:
    (obj,) = [o for o in dask_objects("dev-gke") if o.kind == kind]
    body = copy.deepcopy(obj.body)
    node = body
    for part in path:
        node = node[part]
    node[key] = 5
    # Draft 7 alone lets the key through: the CRD schema declares no additionalProperties.
    schema = crd_schema(obj.api_version, kind)
    assert schema is not None and list(jsonschema.Draft7Validator(schema).iter_errors(body)) == []
    (finding,) = validate_objects([KubernetesObject(obj.resource, body)], "1.34")
    assert (finding.message, finding.validated) == (line, True)


def test_unknown_fields_respects_preserve_unknown_and_additional_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "open": {"type": "object", "properties": {"a": {}}, "x-kubernetes-preserve-unknown-fields": True},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"b": {}}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"c": {}}}},
        },
    }
    body = {"open": {"z": 1}, "map": {"any": {"b": 1, "y": 2}}, "list": [{"c": 1}, {"x": 1}]}
    assert [where for where, _ in unknown_fields(body, schema)] == ["map.any.y", "list[1].x"]
