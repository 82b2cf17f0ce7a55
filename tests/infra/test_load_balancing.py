"""The AWS Load Balancer Controller and the inference service in the stack and the program: the controller is
installed wherever an ALB Ingress exists, with the controller's own IAM policy read from the pinned upstream
sources (its digest checked); the stack's refusals are one line each before anything is registered; the
rendered controller names the cluster and the HPA targets the Deployment on the DCGM metric."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.components.load_balancer.args import AwsLoadBalancerControllerArgs, iam_policy_name, iam_policy_url
from gpu_platform.infra.cli import main
from gpu_platform.infra.preview.engine import Plan, run_program
from gpu_platform.infra.preview.render import render_plan
from gpu_platform.infra.preview.upstream import FilePin, SourceError, Sources, load_lock, sources_for_program, upstream_file
from gpu_platform.infra.stack.model import StackConfig
from gpu_platform.infra.stack.read import load_stack, read_stack_file
from gpu_platform.infra.testing import preview_program
from tests.conftest import PROJECT_DIR, UPSTREAM_DIR, shipped_plan, upstream_or_skip
from tests.factories import eks_stack, stack

NS = "gpu-platform:"
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
IMAGE = "nvcr.io/nvidia/tritonserver:25.01-py3"
POLICY_URL = iam_policy_url("3.5.0")
RELEASE = "kubernetes:helm.sh/v3:Release"
INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"


def _project(root: Path, stack: str, change: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of the project whose stack file ``stack`` is changed by ``change`` (its config)."""
    (root / "stacks").mkdir(parents=True)
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "infra").symlink_to(PROJECT_DIR / "infra")
    document = yaml.safe_load((PROJECT_DIR / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    change(document["config"])
    (root / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(document))
    return root


def _with_inference(config: dict[str, Any]) -> None:
    config[NS + "inference"] = {"image": IMAGE, "pool": "t4", "max_replicas": 3}


@pytest.fixture
def upstream_env() -> Iterator[Path]:
    """The program reads upstream files from ../shared/reference/upstream (as `GPU_PLATFORM_UPSTREAM=...`)."""
    upstream = upstream_or_skip()
    os.environ["GPU_PLATFORM_UPSTREAM"] = str(upstream)
    try:
        yield upstream
    finally:
        os.environ.pop("GPU_PLATFORM_UPSTREAM", None)


@cache
def _inference_eks(root: str) -> Plan:
    project = _project(Path(root), "dev-eks", _with_inference)
    config, secrets = read_stack_file(project, "dev-eks")
    with sources_for_program(Sources(load_lock(), upstream_dir=UPSTREAM_DIR)):
        return run_program(project, "dev-eks", config, secrets)


KUBEFLOW_INGRESS = {
    "hostname": "kubeflow.corp.example",
    "certificate_arn": "arn:aws:acm:us-west-2:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555",
    "cognito_user_pool_arn": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_AbCdEf",
    "cognito_user_pool_client_id": "4example",
    "cognito_user_pool_domain": "corp-kubeflow",
}


def _with_kubeflow_ingress(config: dict[str, Any]) -> None:
    config[NS + "kubeflow"]["install"]["ingress"] = KUBEFLOW_INGRESS


@cache
def _kubeflow_ingress_karpenter(root: str) -> Plan:
    """prod-eks (Karpenter provisions its GPU classes) with the Kubeflow UI on an ALB."""
    project = _project(Path(root), "prod-eks", _with_kubeflow_ingress)
    config, secrets = read_stack_file(project, "prod-eks")
    with sources_for_program(Sources(load_lock(), upstream_dir=UPSTREAM_DIR)):
        return run_program(project, "prod-eks", config, secrets)


def _alb_ingresses(plan: Any) -> list[Any]:
    return [r for r in plan.resources if r.type == INGRESS and (r.inputs.get("spec") or {}).get("ingressClassName") == "alb"]


def _controller_installed(plan: Any) -> bool:
    releases = [r for r in plan.resources if r.type == RELEASE and r.inputs.get("chart") == "aws-load-balancer-controller"]
    policies = [r for r in plan.resources if r.type == "aws:iam/policy:Policy"]
    published = (UPSTREAM_DIR / "charts" / iam_policy_name("3.5.0")).read_text()
    return len(releases) == 1 and any(p.inputs.get("policy") == published for p in policies)


# --- done when: the controller wherever an ALB Ingress exists ------------------------------------------------


def test_the_controller_and_its_policy_are_installed_wherever_an_alb_ingress_exists(upstream_env: Path, tmp_path: Path) -> None:
    """Every shipped stack, the dev-eks stack with the inference service, and the inference example on EKS and
    GKE: a plan with an Ingress of class alb has the controller's release and its published IAM policy; a plan
    without one has no controller."""
    plans = {stack: shipped_plan(stack) for stack in STACKS}
    plans["dev-eks + inference"] = _inference_eks(str(tmp_path / "inference"))
    plans["prod-eks + kubeflow ingress"] = _kubeflow_ingress_karpenter(str(tmp_path / "kubeflow"))
    for example_stack in ("eks", "gke"):
        plans[f"examples/inference {example_stack}"] = preview_program(PROJECT_DIR / "examples" / "inference", example_stack).plan
    with_alb = [name for name, plan in plans.items() if _alb_ingresses(plan)]
    assert with_alb == ["dev-eks + inference", "prod-eks + kubeflow ingress", "examples/inference eks"], with_alb  # not vacuous
    for name, plan in plans.items():
        assert _controller_installed(plan) == (name in with_alb), name


def test_the_alb_ingress_waits_for_the_controller(upstream_env: Path, tmp_path: Path) -> None:
    plan = _inference_eks(str(tmp_path / "inference"))
    (ingress,) = _alb_ingresses(plan)
    (release,) = [r for r in plan.resources if r.type == RELEASE and r.inputs.get("chart") == "aws-load-balancer-controller"]
    assert release.urn in ingress.depends_on
    assert ingress.inputs["metadata"]["annotations"]["alb.ingress.kubernetes.io/target-type"] == "ip"


def test_the_kubeflow_alb_ingress_waits_for_the_controller_on_a_karpenter_stack(upstream_env: Path, tmp_path: Path) -> None:
    """The Kubeflow UI's Ingress (class alb) depends on the controller's release the program installs with it, on
    a stack whose GPU classes Karpenter provisions: without the controller's webhooks the Ingress is refused, and
    without the controller it never gets an address."""
    plan = _kubeflow_ingress_karpenter(str(tmp_path / "kubeflow"))
    (ingress,) = _alb_ingresses(plan)
    assert ingress.name == "prod-eks-kubeflow-ingress"
    (release,) = [r for r in plan.resources if r.type == RELEASE and r.inputs.get("chart") == "aws-load-balancer-controller"]
    assert release.urn in ingress.depends_on
    assert any(r.type == "gpu-platform:karpenter_node_pools:KarpenterNodePools" for r in plan.resources)


def test_the_inference_stack_previews_and_renders_clean(upstream_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path, "dev-eks", _with_inference)
    code = main(["preview", "dev-eks", "--quiet", "--render", "--upstream", str(upstream_env), "--project-dir", str(root)])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    assert "0 schema violations; policy pack: 0 mandatory and 0 advisory violations; 0 cluster check violations, 0 render errors" in out.out


def test_without_the_policy_the_stack_stops_with_one_line_before_registering(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Offline, with an empty cache and no --upstream: the policy cannot be had; one config line, exit 2."""
    root = _project(tmp_path, "dev-eks", _with_inference)
    assert main(["preview", "dev-eks", "--quiet", "--no-render", "--project-dir", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(
        f"gpu-platform: gpu-platform:aws_load_balancer_controller: the controller's IAM policy: {iam_policy_name('3.5.0')} is not in the cache "
    ), err
    assert f"give --upstream DIR, or fetch it from {POLICY_URL}" in err[0]


# --- the stack's settings ------------------------------------------------------------------------------------


def test_the_controller_comes_with_an_alb_ingress_or_the_setting() -> None:
    eks = eks_stack(classes=[{"name": "t4", "instance_types": ["g4dn.xlarge"], "max_nodes": 4}])
    eks["monitoring"] = {"dcgm_exporter": {"node_selection": "eks"}}
    assert StackConfig.model_validate(eks).load_balancer_controller is None
    with_alb = StackConfig.model_validate({**eks, "inference": {"image": IMAGE}})
    assert with_alb.load_balancer_controller == AwsLoadBalancerControllerArgs()
    in_cluster = StackConfig.model_validate({**eks, "inference": {"image": IMAGE, "ingress": None}})
    assert in_cluster.load_balancer_controller is None
    asked = StackConfig.model_validate({**eks, "aws_load_balancer_controller": {"replicas": 3}})
    assert asked.load_balancer_controller == AwsLoadBalancerControllerArgs(replicas=3)
    gke = StackConfig.model_validate({**stack(), "monitoring": {"dcgm_exporter": {"node_selection": "gke"}}, "inference": {"image": IMAGE}})
    assert gke.load_balancer_controller is None and gke.inference is not None


REFUSALS: dict[str, tuple[str, Callable[[dict[str, Any]], None], str]] = {
    "an ALB Ingress on GKE": (
        "dev-gke",
        lambda c: c.update({NS + "inference": {"image": IMAGE, "ingress": {"load_balancer": "alb"}}}),
        "gpu-platform: gpu-platform:inference.ingress.load_balancer: load_balancer alb exists on eks clusters, not on gke; "
        'use gce or leave load_balancer unset (got "alb")',
    ),
    "the controller on GKE": (
        "dev-gke",
        lambda c: c.update({NS + "aws_load_balancer_controller": {}}),
        'gpu-platform: gpu-platform:aws_load_balancer_controller: the AWS Load Balancer Controller runs on EKS (cloud aws), not gcp; remove it (got "set")',
    ),
    "an unknown pool": (
        "dev-eks",
        lambda c: c.update({NS + "inference": {"image": IMAGE, "pool": "a100"}}),
        'gpu-platform: gpu-platform:inference.pool: no pool named a100; use a GPU pool of the cluster (t4, scheduler) (got "a100")',
    ),
    "no dcgm-exporter": (
        "dev-eks",
        lambda c: (c.update({NS + "inference": {"image": IMAGE}}), c[NS + "monitoring"].pop("dcgm_exporter")),
        "gpu-platform: gpu-platform:inference: the inference service's HPA scales on DCGM_FI_DEV_GPU_UTIL_AVG, which the monitoring "
        'stack\'s adapter serves from dcgm-exporter; keep monitoring enabled and set monitoring.dcgm_exporter (got "set")',
    ),
    "a tenant's namespace": (
        "dev-eks",
        lambda c: c.update({NS + "inference": {"image": IMAGE, "namespace": "team-a"}}),
        'gpu-platform: gpu-platform:inference.namespace: namespace team-a is already a Dask tenant\'s; choose another name (got "team-a")',
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_fails_with_one_line_naming_the_key(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack_name, change, line = REFUSALS[case]
    root = _project(tmp_path, stack_name, change)
    assert main(["preview", stack_name, "--quiet", "--no-render", "--project-dir", str(root)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), lines
    assert captured.out == "" and "Traceback" not in captured.err


# --- rendered intent ------------------------------------------------------------------------------------------


def test_the_rendered_controller_names_the_cluster_and_the_hpa_targets_the_deployment(upstream_env: Path, tmp_path: Path) -> None:
    root = _project(tmp_path / "project", "dev-eks", _with_inference)
    plan = _inference_eks(str(tmp_path / "inference"))
    config = load_stack(root, "dev-eks")
    lock = load_lock()
    rendering = render_plan(plan, config.kubernetes_version, Sources(lock, upstream_dir=UPSTREAM_DIR), lock)
    assert not rendering.errors, rendering.errors
    controller = [o for o in rendering.objects if o.kind == "Deployment" and o.name == "aws-load-balancer-controller"]
    (deployment,) = controller
    (container,) = deployment.body["spec"]["template"]["spec"]["containers"]
    flags = container["args"]
    assert "--cluster-name=rapids-dev-eks" in flags and "--ingress-class=alb" in flags
    assert "--aws-region=ap-northeast-2" in flags or any(f.startswith("--aws-region=") for f in flags)
    assert any(f.startswith("--aws-vpc-id=") for f in flags)
    assert deployment.body["spec"]["template"]["spec"]["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "system"}
    (account,) = [o for o in rendering.objects if o.kind == "ServiceAccount" and o.name == "aws-load-balancer-controller"]
    assert account.body["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].endswith(":role/dev-eks-alb-controller-role")
    assert any(o.kind == "IngressClass" and o.name == "alb" for o in rendering.objects) or any(
        o.kind == "List" and any(i["kind"] == "IngressClass" and i["metadata"]["name"] == "alb" for i in o.body["items"]) for o in rendering.objects
    )
    # The HPA (a plan object) targets the inference Deployment on the DCGM metric the adapter serves.
    (hpa,) = [r for r in plan.resources if r.type == "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"]
    (deployment_plan,) = [r for r in plan.resources if r.name == "dev-eks-inference-deployment"]
    target = hpa.inputs["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment_plan.inputs["metadata"]["name"])
    assert hpa.inputs["spec"]["metrics"][0]["pods"]["metric"]["name"] == "DCGM_FI_DEV_GPU_UTIL_AVG"
    adapter_rules = [o for o in rendering.objects if o.kind == "ConfigMap" and "adapter" in o.name]
    assert any("DCGM_FI_DEV_GPU_UTIL_AVG" in json.dumps(o.body) for o in adapter_rules)


# --- the pinned policy file --------------------------------------------------------------------------------


def test_the_lock_pins_the_published_policy_at_the_controllers_tag() -> None:
    (pin,) = load_lock().files
    assert (pin.name, pin.url) == (iam_policy_name("3.5.0"), POLICY_URL)
    shared = UPSTREAM_DIR / "charts" / pin.name
    if shared.is_file():
        assert pin.digest == "sha256:" + hashlib.sha256(shared.read_bytes()).hexdigest()


def test_the_policy_is_read_from_the_local_copy_with_its_digest_checked(tmp_path: Path) -> None:
    upstream = upstream_or_skip()
    lock = load_lock()
    with sources_for_program(Sources(lock, upstream_dir=upstream)):
        text = upstream_file(POLICY_URL)
    assert json.loads(text)["Statement"]
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / iam_policy_name("3.5.0")).write_text(text.replace("elasticloadbalancing:", "ec2:", 1))
    with pytest.raises(SourceError) as error, sources_for_program(Sources(lock, upstream_dir=tmp_path)):
        upstream_file(POLICY_URL)
    assert str(error.value).startswith(f"{iam_policy_name('3.5.0')} in {tmp_path / 'charts' / iam_policy_name('3.5.0')} has digest sha256:")
    assert str(error.value).endswith("the file is not the locked one (remove it to fetch it again, or re-lock on purpose)")


def test_an_unlocked_url_and_an_unreachable_one_are_one_line_each(tmp_path: Path) -> None:
    lock = load_lock()
    with pytest.raises(SourceError, match=r"^https://example.com/p.json is not in the lock upstream.lock.yaml; run: gpu-platform upstream lock$"):
        with sources_for_program(Sources(lock, cache_dir=tmp_path, fetch=False)):
            upstream_file("https://example.com/p.json")
    # Online, the cache fetches from the pin's URL: one that cannot be reached is one line, and nothing is written.
    pin = FilePin(name="p.json", url="https://127.0.0.1:9/p.json", digest="sha256:" + "0" * 64)
    sources = Sources(lock.model_copy(update={"files": [pin]}), cache_dir=tmp_path, fetch=True)
    with pytest.raises(SourceError) as error:
        sources.file_bytes(pin)
    assert str(error.value).startswith("p.json could not be fetched from https://127.0.0.1:9/p.json: ")
    assert "\n" not in str(error.value) and not (tmp_path / "charts" / "p.json").exists()


FROZEN = {
    "gpu-platform:aws_load_balancer_controller:AwsLoadBalancerController": [
        "aws:iam/policy:Policy policy",
        "aws:iam/role:Role role",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment role-policy",
        "kubernetes:helm.sh/v3:Release release",
    ],
    "gpu-platform:gpu_inference_service:GpuInferenceService": [
        "gpu-platform:gpu_utilization_autoscaler:GpuUtilizationAutoscaler autoscaler",
        "kubernetes:apps/v1:Deployment deployment",
        "kubernetes:core/v1:Namespace namespace",
        "kubernetes:core/v1:Service service",
        "kubernetes:monitoring.coreos.com/v1:PrometheusRule alert",
        "kubernetes:networking.k8s.io/v1:Ingress ingress",
    ],
}
"""The two components' type tokens and their children as "<type> <role>": public API (a rename replaces what users deployed)."""


def test_the_tokens_and_child_names_are_frozen(upstream_env: Path) -> None:
    plan = preview_program(PROJECT_DIR / "examples" / "inference", "eks").plan
    seen: dict[str, list[str]] = {}
    for component in plan.resources:
        if component.type in FROZEN:
            seen[component.type] = sorted(
                f"{child.type} {child.name.removeprefix(component.name + '-')}" for child in plan.resources if child.parent == component.urn
            )
    assert seen == FROZEN


def test_no_render_takes_the_policy_from_upstream_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--no-render leaves out rendering only: the program's own upstream file (the controller's IAM policy) comes
    from --upstream (the flag alone, no GPU_PLATFORM_UPSTREAM), offline and with an empty cache (issue 34: it was
    fetched online, exit 2)."""
    upstream_env = upstream_or_skip()
    root = _project(tmp_path, "dev-eks", _with_inference)
    code = main(["preview", "dev-eks", "--quiet", "--no-render", "--offline", "--upstream", str(upstream_env), "--project-dir", str(root)])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    program = PROJECT_DIR / "examples" / "inference"
    code = main(["preview", "--program", str(program), "eks", "--quiet", "--no-render", "--offline", "--upstream", str(upstream_env)])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
