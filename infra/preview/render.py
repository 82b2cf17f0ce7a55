"""What the cluster gets: every Helm release and Kustomize directory of a plan, rendered at
its pinned version, with the components' own transforms applied.

A ``kubernetes:helm.sh/v3:Release`` or ``kubernetes:kustomize/v2:Directory`` is one resource
to the engine; the objects it puts on the cluster are rendered here, offline:

- Helm releases with Helm's own engine (``helm_python``, the Go SDK, Helm 4), with the
  stack's Kubernetes version and the API versions the cluster will serve (its GA APIs plus
  the CRDs the stack's charts and manifests ship), the release's name, namespace and values;
  test hooks dropped (``helm install`` does not run them), other hooks kept (Release runs
  them); namespaced objects without a namespace land in the release's.
- Kustomize directories with ``kubectl kustomize`` at the pinned ref, git resolving every
  GitHub repository (nested remote resources included) from the locked sources only; then
  the Directory's ``transforms`` run over every object through the SDK's own callbacks, with
  the TransformRequest the engine sends. Namespaced objects without a namespace land in the
  provider's namespace (``default``), as the provider applies them.

Sources come from infra/preview/upstream.py (the lock, a local copy or the user cache).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.components.core.kube import chart_source
from gpu_platform.infra.collector import collector_paused
from gpu_platform.infra.kubernetes_api import builtin_groups, ga_api_versions
from gpu_platform.infra.preview.engine import SECRET_SIG, Plan, RecordedResource
from gpu_platform.infra.preview.manifests import ObjectView
from gpu_platform.infra.preview.upstream import Lock, SourceError, Sources, parse_kustomize_url
from gpu_platform.infra.yaml_io import SAFE_LOADER

__all__ = [
    "HELM_RELEASE",
    "KUSTOMIZE_DIRECTORY",
    "RenderedObject",
    "RenderedSource",
    "Rendering",
    "render_plan",
    "type_token",
]

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
KUSTOMIZE_DIRECTORY = "kubernetes:kustomize/v2:Directory"
PROVIDER_DEFAULT_NAMESPACE = "default"


class _Loader(SAFE_LOADER):  # type: ignore[misc]
    """YAML as Kubernetes reads it: a bare ``=`` is a string, not YAML 1.1's value tag."""


_Loader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:value"] for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_LOADER = _Loader

# Built-in kinds that are not namespaced (everything else built in is).
CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterRole",
        "ClusterRoleBinding",
        "ComponentStatus",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "DeviceClass",
        "FlowSchema",
        "IngressClass",
        "IPAddress",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PodSecurityPolicy",
        "PriorityClass",
        "PriorityLevelConfiguration",
        "ResourceSlice",
        "RuntimeClass",
        "SelfSubjectAccessReview",
        "SelfSubjectReview",
        "SelfSubjectRulesReview",
        "ServiceCIDR",
        "StorageClass",
        "StorageVersionMigration",
        "SubjectAccessReview",
        "TokenReview",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
        "VolumeAttributesClass",
    }
)


def type_token(api_version: str, kind: str) -> str:
    """The engine's type token of a Kubernetes object (kubernetes:core/v1:Secret)."""
    group, _, version = api_version.rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{kind}"


@dataclass
class RenderedObject(ObjectView):
    """One object a release or directory puts on the cluster."""

    source: RenderedSource
    body: dict[str, Any]
    """The object as the cluster gets it; secret values keep Pulumi's secret marker."""
    protect: bool = False
    retain_on_delete: bool = False

    @property
    def type(self) -> str:
        return type_token(self.api_version, self.kind)

    @property
    def owner(self) -> RecordedResource:
        """The release or directory that applies the object."""
        return self.source.resource

    @functools.cached_property
    def plain_body(self) -> dict[str, Any]:
        """The object with secret values unwrapped, as kubectl would see it (read after the
        transforms ran)."""
        from gpu_platform.infra.preview.manifests import plain

        body: dict[str, Any] = plain(self.body)
        return body

    @property
    def urn(self) -> str:
        """A child URN under the release or directory, as the engine would name it."""
        parent = self.source.resource.urn
        qualified = parent.split("::")[2] if parent.count("::") >= 3 else ""
        return f"{parent.rsplit('::', 2)[0]}::{qualified}${self.type}::{self.label.split(' ', 1)[1]}"


