"""The components for every Pulumi language: a source-based component package.

TypeScript, Go, .NET, Java and YAML programs use the components through
``pulumi package add <this repository>`` (``PulumiPlugin.yaml``, runtime python): Pulumi runs
this package as a provider, reads its schema, generates an SDK in the program's language and
calls ``construct`` for each component the program declares.

The Python SDK (``pulumi.provider.experimental``) infers that schema from type annotations,
with limits this layer handles so that users of other languages never meet them:

- The Args models are pydantic models with validators, ``Annotated`` types, unions for
  ``str | Output[str]`` and label maps keyed by a validated string; the analyzer takes none
  of these. Each model gets a plain annotated twin here (same fields, same docstrings, one
  type name per model), and ``construct`` validates what arrives with the real model, so
  every check of the Python API holds, its errors reported against camelCase keys.
- Integers arrive as floats (3.272 converts them at some depths only): every integral float
  where the model wants an integer is made an int, in lists and maps too.
- A nested object that depends on another resource arrives as one Output, which the SDK
  would replace by an empty object: it is opened here (its value is known when the
  component is constructed), and the fields that take Outputs get Outputs that keep its
  dependencies and secrecy; a field that needs a known value and has none is one error
  naming it.
- Every non-underscore annotation of a component class becomes an output, so the exposed
  classes declare exactly the outputs of the Python components that other languages can
  hold (strings, lists and maps of them, and resources), documented from the same
  docstrings.

The exposed components register as ``gpu-platform:index:<Class>`` (the schema's only
module) around the Python component of the same name, which keeps its own type token, so
the resources of a Python program and their URNs do not change; the resources under an
exposed component are the Python component's, resource for resource.
"""

import dataclasses
import enum
import functools
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s
from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.experimental.schema import generate_schema
from pulumi.provider.experimental.util import camel_case  # the schema's spelling of a Python name (gpu_pools: gpuPools)
from pulumi.provider.provider import Provider
from pydantic import BaseModel, ValidationError

from gpu_platform.components.core.cloud import ClusterKind
from gpu_platform.components.core.cluster import ClusterPools
from gpu_platform.components.core.models import _InputSchema, key_path
from gpu_platform.components.core.outputs import attribute_docs, component_outputs
from gpu_platform.components.dask.args import DaskOperatorArgs
from gpu_platform.components.dask.operator import DaskOperator
from gpu_platform.components.eks.args import EksClusterArgs
from gpu_platform.components.eks.cluster import EksCluster, EksClusterRef
from gpu_platform.components.eks.node_group_args import KarpenterNodePoolsArgs, SpotFailoverEksNodeGroupsArgs
from gpu_platform.components.eks.node_groups import SpotFailoverEksNodeGroups
from gpu_platform.components.gke.args import GpuGkeClusterArgs
from gpu_platform.components.gke.cluster import GpuGkeCluster
from gpu_platform.components.headlamp.args import HeadlampArgs
from gpu_platform.components.headlamp.headlamp import Headlamp
from gpu_platform.components.inference.args import GpuInferenceServiceArgs
from gpu_platform.components.inference.service import GpuInferenceService
from gpu_platform.components.karpenter.node_pools import KarpenterNodePools
from gpu_platform.components.kubeflow.args import KubeflowInstallArgs
from gpu_platform.components.kubeflow.install import KubeflowInstall
from gpu_platform.components.load_balancer.args import AwsLoadBalancerControllerArgs
from gpu_platform.components.load_balancer.controller import AwsLoadBalancerController
from gpu_platform.components.monitoring.dcgm_args import DcgmExporterArgs
from gpu_platform.components.monitoring.dcgm_exporter import DcgmExporter
from gpu_platform.components.monitoring.gpu_utilization_args import GpuUtilizationAutoscalerArgs
from gpu_platform.components.monitoring.gpu_utilization_autoscaler import GpuUtilizationAutoscaler
from gpu_platform.components.monitoring.prometheus_args import MonitoredCluster, PrometheusStackArgs
from gpu_platform.components.monitoring.prometheus_stack import PrometheusStack
from gpu_platform.components.pools.shapes import NodePoolShape

__all__ = ["EXPOSED", "PACKAGE", "GpuPlatformProvider", "camel_case", "exposed_component", "main"]

PACKAGE = "gpu-platform"
"""The package name other languages add (``pulumi package add``) and the tokens' first part."""

