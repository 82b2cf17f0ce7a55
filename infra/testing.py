"""Test your own Pulumi program, or a single component, offline: the recording mock engine the
`gpu-platform preview` command runs, as a library for your tests.

    from gpu_platform.infra.testing import preview_program, run_components

    plan = preview_program("path/to/program")            # a folder with Pulumi.yaml (Python)
    plan.assert_no_violations()                            # schema and policy pack
    cluster = plan.resource("ml")                          # by resource name
    assert plan.of_type("gcp:container/nodePool:NodePool")

    plan = run_components(lambda: GpuGkeCluster("ml", args), config={"gcp:project": "p"})

Each call runs in-process under Pulumi's mocks (no CLI, no cloud, no credentials): every
resource the program registers is recorded with its inputs as the engine would receive them.
The Kubernetes objects are checked against the Kubernetes OpenAPI schema of the version you
name, and every resource against the policy pack, as `gpu-platform preview` does. Helm
releases and Kustomize directories are recorded as one resource each: render them with
`gpu-platform preview --program DIR`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.infra.preview.engine import Plan, RecordedResource, RecordingMocks, RecordingMonitor, engine_log, load_program, run_program
from gpu_platform.infra.preview.manifests import kubernetes_objects, plain, validate_objects
from gpu_platform.infra.stack.read import config_for_engine, read_stack_file

__all__ = ["ProgramPlan", "preview_program", "run_components"]

DEFAULT_KUBERNETES_VERSION = "1.34"
"""The Kubernetes minor the objects are checked against unless a call names another."""


@dataclass
class ProgramPlan:
    """What a program registered, with the schema and policy findings over it."""

    plan: Plan
    """The recorded resources and stack outputs."""
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    """The Kubernetes minor the objects were checked against."""
    schema_violations: list[str] = field(default_factory=list)
    """One line per Kubernetes object that fails its schema."""
    policy_violations: list[str] = field(default_factory=list)
    """One line per mandatory policy rule a resource breaks (``<rule>: <resource>: <message>``)."""
    advisories: list[str] = field(default_factory=list)
    """One line per advisory policy finding."""

    @property
    def resources(self) -> list[RecordedResource]:
        """Every registered resource (components and providers included), ordered by URN."""
        return list(self.plan.resources)

    @property
    def project(self) -> str:
        """The program's project (its Pulumi.yaml name), which its URNs name."""
        return self.plan.project

    @property
    def outputs(self) -> dict[str, Any]:
        """The stack outputs the program exported."""
        return dict(self.plan.outputs)

    @property
    def warnings(self) -> list[str]:
        """What the program warned of, as ``pulumi preview`` would show it: e.g. each check an
        Output kept a component from making (``GpuGkeCluster ml: args.network: an Output, ...``)."""
        return list(self.plan.warnings)

    def resource(self, name: str) -> RecordedResource:
        """The resource of this name; KeyError naming the ones there are when there is none."""
        found = [r for r in self.plan.resources if r.name == name]
        if len(found) != 1:
            known = ", ".join(sorted(r.name for r in self.plan.resources))
            raise KeyError(f"{len(found)} resources named {name!r} (resources: {known})")
        return found[0]

    def of_type(self, token: str) -> list[RecordedResource]:
        """Every resource of a type token (``gcp:container/nodePool:NodePool``)."""
        return [r for r in self.plan.resources if r.type == token]

    def children_of(self, name: str) -> list[RecordedResource]:
        """The resources whose parent is the resource ``name``."""
        parent = self.resource(name).urn
        return [r for r in self.plan.resources if r.parent == parent]

    def violations(self) -> list[str]:
        """Schema and mandatory policy violations, one line each."""
        return [f"schema: {v}" for v in self.schema_violations] + [f"policy {v}" for v in self.policy_violations]

    def assert_no_violations(self) -> None:
        """AssertionError listing every schema and mandatory policy violation, if any."""
        found = self.violations()
        assert not found, "\n".join(found)


def _checked(plan: Plan, kubernetes_version: str, policy_config: Mapping[str, Any] | None) -> ProgramPlan:
    from gpu_platform.policies.evaluate import Finding, evaluate, load_policy_config, read_policy_config
    from gpu_platform.policies.rules import Enforcement, Resource

    findings = validate_objects(kubernetes_objects(plan), kubernetes_version)
    schema = [f.message for f in findings if f.validated]
    config = read_policy_config(None) if policy_config is None else load_policy_config(dict(policy_config))
    policy = evaluate([Resource(r.type, r.name, r.urn, plain(r.inputs), r.protect) for r in plan.resources], config)

    def line(f: Finding) -> str:
        return f"{f.rule}: {f.resource + ': ' if f.resource else ''}{f.message}"

    return ProgramPlan(
        plan,
        kubernetes_version,
        schema,
        [line(f) for f in policy if f.enforcement is Enforcement.MANDATORY],
        [line(f) for f in policy if f.enforcement is not Enforcement.MANDATORY],
    )


def preview_program(
    program_dir: str | Path,
    stack: str = "dev",
    *,
    config: Mapping[str, Any] | None = None,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
    policy_config: Mapping[str, Any] | None = None,
) -> ProgramPlan:
    """Run the Python Pulumi program in ``program_dir`` (the folder of its Pulumi.yaml) as
    ``pulumi preview`` would, offline, and check what it registers.

    ``config``: ``namespace:key`` values over the stack file's (``Pulumi.<stack>.yaml`` in the
    project's stackConfigDir, read when there is one) and the project's defaults.
    """
    program = load_program(Path(program_dir))
    values, secret_keys = read_stack_file(program.project_dir, stack, required=False)
    values.update(config or {})
    plan = run_program(program.project_dir, stack, values, secret_keys, program=program)
    return _checked(plan, kubernetes_version, policy_config)


def run_components(
    build: Callable[[], Any],
    *,
    project: str = "test",
    stack: str = "dev",
    config: Mapping[str, Any] | None = None,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
    policy_config: Mapping[str, Any] | None = None,
) -> ProgramPlan:
    """Run ``build`` (which constructs components, e.g. ``lambda: GpuGkeCluster("ml", args)``)
    as the body of a program under the recording engine, and check what it registers."""
    pulumi.runtime.set_all_config(config_for_engine(dict(config or {})), [])
    monitor = RecordingMonitor(RecordingMocks())
    warnings: list[str] = []
    pulumi.runtime.set_mocks(monitor.mocks, project=project, stack=stack, preview=True, monitor=monitor, logger=engine_log(warnings))
    pulumi.runtime.settings.ROOT.set(None)
    _sync_await(pulumi.runtime.run_in_stack(build))
    plan = Plan(
        stack=stack,
        resources=sorted(monitor.recorded, key=lambda r: r.urn),
        outputs=monitor.stack_outputs,
        notices=list(getattr(monitor.mocks, "notices", [])),
        warnings=warnings,
        project=project,
    )
    return _checked(plan, kubernetes_version, policy_config)
