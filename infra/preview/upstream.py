"""The lock of upstream sources and where their files come from.

``infra/preview/upstream.lock.yaml`` pins every Helm chart the components install (name, version,
repository, content digest) and every git repository and tag a Kustomize directory reads
(nested remote resources included), with the commit the tag resolves to. The renderer
(infra/preview/render.py) takes its sources from :class:`Sources`:

- ``--upstream DIR``: a local copy laid out as ``DIR/charts/<name>-<version>.tgz`` and
  ``DIR/git/<owner>+<name>.git`` (bare repositories), as ``../shared/reference/upstream`` is;
- otherwise the user cache (``$GPU_PLATFORM_CACHE`` or ``~/.cache/gpu-platform/upstream``,
  same layout), where missing sources are fetched online (Helm's own pull for charts,
  ``git fetch`` of the locked tag for repositories) unless fetching is off.

Whatever the origin, a chart is used only when its content digest equals the lock's, and a
tag only when it resolves to the locked commit (or, in a trimmed mirror such as
``../shared/reference/upstream``, to a commit whose message names the locked upstream commit).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpu_platform.infra.yaml_io import SAFE_LOADER

__all__ = [
    "LOCK_PATH",
    "ChartPin",
    "FilePin",
    "GitPin",
    "KustomizeUrl",
    "Lock",
    "SourceError",
    "Sources",
    "chart_digest",
    "check_upstream_dir",
    "default_cache_dir",
    "load_lock",
    "parse_kustomize_url",
    "program_sources",
    "sources_for_program",
    "upstream_file",
]

LOCK_PATH = Path(__file__).with_name("upstream.lock.yaml")
_GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(\.git)?$")


class SourceError(Exception):
    """A source that cannot be had or does not match the lock; the message is one line."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChartSource(_Model):
    repository: str
    """The git repository the chart's files come from."""
    tag: str
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")


class ChartPin(_Model):
    name: str
    version: str
    repository: str
    """The chart repository the Release names (repositoryOpts.repo)."""
    digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    """sha256 of the chart's content (see :func:`chart_digest`)."""
    source: ChartSource | None = None

    @property
    def archive_name(self) -> str:
        return f"{self.name}-{self.version}.tgz"

    def label(self) -> str:
        return f"{self.name} {self.version} from {self.repository}"


class GitPin(_Model):
    repository: str = Field(pattern=_GITHUB.pattern)
    tag: str
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")


class FilePin(_Model):
    """A single upstream file a component reads at deploy time (the AWS Load Balancer Controller's
    IAM policy): where upstream publishes it at its release tag, and the sha256 of its bytes."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """The file's name in the sources, under ``charts/`` beside the chart it belongs to."""
    url: str = Field(pattern=r"^https://")
    """Where upstream publishes it (at a release tag, never a branch)."""
    digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    """sha256 of the file's bytes."""

    @property
    def relative_path(self) -> str:
        return f"charts/{self.name}"


class Lock(_Model):
    charts: list[ChartPin] = []
    git: list[GitPin] = []
    files: list[FilePin] = []

    def file(self, url: str) -> FilePin | None:
        for pin in self.files:
            if pin.url == url:
                return pin
        return None

    def chart(self, name: str, version: str, repository: str | None) -> ChartPin | None:
        for pin in self.charts:
            if pin.name == name and pin.version == version and (repository is None or _same_repo(pin.repository, repository)):
                return pin
        return None

    def git_pin(self, repository: str, ref: str) -> GitPin | None:
        for pin in self.git:
            if _same_repo(pin.repository, repository) and ref in (pin.tag, pin.commit):
                return pin
        return None

    def tags_of(self, repository: str) -> list[str]:
        return [p.tag for p in self.git if _same_repo(p.repository, repository)]