_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
"""pulumi.runtime.rpc.UNKNOWN: an unknown value inside a known object during a preview."""


# --- Plain twins of the Args models ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Field:
    """How one field of a twin is read from what construct receives."""

    kind: str
    """"plain" (a known value), "output" (a str that may be an Output), "model" (a nested twin),
    "int", "list" or "map"."""
    inner: Any = None
    """The item's _Field for list and map, the model for model."""


_TWINS: dict[type, type] = {}
_FIELDS: dict[type, dict[str, _Field]] = {}

_INPUT: Any = pulumi.Input
"""``pulumi.Input`` as a value: the schema types here are built at run time for the analyzer, and mypy
applies type arguments in an expression to generic classes only, not to an alias such as ``pulumi.Input``."""


def _unwrap(annotation: Any) -> tuple[Any, bool, bool]:
    """(type, optional, takes an Output) of a model field's annotation."""
    optional = takes_output = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            base, *metadata = typing.get_args(annotation)
            takes_output = takes_output or any(isinstance(m, _InputSchema) for m in metadata)
            annotation = base
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            optional = optional or len(members) < len(typing.get_args(annotation))
            outputs = [a for a in members if typing.get_origin(a) is pulumi.Output or a is pulumi.Output]
            if outputs:
                takes_output = True
                members = [a for a in members if a not in outputs]
            if len(members) != 1:
                raise TypeError(f"no schema type for the union {annotation}")
            annotation = members[0]
        else:
            return annotation, optional, takes_output


def _schema_type(annotation: Any) -> tuple[Any, _Field]:
    """The analyzer-friendly type of a model's annotation, and how to read its values."""
    annotation, _, takes_output = _unwrap(annotation)
    origin = typing.get_origin(annotation)
    if takes_output:
        return _INPUT[annotation], _Field("output")
    if origin is typing.Literal:
        values = typing.get_args(annotation)
        return type(values[0]), _Field("plain")
    if origin in (list, tuple, Sequence, frozenset, set) or annotation in (list, tuple):
        (item,) = typing.get_args(annotation)[:1] or (Any,)
        item_type, item_field = _schema_type(item)
        return list[item_type], _Field("list", item_field)  # type: ignore[valid-type]
    if origin in (dict, Mapping):
        _, value = typing.get_args(annotation)
        value_type, value_field = _schema_type(value)
        return dict[str, value_type], _Field("map", value_field)  # type: ignore[valid-type]
    if isinstance(annotation, type) and (issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation)):
        return twin(annotation), _Field("model", annotation)
    if annotation is int:
        return int, _Field("int")
    if isinstance(annotation, type) and (issubclass(annotation, enum.Enum) or annotation in (str, float, bool)):
        return annotation, _Field("plain")
    if annotation is Any:
        return Any, _Field("plain")
    raise TypeError(f"no schema type for {annotation}")


def twin(model: type) -> type:
    """The plain annotated class the analyzer reads for ``model``: its fields (optional where
    they have a default), its docstring and each field's docstring (``__field_docs__``)."""
    if model in _TWINS:
        return _TWINS[model]
    cls = type(model.__name__, (), {"__doc__": (model.__doc__ or "").strip(), "__module__": __name__})
    _TWINS[model] = cls  # before the fields: a model may refer to itself
    annotations: dict[str, Any] = {}
    fields: dict[str, _Field] = {}
    if dataclasses.is_dataclass(model):
        hints = typing.get_type_hints(model, include_extras=True)
        for f in dataclasses.fields(model):
            schema_type, field = _schema_type(hints[f.name])
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            annotations[f.name] = schema_type if required else Optional[schema_type]
            fields[f.name] = field
        docs = attribute_docs(model)
    elif issubclass(model, BaseModel):
        for name, info in model.model_fields.items():
            schema_type, field = _schema_type(info.rebuild_annotation())
            annotations[name] = schema_type if info.is_required() else Optional[schema_type]
            fields[name] = field
        docs = {name: info.description for name, info in model.model_fields.items() if info.description}
    else:
        raise TypeError(f"no twin for {model}: neither a pydantic model nor a dataclass")
    cls.__annotations__ = annotations
    cls.__field_docs__ = docs  # type: ignore[attr-defined]
    _FIELDS[model] = fields
    return cls


# --- Reading what construct receives ---------------------------------------------------------


