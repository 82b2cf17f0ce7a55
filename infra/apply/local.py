"""A real Kubernetes 1.34 control plane on this machine, for ``--apply local`` and the tests.

The binaries are built once by tests/kube/build.sh from the upstream Go modules at the versions
its go.mod/go.sum files pin (k8s.io/kubernetes v1.34 with its staging modules, etcd from
go.etcd.io/etcd/server/v3, kwok from sigs.k8s.io/kwok) into a cache outside the repository:

    ${GPU_PLATFORM_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-platform/kube}/<key>/bin

where <key> is the first 16 hex digits of the sha256 over each go.mod/go.sum file's (and build.sh's) path and
contents (the same bytes build.sh hashes). ``GPU_PLATFORM_KUBE_BIN`` names a folder of those five
binaries instead (a machine without the source checkout).

``control_plane()`` starts etcd, kube-apiserver, kube-controller-manager (its controllers turn
Deployments, DaemonSets, ReplicaSets and Jobs into pods), kube-scheduler and kwok (nodes and pod
lifecycles without a kubelet) on free 127.0.0.1 ports in a temporary folder, with a certificate
authority, serving and client certificates and a service-account signing key made for the run,
and a kubeconfig. It waits until each is healthy (bounded) and always stops every process it
started and removes the folder (its keys and etcd's data), on errors, Ctrl-C, SIGTERM and SIGHUP too.

Two settings differ from a cloud control plane, both because no pod runs a container here:

- the MutatingAdmissionWebhook and ValidatingAdmissionWebhook admission plugins are off: the
  stack's own webhooks (the Prometheus operator's, Kubeflow's) are served by pods that kwok only
  pretends to run, so every call to them would fail; their configuration objects are still
  applied and validated;
- ``--allow-privileged`` is on, as on GKE and EKS (the API server's default is off).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BINARIES",
    "ControlPlane",
    "ControlPlaneError",
    "build_binaries",
    "cache_root",
    "control_plane",
    "find_binaries",
    "kube_modules_dir",
]

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
"""What tests/kube/build.sh builds."""

KWOK_STAGES = "kwok-stages.yaml"
"""kwok's default stages (node initialize and heartbeat with lease; pod ready, complete, delete), which
build.sh copies beside the binaries from the kwok module: the kwok binary runs none unless --config names them."""

KEY_FILES = ("k8s/go.mod", "k8s/go.sum", "kwok/go.mod", "kwok/go.sum", "build.sh")
"""The files whose contents key the binary cache (tests/kube/build.sh hashes the same; itself included)."""

KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
"""The annotation kwok manages nodes by (--manage-nodes-with-annotation-selector)."""

SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.1/16"
START_TIMEOUT = 60.0
"""Seconds the whole control plane may take to become healthy (it takes a few on 2 cores)."""


class ControlPlaneError(Exception):
    """The control plane cannot be built, found or started: one line saying what is needed."""


def kube_modules_dir() -> Path | None:
    """tests/kube of the source checkout this package runs from (an editable install), or None."""
    candidate = Path(__file__).resolve().parents[2] / "tests" / "kube"
    return candidate if (candidate / "build.sh").is_file() else None


def cache_root() -> Path:
    explicit = os.environ.get("GPU_PLATFORM_KUBE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpu-platform" / "kube"


def cache_key(modules: Path) -> str:
    digest = hashlib.sha256()
    for name in KEY_FILES:
        digest.update(name.encode() + b"\n")
        digest.update((modules / name).read_bytes())
    return digest.hexdigest()[:16]


def go_binary() -> str | None:
    found = shutil.which("go")
    if found:
        return found
    return "/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None


def _complete(folder: Path) -> bool:
    return all(os.access(folder / b, os.X_OK) for b in BINARIES) and (folder / KWOK_STAGES).is_file()


NEEDS_GO = (
    "--apply local needs Go 1.26 to build the control plane once (tests/kube/build.sh: etcd, kube-apiserver, "
    "kube-controller-manager, kube-scheduler, kwok from the Go module proxy); install Go, or use --apply KUBECONFIG"
)


def find_binaries(build: bool = False) -> Path:
    """The folder of the built control plane; with ``build``, builds it first when Go is here.

    Raises ControlPlaneError with one line naming what is missing.
    """
    explicit = os.environ.get("GPU_PLATFORM_KUBE_BIN")
    if explicit:
        if not _complete(Path(explicit)):
            missing = [b for b in BINARIES if not os.access(Path(explicit) / b, os.X_OK)]
            missing += [] if (Path(explicit) / KWOK_STAGES).is_file() else [KWOK_STAGES]
            raise ControlPlaneError(f"GPU_PLATFORM_KUBE_BIN={explicit} lacks {', '.join(missing)} (tests/kube/build.sh builds them)")
        return Path(explicit)
    modules = kube_modules_dir()
    if modules is None:
        raise ControlPlaneError(
            "--apply local needs the control plane built from a source checkout (tests/kube/build.sh, Go 1.26), "
            "or GPU_PLATFORM_KUBE_BIN naming a folder with etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok"
        )
    folder = cache_root() / cache_key(modules) / "bin"
    if _complete(folder):
        return folder
    if not build:
        raise ControlPlaneError(f"the control plane is not built at {folder}: run tests/kube/build.sh (Go 1.26, one time)")
    return build_binaries(modules)


def build_binaries(modules: Path) -> Path:
    """Run tests/kube/build.sh (idempotent; minutes the first time, instant when cached), once however many
    processes ask at the same time: the first builds under a lock beside the cache entry, the others wait and
    take its result. A build that failed while a process waited is not tried again by that process."""
    go = go_binary()
    if go is None:
        raise ControlPlaneError(NEEDS_GO)
    key = cache_key(modules)
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    failed = root / f"{key}.failed"
    asked = time.time()
    with (root / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        folder = root / key / "bin"
        if _complete(folder):
            return folder
        if failed.exists() and failed.stat().st_mtime >= asked:
            raise ControlPlaneError(f"tests/kube/build.sh failed in another process while this one waited ({failed}); not building again")
        try:
            built = _run_build(modules, go)
        except ControlPlaneError:
            failed.touch()
            raise
        failed.unlink(missing_ok=True)
        return built


def _run_build(modules: Path, go: str) -> Path:
    env = {**os.environ, "PATH": f"{Path(go).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    try:
        out = subprocess.run(["bash", str(modules / "build.sh")], env=env, stdout=subprocess.PIPE, stderr=None, text=True, timeout=3600, check=False)
    except subprocess.TimeoutExpired:
        raise ControlPlaneError("tests/kube/build.sh did not finish in an hour") from None
    if out.returncode != 0:
        raise ControlPlaneError(f"tests/kube/build.sh failed (exit {out.returncode}); its output above says why")
    folder = Path(out.stdout.strip().splitlines()[-1])
    if not _complete(folder):
        raise ControlPlaneError(f"tests/kube/build.sh finished but {folder} lacks some of {', '.join(BINARIES)}")
    return folder


# --- certificates -----------------------------------------------------------------------------


def _write_pki(folder: Path) -> dict[str, Path]:
    """A CA, the API server's serving certificate, an admin client certificate (system:masters)
    and the service-account signing key pair; ECDSA P-256 (fast to make)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2)

    def key() -> Any:
        return ec.generate_private_key(ec.SECP256R1())

    def write_key(name: str, k: Any) -> Path:
        path = folder / name
        path.write_bytes(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        path.chmod(0o600)
        return path

    def name(cn: str, org: str | None = None) -> x509.Name:
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        if org:
            attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
        return x509.Name(attrs)

    ca_key = key()
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("gpu-platform-local-ca"))
        .issuer_name(name("gpu-platform-local-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(cn: str, org: str | None, usage: Any, sans: list[Any] | None) -> tuple[Any, Any]:
        k = key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(cn, org))
            .issuer_name(ca.subject)
            .public_key(k.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(ca_key, hashes.SHA256()), k

    service_ip = next(ipaddress.IPv4Network(SERVICE_CIDR).hosts())
    server, server_key = leaf(
        "kube-apiserver",
        None,
        ExtendedKeyUsageOID.SERVER_AUTH,
        [
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(service_ip),
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes"),
            x509.DNSName("kubernetes.default"),
            x509.DNSName("kubernetes.default.svc"),
        ],
    )
    admin, admin_key = leaf("gpu-platform-admin", "system:masters", ExtendedKeyUsageOID.CLIENT_AUTH, None)
    sa_key = key()
    paths = {
        "ca": folder / "ca.crt",
        "server": folder / "apiserver.crt",
        "admin": folder / "admin.crt",
        "ca_key": write_key("ca.key", ca_key),
        "server_key": write_key("apiserver.key", server_key),
        "admin_key": write_key("admin.key", admin_key),
        "sa_key": write_key("sa.key", sa_key),
        "sa_pub": folder / "sa.pub",
    }
    for label, cert in (("ca", ca), ("server", server), ("admin", admin)):
        paths[label].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths["sa_pub"].write_bytes(sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return paths


def _kubeconfig(path: Path, server: str, pki: dict[str, Path]) -> None:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "gpu-platform-local",
        "clusters": [{"name": "gpu-platform-local", "cluster": {"server": server, "certificate-authority": str(pki["ca"])}}],
        "users": [{"name": "admin", "user": {"client-certificate": str(pki["admin"]), "client-key": str(pki["admin_key"])}}],
        "contexts": [{"name": "gpu-platform-local", "context": {"cluster": "gpu-platform-local", "user": "admin"}}],
    }
    path.write_text(json.dumps(document, indent=2))  # JSON is YAML: every kubeconfig reader takes it
    path.chmod(0o600)


# --- processes --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies (Linux), so a
    killed command or test worker leaves no control plane behind."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def last_line(self) -> str:
        try:
            lines = [line for line in self.log.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return " ".join(lines[-1].split())[:300] if lines else ""


@dataclass
class ControlPlane:
    """A running control plane: where it listens and how to reach it."""

    server: str
    """https://127.0.0.1:<port> of kube-apiserver."""
    kubeconfig: Path
    """An admin kubeconfig (client certificate in system:masters)."""
    folder: Path
    """The temporary folder: certificates, etcd's data, each process's log (removed on stop)."""
    version: str = ""
    """The API server's gitVersion (v1.34.x)."""
    processes: list[_Process] = field(default_factory=list, repr=False)

    def api_client(self) -> Any:
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))


def _start(processes: list[_Process], folder: Path, name: str, argv: list[str]) -> _Process:
    log = folder / f"{name}.log"
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=folder, start_new_session=True, preexec_fn=_die_with_parent
        )
    process = _Process(name, popen, log)
    processes.append(process)
    return process


