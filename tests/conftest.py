"""Shared fixtures: the recording mock engine and the project's paths.

The engine is the one the offline preview uses (infra.preview), so what the component
tests see is what `gpu-platform preview` and the policy pack see.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pydantic import BaseModel

from gpu_platform.infra.preview.engine import Plan, RecordedResource, RecordingMocks, RecordingMonitor, run_program
from gpu_platform.infra.stack.read import read_stack_file

PROJECT_DIR = Path(__file__).resolve().parents[1]
SHARED_DIR = PROJECT_DIR.parent / "shared"
UPSTREAM_DIR = SHARED_DIR / "reference" / "upstream"

# The benchmark scripts are run by hand (python tests/benchmarks/<script>.py), never collected: one is named
# test_command.py after what it times.
collect_ignore_glob = ["benchmarks/*"]


@pytest.fixture(autouse=True)
def _pulumi_project_and_stack_restored() -> Iterator[None]:
    """Each test leaves the SDK's project and stack names as it found them. The readers that plan a stack without
    running the program (infra/stack/read.py stack_config_from) set them for the stack they read, as `pulumi` does for
    a program, and the names outlive the test: a feature-matrix stack's long name left on a test worker made the next
    test that reads a GKE stack find its cluster name required, depending only on which tests the worker ran before."""
    from pulumi.runtime import settings

    project, stack = settings.SETTINGS.project, settings.SETTINGS.stack
    yield
    settings.SETTINGS.project, settings.SETTINGS.stack = project, stack


@pytest.fixture(autouse=True, scope="session")
def _offline_render_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never fetch upstream sources: rendering reads ../shared/reference/upstream where a
    test passes it, and keeps its parse and build cache in one folder for the session, shared by the
    xdist workers (one session's base temp folder holds every worker's: a chart parsed or a Kustomize
    directory built on one worker is not done again on the other). The cache's entries are named by the
    sha256 of what they were made from and written whole (tmp file + os.replace), so workers writing
    the same entry at once leave one whole copy."""
    import os

    os.environ["GPU_PLATFORM_OFFLINE"] = "1"
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = root / "upstream-cache"
    cache.mkdir(exist_ok=True)
    os.environ["GPU_PLATFORM_CACHE"] = str(cache)
    os.environ.pop("GPU_PLATFORM_UPSTREAM", None)


@pytest.fixture(autouse=True, scope="session")
def _moto_without_public_amis() -> None:
    """moto builds each region's EC2 with every public AMI it knows unless told not to (a second of CPU per
    region and test). Nothing the tests ask of EC2 (instance types, offerings, capacity reservations, quotas)
    reads an AMI, so no test loads them; the commands the tests start inherit the setting."""
    import os

    os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "false"


def load_yaml(text: str | bytes) -> Any:
    """One YAML document, read with the product's safe loader (infra/yaml_io.py: libyaml's where PyYAML has it),
    as the product reads the charts and the written manifests; five times faster on the charts' CRDs and values
    than ``yaml.safe_load``, with the same safe types."""
    import yaml

    from gpu_platform.infra.yaml_io import SAFE_LOADER

    return yaml.load(text, Loader=SAFE_LOADER)


def load_yaml_all(text: str | bytes) -> list[Any]:
    """Every document of a YAML stream, read as load_yaml reads one."""
    import yaml

    from gpu_platform.infra.yaml_io import SAFE_LOADER

    return list(yaml.load_all(text, Loader=SAFE_LOADER))


