"""Nothing left behind (issue 36 item 5): SIGTERM or SIGINT to `gpu-platform preview --apply local`
while its control plane runs stops every process of it and removes its temporary folder (the CA key,
the service-account signing key, etcd's data), and the command ends with one line and exit 130.

The command runs as a subprocess with TMPDIR set to the test's own folder, so the control plane's
folder is created there and its absence afterwards is exact.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import control_plane_gate_or_skip

PROGRAM = """
    import pulumi, pulumi_kubernetes as k8s
    ns = k8s.core.v1.Namespace("team", metadata={"name": "team"})
    k8s.core.v1.ConfigMap("settings", metadata={"name": "settings", "namespace": "team"}, data={"a": "b"},
                          opts=pulumi.ResourceOptions(depends_on=[ns]))
"""


def _binaries_or_skip() -> Path:
    from gpu_platform.infra.apply.local import ControlPlaneError, find_binaries

    control_plane_gate_or_skip()
    try:
        return find_binaries(build=False)
    except ControlPlaneError as exc:
        pytest.skip(f"the control plane is not built (tests/kube/build.sh; the control_plane fixture builds it): {exc}")


def _processes_in(folder: Path) -> list[str]:
    """Processes whose command line names a path inside ``folder`` (the control plane's all do)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(str(folder).encode() in arg for arg in argv):
            found.append(f"{entry.name}: {argv[0].decode(errors='replace')}")
    return found


def _program(tmp_path: Path) -> Path:
    program = tmp_path / "program"
    program.mkdir()
    (program / "Pulumi.yaml").write_text("name: mine\nruntime: python\n")
    (program / "__main__.py").write_text(textwrap.dedent(PROGRAM))
    return program


def _as_a_terminal_starts_it() -> None:
    """In the command's process before it runs: SIGINT as a terminal leaves it (the default). A shell starts a
    background job (``cmd &``, as CI scripts may) with SIGINT ignored, the command inherits that, and the CLI keeps an
    ignored SIGINT ignored (as the user's shell asked): the signal sent below would then be lost."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stopped(process: subprocess.Popen[str], temp: Path, signum: signal.Signals, ready: Callable[[], bool]) -> tuple[Path, str]:
    """Send ``signum`` once ``ready()`` (the control plane is running in ``temp``); its folder and stderr."""
    deadline = time.monotonic() + 120
    folders: list[Path] = []
    try:
        while not (folders and ready()):
            assert process.poll() is None, f"the command ended before its control plane ran: {process.communicate()}"
            assert time.monotonic() < deadline, "the control plane did not start in 120 s"
            folders = list(temp.glob("gpu-platform-kube-*"))
            time.sleep(0.05)
        (folder,) = folders
        assert (folder / "ca.key").is_file()
        assert _processes_in(folder), "no control plane process runs"
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert list(temp.iterdir()) == [], f"the control plane's folder was left behind: {err}"
    assert _processes_in(folder) == [], "control plane processes were left running"
    return folder, err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_apply_local_stops_the_control_plane_and_removes_its_folder(tmp_path: Path, signum: signal.Signals) -> None:
    """The signal arrives once the API server serves (its admin kubeconfig is written): the rest of the
    start and the apply are cut short, and everything is stopped and removed."""
    _binaries_or_skip()
    temp = tmp_path / "tmp"
    temp.mkdir()
    command = [sys.executable, "-c", "from gpu_platform.infra.cli import run; run()", "preview", "--program", str(_program(tmp_path)), "--quiet"]
    process = subprocess.Popen(
        [*command, "--apply", "local"],
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_a_terminal_starts_it,
    )
    _, err = _stopped(process, temp, signum, lambda: any(temp.glob("gpu-platform-kube-*/kubeconfig")))
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1] == "gpu-platform: interrupted", err
    assert "Traceback" not in err


def test_sigterm_stops_the_control_plane_started_for_a_look(tmp_path: Path) -> None:
    """`python -m gpu_platform.infra.apply.local` (the control plane kept running for kubectl) on SIGTERM."""
    _binaries_or_skip()
    temp = tmp_path / "tmp"
    temp.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "gpu_platform.infra.apply.local"],
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    os.set_blocking(process.stdout.fileno(), False)
    printed: list[str] = []

    def running() -> bool:
        printed.append(process.stdout.readline() if process.stdout is not None else "")
        return "Ctrl-C stops it" in "".join(printed)

    _, err = _stopped(process, temp, signal.SIGTERM, running)
    assert process.returncode == 0, err
    assert "Traceback" not in err
