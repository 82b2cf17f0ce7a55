"""The one writer of output files for every command (preview --json/--manifests,
plan-capacity --json, report --out, simulate --json/--out, docs --write, upstream --lock).

The guarantees (docs/operating/exit-codes.md, "Output files"):

- Every output path of a command is checked before the command does its work and before
  any output is written: an empty path, a missing parent folder, a file where a folder is
  wanted (or the reverse) or a folder that is not writable refuses the command (exit 2)
  and nothing is written, not even the outputs whose paths were good.
- What a file path names decides how it is written:
  - a regular file or a new path: written to a temporary file in the same folder and
    renamed over it (os.replace): a reader sees the old file or the new one, never a part;
  - a symbolic link (or a chain of them) is followed and the file it ends at is replaced
    that way in its own folder; the links stay. A link whose target does not exist
    (dangling) creates that target, as a shell's ``>`` does; a loop of links is refused;
  - a named pipe (FIFO), a character device, ``/dev/stdout``, ``/dev/stderr`` or
    ``/dev/fd/N`` is written directly, never renamed over (a pipe waits for its reader);
  - ``-`` (or ``/dev/stdout``) is standard output; the command's own report then goes to
    standard error, so standard output holds the file alone;
  - a block device or a socket is refused: neither is a place for a plan or a report.
- A failed write (a full disk, ENOSPC; a reader that closed its pipe, EPIPE) is one line,
  exit 2, and the files renamed into place are not touched: the temporary ones are
  removed. Direct writes (pipes, devices, standard output) happen after every other output
  is staged and before any is renamed into place, so a device refusing its write leaves
  the files as they were.
- A folder output (--manifests, report --out, simulate --out) is built whole in a
  temporary sibling and swapped in: after a re-run it holds exactly what this run
  declared, no file of an object no longer declared. A symbolic link to a folder is
  followed: the folder it ends at is swapped in its own parent and the link stays. A
  folder path naming a pipe, a device, a socket, standard output or ``-`` is refused.
  gpu-platform only replaces a folder it could have written: an existing folder must hold
  nothing but files it writes there (``*.yaml`` for --manifests; report.json and the PNG
  plots for report --out); any other entry (a subfolder, a file of another kind, a
  symbolic link) refuses the command and nothing is deleted.
- Ctrl-C before the outputs are committed leaves the previous files and folders as they
  were and removes the temporary ones; the renames that commit them are not cut in two.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import IO, Any

from gpu_platform.infra.errors import EXIT_CONFIG, CommandError, check_interrupt, deferred_interrupts

__all__ = [
    "FileTarget",
    "FolderTarget",
    "OutputError",
    "WriteMode",
    "check_distinct",
    "claim_stdout",
    "file_target",
    "folder_target",
    "write_outputs",
]

STDOUT = "-"
_MAX_LINKS = 40  # Linux's own limit on links followed in one lookup
# A process's own file descriptors, as /dev/stdout, /dev/stderr and /dev/fd/N lead to.
_FD_LINK = re.compile(r"^/proc/(?:self|thread-self|(?P<pid>\d+))(?:/task/\d+)?/fd/(?P<fd>\d+)$")


class OutputError(CommandError):
    """An output path that cannot be written; exit 2."""

    def __init__(self, line: str) -> None:
        super().__init__([line], EXIT_CONFIG)


class WriteMode(Enum):
    """How a file target is written."""

    REPLACE = "replace"
    """A temporary file in the target's folder renamed over it."""
    DIRECT = "direct"
    """Opened and written in place: a named pipe or a character device."""
    DESCRIPTOR = "descriptor"
    """One of this process's open file descriptors (/dev/stdout, /dev/fd/N)."""
    STDOUT = "stdout"
    """``-``: standard output."""


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a file"


def _check_parent(flag: str, value: str, parent: Path) -> None:
    if not parent.is_dir():
        raise OutputError(f"{flag} {value}: cannot write: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {value}: cannot write: folder {parent} is not writable")


