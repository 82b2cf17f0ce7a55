"""What the controllers did with the stack's workloads: the pods each one wants and the ones the server let
its controller create (issue 36 item 1).

The server taking a Deployment, a StatefulSet, a DaemonSet, a ReplicaSet or a Job is half of it: the
controllers of kube-controller-manager then create the pods, and admission can refuse those as it refuses
a bare Pod (a ResourceQuota smaller than the requests, Pod Security "restricted" refusing a privileged
container, a ServiceAccount or a PriorityClass that does not exist). The controller records each refusal
as a ``FailedCreate`` event on the workload (for a Deployment, on its ReplicaSet) and retries with
back-off; nothing else says it.

A workload is judged once its controller has acted (bounded wait): it is a violation when it still has
fewer pods than it wants and its controller's latest ``FailedCreate`` event says why. A refusal the next
retry overcomes (a quota whose status the quota controller had not yet recorded) is not one: the pods
then exist. A workload short of pods with no refusal (a StatefulSet waiting for its first pod to be
scheduled) is the scheduler's matter, judged with the pods (infra/apply/scheduling.py).

Each violation is one line: ``<kind> <namespace>/<name> (<source>): <controller> cannot create its pods:
<the server's reason>``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpu_platform.infra.apply.apply import ApplyObject, Refusal, Server

__all__ = ["WORKLOAD_KINDS", "WORKLOAD_QUIET", "WORKLOAD_TIMEOUT", "Shortfall", "judge_workloads", "shortfalls"]

WORKLOAD_KINDS = {
    "Deployment": "/apis/apps/v1/deployments",
    "StatefulSet": "/apis/apps/v1/statefulsets",
    "DaemonSet": "/apis/apps/v1/daemonsets",
    "ReplicaSet": "/apis/apps/v1/replicasets",
    "Job": "/apis/batch/v1/jobs",
}
"""The kinds whose controllers create pods, and where the server lists them (CronJobs make Jobs on their
schedule only: not judged)."""

WORKLOAD_TIMEOUT = 60.0
"""Seconds the controllers get, after the apply, to create every workload's pods or to refuse them."""
WORKLOAD_QUIET = 3.0
"""Seconds no workload's state (short of pods or not, refused or not) may change before it is judged."""

_PREFIXES = (
    re.compile(r"^\(combined from similar events\): "),
    re.compile(r"^Error creating: "),
    re.compile(r"^create Pod \S+ in StatefulSet \S+ failed error: "),
)
"""What goes before the server's reason in a FailedCreate event: the event aggregator's mark for repeated
events, then the controller's (replicaset, daemonset and job controllers; the statefulset controller)."""


@dataclass(frozen=True)
class Shortfall:
    """A workload with fewer pods than it wants, and why when its controller was refused."""

    obj: ApplyObject
    wanted: int
    have: int
    controller: str = ""
    """The component that was refused (``replicaset-controller``, ...), empty when none was."""
    reason: str = ""
    """The server's reason, as the controller's latest FailedCreate event gives it."""

    @property
    def refusal(self) -> Refusal:
        return Refusal(self.obj, f"{self.controller or 'its controller'} cannot create its pods ({self.have} of {self.wanted}): {self.reason}")


def _count(value: Any, default: int) -> int:
    return int(value) if isinstance(value, int) else default


def _wants(kind: str, item: dict[str, Any]) -> tuple[int, int]:
    """(pods wanted, pods created) of one workload as its status says."""
    spec, status = item.get("spec") or {}, item.get("status") or {}
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        return _count(spec.get("replicas"), 1), _count(status.get("replicas"), 0)
    if kind == "DaemonSet":
        return _count(status.get("desiredNumberScheduled"), 0), _count(status.get("currentNumberScheduled"), 0)
    finished = any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in status.get("conditions") or [])
    if finished or spec.get("suspend"):
        return 0, 0
    remaining = _count(spec.get("completions"), 1) - _count(status.get("succeeded"), 0)
    wanted = max(0, min(_count(spec.get("parallelism"), 1), remaining))
    return wanted, _count(status.get("active"), 0)