@dataclass
class RenderedSource:
    """A Helm release or Kustomize directory of the plan and what it renders to."""

    resource: RecordedResource
    kind: str
    """helm or kustomize"""
    origin: str
    """The chart and version, or the kustomize URL."""
    config_key: str
    """The stack config key that chooses this source, for messages."""
    objects: list[RenderedObject] = field(default_factory=list)
    crds: list[dict[str, Any]] = field(default_factory=list)
    """CustomResourceDefinitions this source installs (a chart's crds/ and rendered CRDs)."""
    error: str | None = None
    """Why it could not be rendered because of the stack (not in the lock, no such ref,
    digest mismatch, a render failure): a config error."""
    unavailable: str | None = None
    """Why it was not rendered because the sources are not at hand (a notice)."""
    fetched: list[tuple[str, str]] = field(default_factory=list)
    """(repository, ref) git fetched while building (kustomize), nested resources included."""

    @property
    def rendered(self) -> bool:
        return self.error is None and self.unavailable is None


@dataclass
class Rendering:
    sources: list[RenderedSource]

    @property
    def objects(self) -> list[RenderedObject]:
        return [o for s in self.sources for o in s.objects]

    @property
    def crds(self) -> list[dict[str, Any]]:
        return [c for s in self.sources for c in s.crds]

    @property
    def errors(self) -> list[str]:
        return list(dict.fromkeys(f"{s.config_key}: {s.error}" for s in self.sources if s.error))

    @property
    def unavailable(self) -> list[str]:
        return [f"not rendered: {s.resource.name} ({s.origin}): {s.unavailable}" for s in self.sources if s.unavailable]


# --- which config key chooses a source --------------------------------------------------------

_CHART_KEYS = {
    "kube-prometheus-stack": "gpu-platform:monitoring.prometheus.chart_version",
    "prometheus-adapter": "gpu-platform:monitoring.prometheus.adapter_chart_version",
    "dcgm-exporter": "gpu-platform:monitoring.dcgm_exporter.chart_version",
    "cluster-autoscaler": "gpu-platform:eks_node_groups.autoscaler.chart_version",
    "dask-kubernetes-operator": "gpu-platform:dask.chart_version",
}


def config_key(resource: RecordedResource) -> str:
    if resource.type == HELM_RELEASE:
        return _CHART_KEYS.get(chart_source(resource.inputs)[0], f"the chart of {resource.name}")
    return "gpu-platform:kubeflow.install.release"


# --- rendering --------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        if SECRET_SIG.items() <= value.items():
            return _plain(value.get("value"))
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _documents(text: str) -> list[dict[str, Any]]:
    """The objects of a multi-document YAML stream (List kinds flattened).

    Large streams (a chart's CRDs run to megabytes) are parsed once: the parsed documents are
    kept as JSON in the user cache under the sha256 of the text, so the same text always gives
    the same objects and a warm preview reads JSON instead of parsing YAML again.
    """
    cache = None
    if len(text) > 65536:
        from gpu_platform.infra.preview.upstream import default_cache_dir

        key = hashlib.sha256(text.encode()).hexdigest()
        cache = default_cache_dir() / "parsed" / f"{key}.json"
        try:
            cached: list[dict[str, Any]] = json.loads(cache.read_text())
            return cached
        except (OSError, ValueError):
            pass
    out = []
    for doc in yaml.load_all(text, Loader=_LOADER):
        if isinstance(doc, dict) and doc.get("kind"):
            if doc["kind"].endswith("List") and isinstance(doc.get("items"), list):
                out += [d for d in doc["items"] if isinstance(d, dict)]
            else:
                out.append(doc)
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(out, default=str))
            os.replace(tmp, cache)
        except OSError:
            pass  # a read-only cache only costs time
    return out


def _crd_api_versions(crds: Iterable[dict[str, Any]]) -> set[str]:
    found = set()
    for crd in crds:
        spec = crd.get("spec") or {}
        for version in spec.get("versions") or []:
            if version.get("served", True):
                found.add(f"{spec.get('group')}/{version.get('name')}")
    return found


