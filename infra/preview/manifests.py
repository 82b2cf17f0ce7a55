"""The Kubernetes objects a plan declares, and their validation against the API schemas.

Built-in kinds are checked with kubernetes-validate (strict: unknown fields fail) for the
stack's Kubernetes version. Custom resources are checked against the openAPIV3Schema of
their CRD where the package ships one (``infra/crds/*.yaml``); a custom resource without
a shipped CRD is reported as not validated, never silently passed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.infra.collector import collector_paused
from gpu_platform.infra.kubernetes_api import builtin_api_versions, builtin_validator, crd_schema, crd_schemas_of, crd_validator
from gpu_platform.infra.preview.engine import SECRET_SIG, Plan, RecordedResource
from gpu_platform.infra.yaml_io import SAFE_DUMPER

__all__ = [
    "KubernetesObject",
    "SchemaFinding",
    "MANIFEST_FILES",
    "kubernetes_objects",
    "manifest_files",
    "masked",
    "plain",
    "unknown_fields",
    "validate_objects",
    "write_manifests",
]


class ObjectView:
    """What every check reads of a Kubernetes object ``body``: its apiVersion, group, kind,
    name, namespace and a label (``Kind namespace/name``)."""

    body: dict[str, Any]

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.body.get("metadata") or {}).get("name") or "")

    @property
    def namespace(self) -> str | None:
        return (self.body.get("metadata") or {}).get("namespace")

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass(frozen=True)
class KubernetesObject(ObjectView):
    resource: RecordedResource
    body: dict[str, Any]

    @property
    def name(self) -> str:
        return str((self.body.get("metadata") or {}).get("name") or self.resource.name)

    @property
    def owner(self) -> RecordedResource:
        """The plan resource that applies the object (for an object of the plan, its own)."""
        return self.resource


@dataclass(frozen=True)
class SchemaFinding:
    resource: str
    """The recorded resource's name."""
    kind: str
    message: str
    validated: bool
    """False when no schema was available (a notice, not a violation)."""


def plain(value: Any, redact: bool = False) -> Any:
    """Objects as kubectl would see them: secrets unwrapped (or, with ``redact``, masked)."""
    if isinstance(value, dict):
        if SECRET_SIG.items() <= value.items():
            return _mask(value.get("value")) if redact else plain(value.get("value"))
        return {k: plain(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v, redact) for v in value]
    return value


MASK = "[secret]"
"""What a secret value is written as (a Secret's ``stringData`` values and every value Pulumi marks secret)."""
MASK_BASE64 = "W3NlY3JldF0="
"""A Secret's ``data`` values: base64 of MASK, so the masked Secret is still a valid object."""


