"""Regenerate reference.json: the real cluster autoscaler on each differential scenario.

    .venv/bin/python -m tests.differential.regenerate --autoscaler PATH [--scenario NAME ...]

What it runs, per scenario, on this machine (every server on 127.0.0.1, every process stopped):
the local Kubernetes 1.34 control plane of infra/apply/local.py (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok), with kwok's node-initialize stage delayed by the
scenario's scaled node_ready (and never run for a group whose nodes never become Ready), and
cluster-autoscaler 1.34.5 with its kwok cloud provider (cloudprovider/kwok: node groups from the
``kwok-provider-templates`` ConfigMap, nodes created as Node objects that kwok makes Ready). The
autoscaler's flags are the scenario's settings times TIME_FACTOR (scenarios.py), as the simulator's.
Then the scenario's pods are created at their times (one GPU each, by the client's clock), each
deleted ``run`` seconds after it was scheduled; a watch records when each pod is scheduled and when
each node is created and deleted. The figures (scenarios.figures) go to reference.json with the
versions and the time factor.

The autoscaler binary: ``--autoscaler PATH`` or ``GPU_PLATFORM_CLUSTER_AUTOSCALER``, cluster-autoscaler 1.34.5
built with ``-tags kwok`` (the kwok provider is behind that build tag). This repository does not build it: the Go
module proxy refuses k8s.io/autoscaler/cluster-autoscaler (403 on every version), and the project builds only what a
registry serves by name, never a source checkout; bring a binary built where that is allowed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.infra.apply.local import BINARIES, KWOK_STAGES, ControlPlaneError, _Process, _stop, control_plane, find_binaries, free_port
from tests.differential.scenarios import REAL, SCENARIOS, TIME_FACTOR, Scenario, figures

HERE = Path(__file__).resolve().parent
REFERENCE = HERE / "reference.json"
AUTOSCALER_VERSION = "1.34.5"
GROUP_LABEL = "diffgroup"
GPU_LABEL = "cloud.google.com/gke-accelerator"
GPU_TYPE = "nvidia-tesla-t4"
NAMESPACE = "default"
STARTUP_TAINT = "startup-taint.cluster-autoscaler.kubernetes.io/node-ready"


def stages(scenario: Scenario, folder: Path) -> Path:
    """The control plane's binaries beside a kwok stage file whose node-initialize waits node_ready."""
    binaries = find_binaries()
    out = folder / "bin"
    out.mkdir()
    for name in BINARIES:
        (out / name).symlink_to(binaries / name)
    docs = list(yaml.safe_load_all((binaries / KWOK_STAGES).read_text()))
    for doc in docs:
        if doc and doc["metadata"]["name"] == "node-initialize":
            ms = int(round(scenario.scaled("node_ready") * 1000))
            doc["spec"]["delay"] = {"durationMilliseconds": ms}
    (out / KWOK_STAGES).write_text(yaml.safe_dump_all([d for d in docs if d]))
    return out


def template(group: Any) -> dict[str, Any]:
    res = {"cpu": f"{group.cpu}m", "memory": f"{group.memory}Mi", "pods": "110"}
    if group.gpus:
        res["nvidia.com/gpu"] = str(group.gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"template-{group.name}",
            "labels": {GROUP_LABEL: group.name, "kubernetes.io/os": "linux", **({GPU_LABEL: GPU_TYPE} if group.gpus else {})},
            "annotations": {
                "cluster-autoscaler.kwok.nodegroup/min-count": str(group.min_nodes),
                "cluster-autoscaler.kwok.nodegroup/max-count": str(group.max_nodes),
                "cluster-autoscaler.kwok.nodegroup/desired-count": str(group.min_nodes),
            },
        },
        # A startup taint (the autoscaler's convention, utils/taints/taints.go:49: a node carrying one is
        # counted as not ready yet, and templates drop it) that the Recorder lifts as soon as kwok makes the
        # node Ready: the scheduler binds nothing to a node kwok has not initialised (the node-lifecycle
        # controller's not-ready taint proved racy on nodes created without conditions).
        "spec": {"taints": [{"key": STARTUP_TAINT, "effect": "NoSchedule"}]},
        "status": {"allocatable": res, "capacity": res},
    }