def _namespaced(kind: str, api_version: str, crds: list[dict[str, Any]]) -> bool:
    group = api_version.rpartition("/")[0]
    for crd in crds:
        spec = crd.get("spec") or {}
        if spec.get("group") == group and (spec.get("names") or {}).get("kind") == kind:
            return spec.get("scope") != "Cluster"
    return kind not in CLUSTER_SCOPED


def _is_test_hook(body: dict[str, Any]) -> bool:
    hooks = ((body.get("metadata") or {}).get("annotations") or {}).get("helm.sh/hook", "")
    return any(h.strip() in ("test", "test-success", "test-failure") for h in hooks.split(","))


def _helm_available() -> str | None:
    try:
        import helm_python  # noqa: F401
    except ImportError:
        return "Helm's engine is not installed: pip install 'gpu-platform[render]' (helm-python-sdk)"
    return None


def _kubectl() -> str | None:
    return shutil.which("kubectl")


def _prepare_helm(source: RenderedSource, lock: Lock, sources: Sources | None) -> Any:
    inputs = source.resource.inputs
    (chart, repository), version = chart_source(inputs), str(inputs.get("version"))
    pin = lock.chart(chart, version, repository)
    if pin is None:
        locked = [f"{p.name} {p.version}" for p in lock.charts if p.name == chart]
        source.error = (
            f"chart {chart} {version} from {repository} is not in the lock (infra/preview/upstream.lock.yaml"
            + (f"; locked: {', '.join(locked)}" if locked else "")
            + "): use a locked version, or lock it on purpose with `gpu-platform upstream lock`"
        )
        return None
    if (why := _helm_available()) is not None:
        source.unavailable = why
        return None
    if sources is None:
        source.unavailable = "no upstream sources (--upstream DIR, or the cache online)"
        return None
    try:
        archive = sources.chart_archive(pin)
    except SourceError as exc:
        if "is not in" in str(exc) or "could not be fetched" in str(exc):
            source.unavailable = str(exc)
        else:
            source.error = str(exc)
        return None
    import helm_python

    # Loaded afresh for every release: Helm's render drops disabled subcharts from the loaded
    # chart in place, so a chart object rendered once with grafana.enabled=false renders no
    # Grafana the next time, whatever the values say.
    return helm_python.Chart.load(str(archive))


def _render_helm(source: RenderedSource, chart: Any, kubernetes_version: str, api_versions: list[str]) -> None:
    import helm_python
    from helm_python import _native

    inputs = source.resource.inputs
    namespace = str(inputs.get("namespace") or "default")
    name = str(inputs.get("name") or source.resource.name)
    options = {"name": name, "namespace": namespace, "is_install": True, "kube_version": f"v{kubernetes_version}.0", "api_versions": api_versions}
    try:
        rendered = json.loads(
            _native.call_string(
                "helm_render",
                chart._raw(),  # noqa: SLF001 - helm-python-sdk 0.2 exposes no render options (kube_version)
                json.dumps(_plain(inputs.get("values") or {})),
                json.dumps(options),
            )
        )
    except helm_python.HelmError as exc:
        source.error = f"chart {source.origin} does not render with these values: {' '.join(str(exc).split())[:400]}"
        return
    installed = []
    # skipCrds: another release manages the chart's crds/ (Helm leaves them out).
    for crd in [] if inputs.get("skipCrds") else chart.crds:
        installed += [d for d in _documents(crd["data"]) if d.get("kind") == "CustomResourceDefinition"]
    bodies = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt") or not text.strip():
            continue
        try:
            bodies += _documents(text)
        except yaml.YAMLError as exc:
            source.error = f"chart {source.origin}: {path} is not YAML: {str(exc).splitlines()[0]}"
            return
    # Helm installs crds/ before the templates; a template may render CRDs too.
    source.crds = installed + [b for b in bodies if b.get("kind") == "CustomResourceDefinition"]
    for body in installed + bodies:
        if _is_test_hook(body):
            continue
        metadata = dict(body.get("metadata") or {})
        if not metadata.get("namespace") and _namespaced(str(body.get("kind")), str(body.get("apiVersion")), source.crds):
            metadata["namespace"] = namespace
            body = {**body, "metadata": metadata}
        source.objects.append(RenderedObject(source, body))