def _nonempty(flag: str, value: str | None) -> Path:
    """The absolute path (so "." has a real parent to stage in) of a non-empty value."""
    if value is None or not value.strip():
        raise OutputError(f"{flag}: an output path is required (got {value!r})")
    if "\x00" in value:
        raise OutputError(f"{flag}: a path cannot hold a NUL character (got {value!r})")
    path = Path(os.path.abspath(value))
    if path.parent == path:
        raise OutputError(f"{flag} {value}: cannot write: it is the root folder")
    return path


@dataclass(frozen=True)
class _Resolved:
    path: Path
    """Where the chain of symbolic links ends (a path whose parent is link-free), or the fd link."""
    descriptor: int | None = None
    """This process's file descriptor when the chain ends at /proc/self/fd/N."""
    mode: int | None = None
    """st_mode of what ``path`` names (None: nothing there yet)."""


def _resolve(flag: str, value: str, path: Path) -> _Resolved:
    """Follow ``path``'s symbolic links one by one to what they end at.

    Stops at one of this process's descriptor links (/proc/self/fd/N, where /dev/stdout
    leads): opening that again would truncate a file the shell redirected standard output
    to, so it is written through the descriptor itself.
    """
    current = Path(os.path.realpath(path.parent)) / path.name
    for _ in range(_MAX_LINKS + 1):
        fd_link = _FD_LINK.match(str(current))
        if fd_link and fd_link["pid"] in (None, str(os.getpid())):
            return _Resolved(current, descriptor=int(fd_link["fd"]))
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return _Resolved(current)
        except NotADirectoryError:
            raise OutputError(f"{flag} {value}: cannot write: folder {current.parent} is not a folder") from None
        except OSError as exc:
            raise OutputError(f"{flag} {value}: cannot write: {_why(exc)}") from None
        if not stat.S_ISLNK(st.st_mode):
            return _Resolved(current, mode=st.st_mode)
        link = os.readlink(current)
        following = Path(os.path.join(current.parent, link))
        current = Path(os.path.realpath(following.parent)) / following.name
    raise OutputError(f"{flag} {value}: cannot write: more than {_MAX_LINKS} symbolic links (a loop?); give a file path")


@dataclass(frozen=True)
class FileTarget:
    """One output file, checked: ``path`` as given (absolute), ``real`` where it is written."""

    flag: str
    path: Path
    real: Path | None = None
    mode: WriteMode = WriteMode.REPLACE
    descriptor: int | None = None

    @property
    def written(self) -> Path:
        return self.real if self.real is not None else self.path


@dataclass(frozen=True)
class FolderTarget:
    """One output folder replaced whole, checked; ``owned`` are the names (fnmatch) it may hold;
    ``real`` is the folder a symbolic link leads to (swapped in its own parent)."""

    flag: str
    path: Path
    owned: tuple[str, ...]
    files: dict[str, bytes] = field(default_factory=dict)
    real: Path | None = None

    @property
    def written(self) -> Path:
        return self.real if self.real is not None else self.path


def file_target(flag: str, value: str | None) -> FileTarget:
    """Check an output file path; OutputError (one line naming the flag) when it cannot be written."""
    if value == STDOUT:
        return FileTarget(flag, Path(STDOUT), mode=WriteMode.STDOUT)
    path = _nonempty(flag, value)
    resolved = _resolve(flag, str(value), path)
    if resolved.descriptor == 1:  # /dev/stdout: as "-"
        return FileTarget(flag, path, resolved.path, WriteMode.STDOUT, 1)
    if resolved.descriptor is not None:
        return FileTarget(flag, path, resolved.path, WriteMode.DESCRIPTOR, resolved.descriptor)
    real, mode = resolved.path, resolved.mode
    via = "" if real == path else f" (a symbolic link to {real})"
    if mode is None or stat.S_ISREG(mode):
        if mode is not None and not os.access(real, os.W_OK):
            # os.replace would still succeed in a writable folder; the user's read-only file says "keep".
            raise OutputError(f"{flag} {value}: cannot write: the file{via} is read-only")
        _check_parent(flag, str(value), real.parent)
        return FileTarget(flag, path, real)
    if stat.S_ISDIR(mode):
        raise OutputError(f"{flag} {value}: cannot write: it is a folder{via}; give a file path")
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        if not os.access(real, os.W_OK):
            raise OutputError(f"{flag} {value}: cannot write: {_kind(mode)}{via} not writable by this user")
        return FileTarget(flag, path, real, WriteMode.DIRECT)
    raise OutputError(f"{flag} {value}: cannot write: it is {_kind(mode)}{via}; give a file path, a named pipe, a character device or - for standard output")