def configure(api: Any, scenario: Scenario) -> None:
    from kubernetes import client

    core = client.CoreV1Api(api)
    config = {
        "apiVersion": "v1alpha1",
        "readNodesFrom": "configmap",
        "nodegroups": {"fromNodeLabelKey": GROUP_LABEL},
        "nodes": {"skipTaint": True, "gpuConfig": {"gpuLabelKey": GPU_LABEL, "availableGPUTypes": {GPU_TYPE: {}}}},
        "configmap": {"name": "kwok-provider-templates", "key": "templates"},
    }
    templates = {"apiVersion": "v1", "kind": "List", "items": [template(g) for g in scenario.groups]}
    data = {"kwok-provider-config": {"config": yaml.safe_dump(config)}, "kwok-provider-templates": {"templates": yaml.safe_dump(templates)}}
    if scenario.expander.startswith("priority"):
        tiers: dict[int, list[str]] = {}
        for g in scenario.groups:
            tiers.setdefault(g.priority, []).append(f"^{g.name}$")
        data["cluster-autoscaler-priority-expander"] = {"priorities": yaml.safe_dump(tiers)}
    for name, body in data.items():
        core.create_namespaced_config_map(NAMESPACE, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=body))


def refuse(api: Any, scenario: Scenario) -> None:
    """A refused group's nodes are denied by the API server (a ValidatingAdmissionPolicy on Node creation), so
    the kwok provider's IncreaseSize fails when asked (cloudprovider/kwok/kwok_nodegroups.go:84-87) and the
    autoscaler registers a failed scale-up at once and backs the group off
    (core/scaleup/orchestrator/executor.go:168-172): a cloud that reports no capacity with no delay. The kwok
    provider cannot report the other kind of failure, instances that exist with an error (its Nodes() gives
    every instance InstanceRunning and no ErrorInfo, kwok_nodegroups.go:189-192), and nodes that register but
    never become Ready are counted as upcoming for the compiled MaxNodeStartupTime of 15 minutes
    (clusterstate/clusterstate.go:48, :634), which a scaled run cannot shorten: so a shortage found only at
    max-node-provision-time has no real counterpart here (docs/simulator/validation.md: simulated only)."""
    from kubernetes import client

    names = [g.name for g in scenario.groups if g.refused]
    if not names:
        return
    adm = client.AdmissionregistrationV1Api(api)
    adm.create_validating_admission_policy(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "no-capacity"},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["nodes"]}]},
                "validations": [
                    {
                        "expression": f"!has(object.metadata.labels) || !('{GROUP_LABEL}' in object.metadata.labels) || "
                        f"!(object.metadata.labels['{GROUP_LABEL}'] in {json.dumps(names)})",
                        "message": "no capacity",
                    }
                ],
            },
        }
    )
    adm.create_validating_admission_policy_binding(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "no-capacity"},
            "spec": {"policyName": "no-capacity", "validationActions": ["Deny"]},
        }
    )
    core = client.CoreV1Api(api)
    probe = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "capacity-probe", "labels": {GROUP_LABEL: names[0]}}}
    deadline = time.monotonic() + 30
    while True:  # the policy is enforced once the API server has loaded it
        try:
            core.create_node(probe, dry_run="All")
        except client.ApiException as exc:
            if exc.status in (400, 403, 422):
                return
            raise
        if time.monotonic() > deadline:
            raise SystemExit("error: the no-capacity admission policy was not enforced in 30 s")
        time.sleep(0.2)