_FETCH = re.compile(r"trace: built-in: git fetch (?:--\S+ )*'?(https://\S+?)'? '?([^'\s]+)'?\s*$")


def _kustomize(source: RenderedSource, lock: Lock, sources: Sources | None, work: Path) -> None:
    url = str(source.resource.inputs.get("directory") or "")
    target = parse_kustomize_url(url)
    if target is None or target.ref is None:
        source.error = f"{url} is not a GitHub kustomize URL pinned with ?ref=<tag>"
        return
    pin = lock.git_pin(target.repository, target.ref)
    if pin is None:
        tags = lock.tags_of(target.repository)
        existing = sources.tags(target.repository) if sources is not None else []
        hint = f"; tags here: {', '.join(existing)}" if existing and target.ref not in existing else ""
        source.error = (
            f"{target.repository} ref {target.ref} is not in the lock (locked: {', '.join(tags) or 'none'}{hint}): "
            "use a locked release, or lock it on purpose with `gpu-platform upstream lock`"
        )
        return
    if sources is None:
        source.unavailable = "no upstream sources (--upstream DIR, or the cache online)"
        return
    kubectl = _kubectl()
    if kubectl is None:
        source.unavailable = "kubectl is not installed (its kustomize builds Kustomize directories)"
        return
    try:
        sources.check_tag(pin)
    except SourceError as exc:
        if "no tag" in str(exc) and (sources.local or sources.fetch):
            source.error = str(exc)
        else:
            source.unavailable = str(exc)
        return
    built = _kustomize_build(kubectl, url, pin.commit, sources, work)
    if isinstance(built, str):
        source.error = built
        return
    text, source.fetched = built
    unlocked = [f"{r}?ref={ref}" for r, ref in source.fetched if lock.git_pin(r, ref) is None]
    if unlocked:
        source.error = f"{url} reads sources the lock does not cover: {', '.join(sorted(set(unlocked)))}"
        return
    try:
        for repository, ref in source.fetched:
            nested = lock.git_pin(repository, ref)
            assert nested is not None
            sources.check_tag(nested)
    except SourceError as exc:
        source.error = str(exc)
        return
    bodies = _documents(text)
    source.crds = [b for b in bodies if b.get("kind") == "CustomResourceDefinition"]
    for body in bodies:
        metadata = dict(body.get("metadata") or {})
        if not metadata.get("namespace") and _namespaced(str(body.get("kind")), str(body.get("apiVersion")), source.crds):
            metadata["namespace"] = PROVIDER_DEFAULT_NAMESPACE
            body = {**body, "metadata": metadata}
        source.objects.append(RenderedObject(source, body))
    _apply_transforms(source)


def _kubectl_version(kubectl: str) -> str:
    out = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


def _kustomize_build(kubectl: str, url: str, commit: str, sources: Sources, work: Path) -> tuple[str, list[tuple[str, str]]] | str:
    """``kubectl kustomize <url>`` with git resolving GitHub from the locked sources only:
    (output, the (repository, ref) pairs git fetched), or why it failed.

    The output of one URL at one locked commit with one kubectl is the same every time: it is
    kept in the user cache, so a warm preview does not build again.
    """
    from gpu_platform.infra.preview.upstream import default_cache_dir

    key = hashlib.sha256(f"{url}\0{commit}\0{_kubectl_version(kubectl)}".encode()).hexdigest()
    cache = default_cache_dir() / "kustomize" / f"{key}.json"
    try:
        cached = json.loads(cache.read_text())
        return cached["output"], [tuple(p) for p in cached["fetched"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    config = sources.git_config(work / "gitconfig")
    trace = work / f"git-trace-{key}"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_TRACE": str(trace)}
    try:
        out = subprocess.run([kubectl, "kustomize", url], capture_output=True, text=True, env=env, timeout=300)
    except subprocess.TimeoutExpired:
        return f"kubectl kustomize {url} did not finish in 300 s"
    fetched = _fetched(trace)
    if out.returncode != 0:
        lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
        reason = " ".join((lines or ["failed"])[-1].split())
        return f"kubectl kustomize {url} failed: {reason[:400]}"
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"output": out.stdout, "fetched": fetched}))
        os.replace(tmp, cache)
    except OSError:
        pass
    return out.stdout, fetched