def folder_target(flag: str, value: str | None, owned: Iterable[str]) -> FolderTarget:
    """Check an output folder path: new, or one holding only files matching ``owned``."""
    if value == STDOUT:
        raise OutputError(f"{flag} -: standard output takes one file, this is a folder of files; give a folder path")
    path = _nonempty(flag, value)
    owned = tuple(owned)
    resolved = _resolve(flag, str(value), path)
    real, mode = resolved.path, resolved.mode
    via = "" if real == path else f" (a symbolic link to {real})"
    if resolved.descriptor is not None:
        raise OutputError(f"{flag} {value}: cannot write: it is a file descriptor of this process; give a folder")
    if mode is not None:
        if not stat.S_ISDIR(mode):
            raise OutputError(f"{flag} {value}: cannot write: it is {_kind(mode)}{via}; give a folder")
        try:
            entries = sorted(os.scandir(real), key=lambda e: e.name)
        except OSError as exc:
            raise OutputError(f"{flag} {value}: cannot read the folder{via}: {_why(exc)}") from None
        foreign = [e.name for e in entries if not (e.is_file(follow_symlinks=False) and any(fnmatch.fnmatchcase(e.name, p) for p in owned))]
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise OutputError(
                f"{flag} {value}: the folder{via} holds {shown}, which gpu-platform does not write there "
                f"({', '.join(owned)} only); it replaces the folder whole, so give a new or empty folder"
            )
    if real.parent == real:
        raise OutputError(f"{flag} {value}: cannot write: it is the root folder")
    _check_parent(flag, str(value), real.parent)
    return FolderTarget(flag, path, owned, real=real)


def check_distinct(*targets: FileTarget | FolderTarget | None) -> None:
    """Refuse two outputs at one path, or a file inside a folder that is replaced whole
    (where the symbolic links lead, not only as given)."""
    given = [t for t in targets if t is not None]
    for i, a in enumerate(given):
        for b in given[i + 1 :]:
            if a.written == b.written:
                raise OutputError(f"{b.flag} {b.path}: the same path as {a.flag}; give each output its own path")
            for file, folder in ((a, b), (b, a)):
                if isinstance(folder, FolderTarget) and folder.written in file.written.parents:
                    raise OutputError(f"{file.flag} {file.path}: inside the {folder.flag} folder, which is replaced whole; write it elsewhere")


# --- standard output -------------------------------------------------------------------------

_claimed: list[IO[str]] = []


@contextmanager
def claim_stdout() -> Iterator[None]:
    """Around one command: once an output is written to ``-``, the rest of what the command
    prints goes to standard error, so standard output holds the file and nothing else."""
    saved = sys.stdout
    _claimed.append(saved)
    try:
        yield
    finally:
        _claimed.pop()
        sys.stdout = saved


def _write_stdout(data: bytes) -> None:
    stream: Any = _claimed[-1] if _claimed else sys.stdout
    stream.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8"))
        stream.flush()
    if _claimed:
        sys.stdout = sys.stderr


