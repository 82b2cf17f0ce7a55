"""The pack over whole stacks: every shipped stack passes; a stack that breaks a rule exits 1 naming it.

Rules the stack config can break are shown with a mutated copy of a shipped stack. Rules
the components always honour (the GPU taint, a pinned driver, the node identity, ...)
guard programs that declare resources themselves: those are shown with a small program
that declares the offending resource.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.infra.cli import main
from gpu_platform.policies.rules import RULES
from tests.conftest import PROJECT_DIR

STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))


def project(tmp_path: Path, name: str, base: str, mutate: Callable[[dict[str, Any]], None], program: str | None = None) -> Path:
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    if program is None:
        (tmp_path / "infra").symlink_to(PROJECT_DIR / "infra")
    else:
        (tmp_path / "infra").mkdir()
        # The raw program reads the bad: namespace; Pulumi.yaml declares it, as a project would.
        with (tmp_path / "Pulumi.yaml").open("a") as f:
            f.write("  bad:rule: none\n")
        (tmp_path / "infra" / "__main__.py").write_text(textwrap.dedent(program))
    (tmp_path / "stacks").mkdir()
    document = yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{base}.yaml").read_text())
    mutate(document["config"])
    (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(document))
    return tmp_path


def preview(root: Path, stack: str, capsys: pytest.CaptureFixture[str], policy: dict[str, Any] | None = None) -> tuple[int, str]:
    args = ["preview", stack, "--quiet", "--project-dir", str(root)]
    if policy is not None:
        (root / "policy.json").write_text(json.dumps(policy))
        args += ["--policy-config", str(root / "policy.json")]
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_passes_the_pack(stack: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = preview(PROJECT_DIR, stack, capsys)
    assert code == 0, out
    assert "policy pack: 0 mandatory and 0 advisory violations" in out


def gke(config: dict[str, Any]) -> dict[str, Any]:
    return config["gpu-platform:gke"]


def _pool(config: dict[str, Any], name: str) -> dict[str, Any]:
    (pool,) = [p for p in gke(config)["gpu_pools"] if p["name"] == name]
    return pool


def _ladder(config: dict[str, Any], name: str, ladder: list[dict[str, Any]]) -> None:
    """The pool ``name`` states ``ladder`` in place of its capacity."""
    pool = _pool(config, name)
    del pool["capacity"]
    pool["capacity_ladder"] = ladder


def _flex_beside_dws(config: dict[str, Any]) -> None:
    """prod-gke's A100 pool tries flex-start for a day, beside a queued-provisioning pool whose requests run two days."""
    _ladder(config, "a100", [{"kind": "flex_start", "max_run_duration": "24h"}, {"kind": "on_demand"}])
    gke(config)["gpu_pools"].append(
        {
            "name": "a100-dws",
            "machine_type": "a2-highgpu-1g",
            "accelerator_type": "nvidia-tesla-a100",
            "driver_version": "LATEST",
            "queued_provisioning": True,
            "autoscaling": {"scope": "total", "min_nodes": 0, "max_nodes": 8},
        }
    )
    config["gpu-platform:queues"] = {"queued_provisioning_max_run_seconds": 172800}


CONFIG_CASES: dict[str, tuple[str, Callable[[dict[str, Any]], None], dict[str, Any] | None]] = {
    "gpu-pool-bounded": ("dev-gke", lambda c: gke(c)["gpu_pools"][0]["autoscaling"].update(max_nodes=100), None),
    "gpu-stack-budget": ("dev-gke", lambda c: None, {"gpu-stack-budget": {"maxGpusPerStack": 10}}),
    "gpu-type-allowed": ("dev-gke", lambda c: None, {"gpu-type-allowed": {"allowedGpuTypes": ["nvidia-l4"]}}),
    "spot-has-on-demand-fallback": ("dev-gke", lambda c: gke(c)["gpu_pools"][0].update(capacity="spot"), None),
    "prod-cluster-deletion-protected": ("prod-gke", lambda c: gke(c).update(deletion_protection=False), None),
    "prod-secrets-encrypted": ("prod-eks", lambda c: c["gpu-platform:eks"].update(secrets_encryption={"enabled": False}), None),
    "prod-control-plane-restricted": ("prod-gke", lambda c: gke(c).update(control_plane={}, cloud_nat=False), None),
    "region-allowed": ("dev-gke", lambda c: None, {"region-allowed": {"allowedRegions": ["europe-west4"]}}),
    "metrics-storage-retained": ("dev-gke", lambda c: c["gpu-platform:monitoring"]["prometheus"].update(keep_volume_on_delete=False), None),
    "reservation-rung-first": ("prod-gke", lambda c: _ladder(c, "a100", [{"kind": "spot"}, {"kind": "reservation", "reservation": "a100-training"}]), None),
    "training-not-spot-only": ("prod-gke", lambda c: _pool(c, "a100x8").update(capacity="spot"), None),
    "flex-start-run-limit": ("prod-gke", lambda c: _flex_beside_dws(c), None),
}

