"""What only the engine hands the Kubeflow transforms: secret Outputs, unknowns during a preview, and
either anywhere inside lists and maps, for every object kind a transform touches.

The offline preview runs the transforms over rendered objects as plain JSON. Under ``pulumi up`` the
engine calls them with the children the Kubernetes provider registers, as a TransformRequest through
the SDK's callback: a Secret's ``data`` is a secret output value, and during a preview a value may be
unknown. Here each object is generated from the tables the transforms work from (every Secret of
UPSTREAM_SECRETS, every MySQL Deployment of UPSTREAM_EMPTY_ROOT_PASSWORDS, every pipeline claim, Dex's
objects, the default Profile and its install ConfigMap, and objects no transform touches); then every
node of it in turn (every map value and list item, at any depth) is put on the wire in one engine
shape, the request goes through the SDK's own transform callback as the engine sends it, and the
response is read as the engine reads it:

- known shapes (a secret output value, a plain output value with a dependency, the older secret
  wrapper): the result resolves to exactly what the plain object gives, everything secret in the input
  is still secret wherever its value still is (a Secret's whole content once any of it was), and our
  own values (credentials, the Dex hash, the OIDC digest) stay secret;
- unknown shapes, during a preview (the wire's unknown sentinel, an unknown output value, an unknown
  secret output value): the transform does not fail, everything it can decide without the value comes
  out as from the plain object, and only the unknown node, the maps and lists that hold it, or (for a
  Secret) the content moved from ``data`` into ``stringData`` are unknown; an object whose kind, name or
  namespace is unknown is left as it is.
"""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import rpc, settings
from pulumi.runtime.proto import resource_pb2

from gpu_platform.components.kubeflow.args import (
    ARTIFACT_CLAIMS,
    DATABASE_CLAIMS,
    PIPELINE_STORAGE_TYPE,
    UPSTREAM_PROFILE_OWNER,
    KubeflowInstallArgs,
)
from gpu_platform.components.kubeflow.transforms import (
    UPSTREAM_EMPTY_ROOT_PASSWORDS,
    UPSTREAM_SECRETS,
    Credential,
    as_pulumi_transform,
    rendered_object_transforms,
)
from gpu_platform.infra.preview.engine import RecordingMocks

SIG = rpc._special_sig_key  # the wire's markers, which the SDK names only privately
SECRET_SIG = rpc._special_secret_sig
OUTPUT_SIG = rpc._special_output_value_sig
DEPENDENCY = "urn:pulumi:test::gpu-platform::random:index/randomPassword:RandomPassword::elsewhere"

ARGS = KubeflowInstallArgs.model_validate(
    {
        "edition": "platform",
        "dex_user_email": "ml-admin@corp.example",
        "storage_class": "premium-rwo",
        "artifact_storage_gib": 750,
        "database_storage_gib": 80,
        "oidc": {"issuer": "https://login.corp.example", "client_id": "kubeflow", "redirect_uri": "https://kubeflow.corp.example/dex/callback"},
    }
)
DEX_HASH = "$2b$12$our-hash"
OIDC_CLIENT_SECRET = "our-oidc-client-secret"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def example_name(pattern: re.Pattern[str]) -> str:
    """A name the pattern matches: the plain name, or with kustomize's hash suffix."""
    base = re.sub(r"\(.*\)\?", "", pattern.pattern.strip("^$"))
    return next(n for n in (base, f"{base}-h675gf55ht") if pattern.match(n))


def _metadata(name: str, namespace: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/part-of": "kubeflow"}}
    if namespace is not None:
        metadata["namespace"] = namespace
    return metadata


def _deployment(name: str, namespace: str, container: str, env: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(name, namespace),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": {"sidecar.istio.io/inject": "false"}},
                "spec": {
                    "containers": [
                        {"name": container, "image": f"upstream/{container}:1", "env": env, "ports": [{"containerPort": 3306, "name": "port"}]},
                        {"name": "sidecar", "image": "upstream/sidecar:1", "env": [{"name": "MODE", "value": "quiet"}]},
                    ]
                },
            },
        },
    }