def _mask(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    return MASK


def masked(value: Any) -> Any:
    """What is written to disk (the plan JSON, every manifest): Pulumi's secret wrapper taken
    off and the value masked at its own key, and every Secret's ``data``/``stringData``
    values masked even where they were not marked secret (a chart or Kustomize directory
    writing them in plain text, a placeholder of the offline preview): ``stringData:
    {password: '[secret]'}``, never the engine's ``{4dabf...: ..., value: ...}``."""
    return _masked_secrets(plain(value, redact=True))


def _masked_secrets(value: Any) -> Any:
    if isinstance(value, list):
        return [_masked_secrets(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _masked_secrets(v) for k, v in value.items()}
    if out.get("apiVersion") == "v1":
        return _masked_secret(out)  # a Secret object, in a plan resource's inputs or a rendered body
    return out


_LEADING = ("apiVersion", "kind", "metadata")


def _kubectl_order(body: dict[str, Any]) -> dict[str, Any]:
    """apiVersion, kind, metadata first, as Kubernetes manifests are written."""
    return {**{k: body[k] for k in _LEADING if k in body}, **{k: v for k, v in sorted(body.items()) if k not in _LEADING}}


def kubernetes_objects(plan: Plan) -> list[KubernetesObject]:
    """Every Kubernetes object the plan declares as a resource of its own."""
    objects = []
    for r in plan.resources:
        if not r.custom or not r.type.startswith("kubernetes:"):
            continue
        if "apiVersion" not in r.inputs or "kind" not in r.inputs:
            continue  # Helm releases and other non-object resources
        objects.append(KubernetesObject(r, _kubectl_order(plain(r.inputs))))
    return objects


def _path(error: Any) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return parts.lstrip(".") or "(object)"


def validate_objects(
    objects: list[Any],
    kubernetes_version: str,
    crd_dir: Path | None = None,
    crds: list[dict[str, Any]] | None = None,
) -> list[SchemaFinding]:
    """Schema findings for ``objects`` (the plan's KubernetesObjects or rendered objects, each
    with ``body``, ``kind``, ``name``, ``api_version`` and the ``owner`` resource).

    A built-in API group at a version Kubernetes ``kubernetes_version`` does not serve (a
    removed ``policy/v1beta1``) is a violation; a custom resource is checked against the CRDs
    the stack installs (``crds``), then those shipped offline, else reported as not validated.
    """
    if not objects:
        return []

    served = builtin_api_versions(kubernetes_version)
    builtin = {api.rpartition("/")[0] for api in served}
    extra = crd_schemas_of(crds or [])
    # Imported here: the schema libraries take a noticeable share of a preview's start-up.
    from kubernetes_validate.utils import SchemaNotFoundError

    findings = []
    validators: dict[int, Any] = {}
    for obj in objects:
        label = f"{obj.kind} {obj.name}"
        owner = obj.owner.name
        body = getattr(obj, "plain_body", None) or plain(obj.body)
        try:
            error = next(iter(builtin_validator(kubernetes_version, obj.api_version, obj.kind).iter_errors(body)), None)
            if error is not None:
                findings.append(SchemaFinding(owner, obj.kind, f"{label}: {_path(error)}: {error.message}", True))
        except SchemaNotFoundError:
            group = obj.api_version.rpartition("/")[0]
            if group in builtin and served:
                instead = sorted(api for api, kinds in served.items() if obj.kind in kinds and re.search(r"(^|/)v[0-9]+$", api))
                findings.append(
                    SchemaFinding(
                        owner,
                        obj.kind,
                        f"{label}: {obj.api_version} {obj.kind} is not served by Kubernetes {kubernetes_version}"
                        + (f"; use {', '.join(instead)}" if instead else ""),
                        True,
                    )
                )
                continue
            schema = crd_schema(obj.api_version, obj.kind, crd_dir, extra)
            if schema is None:
                findings.append(
                    SchemaFinding(
                        owner,
                        obj.kind,
                        f"{label}: no CRD schema for {obj.api_version} {obj.kind} ships offline; not validated",
                        False,
                    )
                )
                continue
            validator = validators.get(id(schema)) or validators.setdefault(id(schema), crd_validator(schema))
            for error in sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path)):
                findings.append(SchemaFinding(owner, obj.kind, f"{label}: {_path(error)}: {error.message}", True))
            # JSON Schema lets keys outside `properties` through; the API server prunes them, or
            # (kubectl's strict field validation) refuses them. Either way a misspelt key is lost.
            for where, message in unknown_fields(body, schema):
                findings.append(SchemaFinding(owner, obj.kind, f"{label}: {where}: {message}", True))
    return findings