def _settled(value: pulumi.Output[Any]) -> Any:
    """The data of an Output the provider built from a construct input (already resolved), or None."""
    data = getattr(value, "_data", None)
    if data is None or not data.done() or data.cancelled() or data.exception() is not None:
        return None
    return data.result()


class _Reader:
    """Turns construct's inputs into what the Args model validates (see the module docstring)."""

    def __init__(self, component: str) -> None:
        self.component = component

    def known(self, value: Any, path: list[str | int]) -> Any:
        """The value of ``value`` (the value itself, or a settled Output's); an unknown one is an
        error naming the key."""
        if isinstance(value, pulumi.Output):
            data = _settled(value)
            value = _UNKNOWN if data is None or not data.is_known else data.value
        if isinstance(value, str) and value == _UNKNOWN:
            where = key_path(path)
            raise pulumi.InputPropertyError(where, f"{where} must be known when {self.component} is constructed (got an unknown value)")
        return value

    def model(self, value: Any, model: type, path: list[str | int], source: pulumi.Output[Any] | None) -> Any:
        if isinstance(value, pulumi.Output):
            source, value = value, self.known(value, path)
        if not isinstance(value, Mapping):
            return value  # the model reports the wrong type against the key
        fields = _FIELDS[model]
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = next((n for n in fields if camel_case(n) == key), None)
            if name is None:
                out[key] = item  # an unknown key: the model refuses it by name
                continue
            out[name] = self.value(item, fields[name], [*path, key], source, [key])
        return out

    def value(self, value: Any, field: _Field, path: list[str | int], source: pulumi.Output[Any] | None, within: list[str | int]) -> Any:
        if field.kind == "output":
            if source is not None and not isinstance(value, pulumi.Output):
                # A leaf of an object that arrived as one Output: keep its dependencies and secrecy.
                return source.apply(functools.partial(_get, keys=tuple(within)))
            return value
        if field.kind == "model":
            return self.model(value, field.inner, path, source)
        value = self.known(value, path)
        if field.kind == "int" and isinstance(value, float) and value.is_integer():
            return int(value)
        if field.kind == "list" and isinstance(value, list):
            return [self.value(v, field.inner, [*path, i], source, [*within, i]) for i, v in enumerate(value)]
        if field.kind == "map" and isinstance(value, Mapping):
            return {k: self.value(v, field.inner, [*path, k], source, [*within, k]) for k, v in value.items()}
        return value


def rebuild(cls: Any, value: Any) -> Any:
    """A value read by _Reader (snake_case dicts, enum values as strings) as the Python type ``cls``
    (a dataclass such as NodePoolShape, with its nested dataclasses, models, enums and tuples)."""
    if value is None:
        return None
    origin = typing.get_origin(cls)
    if origin is typing.Annotated:
        return rebuild(typing.get_args(cls)[0], value)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(cls) if a is not type(None)]
        return rebuild(members[0], value) if len(members) == 1 else value
    if origin is tuple:
        item = typing.get_args(cls)[0]
        return tuple(rebuild(item, v) for v in value)
    if origin in (list, Sequence):
        return [rebuild(typing.get_args(cls)[0], v) for v in value]
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        return cls(**{k: rebuild(hints[k], v) for k, v in value.items() if k in hints})
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return cls.model_validate(value)
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        return cls(value)
    return value


def _get(whole: Any, keys: Sequence[str | int]) -> Any:
    for key in keys:
        whole = whole[key]
    return whole


def _error_key(loc: Sequence[str | int], model: type[BaseModel]) -> str:
    """A pydantic location in the schema's spelling: gpu_pools.0.machine_type -> gpuPools[0].machineType."""
    parts: list[str | int] = []
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            parts.append(part)
            continue
        fields = _FIELDS.get(current, {})
        if part in fields:
            parts.append(camel_case(part))
            field = fields[part]
            while field.kind in ("list", "map"):
                field = field.inner
            current = field.inner if field.kind == "model" else None
        else:
            parts.append(part)  # a map key (a zone) or a key the model refused
    return key_path(parts)


