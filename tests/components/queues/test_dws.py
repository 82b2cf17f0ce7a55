"""Kueue with GKE's queued provisioning (DWS, issue 34 item 4): a pool with ``queued_provisioning`` gets nodes only
for a ProvisioningRequest, so the queues make one per admitted workload, as GKE documents it for Kueue: a
ProvisioningRequestConfig of class queued-provisioning.gke.io managing nvidia.com/gpu, an AdmissionCheck of Kueue's
ProvisioningRequest controller using it, and that check on each ClusterQueue, scoped to the queued pool's flavor
(``admissionChecksStrategy`` ``onFlavors``). The objects are checked against the CRDs of the pinned Kueue chart
0.19.2, the way the offline preview checks custom resources (infra.preview.manifests.validate_objects)."""

from __future__ import annotations

import functools
from typing import Any

import pulumi
import pytest
from pydantic import ValidationError

from gpu_platform.components import GpuGkeCluster, Kueue, KueueArgs
from gpu_platform.components.queues.plan import flavor_name, plan_queues, queued_flavors
from gpu_platform.infra.preview.engine import RecordedResource
from gpu_platform.infra.preview.manifests import KubernetesObject, validate_objects
from gpu_platform.infra.stack.errors import format_validation_error
from gpu_platform.infra.stack.model import StackConfig
from tests.conftest import PROJECT_DIR, Engine, load_yaml_all, settled_tree, upstream_or_skip
from tests.factories import dws_pool, dws_stack_raw, gke, t4_pool

CHECK = "queued-provisioning"
CONFIG = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ProvisioningRequestConfig",
    "metadata": {"name": CHECK},
    "spec": {"provisioningClassName": "queued-provisioning.gke.io", "managedResources": ["nvidia.com/gpu"]},
}
"""What GKE's Kueue setup for queued provisioning declares (its dws-config), written out by hand."""
ADMISSION_CHECK = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "AdmissionCheck",
    "metadata": {"name": CHECK},
    "spec": {
        "controllerName": "kueue.x-k8s.io/provisioning-request",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": CHECK},
    },
}
"""GKE's dws-prov: Kueue's ProvisioningRequest admission check, its parameters the config above."""


def _stack(**overrides: Any) -> StackConfig:
    return StackConfig.model_validate(dws_stack_raw(**overrides))


# --- the plan: the two objects, and the check on the queued pool's flavor only ---------------------------


def test_a_queued_pool_gets_the_provisioning_config_and_the_admission_check() -> None:
    plan = _stack().queues_plan
    assert plan is not None and not plan.problems
    assert plan.provisioning_configs == [CONFIG]
    assert plan.admission_checks == [ADMISSION_CHECK]


def test_only_the_queued_pools_flavor_carries_the_check_on_every_queue_that_has_it() -> None:
    config = _stack()
    plan = config.queues_plan
    assert plan is not None
    (dws,) = [p for p in config.pool_shapes() if p.queued_provisioning]
    assert dws.name == "a100-dws" and queued_flavors(config.pool_shapes()) == [flavor_name(dws)] == ["nvidia-tesla-a100-a100-dws"]
    assert [q["metadata"]["name"] for q in plan.cluster_queues] == ["team-a", "team-b"]
    for queue in plan.cluster_queues:
        spec = queue["spec"]
        assert spec["admissionChecksStrategy"] == {"admissionChecks": [{"name": CHECK, "onFlavors": ["nvidia-tesla-a100-a100-dws"]}]}
        # The queue has the other pools' flavors too (t4, the scheduler and system pools): on those, quota alone admits.
        others = [f["name"] for g in spec["resourceGroups"] for f in g["flavors"] if f["name"] != "nvidia-tesla-a100-a100-dws"]
        assert "nvidia-tesla-t4-t4" in others and len(others) >= 2
        assert "admissionChecks" not in spec  # the v1beta1 list is gone from v1beta2 (and would run for every flavor)


def test_a_queue_without_the_queued_pools_flavor_gets_no_check() -> None:
    config = _stack()
    assert config.queues is not None
    pools = config.pool_shapes()
    # The same tenants on the pools without the DWS one: no flavor of a queued pool, so no object and no check.
    plan = plan_queues(config.queues, config.queue_tenants(), [p for p in pools if not p.queued_provisioning])
    assert plan.provisioning_configs == [] and plan.admission_checks == []
    assert all("admissionChecksStrategy" not in q["spec"] for q in plan.cluster_queues)