def upstream_objects() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every object the transforms touch, and two they must not, by label: (type token, object)."""
    objects: dict[str, tuple[str, dict[str, Any]]] = {}
    secrets: dict[tuple[str, str], list[str]] = {}
    for slot in UPSTREAM_SECRETS:
        secrets.setdefault((slot.namespace, example_name(slot.name)), []).append(slot.key)
    for (namespace, name), keys in secrets.items():
        objects[f"Secret {namespace}/{name}"] = (
            "kubernetes:core/v1:Secret",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": _metadata(name, namespace),
                "data": {**{key: b64(f"upstream-default-{key}") for key in keys}, "kept": b64("upstream's own value")},
                "stringData": {"also-kept": "upstream's own string"},
            },
        )
    objects["Secret auth/dex-passwords"] = (
        "kubernetes:core/v1:Secret",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": _metadata("dex-passwords", "auth"),
            "data": {"DEX_USER_PASSWORD": b64("$2y$12$upstream-hash")},
        },
    )
    objects["ConfigMap auth/dex"] = (
        "kubernetes:core/v1:ConfigMap",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _metadata("dex", "auth"),
            "data": {
                "config.yaml": (
                    "issuer: http://dex.auth.svc.cluster.local:5556/dex\nstaticPasswords:\n"
                    f"- email: {UPSTREAM_PROFILE_OWNER}\n  hashFromEnv: DEX_USER_PASSWORD\n  username: user\n"
                    "connectors:\n- type: github\n  id: github\n"
                ),
                "other.yaml": "kept: true\n",
            },
        },
    )
    objects["Deployment auth/dex"] = (
        "kubernetes:apps/v1:Deployment",
        _deployment(
            "dex",
            "auth",
            "dex",
            [
                {"name": "KUBERNETES_POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            ],
        ),
    )
    for slot in UPSTREAM_EMPTY_ROOT_PASSWORDS:
        objects[f"Deployment kubeflow/{slot.deployment}"] = (
            "kubernetes:apps/v1:Deployment",
            _deployment(
                slot.deployment,
                "kubeflow",
                slot.container,
                [
                    {"name": "MYSQL_ALLOW_EMPTY_PASSWORD", "value": "true"},
                    {"name": "MYSQL_DATABASE", "valueFrom": {"secretKeyRef": {"name": slot.secret, "key": "database"}}},
                    {"name": "TZ", "value": "UTC"},
                ],
            ),
        )
    for name in sorted(ARTIFACT_CLAIMS | DATABASE_CLAIMS):
        objects[f"PersistentVolumeClaim kubeflow/{name}"] = (
            PIPELINE_STORAGE_TYPE,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": _metadata(name, "kubeflow"),
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}, "limits": {"storage": "40Gi"}}},
            },
        )
    objects["Profile kubeflow-user-example-com"] = (
        "kubernetes:kubeflow.org/v1beta1:Profile",
        {
            "apiVersion": "kubeflow.org/v1beta1",
            "kind": "Profile",
            "metadata": _metadata("kubeflow-user-example-com", None),
            "spec": {"owner": {"kind": "User", "name": UPSTREAM_PROFILE_OWNER}, "resourceQuotaSpec": {"hard": {"cpu": "8"}}},
        },
    )
    objects["ConfigMap default-install-config"] = (
        "kubernetes:core/v1:ConfigMap",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _metadata("default-install-config-9h2h2b6hbk", None),
            "data": {"profile-name": "kubeflow-user-example-com", "user": UPSTREAM_PROFILE_OWNER},
        },
    )
    # A consumer of the credentials (its reference to them untouched; only the await annotation is added), the
    # Service in front of it, and, untouched, a Secret of the same name in another namespace.
    objects["Deployment kubeflow/ml-pipeline"] = (
        "kubernetes:apps/v1:Deployment",
        _deployment(
            "ml-pipeline",
            "kubeflow",
            "ml-pipeline-api-server",
            [{"name": "DBCONFIG_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "mysql-secret", "key": "password"}}}],
        ),
    )
    objects["Service kubeflow/ml-pipeline"] = (
        "kubernetes:core/v1:Service",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _metadata("ml-pipeline", "kubeflow"),
            "spec": {"selector": {"app": "ml-pipeline"}, "ports": [{"name": "http", "port": 8888}]},
        },
    )
    objects["ClusterRole kubeflow-pipelines-edit"] = (
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _metadata("kubeflow-pipelines-edit", None),
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.kubeflow.org/aggregate-to-kubeflow-pipelines-edit": "true"}}]},
            "rules": [],
        },
    )
    objects["Secret kubeflow/training-operator-webhook-cert"] = (
        "kubernetes:core/v1:Secret",
        {"apiVersion": "v1", "kind": "Secret", "metadata": _metadata("training-operator-webhook-cert", "kubeflow"), "type": "Opaque", "data": {}},
    )
    objects["Secret other/mysql-secret (untouched)"] = (
        "kubernetes:core/v1:Secret",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": _metadata("mysql-secret", "other"),
            "data": {"password": b64("theirs")},
        },
    )
    return objects


OBJECTS = upstream_objects()

SHAPES: dict[str, tuple[bool, Any]] = {
    # shape: (during a preview, the wire form of a node whose value is v)
    "secret output": (False, lambda v: {SIG: OUTPUT_SIG, "value": v, "secret": True}),
    "output with a dependency": (False, lambda v: {SIG: OUTPUT_SIG, "value": v, "dependencies": [DEPENDENCY]}),
    "secret wrapper": (False, lambda v: {SIG: SECRET_SIG, "value": v}),
    "unknown": (True, lambda v: rpc.UNKNOWN),
    "unknown output": (True, lambda v: {SIG: OUTPUT_SIG}),
    "unknown secret output": (True, lambda v: {SIG: OUTPUT_SIG, "secret": True}),
}
SECRET_SHAPES = {"secret output", "secret wrapper", "unknown secret output"}
IDENTITY = {("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"), ("metadata", "namespace")}

Path = tuple[str | int, ...]


def nodes(value: Any, path: Path = ()) -> Iterator[Path]:
    """Every map value and list item inside ``value``, at any depth (not the object itself)."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield (*path, key)
        yield from nodes(child, (*path, key))