STOP_GRACE = 2.0
"""Seconds the control plane's processes get to exit on SIGTERM before SIGKILL. kube-apiserver 1.34 takes
about 20 s to drain on SIGTERM; nothing of a throwaway control plane outlives it (its folder is removed),
so waiting for that drain only made every `--apply local` and every test session 10 s longer."""


def _stop(processes: list[_Process]) -> None:
    """SIGTERM every process (newest first), SIGKILL what is still there after STOP_GRACE seconds."""
    for p in reversed(processes):
        if p.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.popen.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    for p in reversed(processes):
        try:
            p.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                p.popen.kill()
            p.popen.wait(timeout=10)


def _get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return 0, ""


def _wait(process: _Process, url: str, deadline: float, context: ssl.SSLContext | None, ok: Any = None) -> str:
    while True:
        if process.popen.poll() is not None:
            raise ControlPlaneError(f"{process.name} exited with {process.popen.returncode} while starting: {process.last_line()}")
        status, body = _get(url, context)
        if status == 200 and (ok is None or ok(body)):
            return body
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"{process.name} was not healthy at {url} within the start timeout: {process.last_line()}")
        time.sleep(0.2)


@contextlib.contextmanager
def control_plane(binaries: Path | None = None, timeout: float = START_TIMEOUT, kwok: bool = True) -> Iterator[ControlPlane]:
    """Start the control plane (bounded by ``timeout`` seconds), yield it, always stop it.

    ``binaries``: the folder of the five binaries (default: ``find_binaries()``).
    """
    binaries = binaries if binaries is not None else find_binaries()
    with _terminate_as_interrupt():
        yield from _run_control_plane(binaries, timeout, kwok)


