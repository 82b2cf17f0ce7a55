"""Bad input, generated from the shipped stacks by mutation.

Each case loads a shipped stack file, changes one thing (a key set, deleted or renamed, a
wrong type, a boolean for an integer, a secret where a plain value is required, a bad
encoding, a duplicate key, a misspelt namespace, a bad stack name...), writes it into a
temporary project whose infra/ is the real program, and runs ``gpu-platform preview``
in-process. Every case must exit 2 with one line naming the key as the user wrote it, no
traceback and no secret value.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.infra.cli import main
from gpu_platform.infra.yaml_io import SAFE_DUMPER
from tests.conftest import PROJECT_DIR

SECRET = "hunter2-Sup3rS3cret"
"""A secret value no output may show."""
CIPHER = "v1:c2VjcmV0LWNpcGhlcnRleHQtbmV2ZXItc2hvd24="


def _stack(name: str) -> dict[str, Any]:
    return yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{name}.yaml").read_text())


STACKS = {name: _stack(name) for name in ("dev-gke", "prod-gke", "dev-eks", "prod-eks")}


@dataclass(frozen=True)
class Case:
    id: str
    stack: str
    expect: str
    """Text the one error line must hold: the key path as the user wrote it."""
    change: Callable[[dict[str, Any]], Any] | None = None
    """Changes the parsed stack file in place (or returns text/bytes to write instead)."""
    stack_arg: str | None = None
    """The stack name given on the command line, when it is the thing under test."""
    pulumi_yaml: bytes | None = None


def _walk(doc: dict[str, Any], path: tuple[Any, ...]) -> tuple[Any, Any]:
    node: Any = doc["config"]
    for part in path[:-1]:
        node = node[part]
    return node, path[-1]


def set_(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        node, last = _walk(doc, path)
        node[last] = copy.deepcopy(value)

    return change


def delete(*path: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        node, last = _walk(doc, path)
        del node[last]

    return change


def rename(*path: Any, to: str) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        node, last = _walk(doc, path)
        node[to] = node.pop(last)

    return change


def text(transform: Callable[[str], str | bytes]) -> Callable[[dict[str, Any]], str | bytes]:
    def change(doc: dict[str, Any]) -> str | bytes:
        return transform(yaml.safe_dump(doc, sort_keys=False))

    return change


def _display(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# --- generated: every leaf of every shipped stack, given a value of the wrong type -----------

_WRONG = {bool: 7, int: True, float: True, str: {"not": "text"}, list: "not-a-list", dict: 5}
_SKIP_NAMESPACES = ("gcp:", "aws:", "kubernetes:", "pulumi:")


def _leaves(node: Any, path: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], Any]]:
    out = [(path, node)] if len(path) > 1 else []
    if isinstance(node, dict) and not (set(node) == {"secure"}):
        for key, value in node.items():
            out += _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _leaves(value, (*path, i))
    return out


def _generated() -> list[Case]:
    cases: list[Case] = []
    seen: set[str] = set()
    for stack, doc in STACKS.items():
        for key, value in doc["config"].items():
            if key.startswith(_SKIP_NAMESPACES) or (isinstance(value, dict) and set(value) == {"secure"}):
                continue
            for path, leaf in [((key,), value), *_leaves(value, (key,))]:
                if isinstance(path[-1], int) or type(leaf) not in _WRONG:
                    continue  # list items are checked through their fields
                shown = _display(path)
                generic = shown.split(":", 1)[1]
                if generic in seen:
                    continue
                seen.add(generic)
                cases.append(Case(f"wrong-type:{stack}:{generic}", stack, shown, set_(*path, value=_WRONG[type(leaf)])))
                if isinstance(leaf, dict) and not key.endswith(("labels", "tags")) and path[-1] not in ("labels", "tags", "resource_labels", "notebook"):
                    bogus = f"{path[-1]}_bogus" if len(path) > 1 else "bogus"
                    cases.append(Case(f"unknown-key:{stack}:{generic}", stack, f"{shown}.{bogus}", set_(*path, bogus, value=1)))
    return cases


# --- hand-written: one member of each class the generator cannot reach -----------------------

G, E = "gpu-platform:gke", "gpu-platform:eks"
NG = "gpu-platform:eks_node_groups"


def _utf16(t: str) -> bytes:
    return t.encode("utf-16")


def _dup_top(t: str) -> str:
    return t.replace("config:\n", "config:\n  gpu-platform:cloud: gcp\n", 1)


HAND: list[Case] = [
    # stack file and YAML level
    Case("encoding-utf16", "dev-gke", "Pulumi.dev-gke.yaml: not UTF-8", text(_utf16)),
    Case("encoding-binary", "dev-gke", "Pulumi.dev-gke.yaml: not UTF-8", lambda d: b"\x89PNG\r\n\x1a\n\x00\x00\x00"),
    Case("encoding-latin1", "dev-gke", "Pulumi.dev-gke.yaml: not UTF-8", text(lambda t: t.replace("team-a", "équipe").encode("latin-1"))),
    Case("duplicate-top-key", "dev-gke", "duplicate key config.gpu-platform:cloud", text(_dup_top)),
    Case(
        "duplicate-nested-key",
        "dev-gke",
        "duplicate key config.gpu-platform:gke.location",
        text(lambda t: t.replace("  gpu-platform:gke:\n", "  gpu-platform:gke:\n    location: europe-west4\n", 1)),
    ),
    Case("no-config-section", "dev-gke", "no config: section", lambda d: "settings:\n  gpu-platform:cloud: gcp\n"),
    Case("config-empty", "dev-gke", "Pulumi.dev-gke.yaml: the config: section is empty", lambda d: "config:\n"),
    Case("empty-file", "dev-gke", "Pulumi.dev-gke.yaml: expected a mapping with a config: section", lambda d: ""),
    Case("bom-then-no-config", "dev-gke", "Pulumi.dev-gke.yaml: no config: section", lambda d: "\ufeffsettings: 1\n".encode()),
    Case(
        "secret-unknown-key",
        "dev-gke",
        "gpu-platform:grafana_password: unknown key; did you mean grafana_admin_password?",
        set_("gpu-platform:grafana_password", value={"secure": CIPHER}),
    ),
    Case("secret-with-typo-in-value", "dev-gke", "gpu-platform:grafana_admin_password", set_("gpu-platform:grafana_admin_password", value=[SECRET])),
    Case("config-not-mapping", "dev-gke", "config: must be a mapping", lambda d: "config: [1, 2]\n"),
    Case("file-not-mapping", "dev-gke", "expected a mapping with a config: section", lambda d: "- just\n- a list\n"),
    Case("invalid-yaml", "dev-gke", "invalid YAML at line", lambda d: "config:\n  gpu-platform:cloud: [gcp\n"),
    Case("pulumi-yaml-not-mapping", "dev-gke", "Pulumi.yaml: expected a mapping", None, pulumi_yaml=b"- a list\n"),
    Case("pulumi-yaml-utf16", "dev-gke", "Pulumi.yaml: not UTF-8", None, pulumi_yaml="name: gpu-platform\n".encode("utf-16")),
    Case("pulumi-yaml-duplicate", "dev-gke", "Pulumi.yaml: duplicate key name", None, pulumi_yaml=b"name: gpu-platform\nname: other\nstackConfigDir: stacks\n"),
    # stack names
    Case("stack-name-dotdot", "dev-gke", "not a Pulumi stack name", stack_arg="../x"),
    Case("stack-name-slash", "dev-gke", "not a Pulumi stack name", stack_arg="team/dev"),
    Case("stack-name-space", "dev-gke", "not a Pulumi stack name", stack_arg="dev gke"),
    Case("stack-name-too-long", "dev-gke", "not a Pulumi stack name", stack_arg="d" * 101),
    Case("stack-name-empty", "dev-gke", "not a Pulumi stack name", stack_arg=""),
    # namespaces
    Case("namespace-underscore", "dev-gke", "gpu_platform:dask: unknown config namespace", rename("gpu-platform:dask", to="gpu_platform:dask")),
    Case("namespace-typo", "dev-gke", "did you mean gpu-platform:dask", rename("gpu-platform:dask", to="gpu-platfrom:dask")),
    Case("namespace-provider-typo", "dev-gke", "did you mean gcp:project", rename("gcp:project", to="gpc:project")),
    Case("namespace-empty-name", "dev-gke", "must be <namespace>:<name>", set_("gpu-platform:", value=1)),
    # top-level keys
    Case("top-unknown-key", "dev-gke", "gpu-platform:clowd: unknown key; did you mean cloud?", set_("gpu-platform:clowd", value="gcp")),
    Case("top-cloud-missing", "dev-gke", "gpu-platform:cloud: required", delete("gpu-platform:cloud")),
    Case("top-cloud-bad", "dev-gke", "gpu-platform:cloud", set_("gpu-platform:cloud", value="azure")),
    Case("top-environment-bad", "prod-eks", "gpu-platform:environment", set_("gpu-platform:environment", value="production")),
    Case(
        "top-kubernetes-version-float",
        "dev-gke",
        "gpu-platform:kubernetes_version: kubernetes_version must be a minor version",
        set_("gpu-platform:kubernetes_version", value=1.30),
    ),
    # secrets
    Case("secret-as-plain-map", "dev-gke", "gpu-platform:grafana_admin_password", set_("gpu-platform:grafana_admin_password", value={"value": SECRET})),
    Case(
        "secret-in-plain-text",
        "dev-gke",
        "gpu-platform:grafana_admin_password: must be a Pulumi secret",
        set_("gpu-platform:grafana_admin_password", value=SECRET),
    ),
    Case("secret-missing", "dev-gke", "gpu-platform:grafana_admin_password: required", delete("gpu-platform:grafana_admin_password")),
    Case(
        "secret-dask-tenant-name",
        "dev-gke",
        "gpu-platform:dask.tenants[0].name: a secret where a plain value is required",
        set_("gpu-platform:dask", "tenants", 0, "name", value={"secure": CIPHER}),
    ),
    Case(
        "secret-dask-namespace",
        "prod-eks",
        "gpu-platform:dask.namespace: a secret where a plain value is required",
        set_("gpu-platform:dask", "namespace", value={"secure": CIPHER}),
    ),
    Case(
        "secret-owner-email",
        "prod-eks",
        "gpu-platform:kubeflow.install.tenants[0].owner: a secret where a plain value",
        set_("gpu-platform:kubeflow", "install", "tenants", 0, "owner", value={"secure": CIPHER}),
    ),
    Case(
        "secret-label",
        "dev-gke",
        "gpu-platform:gke.resource_labels.team: a secret where a plain value",
        set_("gpu-platform:gke", "resource_labels", "team", value={"secure": CIPHER}),
    ),
    Case("secret-whole-section", "dev-gke", "gpu-platform:monitoring: a secret where a plain value", set_("gpu-platform:monitoring", value={"secure": CIPHER})),
    Case(
        "secret-cluster-name",
        "prod-eks",
        "gpu-platform:eks.cluster_name: a secret where a plain value",
        set_("gpu-platform:eks", "cluster_name", value={"secure": CIPHER}),
    ),
    # version-like values read as numbers
    Case(
        "eks-version-float",
        "prod-eks",
        "gpu-platform:eks.version: text expected, but YAML read an unquoted number (1.3",
        set_("gpu-platform:eks", "version", value=1.30),
    ),
    Case(
        "kubeflow-release-float",
        "prod-eks",
        "gpu-platform:kubeflow.install.release: text expected",
        set_("gpu-platform:kubeflow", "install", "release", value=2.14),
    ),
    # booleans for integers, one per area
    Case(
        "bool-gke-max-nodes",
        "dev-gke",
        "gpu-platform:gke.gpu_pools[0].autoscaling.max_nodes: a whole number expected",
        set_("gpu-platform:gke", "gpu_pools", 0, "autoscaling", "max_nodes", value=True),
    ),
    Case(
        "bool-eks-system-max",
        "prod-eks",
        "gpu-platform:eks.system_node_group.max_nodes: a whole number expected",
        set_("gpu-platform:eks", "system_node_group", "max_nodes", value=True),
    ),
    Case(
        "bool-eks-class-max",
        "prod-eks",
        "gpu-platform:eks_node_groups.classes[0].max_nodes: a whole number expected",
        set_(NG.replace("", ""), "classes", 0, "max_nodes", value=True),
    ),
    Case(
        "bool-dask-quota",
        "dev-gke",
        "gpu-platform:dask.tenants[0].gpu_quota: a whole number expected",
        set_("gpu-platform:dask", "tenants", 0, "gpu_quota", value=True),
    ),
    Case(
        "bool-prometheus-storage",
        "dev-gke",
        "gpu-platform:monitoring.prometheus.storage_size_gib: a whole number expected",
        set_("gpu-platform:monitoring", "prometheus", "storage_size_gib", value=True),
    ),
    Case(
        "bool-kubeflow-gpus",
        "prod-eks",
        "gpu-platform:kubeflow.install.tenants[0].gpus: a whole number expected",
        set_("gpu-platform:kubeflow", "install", "tenants", 0, "gpus", value=False),
    ),
    # named as written: the system node group's name clashing with a GPU class
    Case(
        "system-group-name-clash",
        "dev-eks",
        "gpu-platform:eks.system_node_group.name: ",
        set_("gpu-platform:eks", "system_node_group", "name", value="t4-spot"),
    ),
    # values out of their range, per area
    Case(
        "gke-min-above-max",
        "dev-gke",
        "gpu-platform:gke.gpu_pools[0].autoscaling",
        set_("gpu-platform:gke", "gpu_pools", 0, "autoscaling", "min_nodes", value=50),
    ),
    Case(
        "gke-accelerator-count",
        "dev-gke",
        "gpu-platform:gke.gpu_pools[0].accelerator_count",
        set_("gpu-platform:gke", "gpu_pools", 0, "accelerator_count", value=3),
    ),
    Case("gke-negative-disk", "dev-gke", "gpu-platform:gke.gpu_pools[0].disk_size_gb", set_("gpu-platform:gke", "gpu_pools", 0, "disk_size_gb", value=-1)),
    Case("eks-zone-other-region", "prod-eks", "gpu-platform:eks.zones[0]", set_("gpu-platform:eks", "zones", 0, value="eu-west-1a")),
    Case(
        "eks-bad-cidr",
        "prod-eks",
        "gpu-platform:eks.endpoint.public_access_cidrs: 'not-a-cidr' is not",
        set_("gpu-platform:eks", "endpoint", "public_access_cidrs", 0, value="not-a-cidr"),
    ),
    Case(
        "eks-groups-bad-capacity", "prod-eks", "gpu-platform:eks_node_groups.classes[0].capacity", set_(NG, "classes", 0, "capacity", value="spot_only_please")
    ),
    Case(
        "eks-groups-bad-duration",
        "dev-eks",
        "gpu-platform:eks_node_groups.autoscaler.max_node_provision_time",
        set_(NG, "autoscaler", "max_node_provision_time", value="7 minutes"),
    ),
    # prod-eks provisions with Karpenter: the cluster autoscaler's settings are refused, and Karpenter's own checked.
    Case(
        "eks-karpenter-with-expanders",
        "prod-eks",
        "gpu-platform:eks_node_groups.autoscaler.expanders",
        set_(NG, "autoscaler", value={"expanders": ["priority", "least-waste"]}),
    ),
    Case(
        "eks-karpenter-with-priority-tiers",
        "prod-eks",
        "gpu-platform:eks_node_groups.priority_expander",
        set_(NG, "priority_expander", value={"tiers": [{"priority": 10, "patterns": ["^eks-small-spot-"]}]}),
    ),
    Case(
        "eks-karpenter-bad-consolidate-after",
        "prod-eks",
        "gpu-platform:eks_node_groups.karpenter.disruption.consolidate_after",
        set_(NG, "karpenter", "disruption", "consolidate_after", value="10 minutes"),
    ),
    Case(
        "eks-karpenter-budget-without-duration",
        "prod-eks",
        "gpu-platform:eks_node_groups.karpenter.disruption.budgets[1].duration",
        set_(NG, "karpenter", "disruption", "budgets", 1, value={"nodes": "0", "schedule": "@daily"}),
    ),
    Case("eks-autoscaler-with-karpenter-settings", "dev-eks", "gpu-platform:eks_node_groups.karpenter", set_(NG, "karpenter", value={"ami_version": "latest"})),
    Case(
        "monitoring-bad-retention",
        "dev-gke",
        "gpu-platform:monitoring.prometheus.retention",
        set_("gpu-platform:monitoring", "prometheus", "retention", value="7days"),
    ),
    Case(
        "monitoring-bad-preset",
        "dev-gke",
        "gpu-platform:monitoring.prometheus.preset",
        set_("gpu-platform:monitoring", "prometheus", "preset", value="fastest"),
    ),
    Case("dask-bad-tenant-name", "dev-gke", "gpu-platform:dask.tenants[0].name", set_("gpu-platform:dask", "tenants", 0, "name", value="Team_A")),
    Case("dask-kube-namespace", "dev-gke", "gpu-platform:dask.tenants[0].name", set_("gpu-platform:dask", "tenants", 0, "name", value="kube-system")),
    Case("kubeflow-bad-edition", "prod-eks", "gpu-platform:kubeflow.install.edition", set_("gpu-platform:kubeflow", "install", "edition", value="everything")),
    Case(
        "kubeflow-bad-owner",
        "prod-eks",
        "gpu-platform:kubeflow.install.tenants[0].owner",
        set_("gpu-platform:kubeflow", "install", "tenants", 0, "owner", value="not-an-email"),
    ),
    Case(
        "kubeflow-tenant-name-missing",
        "prod-eks",
        "gpu-platform:kubeflow.install.tenants[0].name: required",
        delete("gpu-platform:kubeflow", "install", "tenants", 0, "name"),
    ),
    # values accepted before although wrong
    Case(
        "autoscaler-duration-too-long",
        "dev-eks",
        "gpu-platform:eks_node_groups.autoscaler.max_node_provision_time: '9999999999h' is longer",
        set_(NG, "autoscaler", "max_node_provision_time", value="9999999999h"),
    ),
    Case(
        "autoscaler-duration-in-days",
        "dev-eks",
        "gpu-platform:eks_node_groups.autoscaler.max_node_provision_time: '1d' is not a Go duration",
        set_(NG, "autoscaler", "max_node_provision_time", value="1d"),
    ),
    Case(
        "prometheus-retention-out-of-order",
        "dev-gke",
        "gpu-platform:monitoring.prometheus.retention: '12h7d'",
        set_("gpu-platform:monitoring", "prometheus", "retention", value="12h7d"),
    ),
    Case(
        "prometheus-storage-class-not-dns",
        "prod-eks",
        "gpu-platform:monitoring.prometheus.storage_class: 'GP3_fast' is not a DNS subdomain",
        set_("gpu-platform:monitoring", "prometheus", "storage_class", value="GP3_fast"),
    ),
    Case(
        "kubeflow-storage-class-not-dns",
        "prod-eks",
        "gpu-platform:kubeflow.install.storage_class: 'gp3 ' is not a DNS subdomain",
        set_("gpu-platform:kubeflow", "install", "storage_class", value="gp3 "),
    ),
    Case(
        "eks-storage-class-not-dns",
        "prod-eks",
        "gpu-platform:eks.block_storage.storage_class: '-gp3' is not a DNS subdomain",
        set_("gpu-platform:eks", "block_storage", value={"storage_class": "-gp3"}),
    ),
    Case(
        "prometheus-chart-repository-not-url",
        "dev-gke",
        "gpu-platform:monitoring.prometheus.repository: chart repository 'prometheus-community'",
        set_("gpu-platform:monitoring", "prometheus", "repository", value="prometheus-community"),
    ),
    Case(
        "gke-too-many-labels",
        "dev-gke",
        "gpu-platform:gke.resource_labels: 65 labels: GCP allows at most 64",
        set_("gpu-platform:gke", "resource_labels", value={f"k{i}": "v" for i in range(65)}),
    ),
    Case("eks-reserved-tag-prefix", "prod-eks", "gpu-platform:eks.tags: tag key 'aws:team'", set_("gpu-platform:eks", "tags", value={"aws:team": "ds"})),
    Case("eks-too-many-tags", "prod-eks", "gpu-platform:eks.tags: 46 tags", set_("gpu-platform:eks", "tags", value={f"k{i}": "v" for i in range(46)})),
    Case(
        "gke-system-pool-gpu-machine",
        "dev-gke",
        "gpu-platform:gke.system_pool.machine_type: a2-highgpu-1g is a GPU machine type",
        set_("gpu-platform:gke", "system_pool", "machine_type", value="a2-highgpu-1g"),
    ),
    Case(
        "gke-system-pool-unknown-machine",
        "dev-gke",
        "gpu-platform:gke.system_pool.machine_type: machine type 'e2-giant-999' is not in the catalog",
        set_("gpu-platform:gke", "system_pool", "machine_type", value="e2-giant-999"),
    ),
    Case(
        "eks-system-group-gpu-type",
        "prod-eks",
        "gpu-platform:eks.system_node_group.instance_types",
        set_("gpu-platform:eks", "system_node_group", "instance_types", value=["p3.2xlarge"]),
    ),
    Case(
        "gke-environment-in-section",
        "dev-gke",
        "gpu-platform:gke.environment: set gpu-platform:environment instead",
        set_("gpu-platform:gke", "environment", value="prod"),
    ),
    Case(
        "eks-environment-in-section",
        "prod-eks",
        "gpu-platform:eks.environment: set gpu-platform:environment instead",
        set_("gpu-platform:eks", "environment", value="dev"),
    ),
    Case(
        "eks-environment-tag-is-own",
        "prod-eks",
        "gpu-platform:eks.tags: tag key 'gpu-platform-environment'",
        set_("gpu-platform:eks", "tags", value={"gpu-platform-environment": "prod"}),
    ),
    Case(
        "gke-zone-not-in-region",
        "dev-gke",
        "gpu-platform:gke.node_locations[1]: zone us-central1-z is not a zone of us-central1",
        set_("gpu-platform:gke", "node_locations", 1, value="us-central1-z"),
    ),
    Case("gke-pool-zone-not-in-region", "prod-gke", "gpu-platform:gke.node_locations", set_("gpu-platform:gke", "node_locations", 0, value="us-central1-e")),
    Case(
        "eks-zone-not-in-region-data",
        "prod-eks",
        "gpu-platform:eks.zones[2]: zone us-west-2z is not a zone of us-west-2",
        set_("gpu-platform:eks", "zones", 2, value="us-west-2z"),
    ),
    Case(
        "dcgm-field-dcgm-lacks",
        "dev-gke",
        "gpu-platform:monitoring.dcgm_exporter.metrics[1].field: DCGM has no field DCGM_FI_DEV_GPU_UTILS",
        set_(
            "gpu-platform:monitoring",
            "dcgm_exporter",
            "metrics",
            value=[
                {"field": "DCGM_FI_DEV_GPU_UTIL", "type": "gauge", "help": "GPU utilisation"},
                {"field": "DCGM_FI_DEV_GPU_UTILS", "type": "gauge", "help": "typo"},
            ],
        ),
    ),
    Case("eks-zones-missing-offline", "dev-eks", "gpu-platform:eks.zones: required by the offline preview", delete("gpu-platform:eks", "zones")),
    Case("gke-missing-section", "dev-gke", "gpu-platform:gke", delete("gpu-platform:gke")),
    Case("eks-missing-node-groups", "prod-eks", "gpu-platform:eks_node_groups", delete("gpu-platform:eks_node_groups")),
]

CASES = [*_generated(), *HAND]


def test_there_are_enough_distinct_cases() -> None:
    assert len({c.id for c in CASES}) == len(CASES)
    assert len(CASES) >= 110


def make_project(root: Path) -> Path:
    """A project at ``root`` whose infra/ is the real program, with an empty stacks/ folder."""
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "infra").symlink_to(PROJECT_DIR / "infra", target_is_directory=True)
    (root / "stacks").mkdir()
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("project"))


def _write(case: Case, project: Path) -> str:
    """Write the case's mutated stack file (and Pulumi.yaml) into the project; the stack to name."""
    for old in (project / "stacks").iterdir():
        old.unlink()
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", project / "Pulumi.yaml")
    if case.pulumi_yaml is not None:
        (project / "Pulumi.yaml").write_bytes(case.pulumi_yaml)
    doc = copy.deepcopy(STACKS[case.stack])
    written: Any = case.change(doc) if case.change else None
    if written is None:
        written = yaml.dump(doc, Dumper=SAFE_DUMPER, sort_keys=False)  # libyaml's: a 5 MB value in a second
    path = project / "stacks" / f"Pulumi.{case.stack}.yaml"
    if isinstance(written, bytes):
        path.write_bytes(written)
    else:
        path.write_text(written)
    return case.stack if case.stack_arg is None else case.stack_arg


