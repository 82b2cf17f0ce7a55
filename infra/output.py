"""The one writer of output files for every command (preview --json/--manifests,
plan-capacity --json, report --out, docs --write).

The guarantees (README "Output files"):

- Every output path of a command is checked before the command does its work and before
  any output is written: an empty path, a missing parent folder, a file where a folder is
  wanted (or the reverse) or a folder that is not writable refuses the command (exit 2)
  and nothing is written, not even the outputs whose paths were good.
- A file is written to a temporary file in the same folder and renamed over the target
  (os.replace): a reader sees the old file or the new one, never a part.
- A folder output (--manifests, report --out) is built whole in a temporary sibling and
  swapped in: after a re-run it holds exactly what this run declared, no file of an object
  no longer declared. gpu-platform only replaces a folder it could have written: an
  existing folder must hold nothing but files it writes there (``*.yaml`` for
  --manifests; report.json and the PNG plots for report --out); any other entry (a
  subfolder, a file of another kind, a symbolic link) refuses the command and nothing is
  deleted.
- Ctrl-C before the outputs are committed leaves the previous files and folders as they
  were and removes the temporary ones; the renames that commit them are not cut in two.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpu_platform.infra.errors import EXIT_CONFIG, CommandError, check_interrupt, deferred_interrupts

__all__ = ["FileTarget", "FolderTarget", "OutputError", "check_distinct", "file_target", "folder_target", "write_outputs"]


class OutputError(CommandError):
    """An output path that cannot be written; exit 2."""

    def __init__(self, line: str) -> None:
        super().__init__([line], EXIT_CONFIG)


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _check_parent(flag: str, value: str, path: Path) -> None:
    parent = path.parent
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
class FileTarget:
    """One output file, checked."""

    flag: str
    path: Path


@dataclass(frozen=True)
class FolderTarget:
    """One output folder replaced whole, checked; ``owned`` are the names (fnmatch) it may hold."""

    flag: str
    path: Path
    owned: tuple[str, ...]
    files: dict[str, bytes] = field(default_factory=dict)


def file_target(flag: str, value: str | None) -> FileTarget:
    """Check an output file path; OutputError (one line naming the flag) when it cannot be written."""
    path = _nonempty(flag, value)
    if path.is_dir():
        raise OutputError(f"{flag} {value}: cannot write: it is a folder; give a file path")
    if path.exists() and not os.access(path, os.W_OK):
        # os.replace would still succeed in a writable folder; the user's read-only file says "keep".
        raise OutputError(f"{flag} {value}: cannot write: the file is read-only")
    _check_parent(flag, str(value), path)
    return FileTarget(flag, path)


def folder_target(flag: str, value: str | None, owned: Iterable[str]) -> FolderTarget:
    """Check an output folder path: new, or one holding only files matching ``owned``."""
    path = _nonempty(flag, value)
    owned = tuple(owned)
    if path.is_symlink():
        raise OutputError(f"{flag} {value}: cannot write: it is a symbolic link; give a folder")
    if path.exists():
        if not path.is_dir():
            raise OutputError(f"{flag} {value}: cannot write: it is a file; give a folder")
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError as exc:
            raise OutputError(f"{flag} {value}: cannot read the folder: {_why(exc)}") from None
        foreign = [
            e.name for e in entries
            if not (e.is_file(follow_symlinks=False) and any(fnmatch.fnmatchcase(e.name, p) for p in owned))
        ]
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise OutputError(
                f"{flag} {value}: the folder holds {shown}, which gpu-platform does not write there "
                f"({', '.join(owned)} only); it replaces the folder whole, so give a new or empty folder"
            )
    _check_parent(flag, str(value), path)
    return FolderTarget(flag, path, owned)


def check_distinct(*targets: FileTarget | FolderTarget | None) -> None:
    """Refuse two outputs at one path, or a file inside a folder that is replaced whole."""
    given = [t for t in targets if t is not None]
    for i, a in enumerate(given):
        for b in given[i + 1 :]:
            if a.path == b.path:
                raise OutputError(f"{b.flag} {b.path}: the same path as {a.flag}; give each output its own path")
            for file, folder in ((a, b), (b, a)):
                if isinstance(folder, FolderTarget) and folder.path in file.path.parents:
                    raise OutputError(
                        f"{file.flag} {file.path}: inside the {folder.flag} folder, which is replaced whole; write it elsewhere"
                    )


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _stage_file(target: FileTarget, data: bytes, mode: int) -> Path:
    fd, name = tempfile.mkstemp(dir=target.path.parent, prefix=f".{target.path.name}.", suffix=".tmp")
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
    staged = Path(tempfile.mkdtemp(dir=target.path.parent, prefix=f".{target.path.name}.", suffix=".tmp"))
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


def write_outputs(outputs: list[tuple[FileTarget | FolderTarget, bytes | dict[str, bytes]]]) -> list[Path]:
    """Write every output or none: stage all beside their targets, then commit all.

    A file target takes bytes, a folder target {file name: bytes}. Raises OutputError (one
    line, exit 2) when the disk refuses; KeyboardInterrupt leaves the previous state.
    """
    mode = 0o666 & ~_umask()
    staged: list[tuple[FileTarget | FolderTarget, Path]] = []
    try:
        for target, content in outputs:
            try:
                if isinstance(target, FolderTarget):
                    assert isinstance(content, dict)
                    staged.append((target, _stage_folder(target, content, mode)))
                else:
                    assert isinstance(content, bytes)
                    staged.append((target, _stage_file(target, content, mode)))
            except OSError as exc:
                raise OutputError(f"{target.flag} {target.path}: cannot write: {_why(exc)}") from None
        with deferred_interrupts():
            check_interrupt()  # an interrupt swallowed on the way here: keep the previous outputs
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
    try:
        if isinstance(target, FileTarget):
            os.replace(temp, target.path)
            return
        if not target.path.exists():
            os.rename(temp, target.path)
            return
        # Swap: the old folder aside, the new one in, the old one removed. Both renames happen
        # with SIGINT deferred; the folder was checked to hold only files this command writes.
        old = Path(tempfile.mkdtemp(dir=target.path.parent, prefix=f".{target.path.name}.", suffix=".old"))
        try:
            os.rename(target.path, old / "previous")
            try:
                os.rename(temp, target.path)
            except OSError:
                os.rename(old / "previous", target.path)
                raise
        finally:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        raise OutputError(f"{target.flag} {target.path}: cannot write: {_why(exc)}") from None