def validated(model: type[BaseModel], args: Mapping[str, Any], component: str, prefix: Sequence[str | int] = ()) -> BaseModel:
    """``args`` (construct's, snake_case after the reader) validated by the real model; every
    problem one InputPropertyError naming its camelCase key (under ``prefix``, for a live input)."""
    try:
        return model.model_validate(dict(args))
    except ValidationError as exc:
        errors = [(key_path([*prefix, _error_key(e["loc"], model)]) if prefix else _error_key(e["loc"], model), e["msg"]) for e in exc.errors()]
        if len(errors) == 1:
            raise pulumi.InputPropertyError(*errors[0]) from None
        raise pulumi.InputPropertiesError(
            f"{component}: {len(errors)} inputs are invalid",
            [{"property_path": p, "reason": r} for p, r in errors],
        ) from None


# --- The exposed components -------------------------------------------------------------------


def _output_type(annotation: Any) -> tuple[Any, bool] | None:
    """The schema type of a Python component's output, and whether its value needs converting
    (None: an output other languages cannot hold, such as a Python-only plan object)."""
    origin = typing.get_origin(annotation)
    if origin is pulumi.Output:
        return annotation, False
    if annotation in (str, int, float, bool):
        return pulumi.Output[annotation], False
    if isinstance(annotation, type) and issubclass(annotation, pulumi.Resource) and getattr(annotation, "pulumi_type", None):
        return annotation, False
    if origin is dict:
        _, value = typing.get_args(annotation)
        if value in (str, int, float, bool):
            return pulumi.Output[dict[str, value]], False  # type: ignore[valid-type]
        if isinstance(value, type) and issubclass(value, pulumi.Resource) and getattr(value, "pulumi_type", None):
            return annotation, False
        if dataclasses.is_dataclass(value):
            return pulumi.Output[dict[str, Any]], True
    if origin is list and typing.get_args(annotation)[0] in (str, int, float, bool):
        return pulumi.Output[annotation], False
    return None