def check_upstream_dir(flag: str, value: str, lock: Lock) -> Path:
    """A local copy of the sources given as ``flag value``, its layout checked; SourceError (one
    line naming what was looked for, where, and what is there instead) when it is not one."""
    if not value.strip():
        raise SourceError(f"{flag}: a folder is required (got {value!r})")
    root = Path(value)
    layout = "charts/<name>-<version>.tgz and git/<owner>+<name>.git (bare repositories)"
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is not a folder"
        raise SourceError(f"{flag} {value}: {what}; give a folder holding {layout}")
    if (root / "charts").is_dir() or (root / "git").is_dir():
        return root.resolve()
    examples = []
    if lock.charts:
        examples.append(str(root / "charts" / lock.charts[0].archive_name))
    if lock.git:
        owner, name = _owner_name(lock.git[0].repository)
        examples.append(str(root / "git" / f"{owner}+{name}.git"))
    try:
        entries = sorted(p.name for p in root.iterdir())
    except OSError as exc:
        raise SourceError(f"{flag} {value}: cannot read the folder: {exc.strerror}") from None
    nested = [n for n in entries if (root / n / "charts").is_dir() or (root / n / "git").is_dir()]
    found = ", ".join(entries[:6]) + (f" and {len(entries) - 6} more" if len(entries) > 6 else "") if entries else "nothing"
    hint = f"; did you mean {root / nested[0]}?" if nested else ""
    raise SourceError(
        f"{flag} {value}: looked for {root / 'charts'}/ and {root / 'git'}/ ({layout}, e.g. {' and '.join(examples)}) "
        f"and found neither; the folder holds {found}{hint}"
    )


def _same_repo(a: str, b: str) -> bool:
    return a.rstrip("/").removesuffix(".git").lower() == b.rstrip("/").removesuffix(".git").lower()


def _owner_name(repository: str) -> tuple[str, str]:
    m = _GITHUB.match(repository.rstrip("/"))
    if not m:
        raise SourceError(f"{repository} is not a GitHub repository URL (https://github.com/<owner>/<name>)")
    return m.group(1), m.group(2)


def load_lock(path: Path = LOCK_PATH) -> Lock:
    try:
        # libyaml where PyYAML has it: the lock is read by every preview, and the pure-Python parser took
        # a third of a preview that stops at a config error (tests/bad_input runs hundreds of those).
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER) or {}
        return Lock.model_validate(data)
    except (OSError, yaml.YAMLError, ValidationError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path}: not a readable lock of upstream sources: {str(exc).splitlines()[0]}") from None


@dataclass(frozen=True)
class KustomizeUrl:
    """A kustomize remote target: https://github.com/<owner>/<name>//<path>?ref=<ref>."""

    repository: str
    path: str
    ref: str | None


def parse_kustomize_url(url: str) -> KustomizeUrl | None:
    """The parts of a GitHub kustomize URL, or None for anything else (a local folder)."""
    m = re.match(r"^(https://github\.com/[^/]+/[^/?]+?)(?:\.git)?(?://([^?]*))?(?:\?(.*))?$", url)
    if not m:
        return None
    query = dict(p.split("=", 1) for p in (m.group(3) or "").split("&") if "=" in p)
    ref = query.get("ref") or query.get("version")
    return KustomizeUrl(m.group(1), (m.group(2) or "").strip("/"), ref)


def chart_digest(archive: Path) -> str:
    """sha256 over the sorted ``path NUL sha256(content)`` lines of the chart's files.

    Paths are relative to the chart's top folder; a subchart archive under ``charts/`` is
    expanded in place (``charts/<name>/...``), so a chart built with ``helm dependency build``
    and one with its subcharts unpacked have the same digest when their files are the same.
    """
    files: dict[str, str] = {}

    def add(tf: tarfile.TarFile, prefix: str, expand: bool) -> None:
        for member in tf.getmembers():
            if not member.isfile():
                continue
            top, _, rel = member.name.partition("/")
            if not rel:
                continue
            handle = tf.extractfile(member)
            data = handle.read() if handle else b""
            if expand and re.fullmatch(r"charts/[^/]+\.tgz", rel):
                with tarfile.open(fileobj=io.BytesIO(data)) as sub:
                    add(sub, f"{prefix}charts/", False)
                continue
            key = f"{prefix}{top}/{rel}" if prefix else rel
            files[key] = hashlib.sha256(data).hexdigest()

    try:
        with tarfile.open(archive) as tf:
            add(tf, "", True)
    except (OSError, tarfile.TarError) as exc:
        raise SourceError(f"{archive}: not a chart archive ({exc})") from None
    digest = hashlib.sha256()
    for key in sorted(files):
        digest.update(f"{key}\0{files[key]}\n".encode())
    return f"sha256:{digest.hexdigest()}"


def default_cache_dir() -> Path:
    if os.environ.get("GPU_PLATFORM_CACHE"):
        return Path(os.environ["GPU_PLATFORM_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "gpu-platform" / "upstream"


def _git(args: list[str], env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})},
    )


