"""The offline Kubernetes API, one home: which minor versions have schemas, which apiVersions and
kinds a version serves, the OpenAPI schema of a built-in kind and the CRD schemas that ship offline.

The stack model (which ``kubernetes_version`` values are allowed), the renderer (Helm's API
capabilities) and the object checks (schema validation) all ask this module; it reads
kubernetes-validate's data and the CRDs the dask-kubernetes wheel ships.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.infra.yaml_io import SAFE_LOADER

__all__ = [
    "builtin_api_versions",
    "builtin_groups",
    "builtin_validator",
    "crd_schema",
    "crd_schemas_of",
    "crd_validator",
    "ga_api_versions",
    "schema_root",
    "supported_kubernetes_versions",
]


def schema_root() -> Path:
    """kubernetes-validate's folder of per-version OpenAPI schemas (read as data, not imported)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


@functools.cache
def supported_kubernetes_versions() -> list[str]:
    """The minor versions kubernetes-validate ships schemas for (read from its data, not imported)."""
    root = schema_root()
    minors = {m.group(1) for p in root.iterdir() if (m := re.match(r"^v(1\.[0-9]+)\.", p.name))}
    return sorted(minors, key=lambda v: int(v.split(".")[1]))


@functools.cache
def builtin_api_versions(kubernetes_version: str) -> dict[str, frozenset[str]]:
    """apiVersion -> kinds that Kubernetes ``kubernetes_version`` knows, from the offline schemas
    (kubernetes-validate) of that version; GA and pre-release versions alike."""
    root = schema_root()
    folder = next((p for p in sorted(root.iterdir()) if p.name.startswith(f"v{kubernetes_version}.") and p.name.endswith("-local-strict")), None)
    if folder is None:
        return {}
    definitions = json.loads((folder / "_definitions.json").read_text())
    definitions = definitions.get("$defs") or definitions.get("definitions") or {}
    served: dict[str, set[str]] = {}
    for schema in definitions.values():
        for gvk in (schema.get("x-kubernetes-group-version-kind") or []) if isinstance(schema, dict) else []:
            api = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
            # Only kinds with a schema file of their own are objects kubectl can apply.
            if (folder / f"{gvk['kind'].lower()}-{(gvk['group'] or '').split('.')[0] + '-' if gvk['group'] else ''}{gvk['version']}.json").is_file():
                served.setdefault(api, set()).add(gvk["kind"])
    return {api: frozenset(kinds) for api, kinds in served.items()}


def builtin_groups(kubernetes_version: str) -> frozenset[str]:
    """The API groups Kubernetes ``kubernetes_version`` serves itself (no CRD needed)."""
    return frozenset(api.rpartition("/")[0] for api in builtin_api_versions(kubernetes_version))


def ga_api_versions(kubernetes_version: str) -> list[str]:
    """The GA apiVersions of ``kubernetes_version``: the capabilities Helm renders charts against."""
    return sorted(api for api in builtin_api_versions(kubernetes_version) if re.search(r"(^|/)v[0-9]+$", api))


@functools.cache
def _crd_schemas(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema for every CRD in one file."""
    # libyaml's loader: the DaskCluster CRD alone is a quarter of a megabyte of schema.
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for doc in yaml.load_all(path.read_text(), Loader=SAFE_LOADER):
        if not doc or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc["spec"]
        for version in spec.get("versions", []):
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if schema:
                schemas[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = schema
    return schemas


def crd_schemas_of(crds: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema for CRD objects (those a stack's charts and
    manifests install)."""
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for doc in crds:
        spec = doc.get("spec") or {}
        for version in spec.get("versions") or []:
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if schema:
                schemas[(f"{spec.get('group')}/{version.get('name')}", str((spec.get("names") or {}).get("kind")))] = schema
    return schemas


def crd_schema(api_version: str, kind: str, crd_dir: Path | None = None, extra: dict[tuple[str, str], dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """The CRD schema of one kind available offline: from the CRDs the stack installs
    (``extra``), from the CRD files in ``crd_dir`` when given, or the DaskCluster, DaskAutoscaler, ... CRDs the
    dask-kubernetes wheel ships (one file per kind, read on demand)."""
    from gpu_platform.components.dask.args import operator_chart_dir

    if extra and (api_version, kind) in extra:
        return extra[(api_version, kind)]

    candidates = (sorted(crd_dir.glob("*.yaml")) if crd_dir is not None else []) + [operator_chart_dir() / "crds" / f"{kind.lower()}.yaml"]
    for path in candidates:
        if path.is_file() and (schema := _crd_schemas(path).get((api_version, kind))):
            return schema
    return None


@functools.cache
def _go_regexp(pattern: str) -> Any:
    """``pattern`` as the API server compiles a CRD's ``pattern``: Go's regexp, whose syntax RE2 shares
    (Python's re refuses Kubernetes patterns such as AdmissionCheck's ``^(?i)[a-z]...``, a flag after ``^``)."""
    import re2

    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """The ``pattern`` keyword with Go's regexp semantics (search, as the API server matches it)."""
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _go_regexp(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _crd_validator_class() -> Any:
    import jsonschema

    return jsonschema.validators.extend(jsonschema.Draft7Validator, {"pattern": _pattern})  # type: ignore[no-untyped-call]  # unannotated in types-jsonschema


def crd_validator(schema: dict[str, Any]) -> Any:
    """A JSON Schema validator for one CRD version's openAPIV3Schema, its ``pattern`` checked as the API
    server checks it (Go's regexp, through RE2); the rest is Draft 7, as before."""
    return _crd_validator_class()(schema)


@functools.cache
def _schema_file(path: str) -> Any:
    from kubernetes_validate.utils import schema_contents

    return schema_contents(path, path)


@functools.cache
def builtin_validator(kubernetes_version: str, api_version: str, kind: str) -> Any:
    """kubernetes-validate's strict validator for one kind, built once (kubernetes_validate.validate
    reads and indexes its 3 MB of definitions on every call). Raises SchemaNotFoundError."""
    import jsonschema
    from kubernetes_validate.utils import SchemaNotFoundError, all_versions, major_minor
    from referencing import Registry, Resource

    version = [v for v in all_versions() if major_minor(v) <= major_minor(kubernetes_version)][-1]
    schema_dir = f"kubernetes-json-schema/v{version}-local-strict"
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = _schema_file(f"{schema_dir}/{kind.lower()}-{api}.json")
    except FileNotFoundError:
        raise SchemaNotFoundError(version=major_minor(kubernetes_version), kind=kind, api_version=api_version) from None
    registry = Resource.from_contents(_schema_file(f"{schema_dir}/_definitions.json")) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)
