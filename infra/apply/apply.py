"""Server-side apply of everything a stack puts on a cluster, in the order the engine creates it.

What is applied: the plan's Kubernetes objects and every object its Helm releases and Kustomize
directories render to after the components' transforms (infra/preview/manifests.py, infra/preview/render.py: the
same lists `gpu-platform preview` checks and writes with --manifests).

How, as pulumi-kubernetes v4 applies (provider/pkg/await: Creation with server-side apply):
an apply patch (``application/apply-patch+yaml``) per object, one field manager per Pulumi
resource (the provider names it ``pulumi-kubernetes-<random>`` unless the object's
``pulumi.com/patchFieldManager`` annotation names one; here the suffix is derived from the URN
without its stack name, so runs repeat and another stack name of the same objects owns the same
fields), ``force`` only where the object's ``pulumi.com/patchForce`` annotation asks (the
provider forces otherwise only in previews), and ``fieldValidation=Warn`` (unknown fields are a
warning from the server, not a refusal). The server is the judge: nothing is skipped or altered
to make a stack pass. The one change made to an object: a value Pulumi keeps secret is applied
as the preview's placeholder, and where a Secret's ``data`` holds it, base64 encoded so it has the
shape the API requires.

In which order: CustomResourceDefinitions first, each waited for until the server reports it
Established (bounded: the provider retries a custom resource whose kind is not yet served, for
~30 s); then the rest, resource by resource in the plan's dependency order (``depends_on`` and the
dependencies Pulumi records from inputs, a component's dependency meaning all of its children),
resources creating a Namespace as late as that order allows (the engine creates resources that do
not wait for each other at once, so an object whose resource forgot to wait for its namespace's is
refused, as in ``pulumi up``); within a Helm release as Helm installs: pre-install hooks, the objects
by Helm's kind order (releaseutil.InstallOrder: its own Namespace first), post-install hooks. The
objects of a plan resource or a Kustomize directory go in the same kind order. Unlike the provider,
a failed object is not retried.

Each refusal is one line: ``<kind> <namespace>/<name> (<source>): <the server's reason>``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_platform.infra.preview.manifests import ObjectView

__all__ = [
    "FIELD_MANAGER_PREFIX",
    "HELM_INSTALL_ORDER",
    "ApplyObject",
    "ApplyResult",
    "Refusal",
    "Server",
    "apply_objects",
    "create_nodes",
    "engine_order",
    "settle",
    "stack_objects",
]

FIELD_MANAGER_PREFIX = "pulumi-kubernetes-"
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"
FIELD_MANAGER_ANNOTATION = "pulumi.com/patchFieldManager"
CRD_TIMEOUT = 120.0
"""Seconds a CRD may take to become Established after the run was sent or the CRD before it in the run was
Established: a bound on a stall, not on the run (the server establishes 85 Kubeflow CRDs one by one and
publishes each one's OpenAPI; on a loaded 2-core machine the whole run can take minutes while every CRD
still makes progress)."""
REQUEST_TIMEOUT = 60.0
CRD_CONCURRENCY = 4
"""CRDs sent at once (the large ones take the API server seconds each to apply)."""

HELM_INSTALL_ORDER = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
)
"""Helm v3's install order by kind (pkg/releaseutil/kind_sorter.go); other kinds follow, by kind
name, then by object name (its lessByKind)."""

_RANK = {kind: i for i, kind in enumerate(HELM_INSTALL_ORDER)}


def _kind_key(body: dict[str, Any]) -> tuple[int, str, str]:
    kind = str(body.get("kind", ""))
    return (_RANK.get(kind, len(_RANK)), "" if kind in _RANK else kind, str((body.get("metadata") or {}).get("name", "")))


@dataclass(frozen=True)
class ApplyObject(ObjectView):
    """One object to apply and what declares it (its kind, name and label as every check reads them)."""

    body: dict[str, Any]
    """The object as sent (secrets as the preview's placeholders)."""
    source: str
    """What declares it, for messages: ``resource <name>``, ``chart <chart version> of <release>``, ``kustomize <url>``."""
    owner: str = ""
    """The URN of the plan resource that applies it (its own, or its release's or directory's)."""
    field_manager: str = "gpu-platform"
    hook: str | None = None
    """A Helm hook's phase: pre-install or post-install (None for the release's objects)."""


@dataclass(frozen=True)
class Refusal:
    obj: ApplyObject
    reason: str

    @property
    def line(self) -> str:
        return f"{self.obj.label} ({self.obj.source}): {self.reason}"


@dataclass
class ApplyResult:
    applied: list[ApplyObject] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """The server's warnings (unknown fields, deprecated APIs), one line each."""
    unserved: list[str] = field(default_factory=list)
    """Objects of APIs the managed cluster serves itself (cluster_checks.CLUSTER_PROVIDED_GROUPS: GKE's
    ComputeClass, ...) that this server does not serve: not applied, one line each (the local control
    plane is not GKE or EKS; a real cluster of the stack's cloud serves them)."""
    pods: list[dict[str, Any]] = field(default_factory=list)
    """The pods read back from the server after the apply settled (with nodes: scheduled or not)."""
    workloads: list[Refusal] = field(default_factory=list)
    """Workloads whose controller the server refused their pods (infra/apply/workloads.py), one each."""
    judged: int = 0
    """How many workloads (Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs) were judged."""
    unfit: list[str] = field(default_factory=list)
    """Workloads (or bare pods) whose pods fit no node of any pool at its maximum (infra/apply/scheduling.py)."""
    expected: list[str] = field(default_factory=list)
    """What is expected to stay pending here, and the pools the autoscaler would scale, each with why."""
    node_counts: dict[str, int] = field(default_factory=dict)
    """Pool -> the kwok nodes it has at the end (its minimum, at least one, plus what the autoscaler would add)."""
    seconds: float = 0.0
    provided_groups: frozenset[str] = frozenset()
    """API groups the stack's managed cluster serves itself (set for --apply local)."""
    replace_immutable: bool = False
    """Replace an object whose change the server refuses as immutable, as the engine does (delete, then
    create): set for --apply KUBECONFIG, where objects of an earlier apply live on."""
    replaced: list[Refusal] = field(default_factory=list)
    """Objects replaced so (each with the server's reason for it), one line each: not refusals."""
    left: list[str] = field(default_factory=list)
    """--apply KUBECONFIG: objects an earlier apply of the stack put there that left its plan (infra/apply/inventory.py)."""
    pruned: list[str] = field(default_factory=list)
    """With --prune: each delete's dry run, then each object deleted, one line each."""
    prune_refused: list[str] = field(default_factory=list)
    """With --prune: deletes the server refused (then none was sent for real), one line each."""


# --- what is applied --------------------------------------------------------------------------


def _field_manager(urn: str) -> str:
    """``pulumi-kubernetes-`` and 8 hex digits, the shape of the provider's name (v4.25.0
    provider/pkg/provider/provider.go fieldManagerName: ``resource.NewUniqueName(randomSeed,
    "pulumi-kubernetes-", 0, 0, nil)``, random per resource and kept in its state as ``__fieldManager``,
    so no one but the engine knows it). Here the digits come from the URN without its stack name: the
    same resource has the same manager under every stack name, so applying the same objects again under
    another stack name takes over its own fields instead of conflicting with them."""
    project_and_path = urn.split("::", 1)[1] if urn.startswith("urn:pulumi:") and "::" in urn else urn
    return FIELD_MANAGER_PREFIX + hashlib.sha256(project_and_path.encode()).hexdigest()[:8]


def _secret_shaped(raw: dict[str, Any]) -> dict[str, Any]:
    """The object with secrets unwrapped to their placeholders; a Secret's ``data`` value that was
    secret and is not base64 is encoded, so the placeholder has the shape the API requires."""
    from gpu_platform.infra.preview.engine import SECRET_SIG
    from gpu_platform.infra.preview.manifests import plain

    body: dict[str, Any] = plain(raw)
    if raw.get("kind") == "Secret" and isinstance(raw.get("data"), dict):
        data = dict(body.get("data") or {})
        for key, value in raw["data"].items():
            if isinstance(value, dict) and SECRET_SIG.items() <= value.items() and isinstance(data.get(key), str):
                try:
                    base64.b64decode(data[key], validate=True)
                except (binascii.Error, ValueError):
                    data[key] = base64.b64encode(data[key].encode()).decode()
        body = {**body, "data": data}
    return body


def _annotation(body: dict[str, Any], key: str) -> str | None:
    value = ((body.get("metadata") or {}).get("annotations") or {}).get(key)
    return str(value) if value is not None else None


def _helm_hook(body: dict[str, Any]) -> str | None:
    hooks = {h.strip() for h in (_annotation(body, "helm.sh/hook") or "").split(",") if h.strip()}
    if "pre-install" in hooks:
        return "pre-install"
    if "post-install" in hooks:
        return "post-install"
    return None if not hooks else "other"


def stack_objects(plan: Any, plan_objects: Sequence[Any], rendering: Any | None) -> list[ApplyObject]:
    """Everything the stack puts on the cluster, in the engine's order (see engine_order)."""
    from gpu_platform.infra.preview.render import HELM_RELEASE

    found: list[ApplyObject] = []
    for o in plan_objects:
        body = _secret_shaped(o.resource.inputs)
        manager = _annotation(body, FIELD_MANAGER_ANNOTATION) or _field_manager(o.resource.urn)
        found.append(ApplyObject(body, f"resource {o.resource.name}", o.resource.urn, manager))
    for source in getattr(rendering, "sources", []) or []:
        resource = source.resource
        label = f"chart {source.origin} of {resource.name}" if resource.type == HELM_RELEASE else f"kustomize {source.origin}"
        for o in source.objects:
            body = _secret_shaped(o.body)
            hook = _helm_hook(body) if resource.type == HELM_RELEASE else None
            if hook == "other":
                continue  # upgrade, delete, rollback and test hooks: `helm install` does not run them
            manager = _annotation(body, FIELD_MANAGER_ANNOTATION) or _field_manager(
                resource.urn if resource.type == HELM_RELEASE else f"{resource.urn}${o.type}::{o.label}"
            )
            found.append(ApplyObject(body, label, resource.urn, manager, hook))
    return engine_order(plan, found)


def engine_order(plan: Any, objects: Sequence[ApplyObject]) -> list[ApplyObject]:
    """CRDs first, then each owning resource's objects in an order the engine could create them in: a
    resource after everything it waits for (the plan's declared dependencies, ``depends_on`` and those
    recorded from inputs, a component's meaning all of its children; its ancestors' too, since a child
    registers only once its parent has, after what the parent depends on), and among resources that do not wait
    for each other, the ones creating a Namespace as late as the others allow (the engine starts such
    resources at once, so an object whose resource does not wait for its namespace's can reach the server
    first: here it does, and is refused as ``pulumi up`` would refuse it). Within an owner: pre-install
    hooks, Helm's kind order (a release's or directory's own Namespace first), post-install hooks."""
    from gpu_platform.infra.preview.cluster_checks import _dependencies

    position = {r.urn: i for i, r in enumerate(plan.resources)} if plan is not None else {}
    direct = _dependencies(plan) if plan is not None else {}
    parents = {r.urn: r.parent for r in plan.resources} if plan is not None else {}

    def waits_for(urn: str) -> set[str]:
        # A child registers once its parent has, and a parent registers once what it depends on exists:
        # so a resource also waits for everything its ancestors wait for.
        found, parent, seen = set(direct.get(urn, set())), parents.get(urn), {urn}
        while parent and parent not in seen:
            seen.add(parent)
            found |= direct.get(parent, set())
            parent = parents.get(parent)
        return found - {urn}

    waits = {urn: waits_for(urn) for urn in position}
    owners = sorted({o.owner for o in objects}, key=lambda u: (position.get(u, len(position)), u))
    namespaces = {o.owner for o in objects if o.kind == "Namespace"}
    ordered: list[str] = []
    pending = list(owners)
    while pending:
        ready = [urn for urn in pending if not (waits.get(urn, set()) & (set(pending) - {urn}))]
        if not ready:
            ready = pending[:1]  # a cycle the engine would refuse; keep registration order
        urn = next((u for u in ready if u not in namespaces), ready[0])
        pending.remove(urn)
        ordered.append(urn)
    rank = {urn: i for i, urn in enumerate(ordered)}
    phase = {"pre-install": 0, None: 1, "post-install": 2}

    def weight(o: ApplyObject) -> int:
        try:
            return int(_annotation(o.body, "helm.sh/hook-weight") or 0)
        except ValueError:
            return 0

    def key(o: ApplyObject) -> tuple[Any, ...]:
        first = 0 if o.kind == "CustomResourceDefinition" else 1
        return (first, rank.get(o.owner, 0), phase.get(o.hook, 1), weight(o) if o.hook else 0, _kind_key(o.body))

    return sorted(objects, key=key)


# --- the server -------------------------------------------------------------------------------


class Server:
    """Raw REST against one API server through the kubernetes client's configuration (any
    kubeconfig: certificates, tokens, exec plugins)."""

    def __init__(self, api_client: Any) -> None:
        self.api = api_client
        self._resources: dict[str, dict[str, tuple[str, bool]] | None] = {}

    def request(
        self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None, content_type: str = "application/json"
    ) -> tuple[int, dict[str, Any], list[str]]:
        """(status, JSON body, warnings); a refused request is a status >= 400, not an exception."""
        from kubernetes.client.exceptions import ApiException

        try:
            response = self.api.call_api(
                path,
                method,
                query_params=query or [],
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=REQUEST_TIMEOUT,
            )
            status, text, headers = response.status, response.data, response.headers
        except ApiException as exc:
            status, text, headers = exc.status, exc.body, exc.headers or {}
        except Exception as exc:  # noqa: BLE001 - no answer (connection refused, timeout): status 0
            return 0, {"message": f"no answer from the API server: {type(exc).__name__}: {exc}"}, []
        try:
            document = json.loads(text) if text else {}
        except ValueError:
            document = {"message": text.decode(errors="replace") if isinstance(text, bytes) else str(text)}
        found = headers.getlist("Warning") if hasattr(headers, "getlist") else [headers.get("Warning")] if hasattr(headers, "get") else []
        warnings = [_warning_text(w) for w in found if w]
        return status, document if isinstance(document, dict) else {}, warnings

    def resource(self, api_version: str, kind: str, refresh: bool = False) -> tuple[str, bool] | None:
        """(plural, namespaced) of a kind as the server serves it (its discovery), or None."""
        if refresh or api_version not in self._resources:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            status, document, _ = self.request("GET", path)
            kinds = None
            if status == 200:
                kinds = {r["kind"]: (r["name"], bool(r.get("namespaced"))) for r in document.get("resources", []) if "/" not in r.get("name", "")}
            self._resources[api_version] = kinds
        return (self._resources.get(api_version) or {}).get(kind)

    @staticmethod
    def base(api_version: str) -> str:
        return "/api/v1" if api_version == "v1" else f"/apis/{api_version}"


def _warning_text(header: str) -> str:
    # RFC 7234 warning: 299 - "text"
    text = header.split(" ", 2)[-1] if header.startswith("299") else header
    return " ".join(text.strip().strip('"').split())


def _reason(status: int, document: dict[str, Any]) -> str:
    message = document.get("message") or document.get("reason") or f"HTTP {status}"
    return " ".join(str(message).split())


def result_provided(result: ApplyResult) -> frozenset[str]:
    return result.provided_groups


def _apply_one(server: Server, obj: ApplyObject, result: ApplyResult) -> dict[str, Any] | None:
    served = server.resource(obj.api_version, obj.kind)
    if served is None:
        served = server.resource(obj.api_version, obj.kind, refresh=True)
    if served is None and obj.api_version.rpartition("/")[0] in result_provided(result):
        result.unserved.append(f"{obj.label} ({obj.source}): {obj.api_version} is served by the managed cluster itself, not by this control plane: not applied")
        return None
    if served is None:
        result.refusals.append(
            Refusal(
                obj,
                f'no matches for kind "{obj.kind}" in version "{obj.api_version}" (the server does not serve it: its CRD is not installed or not established)',
            )
        )
        return None
    plural, namespaced = served
    where = f"/namespaces/{obj.namespace or 'default'}" if namespaced else ""
    query = [("fieldManager", obj.field_manager), ("fieldValidation", "Warn")]
    if (_annotation(obj.body, PATCH_FORCE_ANNOTATION) or "").lower() == "true":
        query.append(("force", "true"))
    path = f"{server.base(obj.api_version)}{where}/{plural}/{obj.name}"
    status, document, warnings = server.request("PATCH", path, obj.body, query, "application/apply-patch+yaml")
    result.warnings += [f"{obj.label} ({obj.source}): {w}" for w in warnings]
    if status == 422 and result.replace_immutable and "immutable" in _reason(status, document):
        why = _reason(status, document).split(" @@ ", 1)[0]  # a PersistentVolume's refusal appends a diff of the whole source
        gone = _delete_and_wait(server, path)
        if gone is not None:
            result.refusals.append(Refusal(obj, f"{why}; replacing it: {gone}"))
            return None
        status, document, _ = server.request("PATCH", path, obj.body, query, "application/apply-patch+yaml")
        if status < 400 and status != 0:
            result.replaced.append(Refusal(obj, why))
    if status >= 400 or status == 0:
        result.refusals.append(Refusal(obj, _reason(status, document)))
        return None
    result.applied.append(obj)
    return document


DELETE_TIMEOUT = 60.0
"""Seconds an object being replaced may take to be gone (finalizers, dependants deleted in the foreground)."""


def _delete_and_wait(server: Server, path: str, timeout: float = DELETE_TIMEOUT) -> str | None:
    """Delete the object at ``path`` (its dependants first, as the engine's delete) and wait until it is
    gone; None once gone, else why not."""
    status, document, _ = server.request("DELETE", path, query=[("propagationPolicy", "Foreground")])
    if status >= 400 and status != 404 or status == 0:
        return f"the delete was refused: {_reason(status, document)}"
    deadline = time.monotonic() + timeout
    while True:
        status, document, _ = server.request("GET", path)
        if status == 404:
            return None
        if time.monotonic() > deadline:
            finalizers = ", ".join((document.get("metadata") or {}).get("finalizers") or []) or "none"
            return f"not gone within {timeout:g} s of its delete (finalizers: {finalizers})"
        time.sleep(0.2)


def _wait_established(server: Server, obj: ApplyObject, deadline: float, timeout: float) -> str | None:
    """None once the CRD is Established, else why not (``timeout``: the seconds ``deadline`` was set to)."""
    why = "no status yet"
    while True:
        status, document, _ = server.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{obj.name}")
        if status == 200:
            conditions = {c.get("type"): c for c in (document.get("status") or {}).get("conditions") or []}
            established = conditions.get("Established") or {}
            if established.get("status") == "True":
                return None
            names = conditions.get("NamesAccepted") or {}
            if names.get("status") == "False":
                return f"names not accepted: {names.get('message')}"
            why = established.get("message") or why
        if time.monotonic() > deadline:
            return f"not Established within {timeout:g} s: {why}"
        time.sleep(0.1)


def apply_objects(server: Server, objects: Iterable[ApplyObject], result: ApplyResult | None = None, crd_timeout: float = CRD_TIMEOUT) -> ApplyResult:
    """Apply ``objects`` in the order given; a run of CustomResourceDefinitions (the engine order puts
    them together) is sent concurrently, as the engine creates resources that do not wait for each
    other, and each is waited for until the server reports it Established before the objects after it."""
    from concurrent.futures import ThreadPoolExecutor

    result = result if result is not None else ApplyResult()
    start = time.monotonic()
    todo = list(objects)
    i = 0
    while i < len(todo):
        if todo[i].kind != "CustomResourceDefinition":
            _apply_one(server, todo[i], result)
            i += 1
            continue
        j = i
        while j < len(todo) and todo[j].kind == "CustomResourceDefinition":
            j += 1
        crds = todo[i:j]
        with ThreadPoolExecutor(max_workers=CRD_CONCURRENCY) as pool:
            outcomes = list(pool.map(lambda o: _apply_alone(server, o, result.provided_groups, result.replace_immutable), crds))
        deadline = time.monotonic() + crd_timeout
        for crd, (applied, own) in zip(crds, outcomes, strict=True):
            result.applied += own.applied
            result.refusals += own.refusals
            result.warnings += own.warnings
            result.unserved += own.unserved
            result.replaced += own.replaced
            if applied is not None and crd.api_version.startswith("apiextensions.k8s.io/"):
                why = _wait_established(server, crd, deadline, crd_timeout)
                if why is not None:
                    result.refusals.append(Refusal(crd, why))
                else:  # progress: the next one's bound starts now (after a stall, the rest share what is left)
                    deadline = time.monotonic() + crd_timeout
        i = j
    result.seconds += time.monotonic() - start
    return result


def _apply_alone(server: Server, obj: ApplyObject, provided: frozenset[str] = frozenset(), replace: bool = False) -> tuple[dict[str, Any] | None, ApplyResult]:
    own = ApplyResult(provided_groups=provided, replace_immutable=replace)
    return _apply_one(server, obj, own), own


# --- nodes and scheduling ---------------------------------------------------------------------


def create_nodes(server: Server, nodes: Sequence[dict[str, Any]], result: ApplyResult) -> None:
    """Create the kwok nodes (a POST, as a kubelet registers its Node: the status it reports is kept)."""
    for node in nodes:
        obj = ApplyObject(node, "kwok node of the stack's pools")
        status, document, _ = server.request("POST", "/api/v1/nodes", node)
        if status == 409:
            continue
        if status >= 400 or status == 0:
            result.refusals.append(Refusal(obj, _reason(status, document)))


def settle(server: Server, timeout: float = 60.0, quiet: float = 3.0) -> list[dict[str, Any]]:
    """The pods once the controllers and the scheduler are done: no pod created, bound or changed phase,
    and no claim bound, for ``quiet`` seconds (bounded by ``timeout``); never while a claim that names its
    volume waits for a volume that exists (the binder binds it on its next sync, and the scheduler then
    places the pods that mount it)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    since = time.monotonic()
    pods: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        status, document, _ = server.request("GET", "/api/v1/pods")
        pods = document.get("items", []) if status == 200 else []
        _, claims, _ = server.request("GET", "/api/v1/persistentvolumeclaims")
        _, volumes, _ = server.request("GET", "/api/v1/persistentvolumes")
        existing = {v["metadata"]["name"] for v in volumes.get("items", [])}
        binding = any((c.get("status") or {}).get("phase") == "Pending" and c["spec"].get("volumeName") in existing for c in claims.get("items", []))
        state = sorted((p["metadata"].get("namespace"), p["metadata"]["name"], p["spec"].get("nodeName"), (p.get("status") or {}).get("phase")) for p in pods)
        state += sorted(("claim", c["metadata"].get("namespace"), c["metadata"]["name"], (c.get("status") or {}).get("phase")) for c in claims.get("items", []))
        if state != last or binding:
            last, since = state, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
        time.sleep(0.5)
    return pods