def unknown_fields(value: Any, schema: object, path: str = "") -> list[tuple[str, str]]:
    """(path, message) for every key of ``value`` that its CRD schema node (any JSON value, checked here) does not declare.

    A node with ``properties`` declares exactly those keys, unless it sets
    ``x-kubernetes-preserve-unknown-fields: true`` or ``additionalProperties``. The top-level
    ``metadata`` is the API server's ObjectMeta, checked by the API server, not the CRD.
    """
    import difflib

    found: list[tuple[str, str]] = []
    if isinstance(value, dict) and isinstance(schema, dict):
        properties = schema.get("properties")
        open_ended = schema.get("x-kubernetes-preserve-unknown-fields") is True or "additionalProperties" in schema
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if path == "" and key in ("apiVersion", "kind", "metadata"):
                continue
            if properties is not None and key in properties:
                found += unknown_fields(item, properties[key], where)
            elif properties is not None and not open_ended:
                hint = difflib.get_close_matches(str(key), list(properties), n=1)
                found.append(
                    (
                        where,
                        f"unknown field {key!r}; " + (f"did you mean {hint[0]!r}?" if hint else f"allowed: {', '.join(sorted(properties))}"),
                    )
                )
            elif isinstance(schema.get("additionalProperties"), dict):
                found += unknown_fields(item, schema["additionalProperties"], where)
    elif isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            found += unknown_fields(item, schema["items"], f"{path}[{i}]")
    return found


MANIFEST_FILES = ("*.yaml",)
"""What a --manifests folder may hold: gpu-platform replaces it whole (infra/output.py)."""


def _file_name(kind: str, namespace: str | None, name: str) -> str:
    return "-".join(p for p in (kind.lower(), namespace, name) if p) + ".yaml"


@collector_paused()
def manifest_files(objects: list[KubernetesObject], rendering: Any = None) -> dict[str, bytes]:
    """One YAML document per object, named <kind>-<namespace>-<name>.yaml; secret values masked.

    With a rendering, the objects each release or directory puts on the cluster go beside
    them, named ``rendered.<release or directory>.<kind>-<namespace>-<name>.yaml``.
    """
    files: dict[str, bytes] = {}
    for obj in objects:
        # Secret values never reach disk, not even the offline placeholders.
        body = yaml.dump(_kubectl_order(_masked_secret(masked(obj.resource.inputs))), Dumper=SAFE_DUMPER, sort_keys=False)
        files[_file_name(obj.kind, obj.namespace, obj.name)] = body.encode("utf-8")
    for rendered in getattr(rendering, "objects", []):
        name = f"rendered.{rendered.source.resource.name}.{_file_name(rendered.kind, rendered.namespace, rendered.name)}"
        body = yaml.dump(_kubectl_order(_masked_secret(masked(rendered.body))), Dumper=SAFE_DUMPER, sort_keys=False)
        files[name] = body.encode("utf-8")
    return files


def write_manifests(objects: list[KubernetesObject], directory: Path, rendering: Any = None) -> list[Path]:
    """Replace ``directory`` with one YAML file per object (the atomic folder writer)."""
    from gpu_platform.infra.output import folder_target, write_outputs

    files = manifest_files(objects, rendering)
    write_outputs([(folder_target("--manifests", str(directory), MANIFEST_FILES), files)])
    return [directory / name for name in files]


def _masked_secret(body: dict[str, Any]) -> dict[str, Any]:
    """A Secret's values masked, each at its own key, even where upstream wrote them in plain
    text (``body`` already unwrapped by plain()): stringData values MASK, data values
    MASK_BASE64 (base64, as ``data`` must be)."""
    if body.get("kind") != "Secret":
        return body
    out = dict(body)
    if isinstance(out.get("stringData"), dict):
        out["stringData"] = {k: MASK for k in out["stringData"]}
    if isinstance(out.get("data"), dict):
        out["data"] = {k: MASK_BASE64 for k in out["data"]}
    return out


def rendered_json(rendering: Any) -> list[dict[str, Any]]:
    """The `rendered` section of the plan JSON: per release or directory, its source, status
    and objects (secret values masked)."""
    out = []
    for source in rendering.sources:
        out.append(
            {
                "resource": source.resource.urn,
                "name": source.resource.name,
                "kind": source.kind,
                "source": source.origin,
                "configKey": source.config_key,
                "rendered": source.rendered,
                "reason": source.unavailable or source.error,
                "fetched": [f"{r}?ref={ref}" for r, ref in source.fetched],
                "objects": [
                    {"type": o.type, "urn": o.urn, "protect": o.protect, "body": _kubectl_order(_masked_secret(masked(o.body)))} for o in source.objects
                ],
            }
        )
    return out
