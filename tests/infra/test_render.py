"""Rendering what the cluster gets: the lock, the sources, and the preview failing on each
class of problem that only rendering shows.

The tests that render need ../shared/reference/upstream beside the checkout (the pinned charts
and git repositories) and kubectl; without them they skip, saying why. Lock tests need neither.
"""

from __future__ import annotations

import io
import re
import shutil
import tarfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.components.core.kube import chart_source
from gpu_platform.infra.cli import main
from gpu_platform.infra.preview.render import HELM_RELEASE, KUSTOMIZE_DIRECTORY
from gpu_platform.infra.preview.upstream import GitPin, Lock, SourceError, Sources, chart_digest, load_lock, parse_kustomize_url
from tests.conftest import PROJECT_DIR, kubectl_or_skip, shipped_plan, upstream_or_skip
from tests.infra.test_preview_ladders import LADDER_STACKS, ladder_project

STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))


def platform_variant(root: Path) -> Path:
    """A project whose stack prod-eks-platform is prod-eks with the full Kubeflow platform."""
    (root / "stacks").mkdir(parents=True, exist_ok=True)
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    if not (root / "infra").exists():
        (root / "infra").symlink_to(PROJECT_DIR / "infra")
    document = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.prod-eks.yaml").read_text())
    install = document["config"]["gpu-platform:kubeflow"]["install"]
    install.update(edition="platform", dex_user_email="ml-admin@corp.example", release=None)
    install.pop("release")
    install["tenants"] = [{"name": "team-vision", "owner": "vision-lead@corp.example", "gpus": 16}]
    document["config"]["gpu-platform:kubeflow_dex_password_hash"] = {"secure": "v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}
    (root / "stacks" / "Pulumi.prod-eks-platform.yaml").write_text(yaml.safe_dump(document))
    return root


def preview(root: Path, stack: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["preview", stack, "--quiet", "--project-dir", str(root), *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# --- --upstream: a wrong layout names what was looked for -------------------------------------


def test_a_wrong_upstream_layout_names_the_paths_and_the_folder_meant(tmp_path: Path) -> None:
    from gpu_platform.infra.preview.upstream import check_upstream_dir

    (tmp_path / "reference" / "upstream" / "git").mkdir(parents=True)
    lock = load_lock()
    with pytest.raises(SourceError) as info:
        check_upstream_dir("--upstream", str(tmp_path / "reference"), lock)
    line = str(info.value)
    assert f"looked for {tmp_path}/reference/charts/ and {tmp_path}/reference/git/" in line
    assert f"e.g. {tmp_path}/reference/charts/{lock.charts[0].archive_name}" in line
    assert f"the folder holds upstream; did you mean {tmp_path}/reference/upstream?" in line
    assert check_upstream_dir("--upstream", str(tmp_path / "reference" / "upstream"), lock) == tmp_path / "reference" / "upstream"


def test_a_chart_missing_from_the_copy_names_the_archive_looked_for(tmp_path: Path) -> None:
    (tmp_path / "charts").mkdir()
    pin = load_lock().charts[0]
    with pytest.raises(SourceError, match=f"is not in --upstream {tmp_path} \\(looked for {tmp_path}/charts/{re.escape(pin.archive_name)}\\)"):
        Sources(Lock(charts=[pin]), upstream_dir=tmp_path).chart_archive(pin)
    git = load_lock().git[0]
    with pytest.raises(SourceError, match="\\(looked for .*\\.git, which does not exist\\)"):
        Sources(Lock(git=[git]), upstream_dir=tmp_path).check_tag(git)


# --- the lock ---------------------------------------------------------------------------------


def _declared(plan: Any) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    charts = [(chart_source(r.inputs)[0], str(r.inputs["version"]), chart_source(r.inputs)[1]) for r in plan.resources if r.type == HELM_RELEASE]
    urls = [str(r.inputs["directory"]) for r in plan.resources if r.type == KUSTOMIZE_DIRECTORY]
    return charts, urls


@pytest.mark.parametrize("stack", STACKS)
def test_the_lock_covers_every_release_and_directory_of_the_stack(stack: str) -> None:
    lock = load_lock()
    charts, urls = _declared(shipped_plan(stack))
    assert charts, f"{stack} declares no Helm release"
    for name, version, repository in charts:
        assert lock.chart(name, version, repository) is not None, f"{name} {version} ({repository}) is not locked"
    for url in urls:
        target = parse_kustomize_url(url)
        assert target is not None and target.ref is not None, url
        assert lock.git_pin(target.repository, target.ref) is not None, f"{url} is not locked"


def test_the_component_defaults_are_locked() -> None:
    from gpu_platform.components import DcgmExporterArgs, PrometheusStackArgs
    from gpu_platform.components.dask.args import DASK_OPERATOR_CHART, DaskOperatorArgs
    from gpu_platform.components.eks.node_group_args import AUTOSCALER_CHART, ClusterAutoscalerSettings
    from gpu_platform.components.kubeflow.args import DEFAULT_RELEASE, Edition

    lock = load_lock()
    prometheus = PrometheusStackArgs()
    assert lock.chart("kube-prometheus-stack", prometheus.chart_version, prometheus.repository)
    assert lock.chart("prometheus-adapter", prometheus.adapter_chart_version, prometheus.repository)
    assert lock.chart("dcgm-exporter", DcgmExporterArgs.model_fields["chart_version"].default, None)
    assert lock.chart(DASK_OPERATOR_CHART, DaskOperatorArgs.model_fields["chart_version"].default, None)
    assert lock.chart(AUTOSCALER_CHART, ClusterAutoscalerSettings.model_fields["chart_version"].default, None)
    assert lock.git_pin("https://github.com/kubeflow/pipelines", DEFAULT_RELEASE[Edition.PIPELINES])
    assert lock.git_pin("https://github.com/kubeflow/manifests", DEFAULT_RELEASE[Edition.PLATFORM])


def test_a_release_the_lock_does_not_cover_fails_the_preview_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = platform_variant(tmp_path)
    document = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.dev-gke.yaml").read_text())
    document["config"]["gpu-platform:monitoring"]["prometheus"]["chart_version"] = "88.5.2"
    (root / "stacks" / "Pulumi.dev-gke.yaml").write_text(yaml.safe_dump(document))
    code, out = preview(root, "dev-gke", capsys)
    assert code == 1, out
    assert (
        "violation: render: gpu-platform:monitoring.prometheus.chart_version: chart kube-prometheus-stack 88.5.2 from "
        "https://prometheus-community.github.io/helm-charts is not in the lock" in out
    ), out


def test_a_pinned_tag_that_does_not_exist_upstream_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kubeflow/pipelines 2.14.5 does not exist (sdk-2.14.5 is an SDK tag): a lock that names it
    fails the source check, and a stack that asks for it is refused before anything renders."""
    upstream = upstream_or_skip()
    lock = Lock(git=[GitPin(repository="https://github.com/kubeflow/pipelines", tag="2.14.5", commit="0" * 40)])
    with pytest.raises(SourceError, match=r"https://github.com/kubeflow/pipelines has no tag 2\.14\.5"):
        Sources(lock, upstream_dir=upstream).check_tag(lock.git[0])
    root = platform_variant(tmp_path)
    document = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.prod-eks.yaml").read_text())
    document["config"]["gpu-platform:kubeflow"]["install"]["release"] = "2.14.5"
    (root / "stacks" / "Pulumi.prod-eks.yaml").write_text(yaml.safe_dump(document))
    code, out = preview(root, "prod-eks", capsys, "--upstream", str(upstream))
    assert code == 2, out
    assert "gpu-platform:kubeflow.install.release: release 2.14.5 is not a kubeflow/pipelines release" in out, out


def test_every_locked_source_is_in_the_reference_and_matches(capsys: pytest.CaptureFixture[str]) -> None:
    upstream = upstream_or_skip()
    assert main(["upstream", "check", "--upstream", str(upstream)]) == 0, capsys.readouterr().err
    assert " 0 problems in --upstream " in capsys.readouterr().out


def test_the_lock_holds_no_chart_or_release_nothing_declares() -> None:
    """Charts and top-level refs: exactly the stacks' and the components' supported sources.
    (Nested refs are checked by rendering: a build that reads an unlocked ref fails; the full
    `gpu-platform upstream lock --check` also re-learns them with kubectl.)"""
    from gpu_platform.infra.preview.render import declared_sources, supported_sources

    lock = load_lock()
    charts, urls = supported_sources()
    for stack in STACKS:
        more_charts, more_urls = declared_sources(shipped_plan(stack))
        charts, urls = charts + more_charts, urls + more_urls
    assert {(p.name, p.version) for p in lock.charts} == {(n, v) for n, v, _ in charts}
    top = {(t.repository, t.ref) for t in map(parse_kustomize_url, urls) if t is not None}
    nested = {(p.repository, p.tag) for p in lock.git} - top
    assert top <= {(p.repository, p.tag) for p in lock.git}
    assert {repo for repo, _ in nested} == {"https://github.com/argoproj/argo-workflows"}, nested


def _tgz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_the_chart_digest_is_of_the_content_not_the_packaging(tmp_path: Path) -> None:
    sub = {"grafana/Chart.yaml": b"name: grafana\n", "grafana/values.yaml": b"a: 1\n"}
    unpacked = {"top/Chart.yaml": b"name: top\n", **{f"top/charts/{k}": v for k, v in sub.items()}}
    packed = {"top/Chart.yaml": b"name: top\n", "top/charts/grafana-1.0.0.tgz": _tgz(sub)}
    (tmp_path / "a.tgz").write_bytes(_tgz(unpacked))
    (tmp_path / "b.tgz").write_bytes(_tgz(dict(reversed(list(packed.items())))))
    assert chart_digest(tmp_path / "a.tgz") == chart_digest(tmp_path / "b.tgz")
    changed = {**unpacked, "top/charts/grafana/values.yaml": b"a: 2\n"}
    (tmp_path / "c.tgz").write_bytes(_tgz(changed))
    assert chart_digest(tmp_path / "c.tgz") != chart_digest(tmp_path / "a.tgz")


def test_a_chart_whose_digest_differs_from_the_lock_is_refused(tmp_path: Path) -> None:
    upstream = upstream_or_skip()
    lock = load_lock()
    pin = next(p for p in lock.charts if p.name == "dcgm-exporter")
    (tmp_path / "charts").mkdir()
    with tarfile.open(upstream / "charts" / pin.archive_name) as tf:
        files = {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}  # type: ignore[union-attr]
    files["dcgm-exporter/values.yaml"] += b"\n# changed\n"
    (tmp_path / "charts" / pin.archive_name).write_bytes(_tgz(files))
    with pytest.raises(SourceError, match="the lock pins"):
        Sources(lock, upstream_dir=tmp_path).chart_archive(pin)


def test_without_sources_the_preview_says_what_was_not_rendered(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = preview(PROJECT_DIR, "dev-gke", capsys)
    assert code == 0, out
    assert "notice: not rendered: dev-gke-monitoring-release (kube-prometheus-stack 88.5.3): chart kube-prometheus-stack 88.5.3 is not in the cache" in out
    assert main(["preview", "dev-gke", "--quiet", "--render", "--project-dir", str(PROJECT_DIR)]) == 2
    assert "--render requires every release and directory rendered" in capsys.readouterr().err


# --- every shipped stack renders clean ----------------------------------------------------------


@pytest.mark.parametrize(
    "stack",
    [
        *STACKS,
        pytest.param("prod-eks-platform", marks=pytest.mark.long),  # the platform: a minute of CPU, in .ci/run's long step
        # The issue-38 ladders (tests/infra/test_preview_ladders.py LADDER_STACKS): the whole stack rendered again for
        # each, so in the long step too.
        *(pytest.param(name, marks=pytest.mark.long) for name in LADDER_STACKS),
    ],
)
def test_the_stack_renders_fully_and_clean(stack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    upstream = upstream_or_skip()
    kubectl_or_skip()
    if stack == "prod-eks-platform":
        root = platform_variant(tmp_path)
    elif stack in LADDER_STACKS:
        root = ladder_project(tmp_path, stack)
    else:
        root = PROJECT_DIR
    code, out = preview(root, stack, capsys, "--upstream", str(upstream), "--render")
    assert code == 0, out
    summary = next(line for line in out.splitlines() if line.startswith("rendered: "))
    done, total = summary.split()[1], summary.split()[3]
    assert done == total, summary
    assert " 0 schema violations; policy pack: 0 mandatory and 0 advisory violations; 0 cluster check violations, 0 render errors" in out
    assert "violation" not in out.replace("0 schema violations", "").replace("advisory violations", "").replace("cluster check violations", "").replace(
        "0 mandatory", ""
    ), out


# --- each class of problem rendering finds fails the preview ------------------------------------

RAW = """
import pulumi
import pulumi_kubernetes as k8s
from gpu_platform.infra.stack.read import load_stack_config

load_stack_config()
case = pulumi.Config("test").require("case")
if case in ("unscraped-alert", "scraped-alert", "before-crd", "after-crd"):
  kps = k8s.helm.v3.Release("kps", k8s.helm.v3.ReleaseArgs(
    name="kps", chart="kube-prometheus-stack", version="88.5.3", namespace="monitoring",
    repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo="https://prometheus-community.github.io/helm-charts"),
    values={"prometheus": {"prometheusSpec": {"storageSpec": {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}}}},
            "kubeEtcd": {"enabled": False}, "kubeScheduler": {"enabled": False}, "kubeControllerManager": {"enabled": False},
            "grafana": {"enabled": False}, "alertmanager": {"enabled": False}}))
if case == "unscraped-alert":
    k8s.apiextensions.CustomResource("rule", api_version="monitoring.coreos.com/v1", kind="PrometheusRule",
        metadata={"name": "mine", "namespace": "monitoring"},
        spec={"groups": [{"name": "g", "rules": [{"alert": "NeverFires", "expr": "rate(cluster_autoscaler_failed_scale_ups_total[5m]) > 0"}]}]},
        opts=pulumi.ResourceOptions(depends_on=[kps]))
if case == "scraped-alert":
    k8s.apiextensions.CustomResource("rule", api_version="monitoring.coreos.com/v1", kind="PrometheusRule",
        metadata={"name": "mine", "namespace": "monitoring"},
        spec={"groups": [{"name": "g", "rules": [{"alert": "Fires", "expr": "kube_pod_status_phase{phase='Pending'} > 0"}]}]},
        opts=pulumi.ResourceOptions(depends_on=[kps]))
if case == "removed-api":
    k8s.apiextensions.CustomResource("pdb", api_version="policy/v1beta1", kind="PodDisruptionBudget",
        metadata={"name": "x", "namespace": "monitoring"}, spec={"minAvailable": 1})
if case in ("before-crd", "after-crd"):
    k8s.helm.v3.Release("dcgm", k8s.helm.v3.ReleaseArgs(
        name="dcgm", chart="dcgm-exporter", version="4.8.2", namespace="monitoring",
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo="https://nvidia.github.io/dcgm-exporter/helm-charts"),
        values={"serviceMonitor": {"enabled": True}}),
        opts=pulumi.ResourceOptions(depends_on=[kps] if case == "after-crd" else []))