def warm_nodes(api: Any, scenario: Scenario) -> None:
    """The groups' minimum nodes, made as the kwok provider makes them (kwok_helpers.go prepareNode)."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    for g in scenario.groups:
        for i in range(g.min_nodes):
            node = template(g)
            name = f"{g.name}-warm{i}"
            node["metadata"]["name"] = name
            node["metadata"]["annotations"] |= {"kwok.x-k8s.io/node": "fake", "cluster-autoscaler.kwok.nodegroup/name": g.name}
            node["spec"]["providerID"] = f"kwok:{name}"
            core.create_node(node)
    deadline = time.monotonic() + 60
    want = sum(g.min_nodes for g in scenario.groups)
    while want:
        ready = [n for n in core.list_node().items if _ready(n) and not any(t.key == STARTUP_TAINT for t in n.spec.taints or [])]
        if len(ready) >= want:
            return
        if time.monotonic() > deadline:
            raise SystemExit("error: the warm nodes did not become Ready in 60 s")
        time.sleep(0.2)


def autoscaler_args(scenario: Scenario, kubeconfig: Path, port: int) -> list[str]:
    s = scenario.scaled
    secs = lambda v: f"{v:g}s"  # noqa: E731
    return [
        "--cloud-provider=kwok",
        f"--kubeconfig={kubeconfig}",
        f"--namespace={NAMESPACE}",
        f"--address=127.0.0.1:{port}",
        "--leader-elect=false",
        f"--expander={scenario.expander}",
        f"--scan-interval={secs(s('scan_interval'))}",
        f"--scale-down-unneeded-time={secs(s('scale_down_unneeded'))}",
        f"--scale-down-delay-after-add={secs(s('scale_down_delay_after_add'))}",
        "--scale-down-delay-after-delete=0s",  # the model has no such delay
        f"--max-node-provision-time={secs(s('max_node_provision'))}",
        f"--unremovable-node-recheck-timeout={secs(s('unremovable_recheck'))}",
        f"--initial-node-group-backoff-duration={secs(s('initial_backoff'))}",
        f"--max-node-group-backoff-duration={secs(s('max_backoff'))}",
        f"--node-group-backoff-reset-timeout={secs(10800 * TIME_FACTOR)}",
        "--node-delete-delay-after-taint=0s",  # the model has no node deletion latency (docs/simulator/model.md: left out)
        "--scale-down-utilization-threshold=0.5",
        "--scale-down-gpu-utilization-threshold=0.5",
        "--enforce-node-group-min-size=false",
        "--max-inactivity=1h",
        "--max-failing-time=1h",
        "--write-status-configmap=false",
        "--logtostderr=true",
        "--v=4",
    ]


def _ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


class Recorder:
    """A watch on pods and nodes: when each pod is first seen scheduled, when each node comes and goes."""

    def __init__(self, api: Any) -> None:
        self.api, self.t0 = api, time.monotonic()
        self.scheduled: dict[str, float] = {}
        self.nodes: dict[str, list[float | None]] = {}
        self.ready: dict[str, float] = {}
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._watch, args=(kind,), daemon=True) for kind in ("pods", "nodes")]
        for t in self.threads:
            t.start()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _watch(self, kind: str) -> None:
        from kubernetes import client, watch

        core = client.CoreV1Api(self.api)
        while not self.stop.is_set():
            w = watch.Watch()
            lister = core.list_namespaced_pod if kind == "pods" else core.list_node
            kwargs = {"namespace": NAMESPACE} if kind == "pods" else {}
            with contextlib.suppress(Exception):
                for event in w.stream(lister, timeout_seconds=5, **kwargs):
                    obj, at = event["object"], self.now()
                    name = obj.metadata.name
                    if kind == "pods":
                        if obj.spec.node_name and name not in self.scheduled:
                            self.scheduled[name] = at
                    elif event["type"] == "DELETED":
                        self.nodes.setdefault(name, [at, None])[1] = at
                    else:
                        if name not in self.nodes:
                            self.nodes[name] = [at, None]
                        taints = obj.spec.taints or []
                        if _ready(obj) and any(t.key == STARTUP_TAINT for t in taints):
                            self.ready.setdefault(name, at)
                            keep = [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints if t.key != STARTUP_TAINT]
                            with contextlib.suppress(Exception):
                                core.patch_node(name, {"spec": {"taints": keep or None}})
                    if self.stop.is_set():
                        break


def run_scenario(scenario: Scenario, autoscaler: Path, log_dir: Path | None) -> dict[str, Any]:
    from kubernetes import client

    with tempfile.TemporaryDirectory(prefix="gpu-platform-diff-") as tmp:
        folder = Path(tmp)
        with control_plane(stages(scenario, folder)) as plane:
            api = plane.api_client()
            core = client.CoreV1Api(api)
            configure(api, scenario)
            refuse(api, scenario)
            rec = Recorder(api)
            warm_nodes(api, scenario)
            warm = {n.metadata.name for n in core.list_node().items}
            log = folder / "cluster-autoscaler.log"
            processes: list[_Process] = []
            with open(log, "wb") as out:
                env = {**os.environ, "POD_NAMESPACE": NAMESPACE, "KWOK_PROVIDER_MODE": "local", "KUBECONFIG": str(plane.kubeconfig)}
                popen = subprocess.Popen(
                    [str(autoscaler), *autoscaler_args(scenario, plane.kubeconfig, free_port())],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,
                )
            processes.append(_Process("cluster-autoscaler", popen, log))
            try:
                time.sleep(3 * scenario.scaled("scan_interval") + 2)  # its first loops (caches synced)
                if popen.poll() is not None:
                    raise SystemExit(f"error: cluster-autoscaler exited: {processes[0].last_line()}")
                rec.t0 = time.monotonic()
                rec.nodes = {name: [0.0, None] for name in warm}
                created: dict[str, float] = {}
                deleted: set[str] = set()
                pods = sorted(enumerate(scenario.pods), key=lambda ip: ip[1].at)
                nxt = 0
                while rec.now() < scenario.horizon:
                    now = rec.now()
                    while nxt < len(pods) and pods[nxt][1].at <= now:
                        i, p = pods[nxt]
                        name = f"pod-{i:03d}"
                        res = {"cpu": f"{p.cpu}m", "memory": f"{p.memory}Mi", **({"nvidia.com/gpu": str(p.gpus)} if p.gpus else {})}
                        created[name] = rec.now()
                        core.create_namespaced_pod(
                            NAMESPACE,
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "metadata": {"name": name},
                                "spec": {
                                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": res, "limits": res}}],
                                    "terminationGracePeriodSeconds": 0,
                                },
                            },
                        )
                        nxt += 1
                    for i, p in pods:
                        name = f"pod-{i:03d}"
                        at = rec.scheduled.get(name)
                        if at is not None and name not in deleted and now >= at + p.run:
                            core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
                            deleted.add(name)
                    time.sleep(0.05)
                rec.stop.set()
                waits = [rec.scheduled[n] - created[n] for n in created if n in rec.scheduled]
                unscheduled = sorted(set(created) - set(rec.scheduled))
                binds = [rec.scheduled[n] for n in created if n in rec.scheduled]
                result = figures(waits, [(a, r) for a, r in rec.nodes.values()], scenario.horizon, binds)
                result["unscheduled"] = len(unscheduled)
                # The kwok provider names a node <group>-<5 random letters> (kwok_nodegroups.go:78); warm ones <group>-warm<i>.
                result["groups"] = {g.name: sum(1 for n in rec.nodes if n.rsplit("-", 1)[0] == g.name) for g in scenario.groups}
                result["node_ready_after"] = sorted(round(rec.ready[n] - a, 2) for n, (a, _) in rec.nodes.items() if n in rec.ready and a > 0)
                return result
            finally:
                _stop(processes)
                with contextlib.suppress(NameError):
                    rec.stop.set()
                if log_dir is not None:
                    log_dir.mkdir(parents=True, exist_ok=True)
                    for src in [log, *folder.glob("*.log"), *plane.folder.glob("*.log")]:
                        with contextlib.suppress(OSError):
                            (log_dir / f"{scenario.name}-{src.name}").write_bytes(src.read_bytes())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.differential.regenerate", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--autoscaler",
        type=Path,
        default=os.environ.get("GPU_PLATFORM_CLUSTER_AUTOSCALER"),
        help="the cluster-autoscaler 1.34.5 binary built with -tags kwok (or GPU_PLATFORM_CLUSTER_AUTOSCALER); not built"
        " here: the Go module proxy refuses the module and a source checkout is never built",
    )
    parser.add_argument("--scenario", action="append", choices=[s.name for s in SCENARIOS], help="only these (default: all)")
    parser.add_argument("--logs", type=Path, help="keep each process's log in this folder")
    parser.add_argument("--output", type=Path, default=REFERENCE, help=f"default: {REFERENCE.relative_to(HERE.parents[1])}")
    args = parser.parse_args(argv)
    autoscaler = args.autoscaler
    if autoscaler is None or not os.access(autoscaler, os.X_OK):
        print("error: --autoscaler (or GPU_PLATFORM_CLUSTER_AUTOSCALER) naming an executable cluster-autoscaler is needed", file=sys.stderr)
        return 2
    reference = json.loads(args.output.read_text()) if args.output.is_file() else {"scenarios": {}}
    chosen = [s for s in SCENARIOS if not args.scenario or s.name in args.scenario]
    try:
        for scenario in chosen:
            print(f"{scenario.name}: running ({scenario.horizon:g} s)", flush=True)
            reference["scenarios"][scenario.name] = run_scenario(scenario, autoscaler, args.logs)
            print(f"{scenario.name}: {json.dumps({k: v for k, v in reference['scenarios'][scenario.name].items() if k != 'waits'})}", flush=True)
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    reference.update(
        {
            "cluster_autoscaler": AUTOSCALER_VERSION,
            "kubernetes": "v1.34 (tests/kube/k8s/go.mod)",
            "kwok": "v0.8.0 (tests/kube/kwok/go.mod)",
            "time_factor": TIME_FACTOR,
            "real_settings": REAL,
            "generated": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    )
    text = json.dumps(reference, indent=1, sort_keys=True) + "\n"
    tmp = args.output.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
