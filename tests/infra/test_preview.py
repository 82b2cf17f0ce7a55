"""The offline preview: every stack file's plan, its golden snapshot, and the schema checks.

Snapshots live in tests/snapshots/<stack>.json. After an intended change, regenerate them
with `GPU_PLATFORM_UPDATE_SNAPSHOTS=1 python -m pytest tests/infra/test_preview.py` and
say so in the commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from gpu_platform.infra.preview.engine import Plan, RecordedResource
from gpu_platform.infra.preview.manifests import KubernetesObject, kubernetes_objects, validate_objects, write_manifests
from gpu_platform.infra.stack.read import config_for_engine, load_stack_config, read_stack_file
from tests.conftest import PROJECT_DIR, shipped_plan

STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
SNAPSHOTS = PROJECT_DIR / "tests" / "snapshots"


def plan_of(stack: str) -> Plan:
    return shipped_plan(stack)


def test_every_gke_stack_is_shipped() -> None:
    assert {"dev-gke", "prod-gke"} <= set(STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_plan_matches_golden_snapshot(stack: str) -> None:
    document = json.loads(json.dumps(plan_of(stack).to_json(), sort_keys=True))
    path = SNAPSHOTS / f"{stack}.json"
    if os.environ.get("GPU_PLATFORM_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    assert path.is_file(), f"no snapshot for {stack}: run with GPU_PLATFORM_UPDATE_SNAPSHOTS=1"
    expected = json.loads(path.read_text())
    assert document == expected, f"{stack}'s plan changed; if intended, regenerate the snapshot and say so in the commit"


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_previews_clean(stack: str) -> None:
    plan = plan_of(stack)
    config, secret = read_stack_file(PROJECT_DIR, stack)
    pulumi.runtime.set_all_config(config_for_engine(config), sorted(secret))  # this stack's config
    version = load_stack_config().kubernetes_version
    assert version == config.get("gpu-platform:kubernetes_version", "1.34")
    findings = validate_objects(kubernetes_objects(plan), version)
    assert [f for f in findings if f.validated] == []


def pool(plan: Plan, name: str) -> dict[str, Any]:
    (found,) = [r for r in plan.of_type("gcp:container/nodePool:NodePool") if r.name == name]
    return found.inputs


def test_dev_gke_reproduces_the_seed_cluster() -> None:
    plan = plan_of("dev-gke")
    (cluster,) = plan.of_type("gcp:container/cluster:Cluster")
    c = cluster.inputs
    assert c["location"] == "us-central1"
    assert c["nodeLocations"] == ["us-central1-b", "us-central1-c"]
    assert c["releaseChannel"] == {"channel": "STABLE"}
    assert c["clusterAutoscaling"]["autoscalingProfile"] == "OPTIMIZE_UTILIZATION"
    t4 = pool(plan, "dev-gke-t4")
    node = t4["nodeConfig"]
    assert node["machineType"] == "n1-standard-4"
    assert node["guestAccelerators"] == [{"type": "nvidia-tesla-t4", "count": 2, "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"}}]
    assert node["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert t4["autoscaling"] == {"minNodeCount": 1, "maxNodeCount": 20, "locationPolicy": "BALANCED"}  # per zone: 2..40
    assert node["imageType"] == "COS_CONTAINERD" and node["gcfsConfig"] == {"enabled": True}
    sched = pool(plan, "dev-gke-scheduler")["nodeConfig"]
    assert sched["machineType"] == "n1-standard-2"
    assert sched["guestAccelerators"][0]["count"] == 1
    assert sched["labels"]["dedicated"] == "scheduler"


def test_prod_gke_is_a_production_shape() -> None:
    plan = plan_of("prod-gke")
    (cluster,) = plan.of_type("gcp:container/cluster:Cluster")
    assert cluster.protect and cluster.inputs["deletionProtection"] is True
    assert cluster.inputs["privateClusterConfig"]["enablePrivateEndpoint"] is True
    for name in ("a100", "a100x8"):
        assert pool(plan, f"prod-gke-{name}-spot")["nodeConfig"]["spot"] is True
        assert pool(plan, f"prod-gke-{name}-on-demand")["nodeConfig"]["spot"] is False
    classes = {r.inputs["metadata"]["name"]: r.inputs["spec"]["priorities"] for r in plan.of_type("kubernetes:cloud.google.com/v1:ComputeClass")}
    assert classes == {
        "a100": [{"nodepools": ["a100-spot"]}, {"nodepools": ["a100-on-demand"]}],
        "a100x8": [{"nodepools": ["a100x8-spot"]}, {"nodepools": ["a100x8-on-demand"]}],
    }


@pytest.mark.parametrize("stack", STACKS)
def test_no_secret_in_plaintext(stack: str) -> None:
    plan = plan_of(stack)
    for provider in plan.of_type("pulumi:providers:kubernetes"):
        assert provider.inputs["kubeconfig"]["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"
    assert plan.outputs["kubeconfig"]["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"


def fake(inputs: dict[str, Any], type_: str = "kubernetes:core/v1:ConfigMap") -> KubernetesObject:
    return KubernetesObject(RecordedResource(urn="urn", type=type_, name="x", parent=None, custom=True, inputs=inputs), inputs)


def test_schema_check_refuses_an_unknown_field() -> None:
    bad = fake({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}, "extra": 1})
    (finding,) = validate_objects([bad], "1.34")
    assert finding.validated and "ConfigMap a" in finding.message and "extra" in finding.message


def test_schema_check_refuses_a_wrong_type() -> None:
    bad = fake({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": 3}})
    (finding,) = validate_objects([bad], "1.34")
    assert "data.k" in finding.message


def test_schema_check_passes_a_valid_object() -> None:
    good = fake({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})
    assert validate_objects([good], "1.34") == []


def test_custom_resource_without_shipped_crd_is_a_notice() -> None:
    cr = fake({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}, "kubernetes:example.com/v1:Widget")
    (finding,) = validate_objects([cr], "1.34")
    assert not finding.validated and "not validated" in finding.message


WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              properties:
                size: {type: integer, minimum: 1}
"""