if case in ("default-credentials", "duplicate"):
    base = "https://github.com/kubeflow/pipelines//manifests/kustomize"
    scoped = k8s.kustomize.v2.Directory("scoped", k8s.kustomize.v2.DirectoryArgs(directory=f"{base}/cluster-scoped-resources?ref=2.16.1"))
    if case == "default-credentials":
        k8s.kustomize.v2.Directory("kfp", k8s.kustomize.v2.DirectoryArgs(directory=f"{base}/env/platform-agnostic?ref=2.16.1"),
            opts=pulumi.ResourceOptions(depends_on=[scoped]))
    else:
        k8s.core.v1.Namespace("kubeflow", metadata={"name": "kubeflow"})
"""


def raw_project(tmp_path: Path, case: str) -> Path:
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    # The program reads the test: namespace; Pulumi.yaml declares it, as a project would.
    with (tmp_path / "Pulumi.yaml").open("a") as f:
        f.write("  test:case: none\n")
    (tmp_path / "infra").mkdir()
    (tmp_path / "infra" / "__main__.py").write_text(textwrap.dedent(RAW))
    (tmp_path / "stacks").mkdir()
    document = yaml.safe_load((PROJECT_DIR / "stacks" / "Pulumi.dev-gke.yaml").read_text())
    document["config"]["test:case"] = case
    (tmp_path / "stacks" / "Pulumi.raw.yaml").write_text(yaml.safe_dump(document))
    # This small program's Prometheus volume is not retained: not what these tests are about.
    (tmp_path / "policy.json").write_text('{"metrics-storage-retained": "disabled"}')
    return tmp_path


def raw_preview(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    root = raw_project(tmp_path, case)
    return preview(root, "raw", capsys, "--policy-config", str(root / "policy.json"), *extra)


CASES = {
    "unscraped-alert": "violation: alert-unscraped: PrometheusRule monitoring/mine: rule NeverFires reads cluster_autoscaler_failed_scale_ups_total, which nothing in the stack scrapes",
    "removed-api": "violation: schema: PodDisruptionBudget x: policy/v1beta1 PodDisruptionBudget is not served by Kubernetes 1.34; use policy/v1",
    "before-crd": "violation: crd-order: ServiceMonitor monitoring/dcgm-dcgm-exporter (monitoring.coreos.com/v1) from dcgm (rendered) can be applied before its CRD: kps installs it and dcgm does not depend on it",
    "default-credentials": "violation: default-credential: Secret kubeflow/mlpipeline-minio-artifact (kfp (rendered)) keeps the object store's upstream secret key (minio / minio123)",
    "duplicate": "violation: duplicate: Namespace kubeflow is declared by kubeflow (plan) and again by scoped (rendered)",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_preview_fails_on_what_only_rendering_shows(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    upstream = upstream_or_skip()
    kubectl_or_skip()
    code, out = raw_preview(case, tmp_path, capsys, "--upstream", str(upstream))
    assert code == 1, out
    assert CASES[case] in out, out


@pytest.mark.parametrize("case", ["scraped-alert", "after-crd"])
def test_the_compliant_counterpart_passes(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """And the plan JSON and the manifests folder carry what was rendered."""
    import json

    upstream = upstream_or_skip()
    code, out = raw_preview(
        case, tmp_path, capsys, "--upstream", str(upstream), "--json", str(tmp_path / "plan.json"), "--manifests", str(tmp_path / "manifests")
    )
    assert "alert-unscraped" not in out and "crd-order" not in out, out
    assert code == 0, out
    rendered = {s["name"]: s for s in json.loads((tmp_path / "plan.json").read_text())["rendered"]}
    assert rendered["kps"]["source"] == "kube-prometheus-stack 88.5.3" and rendered["kps"]["rendered"]
    assert {"Prometheus", "ServiceMonitor", "PrometheusRule"} <= {o["body"]["kind"] for o in rendered["kps"]["objects"]}
    assert (tmp_path / "manifests" / "rendered.kps.prometheus-monitoring-kps-kube-prometheus-stack-prometheus.yaml").is_file()
    for path in (tmp_path / "manifests").glob("rendered.kps.secret-*.yaml"):
        body = yaml.safe_load(path.read_text())
        assert all(v == "[secret]" for v in [*(body.get("data") or {}).values(), *(body.get("stringData") or {}).values()]), path
    if case == "after-crd":
        assert {"DaemonSet", "ServiceMonitor", "Service"} <= {o["body"]["kind"] for o in rendered["dcgm"]["objects"]}
        assert (tmp_path / "manifests" / "rendered.dcgm.daemonset-monitoring-dcgm-dcgm-exporter.yaml").is_file()


# --- online: sources fetched into the cache and checked against the lock ------------------------


def test_a_missing_chart_is_fetched_from_its_repository_into_the_cache(tmp_path: Path) -> None:
    """Helm's own pull from a chart repository (served here on loopback), then the digest check."""
    import functools
    import http.server
    import threading

    import helm_python

    upstream = upstream_or_skip()
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(upstream / "charts" / "dcgm-exporter-4.8.2.tgz", repo)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(repo))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        helm_python.repo_index_generate(repo, base_url=url)
        locked = next(p for p in load_lock().charts if p.name == "dcgm-exporter")
        pin = locked.model_copy(update={"repository": url})
        cache = tmp_path / "cache"
        archive = Sources(Lock(charts=[pin]), cache_dir=cache, fetch=True).chart_archive(pin)
        assert archive == cache / "charts" / "dcgm-exporter-4.8.2.tgz" and chart_digest(archive) == pin.digest
        wrong = pin.model_copy(update={"digest": "sha256:" + "1" * 64})
        (cache / "charts" / "dcgm-exporter-4.8.2.tgz").unlink()
        with pytest.raises(SourceError, match="the lock pins sha256:1111"):
            Sources(Lock(charts=[wrong]), cache_dir=cache, fetch=True).chart_archive(wrong)
        with pytest.raises(SourceError, match="is not in the cache .* \\(no fetching\\)"):
            Sources(Lock(charts=[pin]), cache_dir=tmp_path / "empty", fetch=False).chart_archive(pin)
    finally:
        server.shutdown()