class Sources:
    """Chart archives and git repositories for rendering: a local copy, or the user cache
    (fetched online when ``fetch``)."""

    def __init__(self, lock: Lock, *, upstream_dir: Path | None = None, cache_dir: Path | None = None, fetch: bool = True) -> None:
        self.lock = lock
        self.local = upstream_dir is not None
        self.root = upstream_dir if upstream_dir is not None else (cache_dir or default_cache_dir())
        self.fetch = fetch and not self.local
        self._checked: dict[str, Path] = {}

    def describe(self) -> str:
        return f"--upstream {self.root}" if self.local else f"the cache {self.root}" + ("" if self.fetch else " (no fetching)")

    # --- charts -----------------------------------------------------------------------

    def chart_archive(self, pin: ChartPin) -> Path:
        """The archive of a locked chart, its digest checked; SourceError otherwise."""
        if pin.archive_name in self._checked:
            return self._checked[pin.archive_name]
        path = self.root / "charts" / pin.archive_name
        if not path.is_file():
            if not self.fetch:
                raise SourceError(f"chart {pin.name} {pin.version} is not in {self.describe()} (looked for {path})")
            self.pull_chart(pin, path)
        digest = chart_digest(path)
        if digest != pin.digest:
            raise SourceError(
                f"chart {pin.name} {pin.version} in {path} has digest {digest}, the lock pins {pin.digest}: "
                "the archive is not the locked chart (remove it to fetch it again, or re-lock on purpose)"
            )
        self._checked[pin.archive_name] = path
        return path

    def pull_chart(self, pin: ChartPin, path: Path) -> None:
        import helm_python

        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".pull-{os.getpid()}"
        tmp.mkdir(exist_ok=True)
        try:
            helm_python.pull(pin.name, repo_url=pin.repository, version=pin.version, destination=str(tmp))
            fetched = tmp / pin.archive_name
            if not fetched.is_file():
                raise SourceError(f"chart {pin.label()}: the repository sent no {pin.archive_name}")
            os.replace(fetched, path)
        except helm_python.HelmError as exc:
            raise SourceError(f"chart {pin.label()} could not be fetched: {str(exc).splitlines()[0]}") from None
        finally:
            for leftover in tmp.glob("*"):
                leftover.unlink()
            tmp.rmdir()

    # --- single files ---------------------------------------------------------------------

    def file_bytes(self, pin: FilePin) -> bytes:
        """A locked file's bytes, its digest checked: from the local copy, else the cache (fetched
        from its URL when fetching is on); SourceError otherwise. One path for the offline preview
        (--upstream) and `pulumi up` online."""
        path = self.root / pin.relative_path
        if not path.is_file():
            if not self.fetch:
                raise SourceError(f"{pin.name} is not in {self.describe()} (looked for {path}); give --upstream DIR, or fetch it from {pin.url}")
            self.fetch_file(pin, path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise SourceError(f"{path}: cannot read it: {exc.strerror}") from None
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if digest != pin.digest:
            raise SourceError(
                f"{pin.name} in {path} has digest {digest}, the lock pins {pin.digest}: "
                "the file is not the locked one (remove it to fetch it again, or re-lock on purpose)"
            )
        return data

    def fetch_file(self, pin: FilePin, path: Path) -> None:
        """Download ``pin.url`` to ``path`` (whole or not at all; its digest is checked by the caller)."""
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(pin.url, timeout=60) as response:
                data = response.read()
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise SourceError(f"{pin.name} could not be fetched from {pin.url}: {reason}") from None
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".fetch-{os.getpid()}-{pin.name}"
        tmp.write_bytes(data)
        os.replace(tmp, path)

    # --- git --------------------------------------------------------------------------

    def git_dir(self, repository: str) -> Path:
        _owner_name(repository)
        owner, name = _owner_name(repository)
        return self.root / "git" / f"{owner}+{name}.git"

    def check_tag(self, pin: GitPin) -> None:
        """The locked tag is in the source and resolves to the locked commit; SourceError otherwise."""
        key = f"{pin.repository}@{pin.tag}"
        if key in self._checked:
            return
        repo = self.git_dir(pin.repository)
        resolved = self.resolve_tag(repo, pin.tag) if repo.is_dir() else None
        if resolved is None and self.fetch:
            self.fetch_tag(repo, pin)
            resolved = self.resolve_tag(repo, pin.tag)
        if resolved is None:
            where = self.describe() if not self.fetch else pin.repository
            looked = f" (looked in {repo})" if repo.is_dir() else f" (looked for {repo}, which does not exist)"
            raise SourceError(f"{pin.repository} has no tag {pin.tag} in {where}{looked if not self.fetch else ''}")
        if resolved != pin.commit and f"commit {pin.commit}" not in self.commit_message(repo, resolved):
            raise SourceError(
                f"{pin.repository} tag {pin.tag} resolves to {resolved[:12]}, the lock pins {pin.commit[:12]}: "
                "the tag moved upstream; check the release and re-lock on purpose"
            )
        self._checked[key] = repo

    def tags(self, repository: str) -> list[str]:
        repo = self.git_dir(repository)
        if not repo.is_dir():
            return []
        out = _git(["--git-dir", str(repo), "tag", "-l"])
        return out.stdout.split() if out.returncode == 0 else []

    @staticmethod
    def resolve_tag(repo: Path, tag: str) -> str | None:
        out = _git(["--git-dir", str(repo), "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}"])
        return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None

    @staticmethod
    def commit_message(repo: Path, commit: str) -> str:
        return _git(["--git-dir", str(repo), "show", "-s", "--format=%B", commit]).stdout

    def fetch_tag(self, repo: Path, pin: GitPin) -> None:
        if not repo.is_dir():
            repo.parent.mkdir(parents=True, exist_ok=True)
            if _git(["init", "--bare", "--quiet", str(repo)]).returncode != 0:
                raise SourceError(f"cannot create {repo}")
        out = _git(["--git-dir", str(repo), "fetch", "--quiet", "--depth=1", pin.repository, f"+refs/tags/{pin.tag}:refs/tags/{pin.tag}"], timeout=600)
        if out.returncode != 0:
            reason = (out.stderr.strip().splitlines() or ["git fetch failed"])[-1]
            raise SourceError(f"{pin.repository} tag {pin.tag} could not be fetched: {reason}")

    def git_config(self, path: Path) -> Path:
        """A git config that serves every locked repository from this source and refuses
        every other GitHub repository (a kustomization that names an unlocked source fails)."""
        lines = []
        for repository in sorted({p.repository for p in self.lock.git}):
            repo = self.git_dir(repository)
            lines += [
                f'[url "file://{repo.resolve()}"]',
                f"\tinsteadOf = {repository}",
                f"\tinsteadOf = {repository}.git",
                "[safe]",
                f'\tdirectory = "{repo.resolve()}"',
            ]
        lines += [
            f'[url "file://{(self.root / "git" / "repository-not-in-the-gpu-platform-lock").resolve()}/"]',
            "\tinsteadOf = https://github.com/",
            '[protocol "file"]',
            "\tallow = always",
        ]
        path.write_text("\n".join(lines) + "\n")
        return path


def lock_entries(plan_sources: list[tuple[str, str, str | None]], git_refs: list[tuple[str, str]], sources: Sources) -> Lock:
    """A lock of exactly the given charts (name, version, repository) and git refs
    (repository, tag): entries already locked are kept as they are, new ones get their digest
    and commit from ``sources`` (which must hold them)."""
    charts: dict[tuple[str, str], ChartPin] = {}
    for name, version, repository in plan_sources:
        if (name, version) in charts:
            continue
        if (locked := sources.lock.chart(name, version, repository)) is not None:
            charts[(name, version)] = locked
            continue
        path = sources.root / "charts" / f"{name}-{version}.tgz"
        if not path.is_file():
            raise SourceError(f"chart {name} {version} is not in {sources.describe()}")
        charts[(name, version)] = ChartPin(name=name, version=version, repository=repository or "", digest=chart_digest(path))
    gits: dict[tuple[str, str], GitPin] = {}
    for repository, tag in git_refs:
        if (repository, tag) in gits:
            continue
        if (locked_ref := sources.lock.git_pin(repository, tag)) is not None:
            gits[(repository, tag)] = locked_ref
            continue
        resolved = Sources.resolve_tag(sources.git_dir(repository), tag)
        if resolved is None:
            raise SourceError(f"{repository} has no tag {tag} in {sources.describe()}")
        message = Sources.commit_message(sources.git_dir(repository), resolved)
        upstream = re.search(r"commit ([0-9a-f]{40})", message)
        gits[(repository, tag)] = GitPin(repository=repository, tag=tag, commit=upstream.group(1) if upstream and sources.local else resolved)
    return Lock(charts=sorted(charts.values(), key=lambda p: (p.name, p.version)), git=sorted(gits.values(), key=lambda p: (p.repository, p.tag)))


def lock_files(urls: list[tuple[str, str]], sources: Sources) -> list[FilePin]:
    """Lock entries for exactly the given files (name, url): locked ones kept as they are, new ones
    with the digest of the file in ``sources`` (fetched online when they are not local)."""
    pins: dict[str, FilePin] = {}
    for name, url in urls:
        if (locked := sources.lock.file(url)) is not None and locked.name == name:
            pins[name] = locked
            continue
        path = sources.root / "charts" / name
        if not path.is_file():
            if not sources.fetch:
                raise SourceError(f"{name} is not in {sources.describe()} (looked for {path})")
            sources.fetch_file(FilePin(name=name, url=url, digest="sha256:" + "0" * 64), path)
        pins[name] = FilePin(name=name, url=url, digest="sha256:" + hashlib.sha256(path.read_bytes()).hexdigest())
    return sorted(pins.values(), key=lambda p: p.name)


_PROGRAM_SOURCES: list[Sources] = []
"""The sources the running program reads upstream files from, when a command set them (sources_for_program)."""


def program_sources() -> Sources:
    """Where the program (infra/program.py, or a program of one's own) reads upstream files: the sources
    the running command set (`gpu-platform preview --upstream DIR`), else ``$GPU_PLATFORM_UPSTREAM``, else
    the user cache, fetched online unless ``$GPU_PLATFORM_OFFLINE=1`` (what `pulumi up` uses)."""
    if _PROGRAM_SOURCES:
        return _PROGRAM_SOURCES[-1]
    lock = load_lock()
    upstream = os.environ.get("GPU_PLATFORM_UPSTREAM")
    upstream_dir = check_upstream_dir("GPU_PLATFORM_UPSTREAM", upstream, lock) if upstream is not None else None
    return Sources(lock, upstream_dir=upstream_dir, fetch=os.environ.get("GPU_PLATFORM_OFFLINE") != "1")


class sources_for_program:  # noqa: N801 (a context manager used as a function)
    """``with sources_for_program(sources):`` the program run inside reads upstream files from ``sources``."""

    def __init__(self, sources: Sources | None) -> None:
        self.sources = sources

    def __enter__(self) -> None:
        if self.sources is not None:
            _PROGRAM_SOURCES.append(self.sources)

    def __exit__(self, *exc: object) -> None:
        if self.sources is not None:
            _PROGRAM_SOURCES.pop()


def upstream_file(url: str) -> str:
    """The text of the locked upstream file published at ``url`` (see program_sources); SourceError (one
    line) when it is not locked, cannot be had, or is not the locked bytes."""
    sources = program_sources()
    pin = sources.lock.file(url)
    if pin is None:
        raise SourceError(f"{url} is not in the lock {LOCK_PATH.name}; run: gpu-platform upstream lock")
    return sources.file_bytes(pin).decode("utf-8")


def dump_lock(lock: Lock, path: Path = LOCK_PATH) -> str:
    """The lock's YAML, keeping the file's leading comment."""
    header = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.startswith("#"):
                break
            header.append(line)
    body: dict[str, Any] = lock.model_dump(exclude_none=True)
    return "\n".join(header) + ("\n" if header else "") + yaml.safe_dump(body, sort_keys=False, width=200)


def check_lock(sources: Sources) -> list[str]:
    """One line per locked source that is missing or does not match, in ``sources``."""
    problems = []
    for chart in sources.lock.charts:
        try:
            sources.chart_archive(chart)
        except SourceError as exc:
            problems.append(str(exc))
    for pin in sources.lock.git:
        try:
            sources.check_tag(pin)
        except SourceError as exc:
            problems.append(str(exc))
    for file in sources.lock.files:
        try:
            sources.file_bytes(file)
        except SourceError as exc:
            problems.append(str(exc))
    return problems


def mirror_git_config(root: Path, path: Path) -> Path:
    """A git config serving every repository under ``root/git`` (<owner>+<name>.git) for its
    GitHub URL, for learning which refs a kustomization reads before they are locked."""
    lines = []
    for repo in sorted((root / "git").glob("*+*.git")):
        owner, name = repo.name[: -len(".git")].split("+", 1)
        url = f"https://github.com/{owner}/{name}"
        lines += [f'[url "file://{repo.resolve()}"]', f"\tinsteadOf = {url}", f"\tinsteadOf = {url}.git", "[safe]", f'\tdirectory = "{repo.resolve()}"']
    lines += ['[protocol "file"]', "\tallow = always"]
    path.write_text("\n".join(lines) + "\n")
    return path