def run_case(case: Case, root: Path) -> tuple[int, str, str]:
    """``gpu-platform preview`` of the case's stack in a fresh project under ``root``: (exit code, stdout, stderr)."""
    import contextlib
    import io

    project = root if (root / "Pulumi.yaml").exists() else make_project(root)
    stack = _write(case, project)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["preview", stack, "--project-dir", str(project), "--quiet", "--no-render"])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_with_one_line(case: Case, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = _write(case, project)
    code = main(["preview", stack, "--project-dir", str(project), "--quiet"])
    out, err = capsys.readouterr()
    both = out + err
    assert code == 2, both
    assert case.expect in err, err
    assert "Traceback" not in both
    assert SECRET not in both and CIPHER not in both
    assert all(line.strip() for line in err.splitlines()), err


# --- the other commands that read a stack: the same reader, the same refusals -----------------

PREVIEW_ONLY = {"eks-zones-missing-offline"}
"""Refused by the offline engine while the program runs (a lookup only the preview answers)."""
COMMANDS = {
    "plan-capacity": ["plan-capacity", "{stack}", "--pool", "t4", "--cpu", "1", "--memory", "1Gi"],
    "preflight": ["preflight", "eks", "{stack}"],
}
OTHER = [(command, case) for command in COMMANDS for case in HAND if case.id not in PREVIEW_ONLY]


@pytest.mark.parametrize(("command", "case"), OTHER, ids=[f"{c}:{case.id}" for c, case in OTHER])
def test_every_command_refuses_bad_input_with_one_line(command: str, case: Case, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = _write(case, project)
    argv = [a.replace("{stack}", stack) for a in COMMANDS[command]] + ["--project-dir", str(project)]
    code = main(argv)
    out, err = capsys.readouterr()
    both = out + err
    assert code == 2, both
    assert case.expect in err, err
    assert "Traceback" not in both
    assert SECRET not in both and CIPHER not in both
