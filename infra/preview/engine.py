"""Offline preview: run the real Pulumi program in-process under a recording mock engine.

No Pulumi CLI and no cloud: the SDK's own mock monitor stands in for the engine. The
program (infra/__main__.py) runs exactly as `pulumi up` runs it, through
``pulumi.runtime.run_in_stack`` and ``runpy``, with the stack file's config (secure
values replaced by placeholders). Every registration is recorded with its type, name,
parent, options and inputs under the engine's property names, which is what the policy
pack sees too.
"""

from __future__ import annotations

import base64
import logging
import os
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi.runtime
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.components.core.cluster import clusters_made
from gpu_platform.infra.collector import collector_paused
from gpu_platform.infra.stack.errors import ConfigError, PreviewError
from gpu_platform.infra.stack.model import PROJECT
from gpu_platform.infra.stack.read import (
    PROVIDER_NAMESPACES,
    _load_yaml,
    _namespace_problem,
    config_for_engine,
)

__all__ = [
    "Plan",
    "Program",
    "RecordedResource",
    "RecordingMocks",
    "RecordingMonitor",
    "SECRET_SIG",
    "load_program",
    "run_program",
]

SECRET_SIG = {rpc._special_sig_key: rpc._special_secret_sig}  # noqa: SLF001 - the SDK names the wire marker only privately
"""The marker Pulumi's wire format puts on a secret value; plan JSON keeps it."""

PLACEHOLDER_CA = base64.b64encode(b"offline-preview-placeholder-ca").decode()
PLACEHOLDER_ENDPOINT = "203.0.113.10"  # TEST-NET-3: never a real address
PLACEHOLDER_ACCOUNT = "123456789012"  # AWS's documentation account id
PLACEHOLDER_SECURITY_GROUP = "sg-00000000000000000"
PLACEHOLDER_OIDC_ID = "0FFL1NE0000000000000000000000000"
PLACEHOLDER_PASSWORD = "0ff1ineP1aceh01derNeverDep10yed0ff1ineP1aceh01der"
PLACEHOLDER_LUSTRE_MOUNT = "0ff1ine0"  # FSx for Lustre names a file system's mount with 8 characters
PLACEHOLDER_PROJECT_NUMBER = "000000000000"  # no GCP project has it


@dataclass
class RecordedResource:
    """One registration the program made."""

    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    provider: str | None = None
    protect: bool = False
    retain_on_delete: bool = False
    ignore_changes: list[str] = field(default_factory=list)
    depends_on: list[str] = field(default_factory=list)
    transforms: list[Any] = field(default_factory=list, repr=False, compare=False)
    """The resource's ``transforms`` as the engine would call them: the SDK's callbacks, each
    taking a serialized TransformRequest (infra/preview/render.py runs them over rendered children)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "inputs": self.inputs,
        }
        options: dict[str, Any] = {}
        if self.provider:
            options["provider"] = self.provider
        if self.protect:
            options["protect"] = True
        if self.retain_on_delete:
            options["retainOnDelete"] = True
        if self.ignore_changes:
            options["ignoreChanges"] = sorted(self.ignore_changes)
        if self.depends_on:
            options["dependsOn"] = sorted(self.depends_on)
        if options:
            out["options"] = options
        return out


def _jsonable(value: Any) -> Any:
    """Deserialized engine properties as JSON; secrets keep Pulumi's secret marker."""
    if rpc.is_rpc_secret(value):
        return {**SECRET_SIG, "value": _jsonable(rpc.unwrap_rpc_secret(value))}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the wire format carries every number as a double
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, pulumi.Resource):
        return f"<resource {type(value).__name__}>"
    if type(value).__name__ == "Unknown":
        return "<computed>"
    return str(value)