def test_custom_resource_is_checked_against_its_crd(tmp_path: Path) -> None:
    (tmp_path / "widgets.yaml").write_text(WIDGET_CRD)
    good = fake({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 2}}, "kubernetes:example.com/v1:Widget")
    bad = fake({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 0}}, "kubernetes:example.com/v1:Widget")
    assert validate_objects([good], "1.34", crd_dir=tmp_path) == []
    (finding,) = validate_objects([bad], "1.34", crd_dir=tmp_path)
    assert finding.validated and "Widget w: spec.size: 0 is less than the minimum of 1" == finding.message


def test_a_crd_pattern_is_matched_as_the_api_server_matches_it(tmp_path: Path) -> None:
    """Go's regexp (RE2), not Python's re: Kueue's AdmissionCheck names a kind by ``^(?i)[a-z]...``, a flag after
    ``^``, which Python's re refuses to compile (the check crashed on it) and the API server accepts."""
    crd = WIDGET_CRD.replace(
        "size: {type: integer, minimum: 1}",
        "size: {type: integer, minimum: 1}\n                kind: {type: string, pattern: '^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$'}",
    )
    (tmp_path / "widgets.yaml").write_text(crd)

    def widget(kind: str) -> KubernetesObject:
        body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 2, "kind": kind}}
        return fake(body, "kubernetes:example.com/v1:Widget")

    assert validate_objects([widget("ProvisioningRequestConfig")], "1.34", crd_dir=tmp_path) == []
    (finding,) = validate_objects([widget("1-config")], "1.34", crd_dir=tmp_path)
    assert finding.validated and finding.message == "Widget w: spec.kind: '1-config' does not match '^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$'"


def test_manifests_are_written_per_object(tmp_path: Path) -> None:
    objects = kubernetes_objects(plan_of("prod-gke"))
    written = write_manifests(objects, tmp_path)
    names = sorted(p.name for p in written)
    assert {"computeclass-a100.yaml", "computeclass-a100x8.yaml", "secret-prometheus-grafana-admin.yaml"} <= set(names)
    secret = yaml.safe_load((tmp_path / "secret-prometheus-grafana-admin.yaml").read_text())
    assert secret["stringData"] == {"admin-user": "[secret]", "admin-password": "[secret]"}  # never on disk
    body = yaml.safe_load((tmp_path / "computeclass-a100.yaml").read_text())
    assert list(body)[:3] == ["apiVersion", "kind", "metadata"]
    assert body["spec"]["whenUnsatisfiable"] == "DoNotScaleUp"
