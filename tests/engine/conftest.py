"""The real Pulumi engine for the engine tests: the Pulumi CLI and the Kubernetes provider built once
(tests/engine/build.sh; .ci/run builds it before the tests), a file backend, and the local control
plane the apply tests start, so a program goes up, previews, changes and is destroyed as `pulumi up`
does it: the provider's own await logic, diffs, Helm releases and deletes.

A new test asks for ``real_engine`` and runs an inline program (the Automation API's, hosted by the
SDK in this process: no language host is built)::

    def test_something(real_engine: RealEngine) -> None:
        def program() -> None:
            k8s.core.v1.ConfigMap("settings", ..., opts=pulumi.ResourceOptions(provider=real_engine.provider()))

        with real_engine.stack("something", program) as stack:
            stack.up()                  # raises auto.CommandError carrying the engine's own message
            stack.preview_no_changes()  # a second `up` would change nothing
            stack.up(changed_program)   # and so on; the stack is destroyed and removed on leaving

Every resource must take ``real_engine.provider()`` (the control plane's kubeconfig); the CLI's
KUBECONFIG names the same control plane, so a forgotten provider still never reaches another cluster.
Helm charts come from the pinned archives the offline render reads (``real_engine.chart_archive``).

Skips, with the reason, when Go is not installed, when the build is absent and GPU_PLATFORM_ENGINE_BUILD=0
(.ci/run sets it after a failed build), or when the build fails: a failed build is not tried again
in the same run, and several xdist workers wait on one build (a file lock) instead of building twice.
The binaries are found by build.sh's own rule: GPU_PLATFORM_ENGINE_BIN (a folder with pulumi and
pulumi-resource-kubernetes), else the cache keyed by the hash of build.sh and the go.mod/go.sum files.

The control plane comes from tests/apply/conftest.py's ``control_plane`` fixture, imported here: pytest
registers it once per conftest, so the engine tests get a control plane of their own in each worker
(the apply tests' objects and nodes never meet the engine's), started and stopped by the same code.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.apply.conftest import control_plane  # noqa: F401 (the fixture, registered for tests/engine)
from tests.conftest import upstream_or_skip
from tests.gobuild import GoBuild, shared_dir

ENGINE_DIR = Path(__file__).resolve().parent
PROJECT = "gpu-platform-engine-tests"
PASSPHRASE = "engine-tests"  # a throwaway file backend's; nothing secret is kept in it
NODE_NAME = "engine-kwok-0"
REPLACEMENT_STEPS = frozenset({"replace", "create-replacement", "delete-replaced", "discard-replaced"})
ENGINE_BUILD = GoBuild(
    name="engine",
    what="the Pulumi CLI and the Kubernetes provider",
    build_dir=ENGINE_DIR,
    key_files=("pulumi/go.mod", "pulumi/go.sum", "kubernetes/go.mod", "kubernetes/go.sum", "build.sh"),
    binaries=("pulumi", "pulumi-resource-kubernetes"),
    timeout=7200.0,  # 42 min measured on 2 cores shared with other builds
)
"""The engine's build (tests/gobuild.py: found, built once and cached as the other Go builds)."""


@pytest.fixture(scope="session")
def engine_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the built pulumi CLI and pulumi-resource-kubernetes (or skip)."""
    return ENGINE_BUILD.folder(shared_dir(tmp_path_factory))


# --- runs of a program -------------------------------------------------------------------------


@dataclass
class Run:
    """What one engine operation did: the summary, each resource's step and the CLI's output."""

    summary: dict[str, int]
    """Count per operation (create, update, same, delete, replace...), as the engine's summary gives it."""
    steps: dict[str, str] = field(default_factory=dict)
    """Resource name (the URN's last part) -> its step: same, create, update, delete, replace (a
    replacement's create-replacement/delete-replaced steps count as one replace), read... Exact when
    the program's resource names are unique, as the components' are; ``urns`` otherwise."""
    urns: dict[str, str] = field(default_factory=dict)
    """The same steps by URN."""
    stdout: str = ""
    seconds: float = 0.0

    def changed(self) -> dict[str, str]:
        """The steps that are not ``same`` (what the operation changed or would change)."""
        return {name: op for name, op in self.steps.items() if op != "same"}