def _mock_outputs(args: pulumi.runtime.MockResourceArgs) -> dict[str, Any]:
    """Plausible, stable outputs for the attributes the components read back."""
    inputs = args.inputs
    if args.typ == "gcp:serviceaccount/account:Account":
        project = inputs.get("project") or "project"
        return {"email": f"{inputs['accountId']}@{project}.iam.gserviceaccount.com"}
    if args.typ == "gcp:container/cluster:Cluster":
        return {
            "endpoint": PLACEHOLDER_ENDPOINT,
            "masterAuth": {"clusterCaCertificate": PLACEHOLDER_CA},
        }
    if args.typ == "aws:eks/cluster:Cluster":
        region = inputs.get("region") or "us-east-1"
        return {
            "arn": f"arn:aws:eks:{region}:{PLACEHOLDER_ACCOUNT}:cluster/{inputs.get('name') or args.name}",
            "vpcConfig": {**(inputs.get("vpcConfig") or {}), "clusterSecurityGroupId": PLACEHOLDER_SECURITY_GROUP},
            "endpoint": f"https://{PLACEHOLDER_ENDPOINT}",
            "certificateAuthority": {"data": PLACEHOLDER_CA},
            "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.{region}.amazonaws.com/id/{PLACEHOLDER_OIDC_ID}"}]}],
        }
    if args.typ == "aws:eks/nodeGroup:NodeGroup":
        # EKS names a managed node group's ASG eks-<nodegroup>-<uuid>.
        from gpu_platform.components.eks.plan import example_asg_name

        return {"resources": [{"autoscalingGroups": [{"name": example_asg_name(inputs["nodeGroupName"])}]}]}
    if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
        # A new launch template's first version (a reservation rung's node group launches from it).
        return {"latestVersion": 1}
    if args.typ == "kubernetes:core/v1:Secret" and getattr(args, "resource_id", None):
        # A Secret the program reads (Secret.get: KubeflowInstall's credentials_secret): placeholders under every
        # credential's key, as the generated ones are (the SDK keeps `data` a secret).
        from gpu_platform.components.kubeflow.transforms import Credential

        return {"data": {c.value: base64.b64encode(PLACEHOLDER_PASSWORD[: c.length].encode()).decode() for c in Credential}}
    if args.typ == "random:index/randomPassword:RandomPassword":
        # A stable stand-in for the generated value (the SDK keeps `result` a secret).
        return {"result": PLACEHOLDER_PASSWORD[: int(inputs.get("length") or len(PLACEHOLDER_PASSWORD))]}
    if args.typ in ("aws:iam/role:Role", "aws:iam/openIdConnectProvider:OpenIdConnectProvider"):
        kind = "role" if args.typ.endswith("Role") else "oidc-provider"
        return {"arn": f"arn:aws:iam::{PLACEHOLDER_ACCOUNT}:{kind}/{args.name}"}
    if args.typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
        region = inputs.get("region") or "us-east-1"
        return {"dnsName": f"{args.name}-id.fsx.{region}.amazonaws.com", "mountName": PLACEHOLDER_LUSTRE_MOUNT}
    if args.typ == "aws:kms/key:Key":
        region = inputs.get("region") or "us-east-1"
        return {"arn": f"arn:aws:kms:{region}:{PLACEHOLDER_ACCOUNT}:key/{args.name}", "keyId": args.name}
    return {}


class OfflineLookupError(ConfigError):
    """A data source the offline preview cannot answer without the cloud: the stack must set
    the key that answers it (a config error, exit 2), named in one line."""

    def __init__(self, line: str) -> None:
        super().__init__([line])


def _offline_call(args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], str | None]:
    """Answers for the data sources the program reads, and the notice each answer carries."""
    if args.token == "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
        filters = {f["name"]: list(f["values"]) for f in args.args.get("filters") or []}
        zones = filters.get("location")
        if not zones:
            raise OfflineLookupError(
                f"{PROJECT}:eks.zones: required by the offline preview, which cannot look up which zones offer "
                "the GPU instance types; list them (gpu-platform preflight eks <stack> does, with credentials) (got nothing)"
            )
        types = filters.get("instance-type") or []
        pairs = [(z, t) for z in zones for t in types]
        notice = (
            f"zones {', '.join(zones)} were not checked for {', '.join(types)} offline; "
            "`gpu-platform preflight eks <stack>` checks them with AWS credentials, and `pulumi preview` does"
        )
        return {
            "id": "offline",
            "locationType": "availability-zone",
            "locations": [z for z, _ in pairs],
            "instanceTypes": [t for _, t in pairs],
            "locationTypes": ["availability-zone"] * len(pairs),
        }, notice
    if args.token == "gcp:organizations/getProject:getProject":
        project = args.args.get("projectId") or "project"
        notice = (
            f"project {project}'s number was not looked up offline (Workload Identity principals show "
            f"{PLACEHOLDER_PROJECT_NUMBER}); `pulumi preview` looks it up"
        )
        return {"id": f"projects/{project}", "projectId": project, "number": PLACEHOLDER_PROJECT_NUMBER}, notice
    return {}, None


