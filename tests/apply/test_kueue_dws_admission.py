"""A tenant's job on a GKE queued-provisioning (DWS) pool, end to end with Kueue's real controller (issue 34 item 4):
the platform's own DWS objects (ProvisioningRequestConfig, AdmissionCheck, ClusterQueues scoped by ``onFlavors``,
built through the stack plan) on the session's control plane with the CRDs of the pinned Kueue chart 0.19.2 and the
ProvisioningRequest CRD (autoscaling.x-k8s.io, from the module Kueue 0.19.2 pins, read from the Go module cache), and
Kueue 0.19.2's manager (built from its Go module by tests/kueue/build.sh) running out of cluster against it.

A suspended Job with the tenant's queue label asks for the DWS pool's GPUs. Kueue reserves quota on the DWS flavor and
creates a ProvisioningRequest of class queued-provisioning.gke.io for it, and does not admit the Workload: the Job stays
suspended. The test then stands in for GKE's autoscaler and marks the request Provisioned; Kueue admits the Workload and
unsuspends the Job, whose pods are told to consume that request.

Runs only with GPU_PLATFORM_KUEUE_E2E=1 (36 s here: 23 s installing the CRDs and objects, 8 s for the manager to be
ready, 4 s for the flow itself). Skips, with the reason, without it, when Go is not installed, when the manager is not
built and GPU_PLATFORM_KUEUE_BUILD=0, or when the build fails (not retried in the same run; xdist workers wait on one
build through a file lock). The manager is found by build.sh's rule: GPU_PLATFORM_KUEUE_BIN (a folder with ``kueue``),
else the cache keyed by the hash of tests/kueue's go.mod, go.sum and build.sh."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.infra.apply.apply import ApplyObject, Server, apply_objects
from gpu_platform.infra.apply.local import free_port, go_binary
from tests.components.queues.test_dws import CHECK, _kueue_crds, _stack
from tests.gobuild import GoBuild, shared_dir

KUEUE_DIR = Path(__file__).resolve().parents[1] / "kueue"
KUEUE_BUILD = GoBuild(
    name="kueue",
    what="Kueue's manager",
    build_dir=KUEUE_DIR,
    key_files=("go.mod", "go.sum", "build.sh"),
    binaries=("kueue",),
    timeout=3600.0,  # see docs/clouds/gke-dws.md for what it took here
)
"""Kueue's manager's build (tests/gobuild.py: found, built once and cached as the other Go builds)."""
TENANT = "dws-e2e"
"""The tenant of this test's stack: its own namespace and ClusterQueue, apart from the other apply tests' tenants."""
NAMESPACE = "kueue-system"
"""Kueue's own namespace (its configuration's default): the webhook certificate's Secret lives there."""
WAIT = 60.0
"""Seconds each step of the flow may take (it takes about a second here once the manager runs)."""
PROVISIONING_API = "/apis/autoscaling.x-k8s.io/v1"
KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"

pytestmark = pytest.mark.skipif(
    os.environ.get("GPU_PLATFORM_KUEUE_E2E") != "1",
    reason="Kueue's DWS admission end to end runs with GPU_PLATFORM_KUEUE_E2E=1 (about 36 s on 2 loaded cores, plus an"
    " 11-minute one-time build of Kueue's manager by tests/kueue/build.sh)",
)  # before the control_plane fixture, so a skipped run starts no control plane


# --- the ProvisioningRequest CRD, from the module Kueue pins ----------------------------------------------


def provisioning_request_crd() -> dict[str, Any]:
    """The ProvisioningRequest CRD of k8s.io/autoscaler/cluster-autoscaler/apis at the version Kueue 0.19.2 pins (the
    module's config/crd), read from the Go module cache (downloaded if need be), never copied into the repository."""
    import yaml

    go = go_binary()
    assert go is not None  # the built manager implies Go
    module = "k8s.io/autoscaler/cluster-autoscaler/apis"
    subprocess.run([go, "mod", "download", module], cwd=KUEUE_DIR, check=True, capture_output=True, timeout=300)
    folder = subprocess.run([go, "list", "-m", "-f", "{{.Dir}}", module], cwd=KUEUE_DIR, check=True, capture_output=True, text=True, timeout=120)
    crd: dict[str, Any] = yaml.safe_load((Path(folder.stdout.strip()) / "config" / "crd" / "autoscaling.x-k8s.io_provisioningrequests.yaml").read_text())
    return crd


# --- running it ------------------------------------------------------------------------------------------