def replaced(value: Any, path: Path, fn: Any) -> Any:
    if not path:
        return fn(value)
    if isinstance(value, dict):
        return {k: replaced(v, path[1:], fn) if k == path[0] else v for k, v in value.items()}
    return [replaced(v, path[1:], fn) if i == path[0] else v for i, v in enumerate(value)]


def at(value: Any, path: Path) -> Any:
    for key in path:
        value = value[key]
    return value


def struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


async def through_engine(transform: pulumi.ResourceTransform, type_: str, label: str, properties: struct_pb2.Struct) -> Any:
    """The transform called as the engine calls it: a TransformRequest through the SDK's own callback."""
    callbacks = await settings._get_callbacks()  # the program's callback server, as the engine reaches it
    assert callbacks is not None
    token = callbacks.register_transform(transform).token
    request = resource_pb2.TransformRequest(
        type=type_,
        name=f"kf-platform:{label}",
        custom=True,
        parent="urn:pulumi:test::gpu-platform::kubernetes:kustomize/v2:Directory::kf-platform",
        properties=properties,
        options=resource_pb2.TransformResourceOptions(),
    )
    return await callbacks._callbacks[token](request.SerializeToString())


# --- reading a response as the engine does -----------------------------------------------------------


def normalized(value: Any) -> Any:
    """The wire value with every output value written the older way, as the engine reads both: a secret one as a
    secret wrapper, an unknown one as the unknown sentinel (an untouched object goes back as it came)."""
    if isinstance(value, dict) and value.get(SIG) == OUTPUT_SIG:
        inner = normalized(value["value"]) if "value" in value else rpc.UNKNOWN
        return {SIG: SECRET_SIG, "value": inner} if value.get("secret") else inner
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def wire(response_properties: struct_pb2.Struct) -> dict[str, Any]:
    return normalized(json_format.MessageToDict(response_properties))