def run_in_process(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``gpu-platform ARGV`` from ``cwd`` in this interpreter: gpu_platform.infra.cli.main, with file descriptors
    1 and 2 and sys.stdout and sys.stderr taken for the command's run (what it, or a library under it, writes)."""
    import contextlib
    import io
    import os
    import sys
    import tempfile

    from gpu_platform.infra.cli import main

    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        with contextlib.ExitStack() as stack:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, file in ((1, out_file), (2, err_file)):
                saved = os.dup(fd)
                stack.callback(os.close, saved)
                os.dup2(file.fileno(), fd)
                stack.callback(os.dup2, saved, fd)
            out = stack.enter_context(io.TextIOWrapper(open(1, "wb", closefd=False), encoding="utf-8", write_through=True))
            error = stack.enter_context(io.TextIOWrapper(open(2, "wb", closefd=False), encoding="utf-8", write_through=True))
            stack.enter_context(contextlib.redirect_stdout(out))
            stack.enter_context(contextlib.redirect_stderr(error))
            stack.enter_context(contextlib.chdir(cwd))
            code = main(argv)
        texts = []
        for file in (out_file, err_file):
            file.seek(0)
            texts.append(file.read().decode("utf-8"))
    return subprocess.CompletedProcess(["gpu-platform", *argv], code, texts[0], texts[1])


def upstream_or_skip() -> Path:
    """../shared/reference/upstream, or skip: a user's clone has no ../shared."""
    if not UPSTREAM_DIR.is_dir():
        pytest.skip(f"no pinned upstream sources at {UPSTREAM_DIR} (../shared/reference/upstream beside the checkout)")
    return UPSTREAM_DIR


def kubectl_or_skip() -> None:
    """Skip without kubectl: its kustomize builds the Kustomize directories."""
    import shutil

    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: its kustomize builds the Kustomize directories")


class Engine(RecordingMonitor):
    """The recording monitor with lookups for assertions."""

    def resource(self, name: str) -> RecordedResource:
        matches = [r for r in self.recorded if r.name == name]
        assert matches, f"no resource named {name}; recorded: {sorted(r.name for r in self.recorded)}"
        assert len(matches) == 1, f"{len(matches)} resources named {name}"
        return matches[0]

    def of_type(self, type_: str) -> list[RecordedResource]:
        return sorted((r for r in self.recorded if r.type == type_), key=lambda r: r.name)

    def names(self) -> set[str]:
        return {r.name for r in self.recorded}


@pytest.fixture
def engine() -> Engine:
    """Mocks installed, with gcp:project set as a stack would."""
    pulumi.runtime.set_all_config({"gcp:project": "test-project"}, [])
    mocks = RecordingMocks()
    monitor = Engine(mocks)
    pulumi.runtime.set_mocks(mocks, project="gpu-platform", stack="test", preview=False, monitor=monitor)
    return monitor


@functools.cache
def shipped_plan(stack: str) -> Plan:
    """The plan of a shipped stack file, run once per test session (tests only read it)."""
    config, secret = read_stack_file(PROJECT_DIR, stack)
    return run_program(PROJECT_DIR, stack, config, secret)


def stub_aws_clients(monkeypatch: pytest.MonkeyPatch, stubs: dict[str, Any], graft: dict[str, tuple[str, ...]] | None = None) -> None:
    """Make every boto3 Session's clients of the services in ``stubs`` answer from a botocore Stubber (which checks
    each recorded answer against the service model): ``stubs[service](stub)`` adds the answers. For a service in
    ``graft``, only the listed operations are stubbed (on a second client, grafted onto the first) and moto answers
    the rest. Other clients are left alone (moto, under ``mock_aws``). Fake credentials are set, as moto asks."""
    import boto3
    from botocore.stub import Stubber

    real_session = boto3.Session
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")

    def session(*args: Any, **kwargs: Any) -> Any:
        made = real_session(*args, **kwargs)
        client = made.client

        def client_for(service: str) -> Any:
            c = client(service)
            if service in stubs:
                operations = (graft or {}).get(service)
                stub = Stubber(c if operations is None else client(service))
                stubs[service](stub)
                stub.activate()
                for operation in operations or ():
                    setattr(c, operation, getattr(stub.client, operation))
            return c

        made.client = client_for
        return made

    monkeypatch.setattr(boto3, "Session", session)


def refused(model: type[BaseModel], data: dict[str, Any]) -> list[str]:
    """The lines a user sees for ``data`` refused by ``model`` (format_validation_error); fails the test when
    the model accepts it."""
    from pydantic import ValidationError

    from gpu_platform.infra.stack.errors import format_validation_error

    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return format_validation_error(info.value, model)


def settled(*resources: pulumi.Resource) -> pulumi.Output[list[Any]]:
    """An Output that resolves once every given resource is registered."""
    return pulumi.Output.all(*[r.urn for r in resources])


def settled_tree(*components: pulumi.Resource) -> pulumi.Output[list[Any]]:
    """An Output that resolves once the components and everything declared under them are
    registered (children found through the SDK's own parent bookkeeping)."""
    seen: list[pulumi.Resource] = []
    todo = list(components)
    while todo:
        resource = todo.pop()
        seen.append(resource)
        todo.extend(resource._childResources)
    return settled(*seen)


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED_DIR.is_dir():
        pytest.skip(f"{SHARED_DIR} is absent: it holds the upstream references, beside the checkout in CI only")
    return SHARED_DIR


CONTROL_PLANE_TESTS = ("tests/apply/", "tests/engine/")
"""The test folders whose tests start the local control plane (tests/apply/conftest.py's session fixture)."""

CONTROL_PLANE_GATE = "GPU_PLATFORM_CONTROL_PLANE"
"""Set to 1, the tests that start the local control plane run (the ``control_plane`` fixture, and so every
engine test, and tests/apply/test_local_signals.py). Without it they skip and say so: a real etcd, API server,
controller manager, scheduler and kwok (and for the engine tests the real Pulumi CLI and provider) cost several
minutes of CPU, more than the rest of the suite, so the README's test command leaves them to a step of their own
that .ci/run runs after it (docs/development.md)."""
CONTROL_PLANE_GATES = (CONTROL_PLANE_GATE, "GPU_PLATFORM_APPLY_STACKS", "GPU_PLATFORM_KUEUE_E2E", "GPU_PLATFORM_ENGINE_STACKS")
"""Each of these set to 1 lets the control plane start: the other gates ask for tests that need one."""


def control_plane_gate_or_skip() -> None:
    """Skip, with the reason and the variable that runs it, unless one of CONTROL_PLANE_GATES is 1."""
    import os

    if not any(os.environ.get(gate) == "1" for gate in CONTROL_PLANE_GATES):
        pytest.skip(f"starts the local control plane (minutes of CPU): {CONTROL_PLANE_GATE}=1 runs it (.ci/run does, after the test command)")


LONG_RUN_GATE = "GPU_PLATFORM_LONG_RUNS"
"""Set to 1, the tests marked ``long`` run: each costs a minute of CPU or more on its own (a settings search of
about 400 simulator runs, checked line by line against its docs block; the Kubeflow platform edition's full
rendering), more than a test command that is to stay under two
minutes on two cores can carry (issue 33). Without it they skip, saying which variable runs them; .ci/run runs
them in a step of their own right after the test command (docs/development.md)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"long: minutes of CPU on its own; runs only with {LONG_RUN_GATE}=1 (.ci/run's step after the test command)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked ``long`` unless LONG_RUN_GATE is 1, with the reason and the variable."""
    import os

    if os.environ.get(LONG_RUN_GATE) == "1":
        return
    skip = pytest.mark.skip(reason=f"minutes of CPU on its own: {LONG_RUN_GATE}=1 runs it (.ci/run does, after the test command)")
    for item in items:
        if item.get_closest_marker("long") is not None:
            item.add_marker(skip)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Once the tests are collected, everything imported so far (the provider SDKs, pydantic's models, the
    components, the test modules: millions of objects that live as long as the session) is moved out of the
    cyclic collector's sight with ``gc.freeze``, after one collection. Each full collection walked all of them
    again: 57 s of the test command's CPU went to the collector, 45 s of it to full collections of a heap made
    mostly of modules; with this and the freeze after each file (below), 30 s. Objects the tests make afterwards
    are collected as before."""
    import gc

    gc.collect()
    gc.freeze()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Once a test has imported botocore, every boto3 Session of the worker reads the AWS service models through
    one Loader. botocore parses a service's model (EC2's is 2 MB of gzipped JSON) once per Session's Loader, and
    the preflight, prices and moto tests each make new Sessions: a seventh of those files' CPU was botocore
    parsing the same JSON again. The Loader's results are what botocore already shares between one Session's
    clients; each Session still resolves its own credentials, region and configuration."""
    import sys

    botocore_session = sys.modules.get("botocore.session")
    if botocore_session is None or getattr(botocore_session.create_loader, "cache_info", None) is not None:
        return
    botocore_session.create_loader = functools.lru_cache(maxsize=None)(botocore_session.create_loader)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After a file's last test, what outlives it (the SDK modules its tests imported, the plans and renderings
    the session caches) is frozen too, after one collection of what it left. Per file, not per test: freezing
    after every test kept each test's cyclic leftovers for good (a quarter more memory on a worker: 1.3 GB) for 4%
    less CPU."""
    if nextitem is not None and nextitem.path == item.path:
        return
    import gc

    gc.collect()
    gc.freeze()


SAME_WORKER = {
    **dict.fromkeys(CONTROL_PLANE_TESTS, "control-plane"),
    **dict.fromkeys(("tests/infra/test_rendered_intent.py", "tests/infra/test_headlamp_rendered.py", "tests/infra/test_kueue_rendered.py"), "renderings"),
}
"""Test files (or folders, by their path's start) that run on one worker together. The files that start the local
control plane: each worker that runs one starts its own (etcd, kube-apiserver, controller-manager, scheduler, kwok),
a start-up of some seconds and idle CPU for the rest of the session, so one is enough. The files that read the
shipped stacks' renderings test_rendered_intent caches per process (``_rendered``: charts rendered with Helm's
engine, seconds a stack), so they are rendered once."""

START_FIRST = ("tests/test_mypy.py", "tests/test_packaging.py", "tests/test_readme_blocks.py", "renderings", "tests/infra/test_render.py")
"""The units of work that take longest, handed out first: mypy on a cold cache (a fresh machine, CI) analyses the
provider SDKs for most of a minute; the wheel is built and installed; the docs' commands run as printed; the
stacks are rendered. xdist hands out the files with the most tests first, which put these few-test files last, and
one worker ran them alone at the end of the run."""


def _scope_of(path: str) -> str:
    """The unit of work a test file belongs to: its SAME_WORKER group, else the file itself."""
    return next((group for start, group in SAME_WORKER.items() if path.startswith(start)), path)


class _LongestFirst(dict[str, dict[str, bool]]):
    """The scheduler's queue of work units (scopes), handing out START_FIRST in its order, then the others by test
    count, the larger first (as xdist's own order is)."""

    def popitem(self, last: bool = True) -> tuple[str, dict[str, bool]]:
        scope = max(self, key=lambda s: (len(START_FIRST) - START_FIRST.index(s) if s in START_FIRST else 0, len(self[s])))
        return scope, self.pop(scope)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: without the plugin (-p no:xdist) it is never called
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadfile`` (pyproject's addopts), files stay whole on one worker, the groups of SAME_WORKER
    too (the control-plane files, the renderings' readers), and the longest units are handed out first
    (_LongestFirst)."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Scheduling(LoadFileScheduling):  # type: ignore[misc]
        def __init__(self, config: pytest.Config, log: Any) -> None:
            super().__init__(config, log)
            self.workqueue = _LongestFirst()

        def _split_scope(self, nodeid: str) -> str:
            return _scope_of(nodeid.split("::", 1)[0])

    return Scheduling(config, log)