def _plain(value: Any) -> Any:
    """A Python plan object (a dataclass, a pydantic model, an enum) as JSON-like data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel_case(f.name): _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, BaseModel):
        return {camel_case(k): _plain(v) for k, v in value.model_dump(mode="json").items()}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclasses.dataclass(frozen=True)
class Live:
    """A keyword-only live input of a Python component, offered to other languages as an input."""

    schema_type: Any
    """Its type in the schema (a twin, or a hand-written plain class)."""
    description: str
    read: Callable[[Any, _Reader, list[str | int]], Any] | None = None
    """Turns what construct received into the Python value; None: passed as it came."""
    default: Any = None
    """What the Python component gets when the input is not given, if ``pass_default`` (a keyword without a default of its own)."""
    pass_default: bool = False


@dataclasses.dataclass(frozen=True)
class Extra:
    """An output of an exposed component that the Python component holds in another form."""

    schema_type: Any
    description: str
    get: Callable[[Any, Any], Any]
    """Reads it from the built Python component and its validated args."""


def exposed_component(
    real: type[pulumi.ComponentResource],
    model: type[BaseModel],
    *,
    live: Mapping[str, Live] | None = None,
    extra: Mapping[str, Extra] | None = None,
) -> type[pulumi.ComponentResource]:
    """The ``gpu-platform:index:<Class>`` component that builds ``real`` from a twin of ``model``.

    ``live``: the Python component's keyword-only live inputs other languages can give; each
    becomes a top-level input beside the model's fields. ``extra``: outputs the Python component
    holds in a form other languages cannot (a dataclass of Outputs), offered as plain objects.
    """
    live = dict(live or {})
    extra = dict(extra or {})
    args_twin = twin(model)
    if live:
        args_twin = type(f"{real.__name__}Inputs", (args_twin,), {"__doc__": args_twin.__doc__, "__module__": __name__})
        args_twin.__annotations__ = {name: item.schema_type for name, item in live.items()}
        args_twin.__field_docs__ = {**twin(model).__field_docs__, **{n: item.description for n, item in live.items()}}  # type: ignore[attr-defined]
    # The outputs' annotations are strings (``from __future__ import annotations``); typing.get_type_hints
    # would also evaluate pulumi.Resource's own, which name what the SDK module does not import.
    module = __import__(real.__module__, fromlist=["_"])
    namespace = {**vars(typing), **vars(module)}
    outputs: dict[str, tuple[Any, bool, str]] = {}
    for output in component_outputs(real):  # type: ignore[arg-type]  # mypy#20409: a class is Hashable, mypy checks type[X] with X's unbound __hash__
        resolved = _output_type(eval(output.type, namespace))
        if resolved is not None and output.name not in extra:
            outputs[output.name] = (*resolved, output.description)
    for attr, item in extra.items():
        outputs[attr] = (item.schema_type, False, item.description)
    token = f"{PACKAGE}:index:{real.__name__}"
    # The component contract, which ComponentResource's own signature does not state: Foo(name, args, opts, **live inputs).
    construct: Callable[..., pulumi.ComponentResource] = real

    def __init__(self: pulumi.ComponentResource, name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> None:  # noqa: N807 - the twin class's constructor
        reader = _Reader(real.__name__)
        given = dict(args or {})
        live_values = {}
        for key, item in live.items():
            value = given.pop(key, None)
            if value is None:
                if item.pass_default:
                    live_values[key] = item.default
                continue
            live_values[key] = item.read(value, reader, [camel_case(key)]) if item.read else value
        settled = reader.model({camel_case(k): v for k, v in given.items()}, model, [], None)
        checked = validated(model, settled, real.__name__)
        pulumi.ComponentResource.__init__(self, token, name, None, opts)
        built = construct(name, checked, pulumi.ResourceOptions(parent=self), **live_values)
        registered: dict[str, Any] = {}
        for attr, (_, convert, _) in outputs.items():
            value = extra[attr].get(built, checked) if attr in extra else getattr(built, attr, None)
            if value is None:
                continue
            value = _plain(value) if convert else value
            setattr(self, attr, value)
            registered[attr] = value
        self.built = built  # type: ignore[attr-defined]
        self.register_outputs(registered)

    __init__.__annotations__ = {"name": str, "args": args_twin, "opts": Optional[pulumi.ResourceOptions], "return": None}
    first = (real.__doc__ or "").strip().split("\n\n")[0]
    cls = type(
        real.__name__,
        (pulumi.ComponentResource,),
        {
            "__init__": __init__,
            "__module__": __name__,
            "__doc__": first,
            "__annotations__": {k: t for k, (t, _, _) in outputs.items()},
            "__field_docs__": {k: d for k, (_, _, d) in outputs.items()},
            "pulumi_type": token,
        },
    )
    return cls


class EksClusterTarget:
    """What SpotFailoverEksNodeGroups needs of an EKS cluster: EksCluster's ``ref`` output, passed whole.
    Its values carry the cluster's readiness: node groups wait for the CNI add-on, controllers for the
    system node group and CoreDNS."""

    cluster_name: pulumi.Input[str]
    """The EKS cluster's name (known when the node groups are planned)."""
    region: pulumi.Input[str]
    """Its region."""
    node_role_arn: pulumi.Input[str]
    """The IAM role nodes run as."""
    subnet_ids: pulumi.Input[list[str]]
    """The private subnets node groups run in."""
    oidc_provider_arn: pulumi.Input[str]
    """The cluster's IAM OIDC provider (IRSA)."""
    oidc_issuer: pulumi.Input[str]
    """The cluster's OIDC issuer without https:// (the prefix of IRSA condition keys)."""
    version: pulumi.Input[str] | None
    """The cluster's Kubernetes minor version ("1.34"); picks the autoscaler release."""


_FIELDS[EksClusterTarget] = {
    "cluster_name": _Field("plain"),
    "region": _Field("plain"),
    "version": _Field("plain"),
    "node_role_arn": _Field("output"),
    "subnet_ids": _Field("output"),
    "oidc_provider_arn": _Field("output"),
    "oidc_issuer": _Field("output"),
}


def _after(value: pulumi.Input[Any], resources: Sequence[pulumi.Resource]) -> pulumi.Output[Any]:
    """``value``, depending on ``resources`` as well: how a dependency travels through an output."""
    return pulumi.Output.all(value, *(r.urn for r in resources)).apply(lambda v: v[0])


def _cluster_target(built: EksCluster) -> dict[str, Any]:
    ref = built.ref
    return {
        "cluster_name": ref.name,
        "region": ref.region,
        "version": ref.version,
        "subnet_ids": ref.subnet_ids,
        "node_role_arn": _after(ref.node_role_arn, [r for r in (ref.cluster_resource, *ref.node_prerequisites) if r]),
        "oidc_provider_arn": _after(ref.oidc_provider_arn, list(ref.controllers_ready)),
        "oidc_issuer": ref.oidc_issuer,
    }