RAW = """
import json
import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

rule = pulumi.Config("bad").require("rule")
gpu = gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
    type="nvidia-tesla-t4", count=1,
    gpu_driver_installation_config=None if rule == "gpu-driver-pinned" else
    gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(gpu_driver_version="DEFAULT"),
)
taints = [] if rule == "gpu-pool-tainted" else [gcp.container.NodePoolNodeConfigTaintArgs(key="nvidia.com/gpu", value="present", effect="NO_SCHEDULE")]
gcp.container.NodePool("pool", gcp.container.NodePoolArgs(
    cluster="c", location="us-central1-b", name="pool",
    autoscaling=gcp.container.NodePoolAutoscalingArgs(total_min_node_count=0, total_max_node_count=2),
    node_config=gcp.container.NodePoolNodeConfigArgs(
        machine_type="n1-standard-4", guest_accelerators=[gpu], taints=taints,
        service_account=None if rule == "gke-dedicated-node-service-account" else "n@p.iam.gserviceaccount.com",
        workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
            mode="GCE_METADATA" if rule == "gke-workload-identity" else "GKE_METADATA"),
    ),
))
if rule == "images-pinned":
    k8s.apps.v1.Deployment("web", spec=k8s.apps.v1.DeploymentSpecArgs(
        selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"app": "web"}),
        template=k8s.core.v1.PodTemplateSpecArgs(
            metadata=k8s.meta.v1.ObjectMetaArgs(labels={"app": "web"}),
            spec=k8s.core.v1.PodSpecArgs(containers=[k8s.core.v1.ContainerArgs(name="web", image="rapidsai/notebooks")]),
        ),
    ))
if rule in ("charts-pinned", "no-plaintext-secrets"):
    k8s.helm.v3.Release("prom", k8s.helm.v3.ReleaseArgs(
        chart="kube-prometheus-stack", version="~88" if rule == "charts-pinned" else "88.5.3",
        values={"grafana": {"adminPassword": "hunter2"}} if rule == "no-plaintext-secrets" else {},
    ))
if rule == "iam-no-wildcard-actions":
    aws.iam.Policy("autoscaler", aws.iam.PolicyArgs(policy=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})))
if rule == "iam-no-full-access-managed-policies":
    fsx = aws.iam.Role("fsx-csi", assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": []}))
    aws.iam.RolePolicyAttachment("fsx-csi", role=fsx.name, policy_arn="arn:aws:iam::aws:policy/AmazonFSxFullAccess")
if rule == "dcgm-probe-delay":
    k8s.helm.v3.Release("dcgm", k8s.helm.v3.ReleaseArgs(
        chart="dcgm-exporter", version="4.8.2",
        values={"livenessProbe": {"initialDelaySeconds": 5}, "readinessProbe": {"initialDelaySeconds": 5}},
    ))
if rule == "pipeline-storage-retained":
    k8s.core.v1.PersistentVolumeClaim("mysql", metadata=k8s.meta.v1.ObjectMetaArgs(name="mysql-pv-claim", namespace="kubeflow"),
        spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(access_modes=["ReadWriteOnce"],
            resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": "20Gi"})))
if rule == "tenant-gpu-quota":
    k8s.core.v1.Namespace("tenant", metadata=k8s.meta.v1.ObjectMetaArgs(name="team-a", labels={"gpu-platform.io/tenant": "team-a"}))
if rule in ("karpenter-node-pool-limited", "karpenter-gpu-node-pool-tainted"):
    # A NodePool written by hand: unbounded, or with its GPU taint dropped.
    limits = None if rule == "karpenter-node-pool-limited" else {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4"}
    taints = [] if rule == "karpenter-gpu-node-pool-tainted" else [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    k8s.apiextensions.CustomResource("gpu-pool", api_version="karpenter.sh/v1", kind="NodePool",
        metadata=k8s.meta.v1.ObjectMetaArgs(name="gpu"),
        spec={"template": {"spec": {"taints": taints, "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
              "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge"]}]}},
              **({"limits": limits} if limits else {})})
if rule in ("bucket-encrypted", "bucket-not-public"):
    # A bucket made by hand: no default encryption, no public access block.
    aws.s3.Bucket("data", bucket="acme-raw-data")
if rule == "fsx-encrypted":
    # A persistent Lustre file system without a customer-managed key.
    aws.fsx.LustreFileSystem("scratch", subnet_ids="subnet-1", storage_capacity=1200, deployment_type="PERSISTENT_2",
                             per_unit_storage_throughput=125)
if rule == "iam-no-basic-roles":
    gcp.projects.IAMMember("grant", gcp.projects.IAMMemberArgs(project="p", role="roles/owner", member="user:a@example.com"))
"""