class EngineStack:
    """One stack of the file backend, running inline programs through the Automation API."""

    def __init__(self, stack: Any, program: Callable[[], None]) -> None:
        self.stack = stack
        """The Automation API's Stack (pulumi.automation.Stack), for anything this class does not wrap."""
        self.program = program
        self.destroyed = False
        """True after a destroy, until the next up (the stack's exit then destroys nothing more)."""

    def _run(self, operation: str, program: Callable[[], None] | None, **kwargs: Any) -> Run:
        from pulumi import automation as auto

        if program is not None:
            self.program = program
        urns: dict[str, str] = {}

        def on_event(event: auto.EngineEvent) -> None:
            pre = event.resource_pre_event
            if pre is not None and pre.metadata.type != "pulumi:pulumi:Stack":
                op, urn = pre.metadata.op.value, pre.metadata.urn
                urns[urn] = "replace" if op in REPLACEMENT_STEPS or urns.get(urn) == "replace" else op

        start = time.monotonic()
        try:
            if operation == "destroy":
                result = self.stack.destroy(on_event=on_event, color="never", **kwargs)
                self.destroyed = True
            else:
                self.destroyed = self.destroyed and operation == "preview"
                self.stack.workspace.program = self.program
                result = getattr(self.stack, operation)(on_event=on_event, color="never", **kwargs)
        except auto.CommandError:
            print(f"engine {operation} {self.stack.name}: failed after {time.monotonic() - start:.1f} s")
            raise
        summary = result.change_summary if operation == "preview" else (result.summary.resource_changes or {})
        ops = {str(getattr(k, "value", k)): int(v) for k, v in (summary or {}).items()}
        steps = {urn.rsplit("::", 1)[-1]: op for urn, op in urns.items()}
        run = Run(summary=ops, steps=steps, urns=urns, stdout=result.stdout, seconds=time.monotonic() - start)
        # One line per operation, in the test's captured output (shown on failure, or with -s / -rP).
        print(f"engine {operation} {self.stack.name}: {run.seconds:.1f} s, {ops}, changed {run.changed()}")
        return run

    def up(self, program: Callable[[], None] | None = None, **kwargs: Any) -> Run:
        """`pulumi up` of ``program`` (default: the last one given); auto.CommandError on failure, its
        text holding the engine's and the provider's messages."""
        return self._run("up", program, **kwargs)

    def preview(self, program: Callable[[], None] | None = None, **kwargs: Any) -> Run:
        """`pulumi preview` of ``program`` (default: the last one given)."""
        return self._run("preview", program, **kwargs)

    def preview_no_changes(self, program: Callable[[], None] | None = None) -> Run:
        """`pulumi preview --expect-no-changes`: fails the test, naming the changes, unless every
        resource is ``same``."""
        run = self.preview(program, expect_no_changes=True)
        assert not run.changed() and set(run.summary) <= {"same"}, f"the preview would change {run.changed()} ({run.summary})"
        return run

    def destroy(self, **kwargs: Any) -> Run:
        """`pulumi destroy` (waits for every delete, as the provider does)."""
        return self._run("destroy", None, **kwargs)

    def outputs(self) -> dict[str, Any]:
        return {k: v.value for k, v in self.stack.outputs().items()}