def _read_cluster_target(value: Any, reader: _Reader, path: list[str | int]) -> EksClusterRef:
    fields = reader.model(value, EksClusterTarget, path, None)
    missing = [camel_case(k) for k in ("cluster_name", "region", "node_role_arn", "subnet_ids", "oidc_provider_arn", "oidc_issuer") if fields.get(k) is None]
    if missing:
        raise pulumi.InputPropertyError(key_path([*path, missing[0]]), f"{key_path([*path, missing[0]])} is required (pass EksCluster's ref output)")
    for key in ("cluster_name", "region"):
        if not isinstance(fields[key], str):
            raise pulumi.InputPropertyError(key_path([*path, camel_case(key)]), f"{key_path([*path, camel_case(key)])} must be a known string")
    return EksClusterRef(
        name=fields["cluster_name"],
        region=fields["region"],
        node_role_arn=fields["node_role_arn"],
        subnet_ids=fields["subnet_ids"],
        oidc_provider_arn=fields["oidc_provider_arn"],
        oidc_issuer=fields["oidc_issuer"],
        version=fields.get("version"),
    )


_POOL_SHAPE = twin(NodePoolShape)


def _POOL_SHAPES_OUTPUT(shapes: Callable[[Any, Any], list[NodePoolShape]], what: str) -> Extra:  # noqa: N802 - a factory of a constant's kind
    return Extra(
        pulumi.Output[list[_POOL_SHAPE]],  # type: ignore[valid-type]
        f"The pools as workloads see them ({what}): pass them to DaskOperator's pools or KubeflowInstall's trainingPools.",
        lambda built, args: [_plain(s) for s in shapes(built, args)],
    )


def _read_pools(value: Any, reader: _Reader, path: list[str | int]) -> list[NodePoolShape]:
    value = reader.known(value, path)
    if not isinstance(value, list):
        raise pulumi.InputPropertyError(key_path(path), f"{key_path(path)} must be a list of pool shapes (a cluster's poolShapes output)")
    pools = []
    for i, item in enumerate(value):
        fields = reader.model(item, NodePoolShape, [*path, i], None)
        try:
            pools.append(rebuild(NodePoolShape, fields))
        except (TypeError, ValueError, ValidationError) as exc:
            raise pulumi.InputPropertyError(
                key_path([*path, i]), f"{key_path([*path, i])} is not a pool shape ({exc}); pass a cluster's poolShapes output"
            ) from None
    return pools


def _read_monitored_cluster(value: Any, reader: _Reader, path: list[str | int]) -> BaseModel:
    fields = reader.model(value, MonitoredCluster, path, None)
    return validated(MonitoredCluster, fields, reader.component, path)


class ClusterPoolsTarget:
    """The cluster an add-on places pods on, as other languages give it (Python's ClusterPools): its kind and its
    pools. The Kubernetes provider comes in the add-on's resource options."""

    kind: ClusterKind
    """gke or eks: which load balancers and node labels the cluster has."""
    pools: pulumi.Input[list[_POOL_SHAPE]]  # type: ignore[valid-type]
    """Every pool of the cluster: GpuGkeCluster's poolShapes output, or on EKS the EksCluster's and the node groups' (or NodePools') together."""


_FIELDS[ClusterPoolsTarget] = {"kind": _Field("plain"), "pools": _Field("plain")}


def _read_cluster_pools(value: Any, reader: _Reader, path: list[str | int]) -> ClusterPools:
    fields = reader.model(value, ClusterPoolsTarget, path, None)
    if not isinstance(fields, Mapping):
        raise pulumi.InputPropertyError(key_path(path), f"{key_path(path)} must be an object with kind and pools (a cluster's poolShapes)")
    kind = fields.get("kind")
    if kind not in [k.value for k in ClusterKind]:
        where = key_path([*path, "kind"])
        raise pulumi.InputPropertyError(where, f"{where}: expected 'gke' or 'eks' (got {kind!r})")
    pools = _read_pools(fields.get("pools"), reader, [*path, "pools"])
    return ClusterPools(kind=ClusterKind(kind), pools=tuple(pools))


_RELEASE_INPUT = Optional[pulumi.Input[k8s.helm.v3.Release]]
"""A Helm release other languages pass as a resource reference (another component's ``release`` output)."""

