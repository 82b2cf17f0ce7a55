"""The Kubernetes objects a plan declares, and their validation against the API schemas.

Built-in kinds are checked with kubernetes-validate (strict: unknown fields fail) for the
stack's Kubernetes version. Custom resources are checked against the openAPIV3Schema of
their CRD where the package ships one (``infra/crds/*.yaml``); a custom resource without
a shipped CRD is reported as not validated, never silently passed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infra.preview import SECRET_SIG, Plan, RecordedResource

__all__ = [
    "KubernetesObject",
    "SchemaFinding",
    "MANIFEST_FILES",
    "kubernetes_objects",
    "manifest_files",
    "plain",
    "unknown_fields",
    "validate_objects",
    "write_manifests",
]

CRD_DIR = Path(__file__).parent / "crds"


@dataclass(frozen=True)
class KubernetesObject:
    resource: RecordedResource
    body: dict[str, Any]

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def name(self) -> str:
        return str((self.body.get("metadata") or {}).get("name") or self.resource.name)

    @property
    def namespace(self) -> str | None:
        return (self.body.get("metadata") or {}).get("namespace")


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


def _mask(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    return "[secret]"


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


@functools.cache
def _crd_schemas(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema for every CRD in one file."""
    # libyaml's loader: the DaskCluster CRD alone is a quarter of a megabyte of schema.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for doc in yaml.load_all(path.read_text(), Loader=loader):
        if not doc or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc["spec"]
        for version in spec.get("versions", []):
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if schema:
                schemas[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = schema
    return schemas


def crd_schema(api_version: str, kind: str, crd_dir: Path = CRD_DIR) -> dict[str, Any] | None:
    """The CRD schema of one kind available offline: from ``crd_dir``, or the DaskCluster,
    DaskAutoscaler, ... CRDs the dask-kubernetes wheel ships (one file per kind, read on demand)."""
    from components.dask_operator import operator_chart_dir

    candidates = sorted(crd_dir.glob("*.yaml")) + [operator_chart_dir() / "crds" / f"{kind.lower()}.yaml"]
    for path in candidates:
        if path.is_file() and (schema := _crd_schemas(path).get((api_version, kind))):
            return schema
    return None


def _path(error: Any) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return parts.lstrip(".") or "(object)"


def validate_objects(
    objects: list[KubernetesObject], kubernetes_version: str, crd_dir: Path = CRD_DIR
) -> list[SchemaFinding]:
    if not objects:
        return []
    # Imported here: the schema libraries take a noticeable share of a preview's start-up.
    import jsonschema
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError

    findings = []
    for obj in objects:
        label = f"{obj.kind} {obj.name}"
        try:
            kubernetes_validate.validate(obj.body, kubernetes_version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            findings.append(SchemaFinding(obj.resource.name, obj.kind, f"{label}: {_path(exc)}: {exc.message}", True))
        except SchemaNotFoundError:
            schema = crd_schema(obj.api_version, obj.kind, crd_dir)
            if schema is None:
                findings.append(
                    SchemaFinding(
                        obj.resource.name,
                        obj.kind,
                        f"{label}: no CRD schema for {obj.api_version} {obj.kind} ships offline; not validated",
                        False,
                    )
                )
                continue
            validator = jsonschema.Draft7Validator(schema)
            for error in sorted(validator.iter_errors(obj.body), key=lambda e: list(e.absolute_path)):
                findings.append(SchemaFinding(obj.resource.name, obj.kind, f"{label}: {_path(error)}: {error.message}", True))
            # JSON Schema lets keys outside `properties` through; the API server prunes them, or
            # (kubectl's strict field validation) refuses them. Either way a misspelt key is lost.
            for where, message in unknown_fields(obj.body, schema):
                findings.append(SchemaFinding(obj.resource.name, obj.kind, f"{label}: {where}: {message}", True))
    return findings


def unknown_fields(value: Any, schema: dict[str, Any], path: str = "") -> list[tuple[str, str]]:
    """(path, message) for every key of ``value`` that its CRD schema node does not declare.

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
                found.append((
                    where,
                    f"unknown field {key!r}; "
                    + (f"did you mean {hint[0]!r}?" if hint else f"allowed: {', '.join(sorted(properties))}"),
                ))
            elif isinstance(schema.get("additionalProperties"), dict):
                found += unknown_fields(item, schema["additionalProperties"], where)
    elif isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            found += unknown_fields(item, schema["items"], f"{path}[{i}]")
    return found


MANIFEST_FILES = ("*.yaml",)
"""What a --manifests folder may hold: gpu-platform replaces it whole (infra/output.py)."""


def manifest_files(objects: list[KubernetesObject]) -> dict[str, bytes]:
    """One YAML document per object, named <kind>-<namespace>-<name>.yaml; secret values masked."""
    files: dict[str, bytes] = {}
    for obj in objects:
        parts = [obj.kind.lower(), obj.namespace, obj.name]
        name = "-".join(p for p in parts if p) + ".yaml"
        # Secret values never reach disk, not even the offline placeholders.
        body = yaml.safe_dump(_kubectl_order(plain(obj.resource.inputs, redact=True)), sort_keys=False)
        files[name] = body.encode("utf-8")
    return files


def write_manifests(objects: list[KubernetesObject], directory: Path) -> list[Path]:
    """Replace ``directory`` with one YAML file per object (the atomic folder writer)."""
    from infra.output import folder_target, write_outputs

    files = manifest_files(objects)
    write_outputs([(folder_target("--manifests", str(directory), MANIFEST_FILES), files)])
    return [directory / name for name in files]
