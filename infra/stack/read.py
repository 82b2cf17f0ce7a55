"""Reading a stack, once: the project's Pulumi.yaml and the stack file (as the offline commands read
them), and Pulumi config (as the running program reads it), into the one typed StackConfig.

Stack files are UTF-8 YAML with no key written twice; namespaces are the project's, its providers'
and those its Pulumi.yaml declares; secure values become placeholders that never show ciphertext.
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import re
import typing
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pydantic import SecretStr, ValidationError

from gpu_platform.components.catalog.zones import zone_problem
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.eks.args import valid_eks_cluster_name
from gpu_platform.components.gke.args import valid_cluster_name
from gpu_platform.components.kubeflow.args import Edition
from gpu_platform.infra.stack.errors import (
    SECRET_PLACEHOLDER,
    ConfigError,
    PreviewError,
    format_validation_error,
    model_at,
)
from gpu_platform.infra.stack.model import KUBEFLOW_CREDENTIAL_KEYS, PROJECT, STACK_CHECK, StackConfig
from gpu_platform.infra.yaml_io import SAFE_LOADER

__all__ = [
    "every_problem",
    "config_for_engine",
    "find_project_dir",
    "load_stack",
    "load_stack_config",
    "read_namespace",
    "read_stack_file",
    "stack_config_from",
]


def _parse(value: Any) -> Any:
    """Pulumi hands structured config to programs as JSON strings; scalars stay strings."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _all_config() -> dict[str, Any]:
    merged = dict(pulumi.runtime.get_config_env())
    merged.update(pulumi.runtime.config.CONFIG.get())
    return merged


@functools.cache
def _text_keys() -> frozenset[str]:
    """The stack keys whose values are text (a password, a kubeconfig): never decoded, whatever they start with (a
    JSON kubeconfig, a password beginning with a brace)."""
    from pydantic import SecretStr

    def text(annotation: Any) -> bool:
        return annotation in (str, SecretStr) or any(text(a) for a in typing.get_args(annotation) if a is not type(None))

    return frozenset(name for name, field in StackConfig.model_fields.items() if text(field.annotation))


def read_namespace(namespace: str = PROJECT) -> dict[str, Any]:
    """Every ``<namespace>:<key>`` config value, structured values decoded (text keys as they are)."""
    prefix = namespace + ":"
    text = _text_keys() if namespace == PROJECT else frozenset()
    return {k[len(prefix) :]: v if k[len(prefix) :] in text else _parse(v) for k, v in _all_config().items() if k.startswith(prefix)}