def test_a_missing_tag_is_fetched_into_the_cache_and_its_commit_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shallow git fetch of the locked tag (GitHub served from the reference mirror)."""
    import subprocess

    upstream = upstream_or_skip()
    config = tmp_path / "gitconfig"
    config.write_text(subprocess.run(["sh", str(upstream / "gitconfig.sh")], check=True, capture_output=True, text=True).stdout)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    pin = next(p for p in load_lock().git if p.repository.endswith("kubeflow/pipelines") and p.tag == "2.17.0")
    sources = Sources(Lock(git=[pin]), cache_dir=tmp_path / "cache", fetch=True)
    sources.check_tag(pin)
    assert (tmp_path / "cache" / "git" / "kubeflow+pipelines.git").is_dir()
    moved = pin.model_copy(update={"commit": "1" * 40})
    with pytest.raises(SourceError, match="tag 2.17.0 resolves to .*, the lock pins 111111111111: the tag moved upstream"):
        Sources(Lock(git=[moved]), cache_dir=tmp_path / "cache", fetch=True).check_tag(moved)
    missing = GitPin(repository=pin.repository, tag="2.14.5", commit="0" * 40)
    with pytest.raises(SourceError, match="tag 2.14.5 could not be fetched"):
        Sources(Lock(git=[missing]), cache_dir=tmp_path / "cache", fetch=True).check_tag(missing)


def test_a_chart_renders_from_its_values_whatever_an_earlier_release_disabled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Helm drops disabled subcharts from a loaded chart in place: one chart object must never
    serve two releases (a release without Grafana left the next one without it)."""
    upstream = upstream_or_skip()
    (tmp_path / "a").mkdir()
    code, out = raw_preview("scraped-alert", tmp_path / "a", capsys, "--upstream", str(upstream))  # Grafana disabled
    assert code == 0, out
    code, out = preview(PROJECT_DIR, "dev-gke", capsys, "--upstream", str(upstream), "--json", str(tmp_path / "plan.json"))
    assert code == 0, out
    import json

    rendered = {s["name"]: s for s in json.loads((tmp_path / "plan.json").read_text())["rendered"]}
    grafana = [
        o for o in rendered["dev-gke-monitoring-release"]["objects"] if o["body"]["kind"] == "Deployment" and o["body"]["metadata"]["name"].endswith("grafana")
    ]
    assert len(grafana) == 1