def is_secret_wrapper(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SIG) == SECRET_SIG


def strip(value: Any) -> Any:
    """The plain value: secret wrappers removed (an unknown stays the wire's sentinel)."""
    if is_secret_wrapper(value):
        return strip(value["value"])
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """(path, value) of every scalar and empty container inside a plain value."""
    children = list(value.items()) if isinstance(value, dict) else list(enumerate(value)) if isinstance(value, list) else []
    if not children:
        yield path, value
    for key, child in children:
        yield from leaves(child, (*path, key))


def covered(value: Any, path: Path) -> bool:
    """Whether ``path`` inside the wire value ``value`` is secret: a secret wrapper at it or around it, or
    every leaf under it secret."""
    for key in path:
        if is_secret_wrapper(value):
            return True
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            return False
    if is_secret_wrapper(value):
        return True
    children = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else None
    return bool(children) and all(covered(child, ()) for child in children)


def has(value: Any, path: Path) -> bool:
    try:
        at(value, path)
    except (KeyError, IndexError, TypeError):
        return False
    return True


def unknown_where(out: Any, expected: Any, path: Path = ()) -> Iterator[tuple[Path, str]]:
    """Where the plain ``out`` differs from ``expected``: (path, 'unknown') where out is unknown,
    (path, 'differs') where it holds another value."""
    if out == rpc.UNKNOWN:
        yield path, "unknown"
    elif isinstance(out, dict) and isinstance(expected, dict) and out.keys() == expected.keys():
        for key in out:
            yield from unknown_where(out[key], expected[key], (*path, key))
    elif isinstance(out, list) and isinstance(expected, list) and len(out) == len(expected):
        for i, (a, b) in enumerate(zip(out, expected, strict=True)):
            yield from unknown_where(a, b, (*path, i))
    elif out != expected:
        yield path, "differs"


def wildcard(path: Path) -> tuple[str, ...]:
    return tuple(k if isinstance(k, str) else "*" for k in path)


def moved_secret_content(kind: str, path: Path) -> bool:
    """Whether ``path`` is a Secret's content, which the credentials transform moves into stringData."""
    return kind == "Secret" and path[:1] in (("data",), ("stringData",))


def problems(label: str, shape: str, path: Path, plain: Any, shaped: Any, request: struct_pb2.Struct) -> list[str]:
    """What is wrong with ``shaped`` (the response for the object with ``path`` in ``shape``), against ``plain``
    (the response for the plain object); one line per problem."""
    where = f"{label}, {'.'.join(map(str, path))} as {shape}"
    kind = OBJECTS[label][1]["kind"]
    out, expected = wire(shaped.properties), wire(plain.properties)
    found: list[str] = []
    if SHAPES[shape][0] and path in IDENTITY:
        if shaped.properties != request:
            found.append(f"{where}: an object whose identity is unknown must be left as it is")
        return found
    if bool(shaped.options.protect) != bool(plain.options.protect):
        found.append(f"{where}: protect {shaped.options.protect} (plain: {plain.options.protect})")
    # A field the plain object's result drops for being empty (EMPTY_OMITTED_FIELDS) cannot be told empty while it is
    # unknown (a preview): it stays as it came, and the rest of the object is the plain result.
    plain_out = strip(out)
    if SHAPES[shape][0] and len(path) == 1 and isinstance(plain_out, dict) and path[0] in plain_out and path[0] not in strip(expected):
        if {k: v for k, v in plain_out.items() if k != path[0]} == strip(expected):
            return found
    for diff_path, how in unknown_where(strip(out), strip(expected)):
        # A list the transform filters (a container's env) moves items: an unknown item is matched by its keys.
        allowed = (
            how == "unknown"
            and SHAPES[shape][0]
            and (wildcard(path[: len(diff_path)]) == wildcard(diff_path) or (moved_secret_content(kind, path) and diff_path == ("stringData",)))
        )
        if not allowed:
            found.append(f"{where}: {'.'.join(map(str, diff_path)) or 'the object'} {how} from the plain object's result")
    # Our own values stay secret (or are not there yet, during a preview).
    for secret_path, _ in leaves(strip(expected)):
        if covered(expected, secret_path) and has(strip(out), secret_path) and not covered(out, secret_path):
            found.append(f"{where}: {'.'.join(map(str, secret_path))} is no longer secret")
    # What was secret in the input is still secret wherever its value still is (a Secret's data key moves to
    # stringData, decoded).
    if shape in SECRET_SHAPES:
        original = OBJECTS[label][1]
        for leaf_path, value in leaves(at(original, path), path):
            places = [(leaf_path, value)]
            if kind == "Secret" and leaf_path[:1] == ("data",) and len(leaf_path) == 2:
                places.append((("stringData", leaf_path[1]), base64.b64decode(value).decode()))
            for place, kept in places:
                if has(strip(out), place) and at(strip(out), place) == kept and not covered(out, place):
                    found.append(f"{where}: {'.'.join(map(str, place))} kept the value but lost its secrecy")
    return found