def load_stack_config() -> StackConfig:
    """Build the StackConfig from the running program's Pulumi config, or raise ConfigError."""
    raw = read_namespace(PROJECT)
    secret = {key for key in raw if pulumi.runtime.is_config_secret(f"{PROJECT}:{key}")}
    if misplaced := _misplaced_secrets(raw, secret):
        raise ConfigError(misplaced)
    try:
        config = StackConfig.model_validate(raw)
    except ValidationError as exc:
        renames: dict[tuple[str, ...], tuple[str, ...]] = {}
        if isinstance(raw.get("eks_node_groups"), dict) and "other_node_groups" not in raw["eks_node_groups"]:
            # Injected from eks.system_node_group (see StackConfig): name what the user wrote.
            renames[("eks_node_groups", "other_node_groups")] = ("eks", "system_node_group", "name")
        raise ConfigError(every_problem(raw, exc, secret=secret, renames=renames)) from None
    problems: list[str] = []
    if config.cloud is Cloud.GCP and config.gke is not None:
        import pulumi_gcp

        # The same lookup the provider makes: gcp:project, else GOOGLE_PROJECT and friends.
        if not config.gke.project and not pulumi_gcp.config.project:
            problems.append(f"gcp:project: required when {PROJECT}:gke.project is not set (got nothing)")
        stack = pulumi.get_stack()
        if config.gke.cluster_name is None and not valid_cluster_name(stack):
            problems.append(
                f"{PROJECT}:gke.cluster_name: required, since the stack name {stack!r} is not a valid "
                "GKE cluster name (lowercase letters, digits and '-', starting with a letter, at most 40) (got nothing)"
            )
    if config.cloud is Cloud.AWS and config.eks is not None:
        import pulumi_aws

        if not config.eks.region and not pulumi_aws.config.region:
            problems.append(f"aws:region: required when {PROJECT}:eks.region is not set (got nothing)")
        stack = pulumi.get_stack()
        if config.eks.cluster_name is None and not valid_eks_cluster_name(stack):
            problems.append(
                f"{PROJECT}:eks.cluster_name: required, since the stack name {stack!r} is not a valid EKS cluster "
                "name (letters, digits, '-' and '_') (got nothing)"
            )
        # With eks.region set, EksClusterArgs checks the zones itself.
        region = pulumi_aws.config.region
        named: list[tuple[str, str]] = []
        if config.eks.vpc is not None:
            named = [(f"eks.vpc.{f}[{z}]", z) for f, z, _ in config.eks.vpc.subnets()]
        elif config.eks.zones:
            named = [(f"eks.zones[{i}]", z) for i, z in enumerate(config.eks.zones)]
        if named and not config.eks.region and region:
            for key, zone in named:
                if not zone.startswith(str(region)) or len(zone) != len(str(region)) + 1:
                    problems.append(f"{PROJECT}:{key}: zone {zone} is not in region {region} (got {json.dumps(zone)})")
                elif problem := zone_problem(Cloud.AWS, str(region), zone):
                    problems.append(f"{PROJECT}:{key}: {problem} (got {json.dumps(zone)})")
    problems += _secret_problems(
        "grafana_admin_password",
        config.grafana_admin_password,
        config.monitoring.enabled,
        "monitoring is enabled",
        "<password>",
    )
    problems += _secret_problems(
        "kubeflow_oidc_client_secret",
        config.kubeflow_oidc_client_secret,
        config.kubeflow is not None and config.kubeflow.install.oidc is not None,
        "kubeflow.install.oidc is set",
        "<client secret>",
    )
    problems += _secret_problems(
        "kubeflow_dex_password_hash",
        config.kubeflow_dex_password_hash,
        config.kubeflow is not None and config.kubeflow.install.edition is Edition.PLATFORM,
        "the Kubeflow platform edition is enabled",
        "\"$(htpasswd -nbBC 12 '' <password> | cut -d: -f2)\"",
    )
    for key in KUBEFLOW_CREDENTIAL_KEYS.values():
        problems += _secret_problems(key, getattr(config, key), False, "", "<letters and digits>")
    if problems:
        raise ConfigError(problems)
    return config


ROUNDS = 6
"""How many times every_problem sets refused values aside and validates again (each round lets the
cross-field checks of one more level of models run)."""


def _clean(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """A pydantic location without its union and validator markers: the key path as written."""
    return tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))