@pytest.mark.parametrize("rule", sorted(r.name for r in RULES))
def test_a_stack_that_breaks_the_rule_exits_1_naming_it(rule: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if rule in CONFIG_CASES:
        base, mutate, policy = CONFIG_CASES[rule]
        name = "prod-mutated" if base.startswith("prod") else "mutated"
        root = project(tmp_path, name, base, mutate)
    else:
        name, policy = "raw", None
        root = project(tmp_path, name, "dev-gke", lambda c: c.update({"bad:rule": rule}), RAW)
    code, out = preview(root, name, capsys, policy)
    assert code == 1, out
    assert f"violation: policy {rule}: " in out, out
    assert "; fix: " in out


def test_advisory_findings_do_not_fail_the_preview(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path, "mutated", "dev-gke", lambda c: None)
    code, out = preview(root, "mutated", capsys, {"region-allowed": {"enforcementLevel": "advisory", "allowedRegions": ["europe-west4"]}})
    assert code == 0, out
    assert "advisory: policy region-allowed: " in out


def test_bad_policy_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path, "mutated", "dev-gke", lambda c: None)
    code, out = preview(root, "mutated", capsys, {"gpu-stack-budget": {"maxGpusPerStack": "lots"}})
    assert code == 2
    assert out.strip().splitlines() == [
        'gpu-platform: policy-config:gpu-stack-budget.maxGpusPerStack: Input should be a valid integer, unable to parse string as an integer (got "lots")'
    ]


def test_plan_json_carries_policy_violations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path, "mutated", "dev-gke", lambda c: gke(c)["gpu_pools"][0].update(capacity="spot"))
    assert main(["preview", "mutated", "--quiet", "--project-dir", str(root), "--json", str(tmp_path / "plan.json")]) == 1
    capsys.readouterr()
    (violation,) = json.loads((tmp_path / "plan.json").read_text())["violations"]
    assert violation["rule"] == "spot-has-on-demand-fallback"
    assert violation["enforcement"] == "mandatory"
    assert violation["resource"] == "mutated-t4"
    assert violation["fix"].startswith("Use capacity spot_then_on_demand")


@pytest.mark.parametrize(("base", "where"), [("dev-eks", "node group h100-block"), ("prod-eks", "reserved NodePool")])
def test_an_eks_reservation_after_spot_exits_1_on_either_provisioner(base: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The guide's h100 class with spot moved before its capacity block and reservation: the cluster autoscaler's
    priority expander (dev-eks) or Karpenter's weights (prod-eks) try spot first, and reservation-rung-first names the
    reservation's node group or NodePool."""
    from tests.components.eks.test_ladders import GUIDE
    from tests.test_readme_blocks import block

    def mutate(config: dict[str, Any]) -> None:
        (h100,) = [c for c in yaml.safe_load(block(GUIDE, "example:eks-ladder-reserved"))["gpu-platform:eks_node_groups"]["classes"] if c["name"] == "h100"]
        block_rung, reserved, spot, on_demand = h100["capacity_ladder"]
        h100["capacity_ladder"] = [spot, block_rung, reserved, on_demand]
        config["gpu-platform:eks_node_groups"]["classes"].append(h100)

    name = "prod-mutated" if base.startswith("prod") else "mutated"
    code, out = preview(project(tmp_path, name, base, mutate), name, capsys)
    assert code == 1, out
    found = [line for line in out.splitlines() if line.startswith("violation: policy reservation-rung-first: ")]
    assert any(where in line and "make it capacity_ladder's first rung" in line for line in found), out