def _fetched(trace: Path) -> list[tuple[str, str]]:
    """(repository, ref) for every git fetch kustomize ran, from git's own trace
    (``trace: built-in: git fetch --depth=1 <url> <ref>``)."""
    if not trace.is_file():
        return []
    found: list[tuple[str, str]] = []
    for line in trace.read_text(errors="replace").splitlines():
        m = _FETCH.search(line)
        if m and (pair := (m.group(1).removesuffix(".git"), m.group(2))) not in found:
            found.append(pair)
    return found


def _apply_transforms(source: RenderedSource) -> None:
    """Run the Directory's transforms over each child, as the engine calls them: a
    TransformRequest with the child's type, name, parent and properties, through the SDK's
    own callback; the response's properties and options become the child."""
    callbacks = source.resource.transforms
    if not callbacks:
        return
    from google.protobuf import struct_pb2
    from pulumi.runtime import rpc
    from pulumi.runtime.proto import resource_pb2
    from pulumi.runtime.sync_await import _sync_await

    from gpu_platform.infra.preview.engine import _jsonable

    for obj in source.objects:
        # A rendered object is plain JSON: its wire form is the Struct of it (what
        # serialize_properties gives for plain values, numbers as doubles).
        properties = struct_pb2.Struct()
        properties.update(obj.body)
        original = properties
        options = resource_pb2.TransformResourceOptions()
        for callback in callbacks:
            request = resource_pb2.TransformRequest(
                type=obj.type,
                name=f"{source.resource.name}:{obj.label.split(' ', 1)[1]}",
                custom=True,
                parent=source.resource.urn,
                properties=properties,
                options=options,
            )
            response = _sync_await(callback(request.SerializeToString()))
            properties = response.properties
            if response.HasField("options"):
                options = response.options
        if properties != original:
            obj.body = _jsonable(rpc.deserialize_properties(properties, keep_unknowns=True))
        obj.protect = bool(options.protect)
        obj.retain_on_delete = bool(options.retain_on_delete)