@pytest.mark.parametrize("stack", ["prod-gke", "prod-eks"])
def test_the_shipped_stacks_have_no_queued_pool_and_no_check(stack: str) -> None:
    from gpu_platform.infra.stack.read import load_stack

    plan = load_stack(PROJECT_DIR, stack).queues_plan
    assert plan is not None
    assert plan.provisioning_configs == [] and plan.admission_checks == []
    assert all("admissionChecksStrategy" not in q["spec"] for q in plan.cluster_queues)


def test_two_queued_pools_share_one_check_scoped_to_both_flavors() -> None:
    config = _stack(gke=gke(gpu_pools=[t4_pool(), dws_pool(), dws_pool(name="h100-dws", machine_type="a3-highgpu-8g", accelerator_type="nvidia-h100-80gb")]))
    plan = config.queues_plan
    assert plan is not None and len(plan.admission_checks) == 1
    strategy = plan.cluster_queues[0]["spec"]["admissionChecksStrategy"]
    assert strategy == {"admissionChecks": [{"name": CHECK, "onFlavors": ["nvidia-tesla-a100-a100-dws", "nvidia-h100-80gb-h100-dws"]}]}


def test_max_run_seconds_becomes_the_configs_max_run_duration_parameter() -> None:
    plan = _stack(queues={"queued_provisioning_max_run_seconds": 86400}).queues_plan
    assert plan is not None
    (config,) = plan.provisioning_configs
    assert config["spec"]["parameters"] == {"maxRunDurationSeconds": "86400"}  # the CRD takes strings


def test_queued_provisioning_max_run_seconds_defaults_to_none_and_no_parameters() -> None:
    assert KueueArgs().queued_provisioning_max_run_seconds is None
    plan = _stack().queues_plan
    assert plan is not None and "parameters" not in plan.provisioning_configs[0]["spec"]


def test_fails_when_max_run_seconds_is_zero() -> None:
    with pytest.raises(ValidationError) as info:
        KueueArgs.model_validate({"queued_provisioning_max_run_seconds": 0})
    assert info.value.errors()[0]["loc"] == ("queued_provisioning_max_run_seconds",)


def test_no_feature_gate_is_set_for_the_provisioning_controller() -> None:
    """Kueue 0.19.2 has no ProvisioningACC gate (GA in 0.14, dropped in 0.15): the controller runs wherever the API
    server serves ProvisioningRequest. Naming the gate would make the controller refuse to start."""
    from gpu_platform.components.queues.kueue import manager_config, release_values

    plan = _stack().queues_plan
    assert plan is not None
    assert "featureGates" not in manager_config(plan) and "featureGates" not in release_values(plan, scraped=False)


# --- the component declares them, on the cluster --------------------------------------------------------


@pulumi.runtime.test
def test_the_component_declares_the_config_the_check_and_the_scoped_queues(engine: Engine) -> pulumi.Output[Any]:
    config = _stack()
    assert config.gke is not None and config.queues is not None
    cluster = GpuGkeCluster("gke", config.gke)
    queues = Kueue("q", config.queues, tenants=config.queue_tenants(), cluster=cluster)

    def check(_: Any) -> None:
        prc = engine.resource(f"q-provisioning-config-{CHECK}")
        assert prc.type == "kubernetes:kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig"
        assert prc.inputs["spec"] == CONFIG["spec"]
        ac = engine.resource(f"q-admission-check-{CHECK}")
        assert ac.type == "kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck"
        assert ac.inputs["spec"] == ADMISSION_CHECK["spec"]
        for recorded in (prc, ac):
            assert "q-release" in {d.rsplit("::", 1)[-1] for d in recorded.depends_on}  # after the CRDs
            assert recorded.parent == engine.resource("q").urn  # children of the Kueue component
        dws = [f for f in queues.flavors if f.endswith("-a100-dws")]
        assert dws == ["nvidia-tesla-a100-a100-dws"]
        for name in queues.cluster_queues:
            spec = engine.resource(f"q-queue-{name}").inputs["spec"]
            assert spec["admissionChecksStrategy"] == {"admissionChecks": [{"name": CHECK, "onFlavors": dws}]}
        # The flavors, the Cohort and the other pools' objects carry no check.
        for name in queues.flavors:
            assert "admissionChecks" not in str(engine.resource(f"q-flavor-{name}").inputs)
        assert queues.admission_checks == [CHECK]

    return settled_tree(queues).apply(check)