class RecordingMocks(pulumi.runtime.Mocks):
    """Answers every registration with its inputs plus stable placeholder outputs."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        state = dict(args.inputs)
        state.setdefault("name", args.name)
        state.update(_mock_outputs(args))
        if args.resource_id:
            # A read of an existing object (Resource.get): the cluster is not asked offline.
            notice = (
                f"{args.typ.rsplit(':', 1)[-1]} {args.resource_id} was not read offline (placeholders stand for its "
                "values); `pulumi preview` reads it from the cluster"
            )
            if notice not in self.notices:
                self.notices.append(notice)
            return args.resource_id, state
        return f"{args.name}-id", state

    def __init__(self) -> None:
        self.notices: list[str] = []

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """The answer and no check failures (the SDK's declared form; it also takes a bare dict)."""
        result, notice = _offline_call(args)
        if notice and notice not in self.notices:
            self.notices.append(notice)
        return result, []


def _transform_callbacks(request: Any) -> list[Any]:
    """The SDK's callback for each transform the registration names: the function the engine
    invokes (over gRPC) with a TransformRequest for every child of the resource."""
    if not request.transforms:
        return []
    from pulumi.runtime._callbacks import _CallbackServicer

    found = []
    for callback in request.transforms:
        for servicer in _CallbackServicer._servicers:  # noqa: SLF001 - the engine's side of the callback
            fn = servicer._callbacks.get(callback.token)  # noqa: SLF001
            if fn is not None:
                found.append(fn)
                break
    return found


_SPARING: set[Any] = set()
"""The capture installed by _no_stack_trace_for_the_recording_monitor (so a second call, after a reload, does not wrap it)."""


def _no_stack_trace_for_the_recording_monitor() -> None:
    """Stop the SDK walking and reading the Python stack for each resource registered to a RecordingMonitor.

    The SDK captures the stack of every resource's constructor (``traceback.extract_stack``, each frame's
    source line read and its file stat'ed) before registering it, so that a real engine can show where a
    resource was declared. The recording monitor reads none of it, and the walk was the largest single cost of
    registering a resource under it (5% of the test command's CPU). Under any other monitor (a real engine's,
    through the Automation API) the SDK's own capture runs unchanged. Installed once, when this module loads."""
    from pulumi.runtime import resource as sdk_resource
    from pulumi.runtime import settings as sdk_settings

    capture = getattr(sdk_resource, "_get_stack_trace", None)
    stack_trace = getattr(getattr(sdk_resource, "source_pb2", None), "StackTrace", None)
    if capture is None or stack_trace is None or capture in _SPARING:
        return  # another SDK version (its capture is left as it is), or installed already

    def get_stack_trace() -> Any:
        if isinstance(sdk_settings.SETTINGS.monitor, RecordingMonitor):
            return stack_trace()
        return capture()

    _SPARING.add(get_stack_trace)
    sdk_resource._get_stack_trace = get_stack_trace  # noqa: SLF001 - the SDK's one capture, called by register_resource


class RecordingMonitor(MockMonitor):
    """The SDK's mock monitor, keeping every registration and the stack's outputs."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.recorded: list[RecordedResource] = []
        self.stack_outputs: dict[str, Any] = {}
        self.stack_urn: str | None = None

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (gRPC method name)
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]  # the SDK's MockMonitor is unannotated
        if request.type == "pulumi:pulumi:Stack":
            self.stack_urn = response.urn
            return response
        inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
        self.recorded.append(
            RecordedResource(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=request.parent if request.parent and request.parent != self.stack_urn else None,
                custom=bool(request.custom),
                inputs=_jsonable(inputs),
                # A provider reference is "<urn>::<id>"; the URN is what names it.
                provider=request.provider.rsplit("::", 1)[0] if request.provider else None,
                protect=bool(request.protect),
                retain_on_delete=bool(request.retainOnDelete),
                ignore_changes=list(request.ignoreChanges),
                depends_on=[d for d in request.dependencies if d != self.stack_urn],
                transforms=_transform_callbacks(request),
            )
        )
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:  # noqa: N802
        if request.urn == self.stack_urn:
            outputs = rpc.deserialize_properties(request.outputs, keep_unknowns=True)
            self.stack_outputs = _jsonable(outputs)
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]  # the SDK's MockMonitor is unannotated


_no_stack_trace_for_the_recording_monitor()


@dataclass
class Plan:
    """What one run of the program declared."""

    stack: str
    resources: list[RecordedResource]
    outputs: dict[str, Any]
    notices: list[str] = field(default_factory=list)
    """What the offline engine answered without the cloud (data sources), for the user to check."""
    warnings: list[str] = field(default_factory=list)
    """What the program logged as warnings (``pulumi.log.warn``), as ``pulumi preview`` shows them:
    e.g. the checks an Output kept a component from making."""
    project: str = PROJECT
    """The program's project (its Pulumi.yaml name), which its URNs name."""
    stack_config: Any = field(default=None, compare=False, repr=False)
    """This repository's program only: the StackConfig it read and planned (the one read of the stack);
    the preview's checks take it from here. None for a program of one's own."""
    clusters: list[Any] = field(default_factory=list, compare=False, repr=False)
    """A program of one's own: the cluster components it made (components.core.cluster.clusters_made), in
    order; their ``pool_shapes()`` are its pools, which ``--apply`` makes kwok nodes of."""

    def by_urn(self) -> dict[str, RecordedResource]:
        return {r.urn: r for r in self.resources}

    def of_type(self, type_: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_]

    def to_json(self, violations: list[dict[str, str]] | None = None, notices: list[dict[str, str]] | None = None) -> dict[str, Any]:
        """The `--json PLAN` document."""
        return {
            "stack": self.stack,
            "project": self.project,
            "resources": [r.to_json() for r in self.resources],
            "outputs": self.outputs,
            "violations": violations or [],
            "notices": notices or [],
        }


# --- stack files ------------------------------------------------------------------------------


# --- running the program ----------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    """A Pulumi program to run offline: its project folder, its main and its project name."""

    project_dir: Path
    """The folder holding Pulumi.yaml."""
    main: Path
    """What the language host runs: a folder with __main__.py, or a .py file."""
    project: str
    """The project's name (its config namespace)."""


def shipped_program(project_dir: Path) -> Program:
    """This repository's program: infra/, project gpu-platform."""
    return Program(project_dir, project_dir / "infra", PROJECT)


def load_program(program_dir: Path) -> Program:
    """Any Python Pulumi program: the folder holding its Pulumi.yaml. One line per problem."""
    where = f"--program {program_dir}"
    if not program_dir.is_dir():
        raise PreviewError([f"{where}: no such folder"])
    if not (program_dir / "Pulumi.yaml").is_file():
        raise PreviewError([f"{where}: no Pulumi.yaml (the folder of a Pulumi program holds one)"])
    project = _load_yaml(program_dir / "Pulumi.yaml")
    if not isinstance(project, dict) or not isinstance(project.get("name"), str):
        raise PreviewError([f"{where}: Pulumi.yaml needs a mapping with name: and runtime:"])
    runtime = project.get("runtime")
    language = runtime.get("name") if isinstance(runtime, dict) else runtime
    if language != "python":
        raise PreviewError([f"{where}: runtime {language!r}: the offline preview runs Python programs (runtime: python)"])
    main = (program_dir / str(project.get("main", "."))).resolve()
    if not (main / "__main__.py").is_file() and not (main.is_file() and main.suffix == ".py"):
        raise PreviewError([f"{where}: main {project.get('main', '.')!r} has no __main__.py to run"])
    return Program(program_dir.resolve(), main, project["name"])


class _ReadConfig(dict):  # type: ignore[type-arg]
    """The config the engine hands the program, remembering the namespace of every key the program
    looks up (``pulumi.Config("acme").get("x")`` looks up ``acme:x``, set or not)."""

    def __init__(self, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.namespaces: set[str] = set()

    def _note(self, key: object) -> None:
        if isinstance(key, str) and ":" in key:
            self.namespaces.add(key.split(":", 1)[0])

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return super().__contains__(key)

    def __getitem__(self, key: str) -> Any:
        self._note(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._note(key)
        return super().get(key, default)


def unread_namespaces(program: Program, stack: str, config: dict[str, Any], read: set[str]) -> list[str]:
    """One line per stack config key whose namespace the program never read: not its project's,
    a provider's, one its Pulumi.yaml declares, nor one it looked up through pulumi.Config."""
    project = _load_yaml(program.project_dir / "Pulumi.yaml")
    declared = tuple(str(k).split(":", 1)[0] for k in (project.get("config") or {}) if ":" in str(k))
    known = (*declared, *sorted(read - {program.project, *PROVIDER_NAMESPACES, *declared}))
    return [problem for key in config if (problem := _namespace_problem(key, program.project, f"Pulumi.{stack}.yaml", known)) is not None]


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message not in self.into:
            self.into.append(message)


def engine_log(into: list[str]) -> logging.Logger:
    """The mock engine's log: the program's warnings and errors collected, in order, once each
    (the engine shows them in `pulumi preview`; the offline preview prints them)."""
    logger = logging.Logger("gpu_platform.preview.engine", logging.WARNING)
    logger.propagate = False
    logger.addHandler(_Collect(into))
    return logger


def run_program(
    project_dir: Path,
    stack: str,
    config: dict[str, Any],
    secret_keys: set[str] | None = None,
    monitor: RecordingMonitor | None = None,
    *,
    program: Program | None = None,
) -> Plan:
    """Run a program as `pulumi preview` would, under the recording engine: ``program``, or
    this repository's infra/ (whose stack config is then checked for what it could not check
    offline).

    Raises ConfigError (the program refused its config) before any resource is recorded, or, for a
    program of one's own, once it has run when the stack sets a namespace the program never read.
    """
    shipped = program is None
    program = program or shipped_program(project_dir)
    pulumi.runtime.set_all_config(config_for_engine(config), sorted(secret_keys or ()))
    reads = _ReadConfig(pulumi.runtime.config.CONFIG.get())
    pulumi.runtime.config.CONFIG.set(reads)
    monitor = monitor or RecordingMonitor(RecordingMocks())
    warnings: list[str] = []
    pulumi.runtime.set_mocks(monitor.mocks, project=program.project, stack=stack, preview=True, monitor=monitor, logger=engine_log(warnings))
    # set_mocks opens a root stack for unit tests; run_in_stack opens its own, as the CLI does.
    pulumi.runtime.settings.ROOT.set(None)
    program_dir = program.main if program.main.is_dir() else program.main.parent
    cwd = os.getcwd()
    argv = sys.argv
    try:
        # The language host runs the program from its own folder, like this.
        os.chdir(program_dir)
        sys.argv = [str(program.main)]
        ran: dict[str, Any] = {}
        with clusters_made() as clusters, collector_paused():
            _sync_await(pulumi.runtime.run_in_stack(lambda: ran.update(runpy.run_path(str(program.main), run_name="__main__"))))
    except Exception:
        # A key in a namespace the program never read is the likelier cause (acmee:cloud for acme:cloud).
        if not shipped and (problems := unread_namespaces(program, stack, config, reads.namespaces)):
            raise ConfigError(problems) from None
        raise
    finally:
        os.chdir(cwd)
        sys.argv = argv
    resources = sorted(monitor.recorded, key=lambda r: r.urn)
    notices = list(getattr(monitor.mocks, "notices", []))
    if not shipped:
        if problems := unread_namespaces(program, stack, config, reads.namespaces):
            raise ConfigError(problems)
        return Plan(
            stack=stack,
            resources=resources,
            outputs=monitor.stack_outputs,
            notices=notices,
            warnings=warnings,
            project=program.project,
            clusters=list(clusters),
        )
    # The program read and planned the stack once (infra/__main__.py's ``config``): the checks it could
    # not make offline (e.g. zones of a region the shipped data lacks) are asked of that same config.
    stack_config = ran.get("config")
    if stack_config is None:
        # A program of its own in the project's infra/ (tests, examples) that reads no StackConfig: the
        # stack's config read here, once, when it is one of ours.
        from gpu_platform.infra.stack.read import load_stack_config

        try:
            stack_config = load_stack_config()
        except ConfigError:
            stack_config = None
    if stack_config is not None:
        notices += [n for n in stack_config.notices() if n not in notices]
    return Plan(
        stack=stack,
        resources=resources,
        outputs=monitor.stack_outputs,
        notices=notices,
        warnings=warnings,
        stack_config=stack_config,
    )
