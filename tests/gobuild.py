"""Binaries the tests build once from the Go module proxy, cached outside the repository: one rule for them all.

The engine tests' Pulumi CLI and Kubernetes provider (tests/engine/build.sh) and Kueue's manager for the DWS admission
test (tests/kueue/build.sh) are found and built the same way, as the control plane is by infra/apply/local.py (which
``--apply local`` uses outside the tests, so it keeps its own copy with the CLI's errors):

- ``GPU_PLATFORM_<NAME>_BIN`` names a folder holding the binaries: it is used as it is (a test skips if one is missing);
- else the cache ``GPU_PLATFORM_<NAME>_CACHE`` (default ``$XDG_CACHE_HOME/gpu-platform/<name>``, or ``~/.cache``), keyed by
  the hash of the files that decide the build (build.sh hashes the same bytes, itself included), holds them in
  ``<key>/bin``;
- unbuilt, the build runs once for the whole run: under a lock beside the cache entry, so the other test workers (and
  other runs) wait for it and take its result; a failed build is recorded in the run's shared folder, and the workers
  that waited skip with its reason instead of building again. Without Go, or with ``GPU_PLATFORM_<NAME>_BUILD=0``, the
  tests skip with the reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["GoBuild", "shared_dir"]


def user_cache(name: str, variable: str) -> Path:
    """The folder the tests keep ``name``'s cache in, outside any checkout so every clone shares it: ``variable`` when
    set, else ``$XDG_CACHE_HOME/gpu-platform/<name>`` (``~/.cache`` without XDG_CACHE_HOME)."""
    explicit = os.environ.get(variable)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpu-platform" / name


def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the whole run, shared by the xdist workers (as tests/conftest.py's render cache)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop build.sh and the go commands it started (its own session): SIGTERM, so its EXIT trap removes the build
    folder, then SIGKILL after 30 s."""
    for sig, wait in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass(frozen=True)
class GoBuild:
    """One set of binaries a ``build.sh`` in ``build_dir`` makes."""

    name: str
    """The cache's folder and the environment variables' infix: ``engine`` -> GPU_PLATFORM_ENGINE_BIN, ..."""
    what: str
    """What is built, for the skip reasons ("the Pulumi CLI and the Kubernetes provider")."""
    build_dir: Path
    key_files: tuple[str, ...]
    """The files (relative to build_dir) whose bytes key the cache, as build.sh hashes them."""
    binaries: tuple[str, ...]
    timeout: float
    """Seconds the build may take before it is stopped (and recorded as failed)."""

    def _env(self, suffix: str) -> str | None:
        return os.environ.get(f"GPU_PLATFORM_{self.name.upper()}_{suffix}")

    @property
    def script(self) -> str:
        """build.sh as the repository names it (tests/<folder>/build.sh)."""
        return f"tests/{self.build_dir.name}/build.sh"

    def cache_root(self) -> Path:
        return user_cache(self.name, f"GPU_PLATFORM_{self.name.upper()}_CACHE")

    def cache_key(self) -> str:
        digest = hashlib.sha256()
        for name in self.key_files:
            digest.update(name.encode() + b"\n")
            digest.update((self.build_dir / name).read_bytes())
        return digest.hexdigest()[:16]

    def complete(self, folder: Path) -> bool:
        return all(os.access(folder / b, os.X_OK) for b in self.binaries)

    def folder(self, shared: Path) -> Path:
        """The folder holding the binaries, built here once if need be; skips with the reason when it cannot be had."""
        from gpu_platform.infra.apply.local import go_binary

        lacks = " or ".join(self.binaries)
        explicit = self._env("BIN")
        if explicit:
            if not self.complete(Path(explicit)):
                pytest.skip(f"GPU_PLATFORM_{self.name.upper()}_BIN={explicit} lacks {lacks} ({self.script} builds them)")
            return Path(explicit)
        key = self.cache_key()
        folder = self.cache_root() / key / "bin"
        if self.complete(folder):
            return folder
        absent = f"{self.what} is not built at {folder}"
        go = go_binary()
        if go is None:
            pytest.skip(f"Go 1.26 is not installed, so {self.what} cannot be built: {absent}")
        if self._env("BUILD") == "0":
            pytest.skip(f"{absent} (GPU_PLATFORM_{self.name.upper()}_BUILD=0: not building it here; run {self.script})")
        failed = shared / f"{self.name}-build-failed"
        folder.parent.mkdir(parents=True, exist_ok=True)
        with open(self.cache_root() / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time, across workers and runs: the others wait here
            if self.complete(folder):
                return folder  # another worker built it while this one waited
            if failed.is_file():
                pytest.skip(failed.read_text())
            log = folder.parent / "build.log"
            env = {**os.environ, "PATH": f"{Path(go).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
            with open(log, "w") as out:
                build = subprocess.Popen(["bash", str(self.build_dir / "build.sh")], env=env, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True)
                try:
                    code = build.wait(timeout=self.timeout)
                    why = "" if code == 0 else f"{self.script} failed (exit {code}); its output: {log}"
                except subprocess.TimeoutExpired:
                    _stop_group(build)
                    why = f"{self.script} did not finish in {self.timeout:.0f} s; its output: {log}"
            if not why and not self.complete(folder):
                why = f"{self.script} finished but {folder} lacks {lacks}"
            if why:
                failed.write_text(why)  # the other workers skip with this instead of building again
                pytest.skip(why)
        return folder
