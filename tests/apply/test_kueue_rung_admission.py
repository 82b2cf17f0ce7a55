"""Kueue admits a tenant's jobs rung by rung, in the ladder's order, with its real controller (issue 38 item 2):
the platform's own objects for a GKE pool with the ladder reservation -> flex_start -> spot -> on_demand (one
ResourceFlavor per rung, the tenants' quotas split over the rungs, the Cohort holding the rest, the queues'
flavorFungibility; built through the stack plan) on the session's control plane with the CRDs of the pinned Kueue
chart 0.19.2, and Kueue 0.19.2's manager (tests/kueue/build.sh) running out of cluster against it.

One tenant submits more one-GPU jobs than its own quota, one at a time, each admitted before the next is made. The
rungs hold 8, 4, 4 and 4 GPUs; the tenant has 8 on the reservation and 2 on flex-start, the other tenant 2 on
flex-start and 2 on spot, the Cohort the rest. Kueue gives the jobs the reservation's 8, then flex-start's 4 (its own
2, then 2 borrowed: a workload that fits a rung by borrowing stops there), then spot's 4 and on-demand's 4 (all
borrowed), and admits no 21st: the flavors' order is the ladder's, and quota is what moves a job down it.

Runs with GPU_PLATFORM_KUEUE_E2E=1 and the control plane (GPU_PLATFORM_CONTROL_PLANE=1), as
test_kueue_dws_admission.py does, whose harness (the manager's build, its configuration, the certificate) it uses."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.infra.apply.apply import ApplyObject, Server, apply_objects
from tests.apply.test_kueue_dws_admission import KUEUE_API, KUEUE_BUILD, NAMESPACE, _condition, mount_certificate, running_manager, wait_for
from tests.components.queues.test_dws import _kueue_crds
from tests.components.queues.test_rungs import FLAVORS, ladder_pool, ladder_stack
from tests.gobuild import shared_dir

TENANT = "rungs-e2e"
"""The tenant whose jobs are admitted: its own namespace and ClusterQueue, apart from the other apply tests'."""
OTHER = "rungs-e2e-b"
"""The other tenant, whose nominal quota on flex-start and spot the first borrows."""

pytestmark = pytest.mark.skipif(
    __import__("os").environ.get("GPU_PLATFORM_KUEUE_E2E") != "1",
    reason="Kueue's admission across a ladder's flavors runs with GPU_PLATFORM_KUEUE_E2E=1 (about 40 s on 2 loaded cores,"
    " plus the one-time build of Kueue's manager by tests/kueue/build.sh)",
)


def _job(name: str, flavor: dict[str, Any]) -> dict[str, Any]:
    """A suspended one-GPU Job of the tenant's queue, selecting the ladder pool's class (as the pool's pods do)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": TENANT, "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"cloud.google.com/compute-class": "a100"},
                    "tolerations": copy.deepcopy(flavor["spec"]["tolerations"]),
                    "containers": [
                        {
                            "name": "train",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
                        }
                    ],
                }
            },
        },
    }


def test_a_tenants_jobs_are_admitted_rung_by_rung_in_the_ladders_order(control_plane: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    binary = KUEUE_BUILD.folder(shared_dir(tmp_path_factory)) / "kueue"
    started = time.monotonic()
    server = Server(control_plane.api_client())

    def get(path: str) -> dict[str, Any] | None:
        status, body, _ = server.request("GET", path)
        return body if status == 200 else None

    # The ladder pool alone beside the system pool: Kueue 0.19.2 matches a pod against a flavor's own label keys only
    # (pkg/scheduler/flavorassigner/flavorassigner.go: flavorLabelKeys), so a pool's flavor selected by another key
    # (a T4 pool's node-pool label) would take the 21st job although its pods select the A100 class.
    config = ladder_stack(ladder_pool(), tenants=[{"name": TENANT, "gpu_quota": 10}, {"name": OTHER, "gpu_quota": 4}])
    plan = config.queues_plan
    assert plan is not None and not plan.problems
    (queue,) = [q for q in plan.cluster_queues if q["metadata"]["name"] == TENANT]
    assert [f["name"] for f in queue["spec"]["resourceGroups"][0]["flavors"] if f["name"] in FLAVORS] == FLAVORS
    bodies = [*plan.flavors, plan.cohort, *plan.cluster_queues, *plan.local_queues]
    namespaces = [ApplyObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}, "test") for n in (NAMESPACE, TENANT, OTHER)]
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kueue-webhook-server-cert", "namespace": NAMESPACE}}
    objects = [*(ApplyObject(c, "chart kueue 0.19.2") for c in _kueue_crds()), *namespaces, ApplyObject(secret, "chart kueue 0.19.2")]
    result = apply_objects(server, [*objects, *(ApplyObject(copy.deepcopy(b), "queues") for b in bodies)])
    assert not result.refusals, result.refusals[0].line
    flavor = next(f for f in plan.flavors if f["metadata"]["name"] == FLAVORS[0])

    def workload(job: str) -> dict[str, Any] | None:
        items = (get(f"{KUEUE_API}/namespaces/{TENANT}/workloads") or {}).get("items") or []
        return next((w for w in items if any(o.get("name") == job for o in w["metadata"].get("ownerReferences") or [])), None)

    admitted: list[str] = []
    with running_manager(binary, control_plane.kubeconfig, tmp_path) as log:
        mount_certificate(get, tmp_path, log)
        for name in (TENANT, OTHER):
            wait_for(f"ClusterQueue {name} active", lambda n=name: _condition(get(f"{KUEUE_API}/clusterqueues/{n}"), "Active"), log)
        try:
            for i in range(21):
                job = f"train-{i:02d}"
                status, body, _ = server.request("POST", f"/apis/batch/v1/namespaces/{TENANT}/jobs", _job(job, flavor))
                assert status == 201, body
                if i == 20:
                    break
                done = wait_for(f"job {job} admitted", lambda j=job: (w := workload(j)) is not None and _condition(w, "Admitted") and w, log)
                (assignment,) = done["status"]["admission"]["podSetAssignments"]
                admitted.append(assignment["flavors"]["nvidia.com/gpu"])
            assert admitted == [FLAVORS[0]] * 8 + [FLAVORS[1]] * 4 + [FLAVORS[2]] * 4 + [FLAVORS[3]] * 4, admitted
            # Every rung is full: the 21st job waits (its Workload exists, with no quota reserved).
            pending = wait_for("the 21st job's Workload", lambda: workload("train-20"), log)
            time.sleep(3)
            last = workload("train-20") or pending
            assert not _condition(last, "QuotaReserved"), (last.get("status") or {}).get("admission")
        finally:
            for i in range(21):
                server.request("DELETE", f"/apis/batch/v1/namespaces/{TENANT}/jobs/train-{i:02d}", {"propagationPolicy": "Background"})
            wait_for(
                "the Workloads removed after the Jobs", lambda: not (get(f"{KUEUE_API}/namespaces/{TENANT}/workloads") or {}).get("items"), log, timeout=60
            )
    print(f"kueue rung admission: {time.monotonic() - started:.1f} s for 20 admissions and one refusal")
