"""The one output rule, per kind of target (infra/output.py): a regular file or new path is
replaced atomically in its folder; a symbolic link (a chain of them, a dangling one) is
followed and its target replaced in the target's folder, the links kept; a named pipe, a
character device and /dev/stdout are written directly; "-" is standard output; a block
device or a socket is refused; a full disk or a closed pipe is exit 2, nothing half-written.
Device nodes are made in the test's folder (os.mknod, as root), never the machine's own."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gpu_platform.infra import output
from gpu_platform.infra.cli import main
from tests.conftest import PROJECT_DIR

PLAN = [
    "plan-capacity",
    "dev-gke",
    "--project-dir",
    str(PROJECT_DIR),
    "--pool",
    "t4",
    "--cpu",
    "2",
    "--memory",
    "4Gi",
    "--run-duration",
    "1h",
    "--runs",
    "10",
    "--window",
    "3h",
]
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes (os.mknod) needs root")


def _write(path: Path | str, data: bytes = b"new", flag: str = "--json") -> None:
    output.write_outputs([(output.file_target(flag, str(path)), data)])


def _char_device(path: Path, major: int, minor: int) -> Path:
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(major, minor))
    return path


def _cli(*argv: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "gpu_platform.infra.cli", *argv], stdout=stdout, stderr=subprocess.PIPE, timeout=120, check=False)


# --- files ----------------------------------------------------------------------------------


def test_a_regular_file_is_replaced_atomically_in_its_folder(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_text("old")
    before = target.stat().st_ino
    _write(target)
    assert target.read_bytes() == b"new"
    assert target.stat().st_ino != before, "a new file renamed over the old, not the old rewritten"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"], "no temporary file left"


def test_a_new_path_is_created(tmp_path: Path) -> None:
    _write(tmp_path / "new.json")
    assert (tmp_path / "new.json").read_bytes() == b"new"


@pytest.mark.parametrize("hops", [1, 3])
def test_a_symbolic_link_is_followed_and_kept(tmp_path: Path, hops: int) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real = elsewhere / "plan.json"
    real.write_text("old")
    here = tmp_path / "here"
    here.mkdir()
    link = real
    for i in range(hops):  # a chain: here/link2 -> here/link1 -> here/link0 -> ../elsewhere/plan.json
        nxt = here / f"link{i}"
        nxt.symlink_to(os.path.relpath(link, here))
        link = nxt
    _write(link)
    assert link.is_symlink() and all((here / f"link{i}").is_symlink() for i in range(hops)), "the links stay"
    assert real.read_bytes() == b"new", "the file the link points to is the one written"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["plan.json"]
    assert sorted(p.name for p in here.iterdir()) == [f"link{i}" for i in range(hops)], "staged in the target's folder"


def test_a_dangling_link_creates_its_target(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    link = tmp_path / "plan.json"
    link.symlink_to("out/plan.json")
    _write(link)
    assert link.is_symlink() and (tmp_path / "out" / "plan.json").read_bytes() == b"new"


def test_a_dangling_link_into_a_missing_folder_names_that_folder(tmp_path: Path) -> None:
    link = tmp_path / "plan.json"
    link.symlink_to("nowhere/plan.json")
    with pytest.raises(output.OutputError, match=f"folder {tmp_path}/nowhere does not exist"):
        output.file_target("--json", str(link))


def test_a_loop_of_links_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(output.OutputError, match=r"--json .*/a: cannot write: more than 40 symbolic links"):
        output.file_target("--json", str(tmp_path / "a"))


def test_a_link_to_a_read_only_file_is_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes read-only files")
    real = tmp_path / "ro.json"
    real.write_text("keep")
    real.chmod(0o444)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(output.OutputError, match="the file .a symbolic link to .*ro.json. is read-only"):
        output.file_target("--json", str(tmp_path / "link"))


def test_a_named_pipe_is_written_through_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    _write(fifo, b"through the pipe")
    reader.join(10)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the pipe is still a pipe"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.fifo"]


def test_a_link_to_a_named_pipe_is_written_through(tmp_path: Path) -> None:
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    (tmp_path / "link").symlink_to(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    _write(tmp_path / "link", b"x")
    reader.join(10)
    assert got == [b"x"] and (tmp_path / "link").is_symlink() and stat.S_ISFIFO(os.lstat(fifo).st_mode)


@ROOT
def test_a_character_device_is_written_not_replaced(tmp_path: Path) -> None:
    null = _char_device(tmp_path / "null", 1, 3)  # the null device's numbers, a node of our own
    _write(null, b"x" * 100_000)
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.lstat(null).st_rdev == os.makedev(1, 3)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


@ROOT
def test_a_full_device_is_exit_2_and_the_other_outputs_stay_as_they_were(tmp_path: Path) -> None:
    full = _char_device(tmp_path / "full", 1, 7)  # ENOSPC on every write, as /dev/full
    plan = tmp_path / "plan.json"
    plan.write_text("old plan")
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "old.yaml").write_text("old")
    with pytest.raises(output.OutputError, match=r"^--json .*/full: cannot write: No space left on device$"):
        output.write_outputs(
            [
                (output.file_target("--plan", str(plan)), b"new plan"),
                (output.file_target("--json", str(full)), b"data"),
                (output.folder_target("--manifests", str(folder), ("*.yaml",)), {"new.yaml": b"new"}),
            ]
        )
    assert plan.read_text() == "old plan"
    assert [p.name for p in folder.iterdir()] == ["old.yaml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "m", "plan.json"], "temporary files removed"
    assert stat.S_ISCHR(os.lstat(full).st_mode)


@ROOT
def test_the_cli_on_a_full_device_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    full = _char_device(tmp_path / "full", 1, 7)
    assert main([*PLAN, "--json", str(full)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gpu-platform: --json {full}: cannot write: No space left on device"]
    assert stat.S_ISCHR(os.lstat(full).st_mode) and os.lstat(full).st_rdev == os.makedev(1, 7)


@ROOT
def test_a_block_device_is_refused(tmp_path: Path) -> None:
    os.mknod(tmp_path / "disk", stat.S_IFBLK | 0o600, os.makedev(7, 0))
    (tmp_path / "link").symlink_to("disk")
    with pytest.raises(output.OutputError, match=r"--json .*/disk: cannot write: it is a block device; give a file path"):
        output.file_target("--json", str(tmp_path / "disk"))
    with pytest.raises(output.OutputError, match=r"it is a block device \(a symbolic link to .*/disk\)"):
        output.file_target("--json", str(tmp_path / "link"))
    with pytest.raises(output.OutputError, match="it is a block device; give a folder"):
        output.folder_target("--out", str(tmp_path / "disk"), ("*.yaml",))
    assert stat.S_ISBLK(os.lstat(tmp_path / "disk").st_mode)


def test_a_socket_is_refused(tmp_path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s"))
        with pytest.raises(output.OutputError, match="cannot write: it is a socket; give a file path"):
            output.file_target("--json", str(tmp_path / "s"))
    finally:
        sock.close()


def test_the_same_file_through_a_link_is_one_output(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("plan.json")
    with pytest.raises(output.OutputError, match="the same path as --json"):
        output.check_distinct(output.file_target("--json", str(tmp_path / "plan.json")), output.file_target("--out", str(tmp_path / "link")))


# --- standard output --------------------------------------------------------------------------


def test_dash_is_standard_output_and_the_report_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*PLAN, "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["runs"] == 10, "standard output holds the JSON alone"
    assert "pool t4: n1-standard-4" in captured.err
    assert main([*PLAN]) == 0
    assert "pool t4: n1-standard-4" in capsys.readouterr().out, "the next command prints to stdout again"


def test_dev_stdout_redirected_to_a_file_is_written_through(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    with out.open("wb") as handle:
        inode = os.fstat(handle.fileno()).st_ino
        done = _cli(*PLAN, "--json", "/dev/stdout", stdout=handle.fileno())
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_bytes())["runs"] == 10, "the file holds the JSON alone"
    assert out.stat().st_ino == inode, "the shell's file, not one renamed over it"
    assert b"pool t4" in done.stderr


def test_dev_stdout_on_a_pipe_is_written_through() -> None:
    done = _cli(*PLAN, "--json", "/dev/stdout")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"] == 10


def test_a_closed_pipe_is_exit_2_one_line() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command starts: EPIPE
    try:
        done = _cli(*PLAN, "--json", "-", stdout=write)
    finally:
        os.close(write)
    assert done.returncode == 2
    assert done.stderr.decode().strip().splitlines()[-1] == "gpu-platform: --json standard output: cannot write: Broken pipe"
    assert b"Traceback" not in done.stderr


# --- folders -----------------------------------------------------------------------------------


def test_a_symbolic_link_to_a_folder_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere" / "manifests"
    real.mkdir(parents=True)
    (real / "old.yaml").write_text("old")
    (tmp_path / "m").symlink_to(real)
    output.write_outputs([(output.folder_target("--manifests", str(tmp_path / "m"), ("*.yaml",)), {"new.yaml": b"new"})])
    assert (tmp_path / "m").is_symlink()
    assert sorted(p.name for p in real.iterdir()) == ["new.yaml"], "the folder the link leads to, replaced whole"
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == ["manifests"], "swapped in its own parent"


def test_a_dangling_link_to_a_folder_creates_it(tmp_path: Path) -> None:
    (tmp_path / "m").symlink_to("made")
    output.write_outputs([(output.folder_target("--out", str(tmp_path / "m"), ("*.png",)), {"a.png": b"png"})])
    assert (tmp_path / "m").is_symlink() and (tmp_path / "made" / "a.png").read_bytes() == b"png"


@pytest.mark.parametrize("kind", ["fifo", "char", "stdout", "dash"])
def test_a_folder_output_refuses_a_pipe_a_device_and_standard_output(tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        path, expected = tmp_path / "p", "it is a named pipe; give a folder"
        os.mkfifo(path)
    elif kind == "char":
        if os.geteuid() != 0:
            pytest.skip("making device nodes (os.mknod) needs root")
        path, expected = _char_device(tmp_path / "null", 1, 3), "it is a character device; give a folder"
    elif kind == "stdout":
        path, expected = Path("/dev/stdout"), "it is a file descriptor of this process; give a folder"
    else:
        path, expected = Path("-"), "standard output takes one file"
    with pytest.raises(output.OutputError, match=expected):
        output.folder_target("--out", str(path), ("*.png",))