@dataclass
class RealEngine:
    """The built CLI and provider, a file backend and the local control plane, for one test worker."""

    bin_dir: Path
    """pulumi and pulumi-resource-kubernetes (on the CLI's PATH: the engine uses that provider)."""
    kubeconfig: Path
    """The control plane's admin kubeconfig (the provider's and the CLI's KUBECONFIG)."""
    home: Path
    """PULUMI_HOME (plugins, credentials, workspaces): a temporary folder."""
    backend: str
    """file://<folder>: the state of every stack."""
    env: dict[str, str]
    """What the CLI runs with (PATH, PULUMI_HOME, PULUMI_CONFIG_PASSPHRASE, KUBECONFIG...)."""
    plane: Any
    """The running control plane (infra/apply/local.py ControlPlane)."""
    work: Path
    """Where each stack's workspace (Pulumi.yaml, Pulumi.<stack>.yaml) is written."""

    def provider(self, name: str = "local") -> Any:
        """A Kubernetes provider on the control plane; call it inside the program."""
        import pulumi_kubernetes as k8s

        return k8s.Provider(name, kubeconfig=self.kubeconfig.read_text())

    def chart_archive(self, name: str, version: str) -> Path:
        """The archive of a chart the lock pins, from the pinned local sources the offline render
        reads (../shared/reference/upstream), its digest checked against the lock; skips without them."""
        from gpu_platform.infra.preview.upstream import Sources, load_lock

        lock = load_lock()
        pins = [p for p in lock.charts if p.name == name and p.version == version]
        assert pins, f"chart {name} {version} is not in the lock (infra/preview/upstream.lock.yaml)"
        return Sources(lock, upstream_dir=upstream_or_skip(), fetch=False).chart_archive(pins[0])

    def api_client(self) -> Any:
        """A Kubernetes API client on the control plane (to read back what the engine did)."""
        return self.plane.api_client()

    @contextlib.contextmanager
    def stack(self, name: str, program: Callable[[], None], config: Mapping[str, Any] | None = None) -> Iterator[EngineStack]:
        """A new stack ``name`` of the file backend, with ``config`` (key -> str, or auto.ConfigValue for
        a secret) as its stack config; on leaving, whatever is left of it is destroyed and the stack
        removed (so a failed test leaves nothing on the control plane)."""
        from pulumi import automation as auto

        work = self.work / name
        work.mkdir(parents=True, exist_ok=True)
        opts = auto.LocalWorkspaceOptions(
            work_dir=str(work),
            pulumi_home=str(self.home),
            env_vars=self.env,
            pulumi_command=auto.PulumiCommand(root=str(self.bin_dir.parent)),
            project_settings=auto.ProjectSettings(name=PROJECT, runtime="python", backend=auto.ProjectBackend(url=self.backend)),
        )
        stack = EngineStack(auto.create_or_select_stack(stack_name=name, project_name=PROJECT, program=program, opts=opts), program)
        if config:
            stack.stack.set_all_config({key: value if isinstance(value, auto.ConfigValue) else auto.ConfigValue(str(value)) for key, value in config.items()})
        try:
            yield stack
        finally:
            try:
                if not stack.destroyed:
                    stack.destroy()
            finally:
                stack.stack.workspace.remove_stack(name)


# --- the cluster as the stack found it -----------------------------------------------------------


def remove_unserved_aggregated_apis(engine: RealEngine) -> list[str]:
    """Remove the aggregated APIs the local control plane can never serve, and return their names.

    An APIService backed by a Service is served by pods: prometheus-adapter's custom.metrics.k8s.io, Kueue's
    visibility API. kwok runs no container, so such an API is never Available here, and the namespace controller,
    which lists every API group before it deletes a namespace's contents, waits on it for good: a removed tenant's
    namespace would never go (on a cluster it goes once the API's pods serve). Removing the registration stands in
    for a served API; the release still owns it, and Helm's uninstall ignores it gone."""
    from kubernetes import client

    api = client.ApiregistrationV1Api(engine.api_client())

    def unserved(service: Any) -> bool:
        available = any(c.type == "Available" and c.status == "True" for c in service.status.conditions or [])
        return service.spec.service is not None and not available

    return _delete_each("APIService", [s for s in api.list_api_service().items if unserved(s)], api.delete_api_service)


def _delete_each(kind: str, objects: list[Any], delete: Callable[[str], Any]) -> list[str]:
    """Delete each of ``objects`` by name (one already gone is fine): kind/name of each."""
    from kubernetes.client.rest import ApiException

    for obj in objects:
        try:
            delete(obj.metadata.name)
        except ApiException as exc:
            if exc.status != 404:
                raise
    return [f"{kind}/{obj.metadata.name}" for obj in objects]


AGGREGATION_CONTROLLER = "clusterrole-aggregation-controller"