def manager_config(folder: Path) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) for a manager outside the cluster: its own loopback
    ports, no leader election, internal certificate management writing the webhook certificate into ``folder`` (the
    control plane runs no admission webhooks; Kueue's CRDs' conversion webhook gets the CA injected and is never called
    for v1beta2 objects), only the batch/job integration, and no visibility server (an API server extension)."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{free_port()}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": free_port(), "certDir": str(folder / "certs")},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": True},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": ["batch/job"]},
        "featureGates": {"VisibilityOnDemand": False},
    }


@contextlib.contextmanager
def running_manager(binary: Path, kubeconfig: Path, folder: Path) -> Iterator[Path]:
    """Kueue's manager running against ``kubeconfig``; yields its log; always stopped (SIGTERM, then SIGKILL)."""
    config = folder / "kueue-config.json"
    config.write_text(json.dumps(manager_config(folder)))  # JSON is YAML: Kueue's config loader takes it
    log = folder / "kueue.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(binary), f"--config={config}", "--zap-log-level=2"],
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        yield log
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _tail(log: Path) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-15:])


def wait_for(what: str, probe: Callable[[], Any], log: Path, timeout: float = WAIT) -> Any:
    """``probe()`` once it is truthy, polled for ``timeout`` seconds; fails naming ``what`` and the manager's log tail."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f} s; Kueue's log ends:\n{_tail(log)}")
        time.sleep(0.25)


def mount_certificate(get: Callable[[str], dict[str, Any] | None], folder: Path, log: Path) -> None:
    """Stand in for the kubelet's Secret volume: the manager's certificate rotator fills the chart's Secret and waits for
    its files under ``webhook.certDir`` (where the Deployment mounts that Secret) before it starts the controllers."""
    import base64

    path = f"/api/v1/namespaces/{NAMESPACE}/secrets/kueue-webhook-server-cert"
    data = wait_for("the webhook certificate in its Secret", lambda: (s := get(path)) is not None and "tls.key" in (s.get("data") or {}) and s["data"], log)
    certs = folder / "certs"
    certs.mkdir(exist_ok=True)
    for name in ("ca.crt", "tls.crt", "tls.key"):
        (certs / name).write_bytes(base64.b64decode(data[name]))


def _condition(obj: dict[str, Any] | None, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in ((obj or {}).get("status") or {}).get("conditions") or [])


# --- the test --------------------------------------------------------------------------------------------


def test_a_job_on_the_dws_pool_is_admitted_only_once_its_provisioning_request_is_provisioned(
    control_plane: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    binary = KUEUE_BUILD.folder(shared_dir(tmp_path_factory)) / "kueue"
    started = time.monotonic()
    server = Server(control_plane.api_client())

    def get(path: str) -> dict[str, Any] | None:
        status, body, _ = server.request("GET", path)
        return body if status == 200 else None

    config = _stack(dask={"tenants": [{"name": TENANT, "gpu_quota": 8}]})
    plan = config.queues_plan
    assert plan is not None and not plan.problems
    (dws,) = [p for p in config.pool_shapes() if p.queued_provisioning]
    (flavor,) = [f for f in plan.flavors if f["metadata"]["name"].endswith(dws.name)]
    (local_queue,) = plan.local_queues
    bodies = [*plan.flavors, *plan.provisioning_configs, *plan.admission_checks, plan.cohort, *plan.cluster_queues, *plan.local_queues]
    crds = [ApplyObject(c, "chart kueue 0.19.2") for c in _kueue_crds()] + [
        ApplyObject(provisioning_request_crd(), "k8s.io/autoscaler/cluster-autoscaler/apis")
    ]
    namespaces = [ApplyObject({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}, "test") for n in (NAMESPACE, TENANT)]
    # The empty Secret the chart ships (templates/internalcert/secret.yaml) for the manager's certificate rotator to fill.
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kueue-webhook-server-cert", "namespace": NAMESPACE}}
    namespaces.append(ApplyObject(secret, "chart kueue 0.19.2"))
    result = apply_objects(server, [*crds, *namespaces, *(ApplyObject(copy.deepcopy(b), "queues") for b in bodies)])
    assert not result.refusals, result.refusals[0].line
    applied = time.monotonic()

    # The job GKE's how-to shows for queued provisioning: suspended, the tenant's queue label, the DWS pool's node
    # selector and the GPU taint's toleration (the flavor's), asking for one of the pool's GPUs.
    spec = flavor["spec"]
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": TENANT, "labels": {"kueue.x-k8s.io/queue-name": local_queue["metadata"]["name"]}},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": dict(spec.get("nodeLabels") or {}),
                    "tolerations": copy.deepcopy(spec.get("tolerations") or []),
                    "containers": [
                        {
                            "name": "train",
                            "image": "busybox",
                            "resources": {
                                "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
                                "limits": {"nvidia.com/gpu": "1"},
                            },
                        }
                    ],
                }
            },
        },
    }
    job_path = f"/apis/batch/v1/namespaces/{TENANT}/jobs/train"

    with running_manager(binary, control_plane.kubeconfig, tmp_path) as log:
        mount_certificate(get, tmp_path, log)
        queue_name = plan.cluster_queues[0]["metadata"]["name"]
        wait_for(
            f"ClusterQueue {queue_name} active (its flavors and the {CHECK} check found)",
            lambda: _condition(get(f"{KUEUE_API}/clusterqueues/{queue_name}"), "Active"),
            log,
        )
        ready = time.monotonic()
        status, body, _ = server.request("POST", f"/apis/batch/v1/namespaces/{TENANT}/jobs", job)
        assert status == 201, body

        def workload() -> dict[str, Any] | None:
            items = (get(f"{KUEUE_API}/namespaces/{TENANT}/workloads") or {}).get("items") or []
            return next((w for w in items if any(o.get("name") == "train" for o in w["metadata"].get("ownerReferences") or [])), None)

        def request() -> dict[str, Any] | None:
            items = (get(f"{PROVISIONING_API}/namespaces/{TENANT}/provisioningrequests") or {}).get("items") or []
            return items[0] if items else None

        # Quota reserved on the DWS flavor, a ProvisioningRequest made, and the Workload not admitted: the Job waits.
        reserved = wait_for("the job's Workload with quota reserved", lambda: (w := workload()) is not None and _condition(w, "QuotaReserved") and w, log)
        assignment = reserved["status"]["admission"]["podSetAssignments"][0]["flavors"]
        assert assignment["nvidia.com/gpu"] == flavor["metadata"]["name"], assignment
        pr = wait_for("a ProvisioningRequest for the Workload", request, log)
        assert pr["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
        (pod_set,) = pr["spec"]["podSets"]
        assert pod_set["count"] == 1
        template = get(f"/api/v1/namespaces/{TENANT}/podtemplates/{pod_set['podTemplateRef']['name']}")
        assert template is not None and template["template"]["spec"]["nodeSelector"] == spec.get("nodeLabels", {})
        time.sleep(3)  # the manager has had time to admit it, were it going to without the request
        held = workload()
        assert held is not None and not _condition(held, "Admitted"), held
        (check,) = held["status"]["admissionChecks"]
        assert check["name"] == CHECK and check["state"] == "Pending", check
        stored_job = get(job_path)
        assert stored_job is not None and stored_job["spec"]["suspend"] is True

        # GKE's autoscaler (stood in for here) got every node of the request at once: Provisioned.
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conditions = [
            {"type": kind, "status": "True", "reason": kind, "message": f"stood in by {__name__}", "lastTransitionTime": now}
            for kind in ("Accepted", "Provisioned")
        ]
        status, body, _ = server.request(
            "PATCH",
            f"{PROVISIONING_API}/namespaces/{TENANT}/provisioningrequests/{pr['metadata']['name']}/status",
            {"status": {"conditions": conditions}},
            content_type="application/merge-patch+json",
        )
        assert status == 200, body

        admitted = wait_for(
            "the Workload admitted once the request is provisioned", lambda: (w := workload()) is not None and _condition(w, "Admitted") and w, log
        )
        assert [c["state"] for c in admitted["status"]["admissionChecks"]] == ["Ready"]
        released = wait_for("the Job unsuspended", lambda: (j := get(job_path)) is not None and j["spec"].get("suspend") is False and j, log)
        pod_spec = released["spec"]["template"]
        assert pod_spec["metadata"]["annotations"]["autoscaling.x-k8s.io/consume-provisioning-request"] == pr["metadata"]["name"]
        assert pod_spec["spec"]["nodeSelector"] == job["spec"]["template"]["spec"]["nodeSelector"]

        # Leave nothing behind for the other tests: the Job and its pods go while Kueue is there to drop its finalizers.
        server.request("DELETE", job_path, {"propagationPolicy": "Background"})
        wait_for("the Workload removed after the Job", lambda: workload() is None, log, timeout=30)
    print(
        f"kueue DWS admission: {time.monotonic() - started:.1f} s (CRDs and objects {applied - started:.1f} s, manager ready"
        f" {ready - applied:.1f} s, the flow and cleanup {time.monotonic() - ready:.1f} s)"
    )
