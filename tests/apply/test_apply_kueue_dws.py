"""The queued-provisioning (DWS) Kueue objects on a real API server (kube-apiserver 1.34, the session's control
plane) with the CRDs of the pinned Kueue chart 0.19.2: the server accepts the ProvisioningRequestConfig, the
AdmissionCheck and the ClusterQueues scoped by ``onFlavors`` with no warning (an unknown field would be pruned
with one), keeps the strategy as declared, and refuses what its CRD refuses (its CEL rules and Go patterns
included, which the offline JSON Schema check does not run). Kueue's controller is not running here: the
admission flow itself, with Kueue's real manager, is tests/apply/test_kueue_dws_admission.py."""

from __future__ import annotations

import copy
from typing import Any

from gpu_platform.infra.apply.apply import ApplyObject, Server, apply_objects
from tests.components.queues.test_dws import ADMISSION_CHECK, CHECK, _kueue_crds, _stack

KINDS = {"ResourceFlavor", "Cohort", "ClusterQueue", "AdmissionCheck", "ProvisioningRequestConfig"}


def _crds() -> list[dict[str, Any]]:
    return [c for c in _kueue_crds() if c["spec"]["names"]["kind"] in KINDS]


def test_the_dws_objects_are_accepted_as_declared(control_plane: Any) -> None:
    server = Server(control_plane.api_client())
    plan = _stack(queues={"queued_provisioning_max_run_seconds": 3600}).queues_plan
    assert plan is not None
    bodies = [*plan.flavors, *plan.provisioning_configs, *plan.admission_checks, plan.cohort, *plan.cluster_queues]
    result = apply_objects(server, [ApplyObject(c, "chart kueue 0.19.2") for c in _crds()] + [ApplyObject(copy.deepcopy(b), "queues") for b in bodies])
    assert not result.refusals, result.refusals[0].line
    assert not [w for w in result.warnings if "queues" in w], result.warnings
    for queue in plan.cluster_queues:
        status, stored, _ = server.request("GET", f"/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{queue['metadata']['name']}")
        assert status == 200
        assert stored["spec"]["admissionChecksStrategy"] == queue["spec"]["admissionChecksStrategy"]
    status, stored, _ = server.request("GET", f"/apis/kueue.x-k8s.io/v1beta2/provisioningrequestconfigs/{CHECK}")
    assert status == 200 and stored["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    assert stored["spec"]["parameters"] == {"maxRunDurationSeconds": "3600"}


def test_the_server_refuses_what_the_crds_refuse(control_plane: Any) -> None:
    server = Server(control_plane.api_client())
    bad_kind = copy.deepcopy(ADMISSION_CHECK)
    bad_kind["metadata"]["name"] = "bad-kind"
    bad_kind["spec"]["parameters"]["kind"] = "1-config"  # the CRD's Go pattern ^(?i)[a-z]...
    result = apply_objects(server, [ApplyObject(c, "chart kueue 0.19.2") for c in _crds()] + [ApplyObject(bad_kind, "test")])
    (refusal,) = result.refusals
    assert "spec.parameters.kind" in refusal.reason, refusal.line
