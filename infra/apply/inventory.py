"""What an earlier ``--apply KUBECONFIG`` of a stack put on the cluster, so objects that left the plan are
found (issue 36 item 4), as ``pulumi up`` finds them in its state and deletes them.

The record is one ConfigMap in the ``default`` namespace, ``gpu-platform-apply.<stack>``, whose
``objects`` key lists every object the last apply of that stack applied (apiVersion, kind, namespace,
name), as JSON; it is written after each apply (server-side apply, field manager ``gpu-platform-apply``).
Nothing else is changed on the objects.

An object the record lists and the plan no longer has is listed after the apply. It is removed only when
``--prune`` asks: each delete is first sent as a dry run (``dryRun=All``: the server checks it, nothing is
deleted); only when every dry run passes are they sent for real, in the reverse of Helm's install order
(workloads before their namespace, custom resources before their CRD). Without ``--prune``, the record
keeps listing them, so the next apply lists them again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpu_platform.components.core.labels import MANAGED_BY_LABEL
from gpu_platform.infra.apply.apply import HELM_INSTALL_ORDER, ApplyObject, Server, _reason

__all__ = ["INVENTORY_MANAGER", "INVENTORY_NAMESPACE", "Leftovers", "inventory_name", "prune", "read_inventory", "write_inventory"]

INVENTORY_NAMESPACE = "default"
INVENTORY_MANAGER = "gpu-platform-apply"
_RANK = {kind: i for i, kind in enumerate(HELM_INSTALL_ORDER)}

Key = tuple[str, str, str, str]
"""(apiVersion, kind, namespace, name) of an applied object."""


def inventory_name(stack: str) -> str:
    return "gpu-platform-apply." + (re.sub(r"[^a-z0-9.-]+", "-", stack.lower()).strip("-.") or "stack")


def _key(obj: ApplyObject) -> Key:
    return (obj.api_version, obj.kind, obj.namespace or "", obj.name)


def _label(key: Key) -> str:
    _, kind, namespace, name = key
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def read_inventory(server: Server, stack: str) -> list[Key]:
    """The objects the last apply of ``stack`` recorded (none when it never ran here)."""
    status, document, _ = server.request("GET", f"/api/v1/namespaces/{INVENTORY_NAMESPACE}/configmaps/{inventory_name(stack)}")
    if status != 200:
        return []
    try:
        found = json.loads((document.get("data") or {}).get("objects") or "[]")
    except ValueError:
        return []
    return [(str(a), str(k), str(n), str(m)) for a, k, n, m in found if isinstance(found, list)]


def write_inventory(server: Server, stack: str, keys: Sequence[Key]) -> str | None:
    """Record ``keys`` as what ``stack`` has on the cluster; None, else why it could not."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": inventory_name(stack), "namespace": INVENTORY_NAMESPACE, "labels": {MANAGED_BY_LABEL: INVENTORY_MANAGER}},
        "data": {"objects": json.dumps(sorted(set(keys)))},
    }
    status, document, _ = server.request(
        "PATCH",
        f"/api/v1/namespaces/{INVENTORY_NAMESPACE}/configmaps/{inventory_name(stack)}",
        body,
        [("fieldManager", INVENTORY_MANAGER), ("force", "true")],
        "application/apply-patch+yaml",
    )
    return None if 200 <= status < 300 else _reason(status, document)


@dataclass
class Leftovers:
    """Objects an earlier apply of the stack recorded that the plan no longer has."""

    listed: list[str] = field(default_factory=list)
    """One line per object that left the plan and is still on the cluster."""
    dry_run: list[str] = field(default_factory=list)
    """With --prune: one line per delete the server accepted as a dry run."""
    pruned: list[str] = field(default_factory=list)
    """With --prune: one line per object deleted."""
    refused: list[str] = field(default_factory=list)
    """With --prune: one line per delete the server refused (then nothing is deleted)."""
    kept: list[Key] = field(default_factory=list)
    """What the record keeps listing: what left the plan and was not deleted."""


def _path(server: Server, key: Key) -> str | None:
    api_version, kind, namespace, name = key
    served = server.resource(api_version, kind)
    if served is None:
        return None
    plural, namespaced = served
    where = f"/namespaces/{namespace or 'default'}" if namespaced else ""
    return f"{server.base(api_version)}{where}/{plural}/{name}"


def prune(server: Server, stack: str, planned: Sequence[ApplyObject], delete: bool) -> Leftovers:
    """Find what left the plan since the last apply of ``stack``; with ``delete``, dry-run every delete,
    then (only when every dry run passed) delete for real. Records the new inventory."""
    previous = read_inventory(server, stack)
    current = {_key(o) for o in planned}
    gone = [k for k in previous if k not in current]
    # Reverse install order: what lives in a namespace (or is a custom resource) before the namespace or the CRD.
    gone.sort(key=lambda k: (-_RANK.get(k[1], len(_RANK)), k[2], k[3]))
    found = Leftovers()
    present: list[tuple[Key, str]] = []
    for key in gone:
        path = _path(server, key)
        if path is None or server.request("GET", path)[0] != 200:
            continue  # already gone (deleted by hand, or with its namespace or CRD)
        present.append((key, path))
        found.listed.append(f"{_label(key)}: applied by an earlier --apply of stack {stack}, no longer in its plan")
    if delete:
        for key, path in present:
            status, document, _ = server.request("DELETE", path, query=[("dryRun", "All"), ("propagationPolicy", "Foreground")])
            if 200 <= status < 300:
                found.dry_run.append(f"{_label(key)}: the server would delete it")
            else:
                found.refused.append(f"{_label(key)}: the server refused its delete (dry run): {_reason(status, document)}")
        if not found.refused:
            for key, path in present:
                status, document, _ = server.request("DELETE", path, query=[("propagationPolicy", "Foreground")])
                if 200 <= status < 300 or status == 404:
                    found.pruned.append(f"{_label(key)}: deleted")
                else:
                    found.refused.append(f"{_label(key)}: the server refused its delete: {_reason(status, document)}")
    deleted = {line.split(": ", 1)[0] for line in found.pruned}
    found.kept = [key for key, _ in present if _label(key) not in deleted]
    why = write_inventory(server, stack, [*current, *found.kept])
    if why is not None:
        found.refused.append(f"ConfigMap {INVENTORY_NAMESPACE}/{inventory_name(stack)}: the record of what this stack applied could not be written: {why}")
    return found