def _run_control_plane(binaries: Path, timeout: float, kwok: bool) -> Iterator[ControlPlane]:
    processes: list[_Process] = []
    folder: Path | None = None
    deadline = time.monotonic() + timeout
    try:
        folder = Path(tempfile.mkdtemp(prefix="gpu-platform-kube-"))
        pki = _write_pki(folder)
        etcd_port, peer_port, api_port, kcm_port, sched_port, kwok_port = (free_port() for _ in range(6))
        etcd = _start(
            processes,
            folder,
            "etcd",
            [
                str(binaries / "etcd"),
                "--name=local",
                f"--data-dir={folder / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=local=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        _wait(etcd, f"http://127.0.0.1:{etcd_port}/health", deadline, None, lambda body: '"true"' in body)

        server = f"https://127.0.0.1:{api_port}"
        apiserver = _start(
            processes,
            folder,
            "kube-apiserver",
            [
                str(binaries / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_port}",
                f"--tls-cert-file={pki['server']}",
                f"--tls-private-key-file={pki['server_key']}",
                f"--client-ca-file={pki['ca']}",
                "--authorization-mode=Node,RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki['sa_pub']}",
                f"--service-account-signing-key-file={pki['sa_key']}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                "--disable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
                "--profiling=false",
                f"--cert-dir={folder / 'apiserver-certs'}",
                "-v=1",
            ],
        )
        client = ssl.create_default_context(cafile=str(pki["ca"]))
        client.load_cert_chain(str(pki["admin"]), str(pki["admin_key"]))
        _wait(apiserver, f"{server}/readyz", deadline, client)
        kubeconfig = folder / "kubeconfig"
        _kubeconfig(kubeconfig, server, pki)

        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # their self-signed serving certificates; loopback health only
        kcm = _start(
            processes,
            folder,
            "kube-controller-manager",
            [
                str(binaries / "kube-controller-manager"),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={kcm_port}",
                "--leader-elect=false",
                f"--service-account-private-key-file={pki['sa_key']}",
                f"--root-ca-file={pki['ca']}",
                "--use-service-account-credentials=false",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                f"--cert-dir={folder / 'kcm-certs'}",
                "--concurrent-deployment-syncs=10",
                "--concurrent-replicaset-syncs=10",
                "--concurrent-daemonset-syncs=10",
                # A claim added in the instant before its volume reached the binder's cache waits for the next
                # sync (15 s by default): a second here, so a stack's static volumes bind as its pods arrive.
                "--pvclaimbinder-sync-period=1s",
                "-v=1",
            ],
        )
        scheduler = _start(
            processes,
            folder,
            "kube-scheduler",
            [
                str(binaries / "kube-scheduler"),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={sched_port}",
                "--leader-elect=false",
                f"--cert-dir={folder / 'scheduler-certs'}",
                "-v=1",
            ],
        )
        kwok_process: _Process | None = None
        if kwok:
            key, value = KWOK_NODE_ANNOTATION
            kwok_process = _start(
                processes,
                folder,
                "kwok",
                [
                    str(binaries / "kwok"),
                    f"--kubeconfig={kubeconfig}",
                    f"--config={binaries / KWOK_STAGES}",
                    "--manage-all-nodes=false",
                    f"--manage-nodes-with-annotation-selector={key}={value}",
                    f"--cidr={POD_CIDR}",
                    "--node-ip=127.0.0.1",
                    f"--node-port={kwok_port}",
                    f"--server-address=127.0.0.1:{kwok_port}",
                    "--node-lease-duration-seconds=40",
                ],
            )
        _wait(kcm, f"https://127.0.0.1:{kcm_port}/healthz", deadline, insecure)
        _wait(scheduler, f"https://127.0.0.1:{sched_port}/healthz", deadline, insecure)
        if kwok_process is not None:
            _wait(kwok_process, f"http://127.0.0.1:{kwok_port}/healthz", deadline, None)
        _, body = _get(f"{server}/version", client)
        version = json.loads(body).get("gitVersion", "") if body else ""
        yield ControlPlane(server=server, kubeconfig=kubeconfig, folder=folder, version=version, processes=processes)
    finally:
        with _uninterrupted():
            _stop(processes)
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that, while a control plane runs, raise KeyboardInterrupt as SIGINT does, so it is stopped and its
folder removed (by default they end Python at once: the processes die with it, the folder with its CA key and
etcd's data would stay)."""


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Inside the block, SIGTERM and SIGHUP raise KeyboardInterrupt (main thread only; a signal the parent
    set to be ignored stays ignored); the previous handlers are restored after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(s, _raise_interrupt)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """The block (stopping the processes, removing the folder: seconds) runs to its end whatever SIGINT,
    SIGTERM or SIGHUP arrive meanwhile; one that arrived is raised as KeyboardInterrupt after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, *STOP_SIGNALS)}
    for s, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(s, lambda signum, frame: arrived.append(signum))
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if arrived:
        raise KeyboardInterrupt(signal.Signals(arrived[0]).name)


def main(argv: list[str] | None = None) -> int:
    """``python -m gpu_platform.infra.apply.local``: start, print the kubeconfig path, wait for Ctrl-C."""
    try:
        with control_plane(find_binaries(build=True)) as plane:
            print(f"{plane.version} at {plane.server}; kubeconfig {plane.kubeconfig}; Ctrl-C stops it", flush=True)
            while all(p.popen.poll() is None for p in plane.processes):
                time.sleep(1)
            print("a control plane process exited; stopping", file=sys.stderr)
            return 1
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