def _failed_creates(server: Server) -> dict[tuple[str, str, str], tuple[str, str, str]]:
    """The latest FailedCreate event per involved object: (kind, namespace, name) -> (time, component, reason)."""
    status, document, _ = server.request("GET", "/api/v1/events", query=[("fieldSelector", "reason=FailedCreate")])
    latest: dict[tuple[str, str, str], tuple[str, str, str]] = {}
    for event in document.get("items", []) if status == 200 else []:
        involved = event.get("involvedObject") or {}
        key = (str(involved.get("kind")), str(involved.get("namespace") or ""), str(involved.get("name")))
        when = str(event.get("lastTimestamp") or event.get("eventTime") or (event.get("metadata") or {}).get("creationTimestamp") or "")
        component = str((event.get("source") or {}).get("component") or event.get("reportingComponent") or "")
        message = " ".join(str(event.get("message") or "").split())
        for prefix in _PREFIXES:
            message = prefix.sub("", message)
        if key not in latest or when >= latest[key][0]:
            latest[key] = (when, component, message)
    return latest


def shortfalls(server: Server, objects: Sequence[ApplyObject]) -> list[Shortfall]:
    """Every workload of ``objects`` that has fewer pods than it wants now, with its controller's latest
    refusal when there is one."""
    mine = {(o.kind, o.namespace or "default", o.name): o for o in objects if o.kind in WORKLOAD_KINDS}
    if not mine:
        return []
    events = _failed_creates(server)
    owner_of: dict[tuple[str, str, str], tuple[str, str, str]] = {}
    found: list[Shortfall] = []
    for kind in sorted({k for k, _, _ in mine} | ({"ReplicaSet"} if any(k == "Deployment" for k, _, _ in mine) else set())):
        status, document, _ = server.request("GET", WORKLOAD_KINDS[kind])
        for item in document.get("items", []) if status == 200 else []:
            meta = item.get("metadata") or {}
            key = (kind, str(meta.get("namespace") or ""), str(meta.get("name")))
            for ref in meta.get("ownerReferences") or []:
                if ref.get("controller"):
                    owner_of[key] = (str(ref.get("kind")), key[1], str(ref.get("name")))
            if key not in mine:
                continue
            wanted, have = _wants(kind, item)
            if have < wanted:
                found.append(Shortfall(mine[key], wanted, have))
    refused: dict[tuple[str, str, str], tuple[str, str, str]] = {}
    for key, event in events.items():
        target = owner_of.get(key, key) if key[0] == "ReplicaSet" else key
        if target not in refused or event[0] >= refused[target][0]:
            refused[target] = event
    out = []
    for short in found:
        why = refused.get((short.obj.kind, short.obj.namespace or "default", short.obj.name))
        out.append(Shortfall(short.obj, short.wanted, short.have, why[1], why[2]) if why is not None else short)
    return out


def judge_workloads(server: Server, objects: Sequence[ApplyObject], timeout: float = WORKLOAD_TIMEOUT, quiet: float = WORKLOAD_QUIET) -> list[Refusal]:
    """Wait (bounded by ``timeout``) until no workload's state has changed for ``quiet`` seconds, then one
    refusal per workload still short of pods whose controller was refused."""
    deadline = time.monotonic() + timeout
    last: Any = None
    since = time.monotonic()
    found: list[Shortfall] = []
    while True:
        found = shortfalls(server, objects)
        state = sorted((s.obj.kind, s.obj.namespace, s.obj.name, s.have, bool(s.reason)) for s in found)
        if state != last:
            last, since = state, time.monotonic()
        elif time.monotonic() - since >= quiet or time.monotonic() >= deadline:
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    return [s.refusal for s in found if s.reason]