def _set_aside(data: dict[str, Any], loc: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Remove from ``data`` (in place) the deepest key on ``loc`` that can go without a new problem: a model
    field with a default, or an entry of a map; the path removed, or None when nothing on ``loc`` can go."""
    for end in range(len(loc), 0, -1):
        parent_loc, key = loc[: end - 1], loc[end - 1]
        if not isinstance(key, str):
            continue
        node: Any = data
        for part in parent_loc:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
            else:
                node = None
                break
        if not isinstance(node, dict) or key not in node:
            continue
        if isinstance(node[key], (dict, list)):
            return None  # a whole section or list stands in for nothing: the checks that read it would see it gone
        model = model_at(StackConfig, parent_loc)
        field = model.model_fields.get(key) if model is not None else None
        if (field is not None and not field.is_required()) or (model is not None and field is None and _is_map(parent_loc)):
            del node[key]
            return loc[:end]
    return None


def _is_map(loc: tuple[Any, ...]) -> bool:
    """Whether ``loc`` is a map field (``warm_capacity.pools``, ``gke.resource_labels``) of the stack's models."""
    if not loc or not isinstance(loc[-1], str):
        return False
    model = model_at(StackConfig, loc[:-1])
    field = model.model_fields.get(loc[-1]) if model is not None else None
    if field is None:
        return False
    return "dict[" in str(field.annotation) or typing.get_origin(field.annotation) is dict


def every_problem(
    raw: dict[str, Any], exc: ValidationError, *, secret: set[str] | frozenset[str] = frozenset(), renames: dict[tuple[str, ...], tuple[str, ...]] | None = None
) -> list[str]:
    """Every independent problem of a stack in one run, field and cross-field alike.

    pydantic runs a model's cross-field checks only once every field of it is valid, so a stack with a bad
    value and a cross-field problem elsewhere used to take two runs. Here each refused value is set aside
    (a key with a default is left out, so the default stands in; a map entry is dropped) and the config is
    validated again, so the cross-field checks run on what is valid; their problems are reported beside the
    field errors. A problem found at or under a key set aside is left out (it may be about the stand-in,
    not what the user wrote); a check that needs a value refused in this run is made in the next one.
    """
    lines = format_validation_error(exc, StackConfig, PROJECT, secret=secret, renames=renames)
    data = copy.deepcopy(raw)
    aside: list[tuple[Any, ...]] = []
    errors = exc.errors()
    for _ in range(ROUNDS):
        if all(error["type"] == STACK_CHECK for error in errors):
            return lines  # the cross-field checks ran: every problem is listed
        removed = [path for error in errors if error["type"] != STACK_CHECK and (path := _set_aside(data, _clean(tuple(error["loc"])))) is not None]
        if len(removed) < sum(error["type"] != STACK_CHECK for error in errors):
            return lines  # a refused value nothing can stand in for (a required name): the rest waits for the next run
        aside += removed
        try:
            StackConfig.model_validate(data)
        except ValidationError as again:
            fresh = [e for e in again.errors() if not _about_aside(e, aside)]
            if not fresh:
                return lines
            errors = fresh
            found = ValidationError.from_exception_data(again.title, [_detail(e) for e in fresh])
            lines += [line for line in format_validation_error(found, StackConfig, PROJECT, secret=secret, renames=renames) if line not in lines]
            continue
        return lines
    return lines


def _about_aside(error: Any, aside: list[tuple[Any, ...]]) -> bool:
    """Whether a problem found with keys set aside may be about their stand-ins: it is located at or under
    one, at an object that holds one (its own check; not the root), or its message names one (``eks.version 1.30 does
    not match kubernetes_version 1.34``)."""
    loc = _clean(tuple(error["loc"]))
    if any(loc[: len(path)] == path for path in aside):
        return True
    # The objects that hold a stand-in check their fields together (a GKE section's system pool shape against its
    # machine type): a problem of such an object's own check may be about it. A sibling field's problem is kept,
    # and so are the stack's own checks (at the root) unless they name the key.
    if any(0 < len(loc) < len(path) and loc == path[: len(loc)] for path in aside):
        return True
    names = {str(path[-1]) for path in aside}
    # ... or the value that stands in (``shape.vcpus 8 contradicts the catalog: e2-standard-4 has 4 vCPUs``).
    names |= {default for path in aside if isinstance(default := _stand_in(path), str) and len(default) >= 3}
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", error["msg"]) for name in names)


def _stand_in(path: tuple[Any, ...]) -> Any:
    """The default that stands in for the key at ``path`` of the stack config once it is set aside, or None."""
    from pydantic import BaseModel

    model: Any = StackConfig
    for i, key in enumerate(path):
        if not isinstance(key, str) or not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        field = model.model_fields.get(key)
        if field is None:
            return None
        if i == len(path) - 1:
            return None if field.is_required() or field.default_factory is not None else field.default
        model = _model_in(field.annotation)
    return None


def _model_in(annotation: Any) -> Any:
    """The pydantic model inside an annotation (``X | None``, ``list[X]``, ``dict[str, X]``, Annotated), or None."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if (found := _model_in(arg)) is not None:
            return found
    return None


def _detail(error: Any) -> Any:
    """A pydantic ErrorDetails as InitErrorDetails, to build a ValidationError of some errors only."""
    from pydantic_core import PydanticCustomError

    return {"type": PydanticCustomError(error["type"], error["msg"]), "loc": tuple(error["loc"]), "input": error.get("input")}


SECRET_FIELDS = frozenset(name for name, field in StackConfig.model_fields.items() if SecretStr in typing.get_args(field.annotation))
"""The top-level keys that hold a secret (SecretStr fields); a secret anywhere else is refused."""


def _secret_paths(value: Any, path: str) -> list[str]:
    """Where the offline reader put a secure value's placeholder inside ``value``."""
    from gpu_platform.infra.stack.errors import SECRET_PLACEHOLDER

    if isinstance(value, str):
        return [path] if value.startswith(SECRET_PLACEHOLDER) else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _secret_paths(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _secret_paths(v, f"{path}[{i}]")]
    return []


def _misplaced_secrets(raw: dict[str, Any], secret: set[str]) -> list[str]:
    """A secret where the program needs a plain value (names, namespaces, emails, sizes): refused,
    naming the key path and never the value. Only SecretStr keys carry secrets into the cloud."""
    allowed = ", ".join(sorted(SECRET_FIELDS))
    lines = []
    # An unknown key is the model's to refuse (unknown key, did-you-mean), its value hidden.
    for key in sorted((secret - SECRET_FIELDS) & set(StackConfig.model_fields)):
        paths = _secret_paths(raw[key], f"{PROJECT}:{key}") or [f"{PROJECT}:{key}"]
        for path in paths:
            lines.append(
                f"{path}: a secret where a plain value is required (it would name or size resources and "
                f"show in plaintext in the state); only {allowed} may be secret (got a secret value)"
            )
    return lines


def _secret_problems(key: str, value: SecretStr | None, needed: bool, when: str, example: str) -> list[str]:
    """A secret config key that is missing while needed, or set in plain text."""
    full = f"{PROJECT}:{key}"
    how = f"set it with `pulumi config set --secret {full} {example}`"
    if needed and value is None:
        return [f"{full}: required when {when}; {how} (got nothing)"]
    if value is not None and not pulumi.runtime.is_config_secret(full):
        return [f"{full}: must be a Pulumi secret, not plain text in the stack file; {how} (got a plaintext value)"]
    return []


def find_project_dir(start: Path | None = None) -> Path:
    """The folder holding Pulumi.yaml: from ``start`` (or the cwd) upwards."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "Pulumi.yaml").is_file():
            return candidate
    raise PreviewError([f"no Pulumi.yaml in {here} or above: run from the gpu-platform project"])


STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
"""Pulumi's own rule for a stack name (tokens.IsName, at most 100 characters): alphanumerics,
'-', '_' and '.', which also keeps Pulumi.<stack>.yaml one file in the stack folder."""


PROVIDER_NAMESPACES = ("aws", "gcp", "kubernetes", "pulumi", "random")
"""Config namespaces besides the project's that a stack file may set: the providers the program
uses (their own config, e.g. gcp:project, aws:region) and Pulumi's own (pulumi:tags)."""


def check_stack_name(stack: str) -> None:
    """Refuse a name Pulumi would refuse as a stack name (``../x``, ``team/dev``, ``dev gke``)."""
    if not STACK_NAME.match(stack):
        raise PreviewError([f"stack {stack[:120]!r}: not a Pulumi stack name: 1 to 100 letters, digits, '-', '_' or '.' (got {len(stack)} characters)"])


class _Loader(SAFE_LOADER):  # type: ignore[misc]
    """PyYAML's safe loader (libyaml's where PyYAML was built with it: the same nodes, marks and errors, several
    times faster); the reader walks its node tree for duplicate keys first."""


def _duplicate_keys(node: yaml.Node, path: str, name: str) -> list[str]:
    """One line per mapping key that appears twice at the same place, at any depth."""
    problems: list[str] = []
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            here = f"{path}.{key}" if path else str(key)
            if key is not None and key_node.tag != "tag:yaml.org,2002:merge":
                if key in seen:
                    problems.append(
                        f"{name}: duplicate key {here} at line {key_node.start_mark.line + 1} "
                        f"(first at line {seen[key]}); YAML keeps only the last, so write it once"
                    )
                else:
                    seen[key] = key_node.start_mark.line + 1
            problems += _duplicate_keys(value_node, here, name)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            problems += _duplicate_keys(item, f"{path}[{i}]", name)
    return problems


def _load_yaml(path: Path) -> Any:
    """The one reader of Pulumi.yaml and stack files: UTF-8 text (a UTF-8 BOM is dropped), YAML
    with no key written twice at any depth. Raises PreviewError with one line per problem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PreviewError([f"{path.name}: cannot read it: {exc.strerror or exc}"]) from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data:
        raise PreviewError([f"{path.name}: not UTF-8 text (UTF-16, UTF-32 or binary); save it as UTF-8"])
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise PreviewError([f"{path.name}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"]) from None
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            if problems := _duplicate_keys(node, "", path.name):
                raise PreviewError(problems)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PreviewError([f"{path.name}: invalid YAML{where}: {problem}"]) from None


def _placeholders(key: str, value: Any, secret_paths: list[str]) -> Any:
    """Replace every ``{secure: ...}`` value, at any depth, with a placeholder that shows no
    ciphertext; remember its key path (``gpu-platform:dask.tenants[0].name``)."""
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            secret_paths.append(key)
            top = key.split(".", 1)[0].split("[", 1)[0]
            return SECRET_PLACEHOLDER + top.split(":", 1)[-1].replace(".", "-")
        return {k: _placeholders(f"{key}.{k}", v, secret_paths) for k, v in value.items()}
    if isinstance(value, list):
        return [_placeholders(f"{key}[{i}]", v, secret_paths) for i, v in enumerate(value)]
    return value


def _namespace_problem(key: str, project: str, file: str, declared: tuple[str, ...] = (), *, malformed_only: bool = False) -> str | None:
    """Why ``key`` (``namespace:name``) is not one the program reads, with a did-you-mean.
    ``declared``: further namespaces the program reads (Pulumi.yaml's config section sets them, or
    the program asked pulumi.Config for them). ``malformed_only``: only a key that is not
    ``namespace:name`` is a problem (the namespaces are checked once the program has run)."""
    namespace, _, name = key.partition(":")
    if not name or ":" in name:
        return f"{file}: config key {key!r} must be <namespace>:<name>, e.g. {project}:cloud"
    known = tuple(dict.fromkeys((project, *PROVIDER_NAMESPACES, *declared)))
    if namespace in known or malformed_only:
        return None
    hint = difflib.get_close_matches(namespace, known, n=1, cutoff=0.6)
    mean = f"; did you mean {hint[0]}:{name}?" if hint else ""
    return f"{key}: unknown config namespace {namespace!r}{mean} (the program reads {', '.join(n + ':' for n in known)}; nothing else is used)"


def read_stack_file(project_dir: Path, stack: str, *, required: bool = True) -> tuple[dict[str, Any], set[str]]:
    """The stack's config as ``namespace:key -> value``, with the project's config defaults.

    The one reader of Pulumi.yaml and stack files: it refuses a stack name Pulumi would refuse,
    text that is not UTF-8, duplicate keys, a file without a ``config:`` mapping and namespaces
    the program does not read. Secure values (at any depth) become placeholders and their
    top-level keys are returned as secret keys, as Pulumi marks them. Without ``required`` (a
    program of one's own), a missing stack file means the project's config defaults only, and a
    key of a namespace the program may read at run time (``pulumi.Config("acme")``) is kept:
    run_program refuses it once the program has run without reading that namespace.
    """
    check_stack_name(stack)
    project = _load_yaml(project_dir / "Pulumi.yaml")
    if not isinstance(project, dict):
        raise PreviewError([f"Pulumi.yaml: expected a mapping with name:, runtime: and main: (got {type(project).__name__})"])
    stack_dir = project_dir / str(project.get("stackConfigDir", "."))
    path = stack_dir / f"Pulumi.{stack}.yaml"
    if not path.is_file() and not required:
        document: Any = {"config": {}}
    elif not path.is_file():
        known = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in stack_dir.glob("Pulumi.*.yaml"))
        raise PreviewError([f"stack {stack!r}: no {path.relative_to(project_dir)} (stacks: {', '.join(known) or 'none'})"])
    else:
        document = _load_yaml(path)
    if not isinstance(document, dict):
        raise PreviewError([f"{path.name}: expected a mapping with a config: section (got {type(document).__name__})"])
    if "config" not in document:
        raise PreviewError([f"{path.name}: no config: section; stack settings go under config: (got {', '.join(map(str, document)) or 'an empty file'})"])
    if document["config"] is None and not required:
        document["config"] = {}
    if document["config"] is None:
        raise PreviewError([f"{path.name}: the config: section is empty; it needs at least gpu-platform:cloud (got nothing)"])
    raw = document["config"]
    if not isinstance(raw, dict):
        raise PreviewError([f"{path.name}: config: must be a mapping of keys to values (got {type(raw).__name__})"])
    name = str(project.get("name", PROJECT))
    project_config = project.get("config") or {}
    if not isinstance(project_config, dict):
        raise PreviewError([f"Pulumi.yaml: config: must be a mapping of keys to types or values (got {type(project_config).__name__})"])
    declared = tuple(str(k).split(":", 1)[0] for k in project_config if ":" in str(k))
    secret_paths: list[str] = []
    config: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        full = str(key) if ":" in str(key) else f"{name}:{key}"
        if problem := _namespace_problem(full, name, path.name, declared, malformed_only=not required):
            problems.append(problem)
            continue
        config[full] = _placeholders(full, value, secret_paths)
    if problems:
        raise PreviewError(problems)
    for key, spec in project_config.items():
        full = str(key) if ":" in str(key) else f"{name}:{key}"
        if isinstance(spec, dict) and "default" in spec and full not in config:
            config[full] = spec["default"]
        elif not isinstance(spec, dict) and full not in config:
            config[full] = spec
    secret_keys = {p.split(".", 1)[0].split("[", 1)[0] for p in secret_paths}
    return config, secret_keys


def config_for_engine(config: dict[str, Any]) -> dict[str, str]:
    """Config values as the CLI hands them to a program: strings, structured values as JSON."""
    out = {}
    for key, value in config.items():
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (int, float)):
            out[key] = str(value)
        else:
            out[key] = json.dumps(value)
    return out


def load_stack(project_dir: Path, stack: str) -> Any:
    """The stack's typed config, read from its stack file as the program would read it (for
    commands that plan or check a stack without running the program). Raises PreviewError
    or ConfigError."""
    config, secret_keys = read_stack_file(project_dir, stack)  # checks the stack name too
    return stack_config_from(config, secret_keys, stack)


def stack_config_from(config: dict[str, Any], secret_keys: set[str], stack: str) -> Any:
    """The typed config of ``config`` (``namespace:key -> value``, as read_stack_file gives it) as the
    program would read it in stack ``stack``; ConfigError otherwise (``gpu-platform simulate`` passes a
    stack file's config with its --set and --sweep values applied)."""
    from gpu_platform.infra.stack.read import load_stack_config

    pulumi.runtime.set_all_config(config_for_engine(config), sorted(secret_keys))
    pulumi.runtime.settings._set_project(PROJECT)  # noqa: SLF001 - what `pulumi` sets for a program
    pulumi.runtime.settings._set_stack(stack)  # noqa: SLF001
    return load_stack_config()
