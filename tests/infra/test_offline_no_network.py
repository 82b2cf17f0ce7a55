"""`preview --no-render --upstream DIR --offline` makes no network call, for any shipped stack or example program
(issue 34 item 5): the load balancer controller's IAM policy, the one upstream file a program reads itself, comes
from DIR like every rendered source.

The network is blocked in-process: every socket connect, name lookup and ``socket.create_connection`` raises, so a
fetch anywhere (urllib, requests, boto3, git over HTTPS in this process) fails the preview. Each stack file and
each example program's stack file runs through the command as a user types it, and so does a stack with an
inference service on each cloud and provisioner; each must exit 0 with no call recorded. The session's
GPU_PLATFORM_OFFLINE=1 is lifted here: with the program's sources ignored (infra/cli/preview.py's
``sources_for_program(None)``), the load balancer's IAM policy is fetched from raw.githubusercontent.com and the
three cases that read it fail on the recorded call.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.infra.cli import main
from tests.conftest import PROJECT_DIR, upstream_or_skip

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
"""Every shipped stack."""


def _examples() -> list[tuple[str, str]]:
    """(example, stack) for every example program (a folder with a Python Pulumi.yaml): each stack file it ships,
    or the preview's default stack (dev) when it ships none."""
    cases = []
    for folder in sorted((PROJECT_DIR / "examples").iterdir()):
        project = folder / "Pulumi.yaml"
        runtime = (yaml.safe_load(project.read_text(encoding="utf-8")) or {}).get("runtime") if project.is_file() else None
        if (runtime.get("name") if isinstance(runtime, dict) else runtime) != "python":
            continue  # examples/yaml is Pulumi YAML (run through the provider's tests), report and simulate are no programs
        stacks = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in folder.glob("Pulumi.*.yaml"))
        cases += [(folder.name, s) for s in stacks or ["dev"]]
    return cases


EXAMPLES = _examples()


class NetworkCallError(AssertionError):
    """A network call the offline preview must not make."""


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[str]]:
    """Every way out of this process refused, and recorded. The session's GPU_PLATFORM_OFFLINE=1 (tests/conftest.py)
    is lifted and the cache emptied, so only the command's own --offline and --upstream keep it off the network."""
    monkeypatch.delenv("GPU_PLATFORM_OFFLINE", raising=False)
    monkeypatch.setenv("GPU_PLATFORM_CACHE", str(tmp_path / "empty-cache"))
    calls: list[str] = []

    def refuse(what: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            calls.append(f"{what}{args[1:] if what.startswith('socket.connect') else args}")
            raise NetworkCallError(f"network call during an offline preview: {what} {args!r}")

        return refused

    monkeypatch.setattr(socket.socket, "connect", refuse("socket.connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("socket.connect_ex"))
    monkeypatch.setattr(socket, "create_connection", refuse("socket.create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("socket.getaddrinfo"))
    yield calls


def test_the_cases_cover_every_stack_and_example() -> None:
    assert STACKS == ["dev-eks", "dev-gke", "prod-eks", "prod-gke"]
    assert EXAMPLES == [
        ("byo-network", "dev"),
        ("composed", "eks"),
        ("composed", "eks-karpenter"),
        ("composed", "gke"),
        ("consumer", "dev"),
        ("inference", "eks"),
        ("inference", "gke"),
    ]


def test_the_block_holds(no_network: list[str]) -> None:
    import urllib.request

    with pytest.raises(NetworkCallError):
        urllib.request.urlopen("https://github.com", timeout=1)
    assert no_network


def _preview(args: list[str], capsys: pytest.CaptureFixture[str], calls: list[str]) -> None:
    upstream = upstream_or_skip()
    code = main(["preview", *args, "--no-render", "--upstream", str(upstream), "--offline", "--quiet"])
    captured = capsys.readouterr()
    assert calls == [], calls
    assert code == 0, captured.err[-2000:] + captured.out[-2000:]


@pytest.mark.parametrize("stack", STACKS)
def test_a_shipped_stack_previews_with_no_network_call(stack: str, no_network: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    _preview([stack, "--project-dir", str(PROJECT_DIR)], capsys, no_network)


@pytest.mark.parametrize(("example", "stack"), EXAMPLES, ids=[f"{e}-{s}" for e, s in EXAMPLES])
def test_an_example_program_previews_with_no_network_call(example: str, stack: str, no_network: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    _preview(["--program", str(Path(PROJECT_DIR / "examples" / example)), stack], capsys, no_network)


INFERENCE = [("gke", ("inference",)), ("eks", ("inference", "load-balancer")), ("eks-karpenter", ("inference", "load-balancer"))]
"""Stacks with an inference service (and, on EKS, the load balancer controller whose IAM policy the program reads),
as the feature matrix builds them (infra/docs/matrix.py) on each cloud and provisioner: no shipped stack has one."""


@pytest.mark.parametrize(("base", "features"), INFERENCE, ids=[b for b, _ in INFERENCE])
def test_a_stack_with_an_inference_service_previews_with_no_network_call(
    base: str, features: tuple[str, ...], no_network: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from gpu_platform.infra.docs import matrix

    (tmp_path / "stacks").mkdir()
    (tmp_path / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (tmp_path / "infra").symlink_to(PROJECT_DIR / "infra")
    stack = matrix.matrix_stack(PROJECT_DIR, next(b for b in matrix.BASES if b.name == base), features)
    (tmp_path / "stacks" / f"Pulumi.{stack.name}.yaml").write_text(yaml.safe_dump(stack.document()))
    _preview([stack.name, "--project-dir", str(tmp_path)], capsys, no_network)