EXPOSED: list[type[pulumi.ComponentResource]] = [
    exposed_component(
        GpuGkeCluster,
        GpuGkeClusterArgs,
        extra={
            "pool_shapes": _POOL_SHAPES_OUTPUT(lambda built, _: built.pool_shapes(), "the system pool, the scheduler pool, the GPU pools"),
        },
    ),
    exposed_component(
        EksCluster,
        EksClusterArgs,
        live={
            "gpu_instance_types": Live(
                Optional[list[str]],
                "The GPU instance types the node groups will use: the zones are looked up among those that offer them all. "
                "Default: [] (no lookup needed when zones are given).",
            )
        },
        extra={
            "ref": Extra(
                pulumi.Output[EksClusterTarget],
                "What SpotFailoverEksNodeGroups needs of this cluster: pass it as its cluster input.",
                lambda built, _: _cluster_target(built),
            ),
            "pool_shapes": _POOL_SHAPES_OUTPUT(lambda built, _: built.pool_shapes(), "the system node group"),
        },
    ),
    exposed_component(
        SpotFailoverEksNodeGroups,
        SpotFailoverEksNodeGroupsArgs,
        live={"cluster": Live(_INPUT[EksClusterTarget], "The cluster the node groups join: EksCluster's ref output. Required.", _read_cluster_target)},
        extra={"pool_shapes": _POOL_SHAPES_OUTPUT(lambda built, _: built.pool_shapes(), "the GPU classes")},
    ),
    exposed_component(
        KarpenterNodePools,
        KarpenterNodePoolsArgs,
        live={"cluster": Live(_INPUT[EksClusterTarget], "The cluster the NodePools provision for: EksCluster's ref output. Required.", _read_cluster_target)},
        extra={"pool_shapes": _POOL_SHAPES_OUTPUT(lambda built, _: built.pool_shapes(), "the GPU classes")},
    ),
    exposed_component(
        PrometheusStack,
        PrometheusStackArgs,
        live={
            "cluster": Live(
                twin(MonitoredCluster),
                "The cluster under the stack (gke or eks) and what else it scrapes (dcgm-exporter, cluster-autoscaler): an alert ships only when every metric it reads is scraped. Required.",
                _read_monitored_cluster,
            ),
            "grafana_admin_password": Live(_INPUT[str], "Grafana's admin password (pass a secret); stored in a Secret the chart reads. Required."),
        },
    ),
    exposed_component(
        DcgmExporter,
        DcgmExporterArgs,
        live={
            "service_monitor_crd": Live(
                Optional[_INPUT[k8s.helm.v3.Release]],
                "What installs the ServiceMonitor CRD the exporter's ServiceMonitor needs (PrometheusStack's release); the release waits for it. Default: none (the CRD is already on the cluster).",
                pass_default=True,
            )
        },
    ),
    exposed_component(
        DaskOperator,
        DaskOperatorArgs,
        live={
            "pools": Live(
                Optional[_INPUT[list[_POOL_SHAPE]]],  # type: ignore[valid-type]
                "The cluster's pools (its poolShapes outputs; on EKS the cluster's and the node groups' together): workers, "
                "schedulers and notebooks are placed on them and checked to fit. Default: [] (no placement, no fit checks).",
                _read_pools,
            )
        },
    ),
    exposed_component(
        KubeflowInstall,
        KubeflowInstallArgs,
        live={
            "training_pools": Live(
                _INPUT[list[_POOL_SHAPE]],  # type: ignore[valid-type]
                "The pools training steps run on (a cluster's poolShapes output, the GPU pools). Required.",
                _read_pools,
            ),
            "dex_password_hash": Live(
                Optional[_INPUT[str]], "platform edition: the bcrypt hash of the Dex static user's password (pass a secret). Default: none."
            ),
            "oidc_client_secret": Live(
                Optional[_INPUT[str]], "platform edition: the OIDC client secret shared by Dex and oauth2-proxy (pass a secret). Default: none."
            ),
            "credentials": Live(
                Optional[_INPUT[dict[str, str]]],
                "Values you bring for upstream's default credentials (pass secrets), by name: artifact-store-access-key, "
                "artifact-store-secret-key, database-password, and on the platform edition katib-database-password, "
                "oauth2-client-secret, oauth2-cookie-secret; each is used instead of credentialsSecret's key and of a "
                "generated value. Default: none.",
            ),
            "ingress_controller": Live(
                _RELEASE_INPUT,
                "What acts on the UI's ALB Ingress (the AWS Load Balancer Controller's Helm release); the Ingress waits for it. "
                "Default: none (a controller installed outside this program).",
            ),
        },
    ),
    exposed_component(
        AwsLoadBalancerController,
        AwsLoadBalancerControllerArgs,
        live={
            "cluster": Live(_INPUT[EksClusterTarget], "The cluster whose ALBs the controller makes: EksCluster's ref output. Required.", _read_cluster_target),
            "iam_policy": Live(
                _INPUT[str],
                "The controller's published IAM policy document (JSON) for chartVersion: the iam_policy.json at the "
                "controller's release tag (docs/install/iam_policy.json). Required.",
            ),
            "vpc_id": Live(_INPUT[str], "The cluster's VPC: EksCluster's vpcId output. Required."),
            "pools": Live(
                Optional[_INPUT[list[_POOL_SHAPE]]],  # type: ignore[valid-type]
                "The cluster's pools (EksCluster's poolShapes output): the controller runs on the system pool among them. Default: [] (no placement).",
                _read_pools,
            ),
        },
    ),
    exposed_component(
        GpuInferenceService,
        GpuInferenceServiceArgs,
        live={
            "cluster": Live(
                _INPUT[ClusterPoolsTarget],
                "The cluster the model server runs on: its kind (gke or eks) and its poolShapes (on EKS the cluster's and the "
                "node groups' together); the Kubernetes provider comes in the resource options. Required.",
                _read_cluster_pools,
            ),
            "ingress_controller": Live(
                _RELEASE_INPUT,
                "What acts on an ALB Ingress (the AWS Load Balancer Controller's Helm release); the Ingress waits for it. "
                "Default: none (required with an ALB Ingress).",
            ),
            "prometheus_rule_crd": Live(
                _RELEASE_INPUT,
                "What installs the PrometheusRule CRD (PrometheusStack's release); given, the saturation alert ships. Default: none (no alert).",
            ),
        },
    ),
    exposed_component(GpuUtilizationAutoscaler, GpuUtilizationAutoscalerArgs),
    exposed_component(Headlamp, HeadlampArgs),
]
"""The components other languages use, by their Python names."""