@pulumi.runtime.test
def test_without_a_queued_pool_the_component_declares_no_check(engine: Engine) -> pulumi.Output[Any]:
    config = _stack(gke=gke(gpu_pools=[t4_pool()]))
    assert config.gke is not None and config.queues is not None
    cluster = GpuGkeCluster("gke", config.gke)
    queues = Kueue("q", config.queues, tenants=config.queue_tenants(), cluster=cluster)

    def check(_: Any) -> None:
        kinds = {r.type.rsplit(":", 1)[-1] for r in engine.recorded if r.type.startswith("kubernetes:kueue.x-k8s.io/")}
        assert kinds == {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue"}
        assert queues.admission_checks == []
        for name in queues.cluster_queues:
            assert "admissionChecksStrategy" not in engine.resource(f"q-queue-{name}").inputs["spec"]

    return settled_tree(queues).apply(check)


# --- against the pinned chart's CRDs ---------------------------------------------------------------------


@functools.cache
def _kueue_crds() -> list[dict[str, Any]]:
    """The CustomResourceDefinitions Kueue chart 0.19.2 installs (templates, not crds/), rendered by Helm's engine."""
    import helm_python

    chart = helm_python.Chart.load(str(upstream_or_skip() / "charts" / "kueue-0.19.2.tgz"))
    out = chart.render({}, name="kueue", namespace="kueue-system")
    docs = [d for path, text in out.items() if not path.endswith("NOTES.txt") for d in load_yaml_all(text) if d]
    return [d for d in docs if d.get("kind") == "CustomResourceDefinition"]


def _findings(bodies: list[dict[str, Any]]) -> list[str]:
    """What the offline preview finds in ``bodies`` given the chart's CRDs (as it checks a plan's custom resources)."""
    objects = [
        KubernetesObject(RecordedResource(urn="urn", type=f"kubernetes:{b['apiVersion']}:{b['kind']}", name="q", parent=None, custom=True, inputs=b), b)
        for b in bodies
    ]
    return [f.message for f in validate_objects(objects, "1.34", crds=_kueue_crds())]


def test_the_objects_match_the_kueue_crds_of_the_pinned_chart() -> None:
    plan = _stack(queues={"queued_provisioning_max_run_seconds": 3600}).queues_plan
    assert plan is not None
    bodies = [*plan.provisioning_configs, *plan.admission_checks, *plan.flavors, plan.cohort, *plan.cluster_queues, *plan.local_queues]
    assert {b["kind"] for b in bodies} >= {"ProvisioningRequestConfig", "AdmissionCheck", "ClusterQueue"}
    assert _findings(bodies) == []


def test_the_crd_check_is_live() -> None:
    """The same check refuses what the CRDs refuse: the v1beta1 admissionChecks list on a v1beta2 ClusterQueue, a
    misspelt onFlavors, a config without its class, and parameters that are not strings."""
    plan = _stack().queues_plan
    assert plan is not None
    queue = plan.cluster_queues[0]
    v1beta1_list = {**queue, "spec": {**queue["spec"], "admissionChecks": [CHECK]}}
    strategy = queue["spec"]["admissionChecksStrategy"]["admissionChecks"][0]
    misspelt = {**queue, "spec": {**queue["spec"], "admissionChecksStrategy": {"admissionChecks": [{"name": CHECK, "onFlavor": strategy["onFlavors"]}]}}}
    classless = {**CONFIG, "spec": {"managedResources": ["nvidia.com/gpu"]}}
    numeric = {**CONFIG, "spec": {**CONFIG["spec"], "parameters": {"maxRunDurationSeconds": 3600}}}
    findings = _findings([v1beta1_list, misspelt, classless, numeric])
    assert any("admissionChecks" in f and "unknown field" in f for f in findings), findings
    assert any("onFlavor" in f and "did you mean 'onFlavors'" in f for f in findings), findings
    assert any("'provisioningClassName' is a required property" in f for f in findings), findings
    assert any("maxRunDurationSeconds" in f and "is not of type 'string'" in f for f in findings), findings


# --- a queued pool with nothing that queues to it is refused --------------------------------------------


def _refusal(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        StackConfig.model_validate(raw)
    return format_validation_error(info.value, StackConfig, "gpu-platform")


def test_fails_when_a_queued_pool_has_no_queues() -> None:
    raw = dws_stack_raw()
    del raw["queues"]
    assert _refusal(raw) == [
        "gpu-platform:gke.gpu_pools[1].queued_provisioning: pool a100-dws has queued_provisioning but the stack has no queues, "
        "and GKE gives this pool nodes only for a ProvisioningRequest, which the queues' admission check makes; "
        "add gpu-platform:queues or turn queued_provisioning off (got true)"
    ]


def test_fails_when_the_queues_admit_no_tenant() -> None:
    raw = dws_stack_raw()
    del raw["dask"]
    (line,) = _refusal(raw)
    assert line.startswith("gpu-platform:gke.gpu_pools[1].queued_provisioning: pool a100-dws has queued_provisioning but the queues have no tenant")