@collector_paused()
def render_plan(plan: Plan, kubernetes_version: str, sources: Sources | None, lock: Lock, progress: Callable[[str], None] | None = None) -> Rendering:
    """Render every Helm release and Kustomize directory of ``plan``."""
    found = [r for r in plan.resources if r.type in (HELM_RELEASE, KUSTOMIZE_DIRECTORY)]
    rendering = Rendering([])
    charts: list[tuple[RenderedSource, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gpu-platform-render-") as tmp:
        work = Path(tmp)
        for resource in found:
            if resource.type == HELM_RELEASE:
                origin = f"{resource.inputs.get('chart')} {resource.inputs.get('version')}"
                source = RenderedSource(resource, "helm", origin, config_key(resource))
                chart = _prepare_helm(source, lock, sources)
                if chart is not None:
                    charts.append((source, chart))
            else:
                source = RenderedSource(resource, "kustomize", str(resource.inputs.get("directory")), config_key(resource))
                if progress:
                    progress(source.origin)
                _kustomize(source, lock, sources, work)
            rendering.sources.append(source)
    # The API versions Helm sees: the cluster's GA APIs plus every CRD the stack ships.
    crds = [c for s in rendering.sources for c in s.crds]
    for _, chart in charts:
        for crd in chart.crds:
            crds += [d for d in _documents(crd["data"]) if d.get("kind") == "CustomResourceDefinition"]
    api_versions = sorted(set(ga_api_versions(kubernetes_version)) | _crd_api_versions(crds))
    for source, chart in charts:
        if progress:
            progress(source.origin)
        _render_helm(source, chart, kubernetes_version, api_versions)
    return rendering


# --- the preview's rendered checks ------------------------------------------------------------


@dataclass
class RenderReport:
    """What rendering found, for the preview to print and count."""

    rendering: Rendering
    schema: list[Any]
    """Schema findings over the plan's objects and the rendered ones (SchemaFinding)."""
    policy: list[Any]
    """Policy findings over the rendered objects (policies.evaluate.Finding)."""
    cluster: list[Any]
    """Findings over everything the cluster gets (infra.cluster_checks.ClusterFinding)."""

    @property
    def errors(self) -> list[str]:
        return self.rendering.errors

    @property
    def notices(self) -> list[str]:
        return self.rendering.unavailable


def rendered_resources(rendering: Rendering) -> list[Any]:
    """The rendered objects as the policy pack sees children of a release or directory."""
    from gpu_platform.policies.rules import Resource

    return [Resource(o.type, f"{o.source.resource.name}: {o.label}", o.urn, o.plain_body, o.protect) for o in rendering.objects]


def check_rendered(plan: Plan, plan_objects: list[Any], stack_config: Any, sources: Sources | None, lock: Lock, policy_config: Any) -> RenderReport:
    """Render the plan's releases and directories, then apply the plan's checks (schema,
    policy) and the cluster checks to what the cluster gets."""
    from gpu_platform.infra.preview.cluster_checks import (
        check_alert_metrics,
        check_crd_order,
        check_default_credentials,
        check_duplicates,
        collect_objects,
    )
    from gpu_platform.infra.preview.manifests import validate_objects
    from gpu_platform.policies.evaluate import evaluate

    version = stack_config.kubernetes_version
    rendering = render_plan(plan, version, sources, lock)
    schema = validate_objects([*plan_objects, *rendering.objects], version, crds=rendering.crds)
    policy = evaluate(rendered_resources(rendering), policy_config) if rendering.objects else []
    cluster: list[Any] = []
    if rendering.objects:
        objects = collect_objects(plan, plan_objects, rendering)
        cluster += check_duplicates(objects)
        cluster += check_default_credentials(objects)
        if not rendering.unavailable and not rendering.errors:
            # Needs every source: a missing one could install the CRD or scrape the metric.
            crds = {s.resource.urn: s.crds for s in rendering.sources}
            cluster += check_crd_order(plan, objects, crds, builtin_groups(version), stack_config.cloud)
            cluster += check_alert_metrics(objects)
    return RenderReport(rendering, schema, policy, cluster)


def declared_sources(plan: Plan) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """The charts (name, version, repository) and kustomize URLs a plan declares."""
    charts = [
        (name, str(r.inputs.get("version")), repository) for r in plan.resources if r.type == HELM_RELEASE for name, repository in [chart_source(r.inputs)]
    ]
    urls = [str(r.inputs.get("directory")) for r in plan.resources if r.type == KUSTOMIZE_DIRECTORY]
    return charts, urls


def supported_sources() -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """What the components install by default, and every Kubeflow release they accept
    (components.kubeflow.install.KNOWN_RELEASES): the lock covers all of it, so a stack may
    pick any supported release without re-locking."""
    from gpu_platform.components import DcgmExporterArgs, PrometheusStackArgs
    from gpu_platform.components.dask.args import DASK_OPERATOR_CHART, DASK_REPO, DaskOperatorArgs
    from gpu_platform.components.eks.node_group_args import (
        AUTOSCALER_CHART,
        AUTOSCALER_REPO,
        DEVICE_PLUGIN_CHART,
        DEVICE_PLUGIN_REPOSITORY,
        ClusterAutoscalerSettings,
        SpotFailoverEksNodeGroupsArgs,
    )
    from gpu_platform.components.headlamp.args import HEADLAMP_CHART, HEADLAMP_REPOSITORY, HeadlampArgs
    from gpu_platform.components.karpenter.args import KARPENTER_CHART, KARPENTER_CRD_CHART, KARPENTER_REPO, KarpenterSettings
    from gpu_platform.components.kubeflow.args import KNOWN_RELEASES, KubeflowInstallArgs
    from gpu_platform.components.kubeflow.plan import manifest_sources
    from gpu_platform.components.load_balancer.args import CONTROLLER_CHART, CONTROLLER_REPOSITORY, AwsLoadBalancerControllerArgs
    from gpu_platform.components.monitoring.dcgm_args import DCGM_REPOSITORY
    from gpu_platform.components.queues.args import KUEUE_CHART, KUEUE_REPOSITORY, KueueArgs

    prometheus = PrometheusStackArgs()
    charts: list[tuple[str, str, str | None]] = [
        ("kube-prometheus-stack", prometheus.chart_version, prometheus.repository),
        ("prometheus-adapter", prometheus.adapter_chart_version, prometheus.repository),
        ("dcgm-exporter", DcgmExporterArgs.model_fields["chart_version"].default, DCGM_REPOSITORY),
        (DASK_OPERATOR_CHART, DaskOperatorArgs.model_fields["chart_version"].default, DASK_REPO),
        (AUTOSCALER_CHART, ClusterAutoscalerSettings.model_fields["chart_version"].default, AUTOSCALER_REPO),
        (HEADLAMP_CHART, HeadlampArgs.model_fields["chart_version"].default, HEADLAMP_REPOSITORY),
        (CONTROLLER_CHART, AwsLoadBalancerControllerArgs.model_fields["chart_version"].default, CONTROLLER_REPOSITORY),
        (DEVICE_PLUGIN_CHART, SpotFailoverEksNodeGroupsArgs.model_fields["device_plugin_chart_version"].default, DEVICE_PLUGIN_REPOSITORY),
        (KARPENTER_CRD_CHART, KarpenterSettings.model_fields["chart_version"].default, KARPENTER_REPO),
        (KARPENTER_CHART, KarpenterSettings.model_fields["chart_version"].default, KARPENTER_REPO),
        (KUEUE_CHART, KueueArgs.model_fields["chart_version"].default, KUEUE_REPOSITORY),
    ]
    urls = [
        url
        for edition, releases in KNOWN_RELEASES.items()
        for release in releases
        for _, url in manifest_sources(KubeflowInstallArgs.model_construct(edition=edition, release=release))
    ]
    return charts, urls


def supported_files() -> list[tuple[str, str]]:
    """The single upstream files (name in the sources, URL) the components read: the AWS Load Balancer
    Controller's IAM policy of every release it accepts."""
    from gpu_platform.components.load_balancer.args import CONTROLLER_RELEASES, iam_policy_name, iam_policy_url

    return [(iam_policy_name(version), iam_policy_url(version)) for version in CONTROLLER_RELEASES]


def lock_for(declared: list[tuple[list[tuple[str, str, str | None]], list[str]]], sources: Sources) -> Lock:
    """The lock that covers exactly the declared charts and kustomize URLs (nested remote
    resources included), keeping the entries already locked; new digests and commits are read
    from ``sources``."""
    from gpu_platform.infra.preview.upstream import ChartPin, GitPin, lock_entries, mirror_git_config

    charts: list[tuple[str, str, str | None]] = []
    refs: list[tuple[str, str]] = []
    kubectl = _kubectl()
    with tempfile.TemporaryDirectory(prefix="gpu-platform-lock-") as tmp:
        config = mirror_git_config(sources.root, Path(tmp) / "gitconfig") if sources.local else None
        for chart_list, urls in declared:
            for chart in chart_list:
                if chart in charts:
                    continue
                charts.append(chart)
                name, version, repo = chart
                if not sources.local and sources.fetch and sources.lock.chart(name, version, repo) is None:
                    sources.pull_chart(
                        ChartPin(name=name, version=version, repository=repo or "", digest="sha256:" + "0" * 64),
                        sources.root / "charts" / f"{name}-{version}.tgz",
                    )
            for url in urls:
                target = parse_kustomize_url(url)
                if target is None or target.ref is None:
                    raise SourceError(f"{url} is not a GitHub kustomize URL pinned with ?ref=<tag>")
                if kubectl is None:
                    raise SourceError("kubectl is not installed: it is needed to learn what a kustomization reads")
                trace = Path(tmp) / f"trace-{len(refs)}-{abs(hash(url))}"
                env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_TRACE": str(trace)}
                if config is not None:
                    env |= {"GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1"}
                out = subprocess.run([kubectl, "kustomize", url], capture_output=True, text=True, env=env, timeout=600)
                if out.returncode != 0:
                    lines = [line for line in out.stderr.splitlines() if line.strip()]
                    raise SourceError(f"kubectl kustomize {url} failed: {(lines or ['failed'])[-1].strip()}")
                for pair in _fetched(trace):
                    if pair not in refs:
                        refs.append(pair)
    if not sources.local:
        for repository, tag in refs:
            if sources.lock.git_pin(repository, tag) is None:
                sources.fetch_tag(sources.git_dir(repository), GitPin(repository=repository, tag=tag, commit="0" * 40))
    return lock_entries(charts, refs, sources)