# --- The provider --------------------------------------------------------------------------


class _DocumentedAnalyzer(Analyzer):
    """The SDK's analyzer, reading the docstrings of generated classes from ``__field_docs__``
    (it reads docstrings from source, which generated classes have none of)."""

    def get_docstring(self, typ: type, name: str) -> str | None:
        docs: dict[str, str] | None = typ.__dict__.get("__field_docs__")
        if docs is not None:
            return docs.get(name)
        return super().get_docstring(typ, name)


class GpuPlatformProvider(ComponentProvider):
    """The SDK's ComponentProvider for the exposed components, with documented generated types."""

    def __init__(self, components: Sequence[type[pulumi.ComponentResource]] = EXPOSED, version: str = "0.0.0") -> None:
        # ComponentProvider.__init__ with an analyzer that reads the generated classes' docstrings.
        self._name = PACKAGE
        self.analyzer = _DocumentedAnalyzer(PACKAGE)
        result = self.analyzer.analyze(list(components))
        self._components = {c.__name__: c for c in components}
        self._component_defs = result["component_definitions"]
        self._type_defs = result["type_definitions"]
        self._external_enum_types = result["external_enum_types"]
        self._dependencies = sorted(result["dependencies"], key=lambda d: f"{d.name}{d.version}")
        self.schema_spec = generate_schema(PACKAGE, version, None, self._component_defs, self._type_defs, self._dependencies).to_json()
        Provider.__init__(self, version, json.dumps(self.schema_spec))

    def map_inputs(self, inputs: pulumi.Inputs, component_def: Any) -> pulumi.Inputs:
        """Only rename the top-level keys: the exposed component reads nested values itself
        (the SDK would empty a nested object that arrives as an Output)."""
        mapping = component_def.inputs_mapping
        for key, prop in component_def.inputs.items():
            if not prop.optional and inputs.get(key) is None:
                raise pulumi.InputPropertyError(key, f"Missing required input '{key}' on '{component_def.name}'")
        return {mapping.get(k, k): v for k, v in inputs.items()}


def main(version: str | None = None) -> None:
    """Serve the components to the Pulumi engine (PulumiPlugin.yaml's entry point)."""
    import sys
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    from pulumi.provider import main as serve

    if version is None:
        try:
            version = installed("gpu-platform")
        except PackageNotFoundError:
            version = "0.0.0"
    serve(GpuPlatformProvider(EXPOSED, version), sys.argv[1:])