def recreated_by_aggregation(role: Any) -> bool:
    """Whether a ClusterRole is one kube-controller-manager's aggregation controller made, not the stack.

    The controller writes an aggregated ClusterRole's rules by server-side apply (``Apply`` with its own field manager,
    forced, no precondition: kubernetes/kubernetes#99462, pkg/controller/clusterroleaggregation). When a Helm
    uninstall deletes an aggregated role together with the roles it aggregates (Kueue's kueue-batch-admin-role and
    kueue-batch-user-role gather 44 of the chart's roles), the controller, still seeing the aggregated role in its
    cache, applies the new rules after the delete and so creates it again: with the rules only, no aggregationRule, no
    Helm ownership, the controller its only manager. Helm's uninstall then waits for it until the release's timeout
    (the destroy fails after 300 s), and a later install of the chart refuses it ("exists and cannot be imported into
    the current release"). The teardown guide (docs/operating/teardown.md) tells an operator to delete such roles."""
    managers = {m.manager for m in role.metadata.managed_fields or []}
    return role.aggregation_rule is None and managers == {AGGREGATION_CONTROLLER}


def remove_recreated_aggregated_roles(engine: RealEngine) -> list[str]:
    """Delete the ClusterRoles the aggregation controller recreated (recreated_by_aggregation), as the teardown guide
    says; their names."""
    from kubernetes import client

    rbac = client.RbacAuthorizationV1Api(engine.api_client())
    return _delete_each("ClusterRole", [r for r in rbac.list_cluster_role().items if recreated_by_aggregation(r)], rbac.delete_cluster_role)


@contextlib.contextmanager
def stand_ins(engine: RealEngine) -> Iterator[set[str]]:
    """While the block runs (the stack's whole life, its clean-up after a failure too), what the local control plane
    or an upstream race leaves that an operator's cluster or the teardown guide takes care of is removed as soon as it
    appears: aggregated APIs kwok cannot serve (a Helm upgrade of the release that owns one registers it again), and
    ClusterRoles the aggregation controller recreated. The set of what was removed, kind/name.

    On leaving, it goes on until nothing has come back for SETTLE seconds (at most SETTLE_LIMIT): the aggregation
    controller recreates a role when it gets to the deletes in its queue, which on loaded cores can be seconds after
    the engine's destroy returned (a Kubeflow platform destroy left kubeflow-edit that way in a CI rehearsal)."""
    removed: set[str] = set()
    stop = threading.Event()

    def sweep() -> list[str]:
        found = remove_unserved_aggregated_apis(engine) + remove_recreated_aggregated_roles(engine)
        removed.update(found)
        return found

    def keep_removing() -> None:
        while not stop.wait(0.5):
            sweep()

    sweep()
    worker = threading.Thread(target=keep_removing, daemon=True)
    worker.start()
    try:
        yield removed
    finally:
        stop.set()
        worker.join(timeout=10)
        started = quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < SETTLE and time.monotonic() - started < SETTLE_LIMIT:
            if sweep():
                quiet_since = time.monotonic()
            time.sleep(0.5)


SETTLE = 10.0
"""Seconds with nothing recreated before the stand-ins stop (the controller's queue drained)."""
SETTLE_LIMIT = 60.0


INVENTORIED = (
    ("Namespace", "CoreV1Api", "list_namespace"),
    ("ClusterRole", "RbacAuthorizationV1Api", "list_cluster_role"),
    ("ClusterRoleBinding", "RbacAuthorizationV1Api", "list_cluster_role_binding"),
    ("CustomResourceDefinition", "ApiextensionsV1Api", "list_custom_resource_definition"),
    ("APIService", "ApiregistrationV1Api", "list_api_service"),
    ("ValidatingWebhookConfiguration", "AdmissionregistrationV1Api", "list_validating_webhook_configuration"),
    ("MutatingWebhookConfiguration", "AdmissionregistrationV1Api", "list_mutating_webhook_configuration"),
    ("PriorityClass", "SchedulingV1Api", "list_priority_class"),
    ("StorageClass", "StorageV1Api", "list_storage_class"),
    ("PersistentVolume", "CoreV1Api", "list_persistent_volume"),
)
"""What a destroy must leave as it found it: the namespaces (their contents go with them) and the cluster-scoped kinds
the platform's charts, kustomizations and components create."""


