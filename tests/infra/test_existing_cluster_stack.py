"""A stack on a cluster it did not create (issue 37 item 2): ``existing_cluster`` in the stack file. Its kind comes
from cloud; it stands in place of gke, or eks and eks_node_groups; what only a created cluster has is refused in one
line naming why; the program builds the Kubernetes layer on an ExistingCluster and nothing on a cloud; every tool
reads its pools from the one plan, or refuses in one line."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_platform.infra.preview.engine import run_program
from gpu_platform.infra.stack.errors import SECRET_PLACEHOLDER, ConfigError
from gpu_platform.infra.stack.read import read_stack_file, stack_config_from
from tests.conftest import PROJECT_DIR
from tests.factories import existing_stack

NS = "gpu-platform:"


def read(config: dict[str, Any], secret: set[str]) -> Any:
    return stack_config_from(copy.deepcopy(config), set(secret), "byo")


def refusals(config: dict[str, Any], secret: set[str]) -> list[str]:
    with pytest.raises(ConfigError) as refused:
        read(config, secret)
    return list(refused.value.lines)


@pytest.mark.parametrize("shipped", ["dev-gke", "prod-gke", "dev-eks", "prod-eks"])
def test_every_shipped_stack_reads_on_an_existing_cluster_with_the_same_pools_and_queues(shipped: str) -> None:
    from gpu_platform.infra.stack.read import load_stack

    config = read(*existing_stack(shipped))
    created = load_stack(PROJECT_DIR, shipped)
    assert config.existing_cluster is not None and config.existing_cluster.kind is created.cloud.kind
    assert (config.gke, config.eks, config.eks_node_groups, config.eks_plan) == (None, None, None, None)
    assert [(s.name, s.max_schedulable_gpus, s.zone_names()) for s in config.pool_shapes()] == [
        (s.name, s.max_schedulable_gpus, s.zone_names()) for s in created.pool_shapes()
    ]
    if created.queues_plan is not None:  # Kueue's quotas come from the same pools
        assert config.queues_plan is not None
        assert config.queues_plan.cluster_queues == created.queues_plan.cluster_queues


def test_its_kind_comes_from_cloud_and_is_not_stated() -> None:
    config, secret = existing_stack("dev-gke")
    assert read(config, secret).existing_cluster.kind.value == "gke"
    config[NS + "existing_cluster"]["kind"] = "gke"
    assert refusals(config, secret) == [
        'gpu-platform:existing_cluster.kind: set gpu-platform:cloud instead; the program sets existing_cluster.kind from it (got "gke")'
    ]


def test_a_created_clusters_section_beside_it_is_refused_naming_both() -> None:
    config, secret = existing_stack("dev-eks")
    shipped, _ = read_stack_file(PROJECT_DIR, "dev-eks")
    config[NS + "eks"] = shipped[NS + "eks"]
    config[NS + "eks_node_groups"] = shipped[NS + "eks_node_groups"]
    lines = refusals(config, secret)
    assert [line.split(":")[1] for line in lines] == ["eks", "eks_node_groups"], lines
    assert all("keep one of them" in line and "existing_cluster" in line for line in lines)


def test_without_either_the_cluster_section_is_required_naming_both_ways() -> None:
    config, secret = existing_stack("dev-gke")
    del config[NS + "existing_cluster"]
    assert any(line.startswith("gpu-platform:gke: gke is required when cloud is gcp (or existing_cluster") for line in refusals(config, secret))


def test_a_kubeconfig_without_an_existing_cluster_is_refused_without_its_value() -> None:
    config, secret = read_stack_file(PROJECT_DIR, "dev-gke")
    config[NS + "existing_cluster_kubeconfig"] = SECRET_PLACEHOLDER + "kubeconfig-contents"
    secret.add(NS + "existing_cluster_kubeconfig")
    lines = refusals(config, secret)
    assert lines == [
        "gpu-platform:existing_cluster_kubeconfig: existing_cluster_kubeconfig applies to existing_cluster, which this stack does not set; remove it (got a secret value)"
    ]
    assert "kubeconfig-contents" not in "".join(lines)


@pytest.mark.parametrize(("shipped", "why"), [("dev-gke", "Workload Identity grants"), ("dev-eks", "FSx for Lustre")])
def test_shared_datasets_are_refused_saying_what_only_a_created_cluster_has(shipped: str, why: str) -> None:
    config, secret = existing_stack(shipped, drop=())
    (line,) = refusals(config, secret)
    assert line.startswith(f"gpu-platform:shared_datasets: shared datasets need {why}") and "remove shared_datasets on existing_cluster" in line


def test_the_load_balancer_controller_is_refused_and_alb_ingresses_use_the_clusters_own() -> None:
    config, secret = existing_stack("prod-eks")
    config[NS + "aws_load_balancer_controller"] = {}
    (line,) = refusals(config, secret)
    assert line.startswith("gpu-platform:aws_load_balancer_controller: the AWS Load Balancer Controller's IAM role trusts the cluster's OIDC provider")
    del config[NS + "aws_load_balancer_controller"]
    config[NS + "kubeflow"]["install"]["ingress"] = {
        "hostname": "kubeflow.corp.example",
        "certificate_arn": "arn:aws:acm:us-west-2:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555",
        "cognito_user_pool_arn": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_AbCdEf",
        "cognito_user_pool_client_id": "4example",
        "cognito_user_pool_domain": "corp-kubeflow",
    }
    assert read(config, secret).load_balancer_controller is None  # an ALB Ingress alone installs none here


def test_a_queued_pool_without_queues_is_refused_at_its_existing_key() -> None:
    config, secret = existing_stack("prod-gke")
    pools = config[NS + "existing_cluster"]["pools"]
    index = next(i for i, p in enumerate(pools) if p.get("role", "gpu") == "gpu")
    pools[index].update(queued_provisioning=True, capacity="on_demand")
    del config[NS + "queues"]
    (line,) = [line for line in refusals(config, secret) if line.startswith("gpu-platform:existing_cluster")]
    assert line.startswith(
        f"gpu-platform:existing_cluster.pools[{index}].queued_provisioning: pool {pools[index]['name']} has queued_provisioning but the stack has no queues"
    )


@pytest.mark.parametrize("shipped", ["dev-gke", "prod-eks"])
def test_the_program_builds_the_kubernetes_layer_on_an_existing_cluster_and_nothing_on_a_cloud(shipped: str) -> None:
    config, secret = existing_stack(shipped)
    plan = run_program(PROJECT_DIR, "byo", config, secret)
    types = {r.type for r in plan.resources}
    assert not {t for t in types if t.startswith(("gcp:", "aws:"))}, types
    cluster = [r for r in plan.resources if r.type == "gpu-platform:existing_cluster:ExistingCluster"]
    assert [r.name for r in cluster] == ["byo"]
    providers = [r for r in plan.resources if r.type == "pulumi:providers:kubernetes"]
    assert [r.name for r in providers] == ["byo-k8s"]
    # Every Kubernetes object goes through that provider, and the add-ons of the shipped stack are all there.
    assert all(r.provider is None or r.provider.startswith(providers[0].urn) for r in plan.resources if r.custom and r.type.startswith("kubernetes:"))
    created = {r.type for r in run_program(PROJECT_DIR, shipped, *read_stack_file(PROJECT_DIR, shipped)).resources}
    added = {t for t in created if t.startswith("gpu-platform:") and t not in {"gpu-platform:shared_datasets:SharedDatasets"}}
    expected = {t for t in added if t.split(":")[1] in {"prometheus_stack", "dcgm_exporter", "dask_operator", "kubeflow_install", "kueue", "headlamp"}}
    assert expected <= types, expected - types
    assert plan.outputs["existingCluster"] == config[NS + "cloud"].replace("gcp", "gke").replace("aws", "eks")


def test_simulate_and_preflight_refuse_an_existing_cluster_in_one_line(tmp_path: Any, capsys: Any) -> None:
    import yaml

    from gpu_platform.infra.cli.app import main

    config, secret = existing_stack("dev-gke")
    (tmp_path / "stacks").mkdir()
    for name in ("Pulumi.yaml",):
        (tmp_path / name).write_text((PROJECT_DIR / name).read_text())
    (tmp_path / "infra").symlink_to(PROJECT_DIR / "infra")
    document = {"config": {k: ({"secure": "v1:AAAA"} if k in secret else v) for k, v in config.items()}}
    (tmp_path / "stacks" / "Pulumi.byo.yaml").write_text(yaml.safe_dump(document))
    assert main(["simulate", "byo", "--project-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpu-platform: gpu-platform:existing_cluster: simulate models the autoscaler a stack configures"), err
    assert main(["preflight", "gke", "byo", "--offline", "--project-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sets existing_cluster: preflight gke checks the quotas and zones of the cluster and pools a stack creates" in err[0], err


def test_a_kubeconfig_in_json_or_a_password_starting_with_a_brace_stays_text() -> None:
    """Text keys are never decoded as structured config, whatever they start with (the reader decodes JSON objects and
    lists for the structured keys)."""
    import json

    config, secret = existing_stack("dev-gke")
    kubeconfig = json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": [], "contexts": [], "users": []})
    config[NS + "existing_cluster_kubeconfig"] = kubeconfig
    config[NS + "grafana_admin_password"] = "[brace-first-password]"
    secret |= {NS + "existing_cluster_kubeconfig", NS + "grafana_admin_password"}
    read_back = read(config, secret)
    assert read_back.existing_cluster_kubeconfig.get_secret_value() == kubeconfig
    assert read_back.grafana_admin_password.get_secret_value() == "[brace-first-password]"
