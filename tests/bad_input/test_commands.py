"""Bad input to every command, in-process: one line naming the flag or key, the documented
exit code, no traceback, nothing written; the output-file guarantees; Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gpu_platform.components.core.models import input_error, input_errors
from gpu_platform.infra import errors, output
from gpu_platform.infra.cli import main
from tests.conftest import PROJECT_DIR


@pytest.fixture(autouse=True)
def _sigint_as_a_terminal_sends_it() -> Iterator[None]:
    """These tests send SIGINT to themselves. A shell starts a background job (``cmd &``) with SIGINT ignored, and
    the CLI keeps an ignored SIGINT ignored (as the user's shell asked): run that way, the test process would not
    see its own Ctrl-C. Each test gets Python's default handler, as under a terminal, and the one it found after."""
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


PD = ["--project-dir", str(PROJECT_DIR)]
PLAN = ["plan-capacity", "dev-gke", *PD, "--pool", "t4", "--cpu", "2", "--memory", "4Gi", "--run-duration", "1h", "--runs", "10", "--window", "3h"]
REPORT = ["report", "--prometheus", "http://127.0.0.1:9", "--start", "2026-11-20T10:00:00Z", "--end", "2026-11-20T11:00:00Z"]


def _files(tmp: Path) -> None:
    """What the cases point at: {tmp}/dir, {tmp}/file.txt, {tmp}/foreign (a folder of someone
    else's files), {tmp}/nested (a folder with a subfolder), {tmp}/link, policy files."""
    (tmp / "dir").mkdir()
    (tmp / "empty").mkdir()
    (tmp / "file.txt").write_text("x")
    (tmp / "foreign").mkdir()
    (tmp / "foreign" / "notes.txt").write_text("mine")
    (tmp / "nested" / "sub").mkdir(parents=True)
    (tmp / "link").symlink_to(tmp / "dir")
    (tmp / "foreignlink").symlink_to(tmp / "foreign")
    os.mkfifo(tmp / "fifo")
    (tmp / "utf16.json").write_bytes('{"all": "advisory"}'.encode("utf-16"))
    (tmp / "binary.yaml").write_bytes(b"\x00\xff\xfe\x80")
    (tmp / "bad.json").write_text('{"all": ')
    (tmp / "empty.json").write_text("")
    (tmp / "twice.json").write_text('{"all": "advisory", "all": "disabled"}')
    (tmp / "list.yaml").write_text("- 1\n- 2\n")
    (tmp / "bad.yaml").write_text("steps: [\n")
    (tmp / "steps.yaml").write_text("steps:\n- {cpu: 1, memory: 1Gi}\n")
    (tmp / "badsteps.yaml").write_text("steps:\n- {cpu: lots, memory: 1Gi}\nrun_duration: 1h\nruns: 2\n")


def _policy(tmp: Path, document: Any) -> str:
    path = tmp / f"policy-{abs(hash(json.dumps(document)))}.json"
    path.write_text(json.dumps(document))
    return str(path)


# (argv, exit code, text the one line must contain). "{tmp}" is the test's folder.
CASES: list[tuple[list[str], int, str]] = [
    # the command line itself
    ([], 2, "command"),
    (["deploy"], 2, "invalid choice: 'deploy'"),
    (["--bogus", "docs", *PD], 2, "unrecognized arguments: --bogus"),
    (["preview"], 2, "stack"),
    (["preview", "dev-gke", "--frobnicate", *PD], 2, "--frobnicate"),
    (["preview", "dev-gke", *PD, "--json"], 2, "--json"),
    (["preview", "dev-gke", *PD, "--quiet=yes"], 2, "--quiet"),
    # preview output paths: refused before the program runs
    (["preview", "dev-gke", *PD, "--json", ""], 2, "--json: an output path is required"),
    (["preview", "dev-gke", *PD, "--json", "   "], 2, "--json: an output path is required"),
    (["preview", "dev-gke", *PD, "--json", "{tmp}/dir"], 2, "--json {tmp}/dir: cannot write: it is a folder"),
    (["preview", "dev-gke", *PD, "--json", "{tmp}/missing/plan.json"], 2, "--json {tmp}/missing/plan.json: cannot write: folder"),
    (["preview", "dev-gke", *PD, "--json", "{tmp}/file.txt/plan.json"], 2, "--json {tmp}/file.txt/plan.json"),
    (["preview", "dev-gke", *PD, "--manifests", ""], 2, "--manifests: an output path is required"),
    (["preview", "dev-gke", *PD, "--manifests", "{tmp}/file.txt"], 2, "--manifests {tmp}/file.txt: cannot write: it is a file"),
    (["preview", "dev-gke", *PD, "--manifests", "{tmp}/foreign"], 2, "--manifests {tmp}/foreign: the folder holds notes.txt"),
    (["preview", "dev-gke", *PD, "--manifests", "{tmp}/nested"], 2, "--manifests {tmp}/nested: the folder holds sub"),
    (
        ["preview", "dev-gke", *PD, "--manifests", "{tmp}/foreignlink"],
        2,
        "--manifests {tmp}/foreignlink: the folder (a symbolic link to {tmp}/foreign) holds notes.txt",
    ),
    (["preview", "dev-gke", *PD, "--manifests", "{tmp}/fifo"], 2, "--manifests {tmp}/fifo: cannot write: it is a named pipe; give a folder"),
    (["preview", "dev-gke", *PD, "--manifests", "-"], 2, "--manifests -: standard output takes one file"),
    (
        ["preview", "dev-gke", *PD, "--json", "{tmp}/link/../file.txt/x"],
        2,
        "--json {tmp}/link/../file.txt/x: cannot write: folder {tmp}/file.txt is not a folder",
    ),
    (
        ["preview", "dev-gke", *PD, "--json", "-", "--manifests", "{tmp}/dir", "--policy-config", "{tmp}/none.json"],
        2,
        "--policy-config {tmp}/none.json: cannot read",
    ),
    (["preview", "dev-gke", *PD, "--manifests", "{tmp}/no/such/m"], 2, "--manifests {tmp}/no/such/m: cannot write: folder"),
    (["preview", "dev-gke", *PD, "--json", "{tmp}/ok.json", "--manifests", "{tmp}/file.txt"], 2, "--manifests"),
    (["preview", "dev-gke", *PD, "--json", "{tmp}/same", "--manifests", "{tmp}/same"], 2, "--manifests {tmp}/same: the same path as --json"),
    (["preview", "dev-gke", *PD, "--json", "{tmp}/dir/plan.json", "--manifests", "{tmp}/dir"], 2, "--json {tmp}/dir/plan.json: inside the --manifests folder"),
    (["preview", "dev-gke", *PD, "--manifests", "/"], 2, "--manifests /: cannot write: it is the root folder"),
    # --upstream: what was looked for, where, and what is there
    (
        ["preview", "dev-gke", *PD, "--upstream", "{tmp}/empty"],
        2,
        "--upstream {tmp}/empty: looked for {tmp}/empty/charts/ and {tmp}/empty/git/ (charts/<name>-<version>.tgz and git/<owner>+<name>.git (bare repositories), e.g. {tmp}/empty/charts/",
    ),
    (["preview", "dev-gke", *PD, "--upstream", "{tmp}/foreign"], 2, "and found neither; the folder holds notes.txt"),
    (["preview", "dev-gke", *PD, "--upstream", "{tmp}/none"], 2, "--upstream {tmp}/none: does not exist; give a folder holding charts/"),
    (["preview", "dev-gke", *PD, "--upstream", "{tmp}/file.txt"], 2, "--upstream {tmp}/file.txt: is not a folder"),
    (["upstream", "check", *PD, "--upstream", "{tmp}/empty"], 2, "--upstream {tmp}/empty: looked for"),
    # preview stack and project
    (["preview", "nope", *PD], 2, "stack 'nope'"),
    (["preview", "dev-gke", "--project-dir", "{tmp}/empty"], 2, "no Pulumi.yaml"),
    # policy config files
    (["preview", "dev-gke", *PD, "--policy-config", "{policy:all=5}"], 2, "policy-config:all: expected an enforcement level"),
    (["preview", "dev-gke", *PD, "--policy-config", "{policy:all=null}"], 2, "policy-config:all: expected an enforcement level"),
    (
        ["preview", "dev-gke", *PD, "--policy-config", "{policy:rule=list}"],
        2,
        'policy-config:gpu-pool-tainted: expected an enforcement level (advisory, mandatory, disabled) or an object of settings (got ["advisory"])',
    ),
    (["preview", "dev-gke", *PD, "--policy-config", "{policy:rule=3}"], 2, "policy-config:gpu-pool-tainted: expected"),
    (
        ["preview", "dev-gke", *PD, "--policy-config", "{policy:all=typo}"],
        2,
        'policy-config:all: enforcement level must be advisory, mandatory or disabled (got "advsory")',
    ),
    (["preview", "dev-gke", *PD, "--policy-config", "{policy:rule=typo}"], 2, "policy-config:gpu-pool-tainted.enforcementLevel"),
    (["preview", "dev-gke", *PD, "--policy-config", "{policy:list}"], 2, "policy-config: expected a JSON object"),
    (["preview", "dev-gke", *PD, "--policy-config", "{policy:string}"], 2, "policy-config: expected a JSON object"),
    (["preview", "dev-gke", *PD, "--policy-config", "{policy:unknown-rule}"], 2, "policy-config:gpu-budget: unknown rule; did you mean"),
    (["preview", "dev-gke", *PD, "--policy-config", "{policy:unknown-setting}"], 2, "policy-config:gpu-stack-budget.maxGpus: unknown setting"),
    (["preview", "dev-gke", *PD, "--policy-config", "{policy:setting-type}"], 2, "policy-config:gpu-stack-budget.maxGpusPerStack"),
    (["preview", "dev-gke", *PD, "--policy-config", "{policy:setting-bound}"], 2, "policy-config:gpu-pool-bounded.maxGpusPerPool"),
    (["preview", "dev-gke", *PD, "--policy-config", "{tmp}/utf16.json"], 2, "--policy-config {tmp}/utf16.json: not UTF-8"),
    (["preview", "dev-gke", *PD, "--policy-config", "{tmp}/bad.json"], 2, "--policy-config {tmp}/bad.json: invalid JSON at line 1"),
    (["preview", "dev-gke", *PD, "--policy-config", "{tmp}/empty.json"], 2, "--policy-config {tmp}/empty.json: invalid JSON"),
    (["preview", "dev-gke", *PD, "--policy-config", "{tmp}/twice.json"], 2, "--policy-config {tmp}/twice.json: key 'all' appears twice"),
    (["preview", "dev-gke", *PD, "--policy-config", "{tmp}/none.json"], 2, "--policy-config {tmp}/none.json: cannot read"),
    (["preview", "dev-gke", *PD, "--policy-config", "{tmp}/dir"], 2, "--policy-config {tmp}/dir: cannot read"),
    # plan-capacity
    (["plan-capacity", "dev-gke", *PD], 2, "--pool"),
    ([*PLAN, "--pool", "nosuch"], 2, "--pool nosuch: stack dev-gke has no such pool"),
    ([*PLAN, "--cpu", "abc"], 2, "--cpu: CPU must be cores"),
    ([*PLAN, "--memory", "4Xi"], 2, "--memory: memory must be MiB"),
    ([*PLAN, "--runs", "-1"], 2, "--runs: Input should be greater than or equal to 1"),
    ([*PLAN, "--runs", "abc"], 2, "--runs: Input should be a valid integer"),
    ([*PLAN, "--window", "soon"], 2, "--window: a duration is"),
    ([*PLAN, "--run-duration", ""], 2, "--run-duration: a duration is"),
    ([*PLAN, "--nodes", "true"], 2, "--nodes: Input should be a valid integer"),
    ([*PLAN, "--inputs", "{tmp}/none.yaml"], 2, "--inputs {tmp}/none.yaml: cannot read"),
    ([*PLAN, "--inputs", "{tmp}/binary.yaml"], 2, "--inputs {tmp}/binary.yaml: not UTF-8"),
    ([*PLAN, "--inputs", "{tmp}/bad.yaml"], 2, "--inputs {tmp}/bad.yaml: invalid YAML"),
    ([*PLAN, "--inputs", "{tmp}/list.yaml"], 2, "--inputs {tmp}/list.yaml: expected a mapping"),
    ([*PLAN[:6], "--inputs", "{tmp}/badsteps.yaml"], 2, "--inputs {tmp}/badsteps.yaml: steps[0].cpu: CPU must be cores"),
    ([*PLAN, "--inputs", "{tmp}/steps.yaml"], 2, "either in --inputs (steps:) or as --cpu/--memory/--gpus"),
    ([*PLAN, "--json", ""], 2, "--json: an output path is required"),
    ([*PLAN, "--json", "{tmp}/dir"], 2, "--json {tmp}/dir: cannot write"),
    (["plan-capacity", "nope", *PD, "--pool", "t4"], 2, "stack 'nope'"),
    # report: times, steps, bounds, paths (refused before Prometheus is asked)
    (["report", "--start", "0", "--end", "60"], 2, "--prometheus"),
    ([*REPORT, "--prometheus", "ftp://x"], 2, "--prometheus: prometheus must be an http:// or https:// URL"),
    (
        [*REPORT, "--prometheus", "ftp://admin:hunter2@x"],
        2,
        '--prometheus: prometheus must be an http:// or https:// URL with a host, e.g. http://localhost:9090 (got "ftp://admin:***@x")',
    ),
    ([*REPORT, "--start", "yesterday"], 2, "--start: a time is RFC 3339"),
    ([*REPORT, "--start", "nan"], 2, "--start: Unix seconds must be between 0"),
    ([*REPORT, "--end", "inf"], 2, "--end: Unix seconds must be between 0"),
    ([*REPORT, "--start", "-1"], 2, "--start: Unix seconds must be between 0"),
    ([*REPORT, "--end", "1e300"], 2, "--end: Unix seconds must be between 0"),
    ([*REPORT, "--end", "99999999999999999999"], 2, "--end: Unix seconds must be between 0"),
    ([*REPORT, "--end", "99999-01-01T00:00:00Z"], 2, "--end: a time is RFC 3339"),
    ([*REPORT, "--end", "2026-11-20T09:00:00Z"], 2, "--end: end 2026-11-20T09:00:00+00:00 must be at least one step"),
    ([*REPORT, "--step", "0"], 2, "--step:"),
    ([*REPORT, "--step", "2d"], 2, "--step:"),
    ([*REPORT, "--step", "9999999999h"], 2, "--step: longer than Go's maximum duration"),
    ([*REPORT, "--step", "99999h"], 2, "--step: Input should be less than or equal to 86400"),
    ([*REPORT, "--timeout", "99999999999999"], 2, "--timeout:"),
    (
        [*REPORT, "--start", "0", "--end", "1795132800"],
        2,
        "--step: 1970-01-01T00:00:00+00:00 to 2026-11-20T00:00:00+00:00 at step 1s is 1,795,132,800 steps; a report holds at most 1,000,000: raise --step to at least 1796s or shorten --start/--end",
    ),
    ([*REPORT, "--out", ""], 2, "--out: an output path is required"),
    ([*REPORT, "--out", "{tmp}/file.txt"], 2, "--out {tmp}/file.txt: cannot write: it is a file"),
    ([*REPORT, "--out", "{tmp}/foreign"], 2, "--out {tmp}/foreign: the folder holds notes.txt"),
    ([*REPORT, "--out", "{tmp}/missing/out"], 2, "--out {tmp}/missing/out: cannot write: folder"),
    ([*REPORT, "--out", "{tmp}/fifo"], 2, "--out {tmp}/fifo: cannot write: it is a named pipe; give a folder"),
    # docs
    (["docs", "--check", "--write", *PD], 2, "--write: not allowed with argument --check"),
    (["docs", "--project-dir", "{tmp}/empty"], 2, "no Pulumi.yaml"),
    (["docs", "--bogus"], 2, "--bogus"),
    # preflight (refused before AWS is asked)
    (["preflight", "gke", "dev-eks", *PD], 2, "stack dev-eks deploys to aws, not gcp: preflight gke checks GKE stacks"),
    (["preflight", "aks", "dev-eks", *PD], 2, "invalid choice: 'aks'"),
    (["preflight", "eks", *PD], 2, "stack"),
    (["preflight", "eks", "dev-gke", *PD], 2, "stack dev-gke deploys to gcp, not aws"),
    (["preflight", "eks", "nope", *PD], 2, "stack 'nope'"),
]

POLICIES: dict[str, Any] = {
    "all=5": {"all": 5},
    "all=null": {"all": None},
    "rule=list": {"gpu-pool-tainted": ["advisory"]},
    "rule=3": {"gpu-pool-tainted": 3},
    "all=typo": {"all": "advsory"},
    "rule=typo": {"gpu-pool-tainted": {"enforcementLevel": "mandtory"}},
    "list": ["all"],
    "string": "mandatory",
    "unknown-rule": {"gpu-budget": {}},
    "unknown-setting": {"gpu-stack-budget": {"maxGpus": 1}},
    "setting-type": {"gpu-stack-budget": {"maxGpusPerStack": "lots"}},
    "setting-bound": {"gpu-pool-bounded": {"maxGpusPerPool": 0}},
}


def _argv(argv: list[str], tmp: Path) -> list[str]:
    out = []
    for arg in argv:
        if arg.startswith("{policy:"):
            arg = _policy(tmp, POLICIES[arg[len("{policy:") : -1]])
        out.append(arg.replace("{tmp}", str(tmp)))
    return out


def test_there_are_at_least_fifty_distinct_cases() -> None:
    assert len({json.dumps(c[0]) for c in CASES}) == len(CASES) >= 50
    assert {c[0][0] for c in CASES if c[0]} >= {"preview", "plan-capacity", "report", "docs", "preflight"}


@pytest.mark.parametrize(("argv", "code", "text"), CASES, ids=[" ".join(c[0])[:60] or "no-args" for c in CASES])
def test_bad_input_is_one_line_naming_the_flag_or_key(argv: list[str], code: int, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _files(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(_argv(argv, tmp_path)) == code
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("gpu-platform: ")
    assert text.replace("{tmp}", str(tmp_path)) in lines[0]
    assert "Traceback" not in captured.err + captured.out
    after = sorted(p.name for p in tmp_path.rglob("*") if not p.name.startswith("policy-"))
    assert after == [n for n in before if not n.startswith("policy-")], "nothing written, nothing left behind"


def test_a_misspelt_level_under_all_is_reported_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["preview", "dev-gke", *PD, "--policy-config", _policy(tmp_path, {"all": "advsory"})]) == 2
    assert capsys.readouterr().err.count("advsory") == 1


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"gpu-platform {version('gpu-platform')}"
    assert main(["report", "--help"]) == 0
    assert "--prometheus" in capsys.readouterr().out


# --- unexpected failures, --debug --------------------------------------------------------------


def _boom(args: Any) -> int:
    raise RuntimeError("something broke\nsecond line")


def test_an_unexpected_failure_is_one_line_exit_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.cli import docs

    monkeypatch.delenv("GPU_PLATFORM_DEBUG", raising=False)
    monkeypatch.setattr(docs, "cmd_docs", _boom)
    assert main(["docs", *PD]) == 3
    err = capsys.readouterr().err
    assert err == "gpu-platform: unexpected error: RuntimeError: something broke (a bug: rerun with --debug for the traceback and report it)\n"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_debug_prints_the_traceback(how: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.cli import docs

    monkeypatch.setattr(docs, "cmd_docs", _boom)
    argv = ["docs", *PD]
    if how == "flag":
        argv.append("--debug")
    else:
        monkeypatch.setenv("GPU_PLATFORM_DEBUG", "1")
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_boom" in err
    assert err.strip().splitlines()[-1].startswith("gpu-platform: unexpected error: RuntimeError")


def test_the_program_failing_is_exit_3(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.preview import engine

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("n1-standard-99")

    monkeypatch.setattr(engine, "run_program", broken)
    assert main(["preview", "dev-gke", *PD]) == 3
    assert capsys.readouterr().err == "gpu-platform: the program failed: KeyError: 'n1-standard-99'\n"


@pytest.mark.parametrize(
    ("raised", "lines"),
    [
        (
            lambda: input_error("args.project", "no GCP project; set project"),
            ["the program gave a component invalid input args.project: no GCP project; set project"],
        ),
        (
            lambda: input_errors([(("args", "tenants", 0, "notebook", "cpu"), "too big"), ("pools", "no scheduler pool")]),
            [
                "the program gave a component invalid input args.tenants[0].notebook.cpu: too big",
                "the program gave a component invalid input pools: no scheduler pool",
            ],
        ),
    ],
)
def test_a_refused_component_input_is_a_program_defect_exit_3_one_line_per_property(
    raised: Any, lines: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpu_platform.infra.preview import engine

    def refuses(*args: Any, **kwargs: Any) -> Any:
        raise raised()

    monkeypatch.setattr(engine, "run_program", refuses)
    # The stack file was valid: the program composed the components wrongly (issue 34), not the user's config.
    assert main(["preview", "dev-gke", *PD]) == 3
    assert capsys.readouterr().err == "".join(f"gpu-platform: {line}\n" for line in lines)


# --- output files ---------------------------------------------------------------------------


def test_a_rerun_replaces_the_manifests_folder_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    out.mkdir()
    (out / "deployment-gone-old.yaml").write_text("kind: Deployment\n")  # from an earlier run: no longer declared
    assert main(["preview", "dev-gke", *PD, "--quiet", "--manifests", str(out)]) == 0
    written = sorted(p.name for p in out.iterdir())
    assert len(written) > 10 and all(name.endswith(".yaml") for name in written)
    assert "deployment-gone-old.yaml" not in written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"], "no temporary sibling left"
    assert oct(out.stat().st_mode & 0o777) == oct(0o777 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_good_json_with_a_bad_manifests_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "blocker").write_text("")
    code = main(["preview", "dev-gke", *PD, "--json", str(tmp_path / "plan.json"), "--manifests", str(tmp_path / "blocker")])
    assert code == 2
    assert not (tmp_path / "plan.json").exists()
    assert capsys.readouterr().out == "", "refused before the program ran"


def test_a_failure_while_staging_keeps_the_previous_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan, folder = tmp_path / "plan.json", tmp_path / "m"
    plan.write_text("old plan")
    folder.mkdir()
    (folder / "old.yaml").write_text("old")
    real = output._stage_folder

    def fail(*args: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output, "_stage_folder", fail)
    with pytest.raises(output.OutputError, match="--manifests .*: cannot write: No space left on device"):
        output.write_outputs(
            [
                (output.file_target("--json", str(plan)), b"new plan"),
                (output.folder_target("--manifests", str(folder), ("*.yaml",)), {"new.yaml": b"new"}),
            ]
        )
    assert plan.read_text() == "old plan"
    assert [p.name for p in folder.iterdir()] == ["old.yaml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "plan.json"], "temporary files removed"
    monkeypatch.setattr(output, "_stage_folder", real)


@pytest.mark.parametrize("where", ["staging", "swallowed"])
def test_ctrl_c_while_writing_leaves_the_previous_state(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while the manifests are staged, or one swallowed on its way up (recorded only):
    exit 130, the old plan and manifests as they were, no temporary files."""
    plan, folder = tmp_path / "plan.json", tmp_path / "m"
    plan.write_text("old plan")
    folder.mkdir()
    (folder / "old.yaml").write_text("old")
    real = output._stage_folder

    def interrupted(*args: Any) -> Any:
        if where == "staging":
            raise KeyboardInterrupt
        errors.mark_interrupted()  # what the SIGINT handler records when a library swallows the raise
        return real(*args)

    monkeypatch.setattr(output, "_stage_folder", interrupted)
    assert main(["preview", "dev-gke", *PD, "--quiet", "--json", str(plan), "--manifests", str(folder)]) == 130
    assert capsys.readouterr().err == "gpu-platform: interrupted\n"
    assert plan.read_text() == "old plan"
    assert [p.name for p in folder.iterdir()] == ["old.yaml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "plan.json"]


def test_an_interrupt_swallowed_during_the_program_is_not_exit_0(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_platform.infra.preview import manifests

    real = manifests.kubernetes_objects

    def swallowed(plan: Any) -> Any:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
        except KeyboardInterrupt:
            pass  # a library that eats the interrupt
        return real(plan)

    monkeypatch.setattr(manifests, "kubernetes_objects", swallowed)
    assert main(["preview", "dev-gke", *PD, "--quiet"]) == 130
    assert capsys.readouterr().err == "gpu-platform: interrupted\n"


def test_the_first_ctrl_c_during_the_program_waits_a_second_one_raises() -> None:
    reached = []
    with errors.recording_interrupts():
        with pytest.raises(KeyboardInterrupt):
            with errors.deferred_interrupts(second_raises=True):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                reached.append("after the first")  # the run goes on to its end
        assert reached == ["after the first"] and errors.interrupted()
        with pytest.raises(KeyboardInterrupt):
            with errors.deferred_interrupts(second_raises=True):
                os.kill(os.getpid(), signal.SIGINT)  # the second: at once
                time.sleep(0.05)
                reached.append("never")
    assert reached == ["after the first"]
    assert not errors.interrupted(), "reset when recording ends"


def test_plan_capacity_json_uses_the_writer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "cap.json"
    target.write_text("old")
    assert main([*PLAN, "--json", str(target)]) == 0
    assert json.loads(target.read_text())["runs"] == 10
    assert [p.name for p in tmp_path.iterdir()] == ["cap.json"]


def _sigint_preview(tmp_path: Path, delay: float) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("gpu-platform")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gpu_platform.infra.cli"]
    process = subprocess.Popen(
        [*command, "preview", "prod-eks", *PD, "--quiet", "--json", str(tmp_path / "plan.json"), "--manifests", str(tmp_path / "m")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_sigint_during_a_preview_exits_130_writing_nothing(tmp_path: Path) -> None:
    """The console script end to end: Ctrl-C while the program runs; it ends, exits 130, writes nothing."""
    result = _sigint_preview(tmp_path, 1.5)
    if result.returncode == 0:
        pytest.skip("the preview finished before the signal on this machine")
    assert result.returncode == 130, result.stderr
    assert result.stderr == "gpu-platform: interrupted\n"
    assert list(tmp_path.iterdir()) == []


def test_sigint_while_the_command_line_imports_exits_130_with_one_line(tmp_path: Path) -> None:
    """Ctrl-C while the console script is still importing the provider SDKs (over a second on a
    loaded machine) is answered as at any later instant: one line, 130, nothing written. The
    interrupt is made to land inside that import, deterministically, by an import hook."""
    hook = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'gpu_platform.components.kubeflow.install':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from gpu_platform.infra.cli import run\n"
        "run()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", hook, "preview", "prod-eks", *PD, "--quiet", "--json", str(tmp_path / "plan.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stderr) == (130, "gpu-platform: interrupted\n")
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


# --- services that answer nonsense: exit 4 --------------------------------------------------


@pytest.fixture
def fake_server() -> Iterator[tuple[str, dict[str, tuple[int, str, bytes]]]]:
    """A local HTTP server answering each path with (status, content type, body) from a dict."""
    answers: dict[str, tuple[int, str, bytes]] = {}

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            path = self.path.split("?", 1)[0]
            status, kind, body = answers.get(path, answers.get("*", (404, "text/plain", b"not found")))
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer  # noqa: N815

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answers
    finally:
        server.shutdown()
        server.server_close()


def _ok(data: Any) -> tuple[int, str, bytes]:
    return 200, "application/json", json.dumps({"status": "success", "data": data}).encode()


SERIES = _ok([{"__name__": "kube_pod_container_resource_requests", "namespace": "team", "pod": "p"}])
T0 = 1_790_000_000


@pytest.mark.parametrize(
    ("answers", "text"),
    [
        ({"/api/v1/series": _ok({"not": "a list"})}, "answered /api/v1/series with an unexpected shape: data"),
        ({"/api/v1/series": _ok([{"pod": 5}])}, "answered /api/v1/series with an unexpected shape: data[0].pod"),
        ({"/api/v1/series": SERIES, "/api/v1/query": _ok([1, 2])}, "answered /api/v1/query with an unexpected shape: data"),
        ({"/api/v1/series": SERIES, "/api/v1/query": _ok({"resultType": "vector", "result": "many"})}, "data.result"),
        (
            {"/api/v1/series": SERIES, "/api/v1/query": _ok({"resultType": "vector", "result": [{"metric": {}, "value": [T0, "abc"]}]})},
            "data.result[0].value[1]",
        ),
        ({"/api/v1/series": SERIES, "/api/v1/query": _ok({"resultType": "vector", "result": [{"metric": {}, "value": ["x"]}]})}, "data.result[0].value"),
        ({"/api/v1/series": SERIES, "/api/v1/query": _ok({"resultType": "matrix", "result": []})}, "data.resultType"),
        (
            {
                "/api/v1/series": SERIES,
                "/api/v1/query": _ok({"resultType": "vector", "result": [{"metric": {"namespace": "team", "pod": "p"}, "value": [T0, "1"]}]}),
                "/api/v1/query_range": _ok({"resultType": "matrix", "result": [{"metric": {}, "values": [[T0, "1"], "x"]}]}),
            },
            "data.result[0].values[1]",
        ),
        ({"*": (200, "text/html", b"<html>login</html>")}, "without Prometheus JSON"),
        ({"*": (500, "text/plain", b"internal error")}, "answered HTTP 500 without Prometheus JSON"),
        ({"*": (200, "application/json", b'{"status": "error", "error": "bad\\nthings"}')}, "Prometheus refused /api/v1/series: bad things"),
    ],
)
def test_report_on_a_prometheus_answering_nonsense_is_exit_4(
    answers: dict[str, Any], text: str, fake_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, served = fake_server
    served.update(answers)
    out = tmp_path / "report"
    code = main(["report", "--prometheus", url, "--start", str(T0), "--end", str(T0 + 120), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 4
    assert len(err) == 1 and text in err[0], err
    assert not out.exists(), "--out is not created when the report fails"


def test_a_password_in_the_prometheus_url_is_never_shown(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["report", "--prometheus", "http://admin:hunter2@127.0.0.1:9", "--start", str(T0), "--end", str(T0 + 60), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 4
    assert "hunter2" not in err and "http://admin:***@127.0.0.1:9" in err


def test_report_writes_its_folder_whole(fake_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A minimal Prometheus: one GPU pod created at the start, every series 1 at every step."""
    url, served = fake_server
    values = [[T0 + i, "1"] for i in range(120)]
    served.update(
        {
            "/api/v1/series": SERIES,
            "/api/v1/query": _ok({"resultType": "vector", "result": [{"metric": {"namespace": "team", "pod": "p"}, "value": [T0 + 119, str(T0)]}]}),
            "/api/v1/query_range": _ok({"resultType": "matrix", "result": [{"metric": {"namespace": "team", "pod": "p"}, "values": values}]}),
        }
    )
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.json").write_text("{}")
    code = main(["report", "--prometheus", url, "--start", str(T0), "--end", str(T0 + 120), "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["gpus.png", "report.json", "wait_times.png"]
    assert json.loads((out / "report.json").read_text())["pending_by_pod"] == {"team/p": 120}
    assert [p.name for p in tmp_path.iterdir()] == ["report"]


@pytest.mark.parametrize(
    "answer",
    [
        (200, "text/html", b"<html><body>Sign in</body></html>"),
        (500, "text/plain", b"Internal Server Error"),
        (503, "text/html", b"<html>maintenance</html>"),
    ],
)
def test_preflight_on_an_ec2_endpoint_answering_nonsense_is_exit_4(
    answer: tuple[int, str, bytes], fake_server: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url, served = fake_server
    served["*"] = answer
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL_EC2", url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SERVICE_QUOTAS", url)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    assert main(["preflight", "eks", "dev-eks", *PD]) == 4
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "AWS" in lines[0] and "ap-northeast-2" in lines[0], lines
    assert "Traceback" not in captured.err
    assert "testing" not in captured.err


def test_preflight_without_credentials_is_exit_4(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["preflight", "eks", "dev-eks", *PD]) == 4
    assert capsys.readouterr().err == (
        "gpu-platform: cannot ask AWS in ap-northeast-2: no credentials (set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)\n"
    )


def test_preflight_on_moto_with_a_refusal_is_exit_4(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """moto answers EC2; Service Quotas refuses (AccessDenied): one line naming the call."""
    from moto import mock_aws

    from tests.conftest import stub_aws_clients

    def refuse(stub: Any) -> None:
        stub.add_client_error("get_service_quota", "AccessDeniedException", "not allowed\nhere", 403)

    stub_aws_clients(monkeypatch, {"service-quotas": refuse})
    with mock_aws():
        assert main(["preflight", "eks", "dev-eks", *PD]) == 4
    assert capsys.readouterr().err == ("gpu-platform: AWS refused GetServiceQuota in ap-northeast-2: AccessDeniedException: not allowed here\n")