def leftovers(engine: RealEngine, names: set[str]) -> list[str]:
    """What each leftover ClusterRole is, to say why it was left: its field managers and whether it aggregates."""
    from kubernetes import client

    rbac = client.RbacAuthorizationV1Api(engine.api_client())
    out = []
    for name in sorted(names):
        if name.startswith("ClusterRole/"):
            role = rbac.read_cluster_role(name.split("/", 1)[1])
            managers = sorted({f"{m.manager}:{m.operation}" for m in role.metadata.managed_fields or []})
            out.append(f"{name} (managers {managers}, aggregationRule {'set' if role.aggregation_rule else 'none'})")
        else:
            out.append(name)
    return out


def inventory(engine: RealEngine) -> set[str]:
    """The cluster's namespaces and cluster-scoped objects of the INVENTORIED kinds, as kind/name."""
    from kubernetes import client

    api = engine.api_client()
    return {f"{kind}/{item.metadata.name}" for kind, group, lister in INVENTORIED for item in getattr(getattr(client, group)(api), lister)().items}


def kept_by_helm(engine: RealEngine, left: set[str]) -> set[str]:
    """Of what a destroy left, what Helm keeps on purpose: the CustomResourceDefinitions a chart installs from its
    ``crds/`` folder (no Helm ownership on them: Helm installs them once and never upgrades or deletes them, so that
    uninstalling a release cannot delete every custom resource of their kinds; kube-prometheus-stack's
    monitoring.coreos.com, the Dask operator's kubernetes.dask.org), and the APIServices the API server registers by
    itself for their groups. The teardown guide says how to delete them."""
    from kubernetes import client

    api = engine.api_client()
    crds = {
        name: client.ApiextensionsV1Api(api).read_custom_resource_definition(name.split("/", 1)[1])
        for name in left
        if name.startswith("CustomResourceDefinition/")
    }
    kept = {name for name, crd in crds.items() if "meta.helm.sh/release-name" not in (crd.metadata.annotations or {})}
    groups = {crds[name].spec.group for name in kept}
    for name in left:
        if name.startswith("APIService/"):
            service = client.ApiregistrationV1Api(api).read_api_service(name.split("/", 1)[1])
            if service.spec.service is None and service.spec.group in groups:
                kept.add(name)
    return kept


def _kwok_node() -> dict[str, Any]:
    """One kwok node (kwok keeps it Ready and runs the pods bound to it), with no taint, so the
    workloads the tests create become ready as on a cluster with room."""
    from gpu_platform.infra.apply.local import KWOK_NODE_ANNOTATION

    key, value = KWOK_NODE_ANNOTATION
    resources = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE_NAME,
            "annotations": {key: value, "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"kubernetes.io/hostname": NODE_NAME, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
        },
        "status": {"capacity": resources, "allocatable": resources},
    }


@pytest.fixture(scope="session")
def real_engine(control_plane: Any, engine_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealEngine]:  # noqa: F811 (the fixture imported above)
    """The real engine on the local control plane, with a file backend in a temporary folder.

    ``control_plane`` comes first: when it skips, the engine is not built for nothing."""
    from kubernetes import client

    root = tmp_path_factory.mktemp("engine")
    home, state, work = root / "home", root / "state", root / "work"
    for folder in (home, state, work):
        folder.mkdir()
    backend = f"file://{state}"
    env = {
        "PATH": f"{engine_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        "PULUMI_HOME": str(home),
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",  # offline: the provider is the one on PATH
        "PULUMI_SKIP_CONFIRMATIONS": "true",
        # The file backend rewrites the whole state after every step: with the Kubeflow platform edition's 617
        # resources that is quadratic, and the CLI spent most of `up` on it. Only the final state is written (the
        # state of a failed run is lost, and the stack's control plane with it: nothing outlives the session).
        "PULUMI_SKIP_CHECKPOINTS": "true",
        "KUBECONFIG": str(control_plane.kubeconfig),
    }
    login = subprocess.run([str(engine_bin / "pulumi"), "login", backend], env={**os.environ, **env}, capture_output=True, text=True, timeout=120, check=False)
    if login.returncode != 0:
        pytest.fail(f"pulumi login {backend} failed: {login.stdout}{login.stderr}")
    api = control_plane.api_client()
    client.CoreV1Api(api).create_node(_kwok_node())
    yield RealEngine(bin_dir=engine_bin, kubeconfig=control_plane.kubeconfig, home=home, backend=backend, env=env, plane=control_plane, work=work)