def transform_under_test() -> pulumi.ResourceTransform:
    credentials = {c: pulumi.Output.secret(f"ours-{c.value}") for c in Credential}
    return as_pulumi_transform(ARGS, pulumi.Output.secret(DEX_HASH), pulumi.Output.secret(OIDC_CLIENT_SECRET), credentials)


@pytest.fixture
def mocks(request: pytest.FixtureRequest) -> None:
    preview = SHAPES[request.node.callspec.params["shape"]][0]
    pulumi.runtime.set_mocks(RecordingMocks(), project="gpu-platform", stack="test", preview=preview)


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("label", list(OBJECTS))
@pulumi.runtime.test
def test_every_node_of_every_object_in_every_engine_shape(mocks: None, label: str, shape: str) -> pulumi.Output[Any]:
    type_, obj = OBJECTS[label]
    transform = transform_under_test()
    preview, form = SHAPES[shape]

    async def run() -> list[str]:
        plain_request = struct(obj)
        plain = await through_engine(transform, type_, label, plain_request)
        found = []
        for path in nodes(obj):
            request = struct(replaced(obj, path, form))
            try:
                shaped = await through_engine(transform, type_, label, request)
            except Exception as exc:  # noqa: BLE001 - a transform that fails on a shape is the finding
                found.append(f"{label}, {'.'.join(map(str, path))} as {shape}: the transform failed: {exc}")
                continue
            found += problems(label, shape, path, plain, shaped, request)
        return found

    def check(found: list[str]) -> None:
        assert not found, "\n".join(found[:40])

    return pulumi.Output.from_input(run()).apply(check)


@pulumi.runtime.test
def test_the_generated_objects_reach_every_transform(engine: Any) -> pulumi.Output[Any]:
    """Each step of rendered_object_transforms changes at least one generated object, the untouched ones none:
    the shapes above reach every transform on every kind it touches."""
    steps = rendered_object_transforms(ARGS, DEX_HASH, OIDC_CLIENT_SECRET, {c: f"ours-{c.value}" for c in Credential})
    reached = {i: sorted(label for label, (_, obj) in OBJECTS.items() if step(obj) is not None) for i, step in enumerate(steps)}
    assert all(reached.values()), reached
    touched = set(itertools.chain.from_iterable(reached.values()))
    assert touched == {label for label in OBJECTS if "untouched" not in label}
    kinds = {OBJECTS[label][1]["kind"] for label in touched}
    assert kinds == {"Secret", "ConfigMap", "Deployment", "Service", "ClusterRole", "PersistentVolumeClaim", "Profile"}
    return pulumi.Output.from_input(sorted(touched))