# --- writing -----------------------------------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_direct(target: FileTarget, data: bytes) -> None:
    if target.mode is WriteMode.STDOUT:
        _write_stdout(data)
    elif target.mode is WriteMode.DESCRIPTOR:
        assert target.descriptor is not None
        if target.descriptor == 2:
            sys.stderr.flush()
        _write_all(target.descriptor, data)
    else:
        # No O_CREAT, no O_TRUNC: the pipe or device is written as it is; a pipe waits for its reader.
        fd = os.open(target.written, os.O_WRONLY | os.O_NOCTTY)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)


def _stage_file(target: FileTarget, data: bytes, mode: int) -> Path:
    real = target.written
    fd, name = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(name, mode)
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)


def _stage_folder(target: FolderTarget, files: dict[str, bytes], mode: int) -> Path:
    real = target.written
    staged = Path(tempfile.mkdtemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp"))
    try:
        os.chmod(staged, 0o777 & ~_umask())
        for name, data in files.items():
            if "/" in name or name.startswith(".") or not any(fnmatch.fnmatchcase(name, p) for p in target.owned):
                raise ValueError(f"{name!r} is not a file this folder may hold")  # a bug, not an input
            with open(staged / name, "xb") as handle:
                handle.write(data)
            os.chmod(staged / name, mode)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    return staged


def _shown(target: FileTarget | FolderTarget) -> str:
    return str(target.path)


def write_outputs(outputs: list[tuple[FileTarget | FolderTarget, bytes | dict[str, bytes]]]) -> list[Path]:
    """Write every output or none: stage all beside their targets, write the direct ones,
    then rename the staged ones into place.

    A file target takes bytes, a folder target {file name: bytes}. Raises OutputError (one
    line, exit 2) when the disk, a device or a pipe refuses; KeyboardInterrupt leaves the
    previous state.
    """
    mode = 0o666 & ~_umask()
    staged: list[tuple[FileTarget | FolderTarget, Path]] = []
    direct: list[tuple[FileTarget, bytes]] = []
    try:
        for target, content in outputs:
            try:
                if isinstance(target, FolderTarget):
                    assert isinstance(content, dict)
                    staged.append((target, _stage_folder(target, content, mode)))
                elif target.mode is WriteMode.REPLACE:
                    assert isinstance(content, bytes)
                    staged.append((target, _stage_file(target, content, mode)))
                else:
                    assert isinstance(content, bytes)
                    direct.append((target, content))
            except OSError as exc:
                raise OutputError(f"{target.flag} {_shown(target)}: cannot write: {_why(exc)}") from None
        check_interrupt()  # an interrupt swallowed on the way here: keep the previous outputs
        for target, content in direct:
            try:
                _write_direct(target, content)
            except OSError as exc:
                what = "standard output" if target.mode is WriteMode.STDOUT else _shown(target)
                raise OutputError(f"{target.flag} {what}: cannot write: {_why(exc)}") from None
        with deferred_interrupts():
            check_interrupt()
            for target, temp in staged:
                _commit(target, temp)
            staged = []
    finally:
        with deferred_interrupts(raise_after=False):
            for _, temp in staged:
                if temp.is_dir():
                    shutil.rmtree(temp, ignore_errors=True)
                elif temp.exists():
                    temp.unlink()
    return [target.path for target, _ in outputs]


def _commit(target: FileTarget | FolderTarget, temp: Path) -> None:
    real = target.written
    try:
        if isinstance(target, FileTarget):
            os.replace(temp, real)
            return
        if not real.exists():
            os.rename(temp, real)
            return
        # Swap: the old folder aside, the new one in, the old one removed. Both renames happen
        # with SIGINT deferred; the folder was checked to hold only files this command writes.
        old = Path(tempfile.mkdtemp(dir=real.parent, prefix=f".{real.name}.", suffix=".old"))
        try:
            os.rename(real, old / "previous")
            try:
                os.rename(temp, real)
            except OSError:
                os.rename(old / "previous", real)
                raise
        finally:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        raise OutputError(f"{target.flag} {target.path}: cannot write: {_why(exc)}") from None
