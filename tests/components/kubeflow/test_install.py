"""KubeflowInstall: typed inputs and their refusals, the manifest transforms, tenants,
the training-pool placement and the capacity check."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pulumi
import pytest
import yaml
from pydantic import ValidationError

from gpu_platform.components import KubeflowInstall, KubeflowInstallArgs, NodePoolShape, PoolPlacement, Taint
from gpu_platform.components.kubeflow.args import Edition
from gpu_platform.components.kubeflow.plan import manifest_sources
from gpu_platform.components.kubeflow.transforms import (
    Credential,
    apply_transforms,
    as_pulumi_transform,
    default_profile_transform,
    dex_oidc_transform,
    dex_password_transform,
    edition_credentials,
    pipeline_volume_transform,
    rendered_object_transforms,
    tenant_quota_hard,
    upstream_credentials_transform,
)
from gpu_platform.components.pools.awaits import skips_await
from gpu_platform.components.pools.reserves import ReserveFormula
from gpu_platform.components.pools.shapes import CapacityStrategy
from gpu_platform.infra.stack.errors import format_validation_error
from tests.conftest import Engine, settled, settled_tree

TRAINING = Taint(key="gpu-platform.io/workload", value="training")
GPU = Taint(key="nvidia.com/gpu", value="present")


def refused(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        KubeflowInstallArgs.model_validate(data)
    return format_validation_error(info.value, KubeflowInstallArgs)


def shape(name: str, role: str = "gpu", labels: dict[str, str] | None = None, taints: tuple[Taint, ...] = (), **kw: Any) -> NodePoolShape:
    selector = kw.pop("node_selector", {"cloud.google.com/gke-nodepool": name})
    defaults: dict[str, Any] = {
        "machine_type": "n1-standard-8",
        "vcpus": 8,
        "memory_mib": 30720,
        "gpus_per_node": 1 if role == "gpu" else 0,
        "accelerator": "nvidia-tesla-t4" if role == "gpu" else None,
        "capacity": CapacityStrategy.ON_DEMAND,
        "min_nodes": 0,
        "max_nodes": 4,
    }
    defaults.update(kw)
    return NodePoolShape(
        name=name,
        role=role,
        labels=labels or {},
        taints=taints,
        placement=PoolPlacement(selector, taints),
        reserve_formula=ReserveFormula.GKE,
        **defaults,
    )


TRAINING_POOL = shape("train", labels={"gpu-platform.io/workload": "training"}, taints=(GPU, TRAINING))
PLATFORM = {"edition": "platform", "dex_user_email": "ml-admin@corp.example"}


# --- Args ------------------------------------------------------------------------------------


# --- transforms of the rendered manifests --------------------------------------------------------


def claim(name: str, size: str = "20Gi") -> dict[str, Any]:
    """A claim as kubeflow/pipelines ships it (third-party/*/base)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "kubeflow"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
    }


@pytest.mark.parametrize(("name", "size"), [("seaweedfs-pvc", "750Gi"), ("minio-pvc", "750Gi"), ("mysql-pv-claim", "80Gi")])
def test_volume_transform_resizes_the_pipeline_claims(name: str, size: str) -> None:
    args = KubeflowInstallArgs(artifact_storage_gib=750, database_storage_gib=80, storage_class="premium-rwo")
    original = claim(name, "10Gi")
    changed = pipeline_volume_transform(original, args)
    assert changed is not None
    assert changed["spec"]["resources"]["requests"] == {"storage": size}
    assert changed["spec"]["storageClassName"] == "premium-rwo"
    assert changed["spec"]["accessModes"] == ["ReadWriteOnce"] and changed["metadata"] == original["metadata"]
    assert original["spec"]["resources"]["requests"]["storage"] == "10Gi"  # the input is not mutated
    kubernetes_validate.validate(changed, "1.34", strict=True)


def test_volume_transform_keeps_the_default_class_and_other_objects() -> None:
    args = KubeflowInstallArgs()
    assert "storageClassName" not in pipeline_volume_transform(claim("mysql-pv-claim"), args)["spec"]  # type: ignore[index]
    assert pipeline_volume_transform(claim("someone-elses-claim"), args) is None
    assert pipeline_volume_transform({"kind": "ConfigMap", "metadata": {"name": "mysql-pv-claim"}}, args) is None


def transformed(transform: pulumi.ResourceTransform, type_: str, name: str, props: dict[str, Any]) -> pulumi.Output[Any]:
    """What the (async) transform answers for one child, as an Output: the engine awaits it."""
    return pulumi.Output.from_input(transform(pulumi.ResourceTransformArgs(True, type_, name, props, pulumi.ResourceOptions())))  # type: ignore[arg-type]


@pytest.mark.parametrize("keep", [True, False])
@pulumi.runtime.test
def test_pulumi_transform_retains_the_volumes(keep: bool) -> pulumi.Output[Any]:
    transform = as_pulumi_transform(KubeflowInstallArgs(keep_volumes_on_delete=keep), None)
    result = transformed(transform, "kubernetes:core/v1:PersistentVolumeClaim", "kf:kubeflow/seaweedfs-pvc", claim("seaweedfs-pvc"))
    other = transformed(transform, "kubernetes:core/v1:ConfigMap", "kf:kubeflow/pipeline-install-config", {"kind": "ConfigMap"})

    def check(results: list[Any]) -> None:
        claimed, unchanged = results
        assert claimed is not None
        assert claimed.props["spec"]["resources"]["requests"]["storage"] == "500Gi"
        assert bool(claimed.opts.retain_on_delete) is keep and bool(claimed.opts.protect) is keep
        assert unchanged is None

    return pulumi.Output.all(result, other).apply(check)


@pytest.mark.parametrize(
    ("kind", "awaited"),
    [
        ("Deployment", False),
        ("StatefulSet", False),
        ("DaemonSet", False),
        ("Job", False),
        ("Service", False),
        ("CustomResourceDefinition", True),
        ("Namespace", True),
        ("ServiceAccount", True),
        ("ConfigMap", True),
        ("PersistentVolumeClaim", True),
    ],
)
def test_inside_the_directories_pod_backed_objects_are_not_awaited_and_the_rest_is(kind: str, awaited: bool) -> None:
    """The provider meets a Directory's Deployments, their ServiceAccounts and claims in no fixed order, with 8 steps
    at a time on 2 cores: awaited Deployments filled every slot in the engine test. Pod-backed kinds skip the
    await (their existing annotations kept); CRDs, namespaces, RBAC, config and claims are awaited as before."""
    obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": "kubeflow", "annotations": {"keep": "me"}}}
    for args in (KubeflowInstallArgs(), KubeflowInstallArgs(edition=Edition.PLATFORM, dex_user_email="a@corp.example")):
        out = apply_transforms(rendered_object_transforms(args), obj) or obj
        assert skips_await(out["metadata"]) is not awaited, (args.edition, kind)
        assert out["metadata"]["annotations"]["keep"] == "me"


def test_an_aggregated_cluster_role_leaves_its_rules_to_the_aggregation_controller() -> None:
    """Applied with upstream's `rules: []`, Pulumi's field manager claims .rules beside the clusterrole-aggregation
    controller, and the next preview fails with a server-side apply conflict (seen under the engine): the rules are
    dropped from an aggregated role, and kept on every other role."""
    aggregated = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "kubeflow-pipelines-edit"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.kubeflow.org/aggregate-to-kubeflow-pipelines-edit": "true"}}]},
        "rules": [],
    }
    plain = {**{k: v for k, v in aggregated.items() if k != "aggregationRule"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    steps = rendered_object_transforms(KubeflowInstallArgs())
    out = apply_transforms(steps, aggregated)
    assert out is not None and "rules" not in out and out["aggregationRule"] == aggregated["aggregationRule"]
    assert apply_transforms(steps, plain) is None


@pytest.mark.parametrize(
    ("obj", "dropped"),
    [
        ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "kubeflow-spark-admin"}, "rules": []}, {"rules"}),
        ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r", "namespace": "kubeflow"}, "rules": []}, {"rules"}),
        (
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "training-operator-webhook-cert", "namespace": "kubeflow"},
                "type": "Opaque",
                "data": {},
            },
            {"data"},
        ),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "kubeflow"}, "data": {}, "binaryData": {}}, {"data", "binaryData"}),
        ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "other"}, "data": {"k": "dg=="}}, set()),
        ({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "namespace": "kubeflow"}, "secrets": []}, set()),
    ],
)
def test_empty_fields_the_api_server_omits_are_not_applied(obj: dict[str, Any], dropped: set[str]) -> None:
    """`rules: []` or `data: {}` comes back from the API server as nothing, and the provider's diff of the inputs
    against the live object then shows a change at every preview (the engine test's platform edition: four
    ClusterRoles updated, training-operator's certificate Secret replaced): those empty fields are dropped."""
    out = apply_transforms(rendered_object_transforms(KubeflowInstallArgs()), obj)
    assert set(obj) - set(out or obj) == dropped
    assert {k: v for k, v in (out or obj).items()} == {k: v for k, v in obj.items() if k not in dropped}


UPSTREAM_DEX_SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "dex-passwords", "namespace": "auth"},
    "data": {"DEX_USER_PASSWORD": "$2y$12$4K/VkmDd1q1Orb3xAt82zu8gk7Ad6ReFR4LCP9UeYE90NLiN9Df72"},
}
UPSTREAM_DEX_CONFIG = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "dex", "namespace": "auth"},
    "data": {
        "config.yaml": (
            "issuer: http://dex.auth.svc.cluster.local:5556/dex\nenablePasswordDB: true\nstaticPasswords:\n"
            '- email: user@example.com\n  hashFromEnv: DEX_USER_PASSWORD\n  username: user\n  userID: "15841185641784"\n'
        )
    },
}


@pulumi.runtime.test
def test_dex_transform_replaces_the_default_login() -> pulumi.Output[Any]:
    secret = dex_password_transform(UPSTREAM_DEX_SECRET, "ml-admin@corp.example", "$2b$12$our-hash")
    assert secret is not None and "data" not in secret
    config = dex_password_transform(UPSTREAM_DEX_CONFIG, "ml-admin@corp.example", "$2b$12$our-hash")
    assert config is not None
    (user,) = yaml.safe_load(config["data"]["config.yaml"])["staticPasswords"]
    assert user == {"email": "ml-admin@corp.example", "hashFromEnv": "DEX_USER_PASSWORD", "username": "ml-admin", "userID": "15841185641784"}
    assert dex_password_transform({**UPSTREAM_DEX_SECRET, "metadata": {"name": "dex-passwords", "namespace": "other"}}, "a@b.c", "h") is None
    value = secret["stringData"]["DEX_USER_PASSWORD"]

    def check(pair: list[Any]) -> None:
        assert pair == ["$2b$12$our-hash", True]  # the hash stays a Pulumi secret

    return pulumi.Output.all(value, pulumi.Output.from_input(value).is_secret()).apply(check)  # type: ignore[attr-defined]


# --- tenants, placement, capacity ----------------------------------------------------------------


def test_tenant_quota_includes_gpus() -> None:
    from gpu_platform.components import TenantProfile

    assert tenant_quota_hard(TenantProfile(name="nlp", owner="a@corp.example", gpus=8)) == {"requests.nvidia.com/gpu": "8"}
    assert tenant_quota_hard(TenantProfile(name="nlp", owner="a@corp.example", gpus=8, cpus=64, memory_gib=512)) == {
        "requests.nvidia.com/gpu": "8",
        "requests.cpu": "64",
        "requests.memory": "512Gi",
    }


KFP_PIPELINE = """
import json, sys, tempfile
from pathlib import Path

import yaml
from kfp import compiler, dsl

from gpu_platform.components.kubeflow.plan import place_on_training_pool
from gpu_platform.components.pools.shapes import PoolPlacement, Taint

placement = PoolPlacement(
    {"cloud.google.com/gke-nodepool": "train"},
    (Taint(key="nvidia.com/gpu", value="present"), Taint(key="gpu-platform.io/workload", value="training")),
)


@dsl.component(base_image="python:3.11-slim")
def train():
    pass


@dsl.pipeline(name="p")
def pipeline():
    place_on_training_pool(train(), placement)


with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "p.yaml"
    compiler.Compiler().compile(pipeline, str(path))
    docs = list(yaml.safe_load_all(path.read_text()))
(config,) = docs[1]["platforms"]["kubernetes"]["deploymentSpec"]["executors"].values()
json.dump(config, sys.stdout)
"""


def _kfp_python() -> str | None:
    """An interpreter with kfp-kubernetes: this one, or the .venv-kfp that .ci/run makes (kfp
    needs protobuf 6, pulumi-policy in the dev extras pins 5, so they cannot share a venv)."""
    import importlib.util
    import sys

    from tests.conftest import PROJECT_DIR

    if importlib.util.find_spec("kfp") is not None:
        return sys.executable
    candidate = PROJECT_DIR / ".venv-kfp" / "bin" / "python"
    return str(candidate) if candidate.exists() else None


def test_place_on_training_pool_sets_selector_and_tolerations(tmp_path: Path) -> None:
    import json
    import subprocess

    from tests.conftest import PROJECT_DIR

    python = _kfp_python()
    if python is None:
        pytest.skip("no interpreter with kfp-kubernetes: python3 -m venv .venv-kfp && .venv-kfp/bin/pip install -e '.[kfp]' (.ci/run does)")
    script = tmp_path / "pipeline.py"  # KFP reads a component's source from its file
    script.write_text(KFP_PIPELINE)
    done = subprocess.run([python, str(script)], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    config = json.loads(done.stdout)
    assert config["nodeSelector"] == {"labels": {"cloud.google.com/gke-nodepool": "train"}}
    assert [(t["key"], t["value"], t["effect"]) for t in config["tolerations"]] == [
        ("nvidia.com/gpu", "present", "NoSchedule"),
        ("gpu-platform.io/workload", "training", "NoSchedule"),
    ]


# --- the component under mocks -------------------------------------------------------------------


@pulumi.runtime.test
def test_pipelines_edition_resources(engine: Engine) -> pulumi.Output[Any]:
    args = KubeflowInstallArgs(tenants=[{"name": "vision", "owner": "lead@corp.example", "gpus": 16, "cpus": 96}])  # type: ignore[list-item]
    kf = KubeflowInstall("kf", args, training_pools=[TRAINING_POOL])

    def check(values: list[Any]) -> None:
        first, second = engine.resource("kf-cluster-scoped"), engine.resource("kf-pipelines")
        assert first.type == second.type == "kubernetes:kustomize/v2:Directory"
        assert first.inputs["directory"].endswith("/cluster-scoped-resources?ref=2.17.0")
        assert second.inputs["directory"].endswith("/env/platform-agnostic?ref=2.17.0")
        assert first.urn in second.depends_on  # CRDs and the namespace first
        namespace = engine.resource("kf-tenant-vision").inputs
        quota = engine.resource("kf-quota-vision")
        assert namespace["metadata"]["annotations"] == {"gpu-platform.io/owner": "lead@corp.example"}
        assert quota.inputs["spec"]["hard"] == {"requests.nvidia.com/gpu": "16", "requests.cpu": "96"}
        assert second.urn in quota.depends_on
        for body in (namespace, quota.inputs):
            kubernetes_validate.validate(body, "1.34", strict=True)
        assert values[1:6] == [
            "kubeflow",
            "ml-pipeline-ui.kubeflow.svc.cluster.local:80",
            "http://ml-pipeline.kubeflow.svc.cluster.local:8888",
            TRAINING_POOL.placement.pod_spec_fields(),
            None,
        ]
        assert values[6]["database"] == {"claims": ["mysql-pv-claim"], "storage": "100Gi"}

    return pulumi.Output.all(
        settled(kf, *kf.directories, *kf.tenant_quotas.values()),
        kf.namespace,
        kf.ui_service,
        kf.pipelines_endpoint,
        kf.training_placement,
        kf.ui_url,
        kf.storage,
    ).apply(check)


INGRESS = {
    "hostname": "kubeflow.corp.example",
    "certificate_arn": "arn:aws:acm:us-west-2:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555",
    "cognito_user_pool_arn": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_AbCdEf",
    "cognito_user_pool_client_id": "4example",
    "cognito_user_pool_domain": "corp-kubeflow",
}


@pulumi.runtime.test
def test_platform_edition_resources(engine: Engine) -> pulumi.Output[Any]:
    args = KubeflowInstallArgs.model_validate({**PLATFORM, "tenants": [{"name": "nlp", "owner": "nlp@corp.example", "gpus": 8}], "ingress": INGRESS})
    kf = KubeflowInstall("kf", args, training_pools=[TRAINING_POOL], dex_password_hash=pulumi.Output.secret("$2b$12$never-in-a-plan"))

    def check(values: list[Any]) -> None:
        (directory,) = engine.of_type("kubernetes:kustomize/v2:Directory")
        assert directory.inputs["directory"] == "https://github.com/kubeflow/manifests//example?ref=v1.10.2"
        profile = engine.resource("kf-profile-nlp")
        assert profile.type == "kubernetes:kubeflow.org/v1:Profile"
        assert profile.inputs["spec"] == {
            "owner": {"kind": "User", "name": "nlp@corp.example"},
            "resourceQuotaSpec": {"hard": {"requests.nvidia.com/gpu": "8"}},
        }
        assert directory.urn in profile.depends_on  # the Profile CRD comes with the platform
        ingress = engine.resource("kf-ingress").inputs
        kubernetes_validate.validate(ingress, "1.34", strict=True)
        assert ingress["metadata"]["namespace"] == "istio-system"
        annotations = ingress["metadata"]["annotations"]
        assert annotations["alb.ingress.kubernetes.io/auth-type"] == "cognito"
        assert json.loads(annotations["alb.ingress.kubernetes.io/auth-idp-cognito"])["userPoolDomain"] == "corp-kubeflow"
        assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"] == {"name": "istio-ingressgateway", "port": {"number": 80}}
        assert "never-in-a-plan" not in json.dumps([r.to_json() for r in engine.recorded])
        assert values[1:] == ["istio-ingressgateway.istio-system.svc.cluster.local:80", "https://kubeflow.corp.example"]

    assert kf.ingress is not None
    return pulumi.Output.all(settled(kf, *kf.directories, *kf.tenant_quotas.values(), kf.ingress), kf.ui_service, kf.ui_url).apply(check)


@pulumi.runtime.test
def test_the_alb_ingress_waits_for_the_ingress_controller(engine: Engine) -> pulumi.Output[Any]:
    """Given ingress_controller (AwsLoadBalancerController.release), the UI's Ingress depends on it as well as on the
    manifests; without it (a controller installed elsewhere, the default) on the manifests only."""
    controller = pulumi.CustomResource("test:index:Release", "alb-controller")
    args = KubeflowInstallArgs.model_validate({"ingress": INGRESS})
    waiting = KubeflowInstall("kf", args, training_pools=[TRAINING_POOL], ingress_controller=controller)
    alone = KubeflowInstall("kf2", args, training_pools=[TRAINING_POOL])

    def check(_: list[Any]) -> None:
        ingress, other = engine.resource("kf-ingress"), engine.resource("kf2-ingress")
        directories = {d.urn for d in engine.recorded if d.type == "kubernetes:kustomize/v2:Directory" and d.name.startswith("kf-")}
        assert len(directories) == 2  # cluster-scoped resources, then the platform-agnostic env
        assert set(ingress.depends_on) == {engine.resource("alb-controller").urn, *directories}
        assert engine.resource("alb-controller").urn not in other.depends_on and other.depends_on

    assert waiting.ingress is not None and alone.ingress is not None
    return settled(controller, waiting, alone, waiting.ingress, alone.ingress, *waiting.directories, *alone.directories).apply(check)


def test_component_refuses_an_ingress_controller_that_is_not_a_resource() -> None:
    with pytest.raises(pulumi.InputPropertyError) as error:
        KubeflowInstall(
            "kf", KubeflowInstallArgs.model_validate({"ingress": INGRESS}), training_pools=[TRAINING_POOL], ingress_controller="aws-load-balancer-controller"
        )  # type: ignore[arg-type]
    assert error.value.property_path == "ingress_controller"
    assert error.value.reason == "ingress_controller: expected the AWS Load Balancer Controller (AwsLoadBalancerController.release) (got a str)"


def test_component_refuses_platform_without_a_password_hash() -> None:
    with pytest.raises(pulumi.InputPropertyError) as error:
        KubeflowInstall("kf", KubeflowInstallArgs.model_validate(PLATFORM), training_pools=[TRAINING_POOL])
    assert error.value.property_path == "dex_password_hash"
    assert error.value.reason.startswith("the platform edition needs dex_password_hash")


def test_component_refuses_a_missing_training_pool() -> None:
    with pytest.raises(pulumi.InputPropertyError) as error:
        KubeflowInstall("kf", KubeflowInstallArgs(), training_pools=[shape("t4", taints=(GPU,))])
    assert error.value.property_path == "training_pools" and error.value.reason.startswith("no pool carries label")


# --- an OIDC issuer in Dex ------------------------------------------------------------------------

OIDC = {"issuer": "https://login.corp.example", "client_id": "kubeflow", "redirect_uri": "https://kubeflow.corp.example/dex/callback"}
UPSTREAM_DEX_DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "dex", "namespace": "auth"},
    "spec": {
        "selector": {"matchLabels": {"app": "dex"}},
        "template": {
            "metadata": {"labels": {"app": "dex"}},
            "spec": {
                "containers": [
                    {"name": "dex", "image": "ghcr.io/dexidp/dex:v2.41.1", "env": [{"name": "KUBERNETES_POD_NAMESPACE", "value": "auth"}]},
                ]
            },
        },
    },
}


UPSTREAM_DEX_CLIENT_SECRET = {  # kustomize's secretGenerator output in kubeflow/manifests common/dex/base
    "apiVersion": "v1",
    "kind": "Secret",
    "type": "Opaque",
    "metadata": {"name": "dex-oidc-client", "namespace": "auth"},
    "data": {"OIDC_CLIENT_ID": "a3ViZWZsb3ctb2lkYy1hdXRoc2VydmljZQ==", "OIDC_CLIENT_SECRET": "cFVCbkJPWTgwU25YZ2ppYlRZTTlaV056WTJ4cmVOR1Fvaw=="},
}


@pulumi.runtime.test
def test_oidc_transform_adds_the_connector_and_its_secret_env() -> pulumi.Output[Any]:
    oidc = KubeflowInstallArgs.model_validate({**PLATFORM, "oidc": OIDC}).oidc
    assert oidc is not None and oidc.name == "Single sign-on"
    config = dex_oidc_transform(UPSTREAM_DEX_CONFIG, oidc, "s3cret")
    assert config is not None
    parsed = yaml.safe_load(config["data"]["config.yaml"])
    assert parsed["connectors"] == [
        {
            "type": "oidc",
            "id": "upstream-oidc",
            "name": "Single sign-on",
            "config": {
                "issuer": "https://login.corp.example",
                "clientID": "kubeflow",
                "clientSecret": "$UPSTREAM_OIDC_CLIENT_SECRET",
                "redirectURI": "https://kubeflow.corp.example/dex/callback",
                "scopes": ["openid", "profile", "email"],
            },
        }
    ]
    assert parsed["staticPasswords"]  # the static user stays
    # The secret joins upstream's envFrom Secret under its own key; oauth2-proxy's client keys stay.
    secret = dex_oidc_transform(UPSTREAM_DEX_CLIENT_SECRET, oidc, pulumi.Output.secret("s3cret"))
    assert secret is not None and secret["data"] == UPSTREAM_DEX_CLIENT_SECRET["data"]
    assert list(secret["stringData"]) == ["UPSTREAM_OIDC_CLIENT_SECRET"]
    # Dex's Deployment is not given a second source; its pod template carries the secret's digest.
    deployment = dex_oidc_transform(UPSTREAM_DEX_DEPLOYMENT, oidc, pulumi.Output.secret("s3cret"))
    assert deployment is not None
    assert deployment["spec"]["template"]["spec"] == UPSTREAM_DEX_DEPLOYMENT["spec"]["template"]["spec"]
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert deployment["spec"]["template"]["metadata"]["labels"] == {"app": "dex"}
    assert dex_oidc_transform({**UPSTREAM_DEX_DEPLOYMENT, "metadata": {"name": "dex", "namespace": "kubeflow"}}, oidc, "s") is None
    assert dex_oidc_transform({**UPSTREAM_DEX_SECRET}, oidc, "s") is None  # dex-passwords is not ours to touch here
    # Through the Pulumi transform, after the static user's own change.
    args = KubeflowInstallArgs.model_validate({**PLATFORM, "oidc": OIDC})
    transform = as_pulumi_transform(args, "$2b$12$hash", "s3cret")
    result = transformed(transform, "kubernetes:core/v1:ConfigMap", "kf:auth/dex", UPSTREAM_DEX_CONFIG)
    value = secret["stringData"]["UPSTREAM_OIDC_CLIENT_SECRET"]
    digest = annotations["gpu-platform.io/upstream-oidc-secret-sha256"]

    def check(values: list[Any]) -> None:
        changed, *rest = values
        assert changed is not None
        both = yaml.safe_load(changed.props["data"]["config.yaml"])
        assert both["staticPasswords"][0]["email"] == "ml-admin@corp.example" and both["connectors"][0]["id"] == "upstream-oidc"
        assert rest == ["s3cret", True, hashlib.sha256(b"s3cret").hexdigest(), True]  # both stay Pulumi secrets

    return pulumi.Output.all(result, value, value.is_secret(), digest, digest.is_secret()).apply(check)


@pulumi.runtime.test
def test_oidc_adds_no_secret_beside_upstreams(engine: Engine) -> pulumi.Output[Any]:
    """No Secret of our own next to upstream's dex-oidc-client: its name would collide with the
    kustomize output, and a Dex waiting on a Secret created after the manifests would never
    become ready. (That the value stays a Pulumi secret is checked on the transform's output,
    since the rendered objects do not appear under mocks.)"""
    args = KubeflowInstallArgs.model_validate({**PLATFORM, "oidc": OIDC})
    kf = KubeflowInstall(
        "kf",
        args,
        training_pools=[TRAINING_POOL],
        dex_password_hash=pulumi.Output.secret("$2b$12$h"),
        oidc_client_secret=pulumi.Output.secret("client-secret-never-in-a-plan"),
    )

    def check(_: Any) -> None:
        assert engine.of_type("kubernetes:core/v1:Secret") == []

    return settled_tree(kf).apply(check)


def test_component_refuses_oidc_without_its_secret() -> None:
    args = KubeflowInstallArgs.model_validate({**PLATFORM, "oidc": OIDC})
    with pytest.raises(pulumi.InputPropertyError) as error:
        KubeflowInstall("kf", args, training_pools=[TRAINING_POOL], dex_password_hash="$2b$12$h")
    assert error.value.property_path == "oidc_client_secret"


# --- generated Pipelines credentials (no minio/minio123, no empty MySQL root password) -------------

# As kubeflow/pipelines renders them in the kubeflow namespace (third-party/seaweedfs/base/seaweedfs/
# mlpipeline-minio-artifact-secret.yaml, base/installs/generic/mysql-secret.yaml,
# third-party/mysql/base/mysql-deployment.yaml).
UPSTREAM_ARTIFACT_SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "mlpipeline-minio-artifact", "namespace": "kubeflow"},
    "stringData": {"accesskey": "minio", "secretkey": "minio123"},
}
UPSTREAM_MYSQL_SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "mysql-secret", "namespace": "kubeflow"},
    "stringData": {"username": "root", "password": ""},
}
UPSTREAM_MYSQL = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "mysql", "namespace": "kubeflow"},
    "spec": {
        "selector": {"matchLabels": {"app": "mysql"}},
        "template": {
            "metadata": {"labels": {"app": "mysql"}},
            "spec": {
                "serviceAccountName": "mysql",
                "containers": [
                    {
                        "name": "mysql",
                        "image": "mysql:8.4",
                        "args": ["--datadir", "/var/lib/mysql"],
                        "env": [{"name": "MYSQL_ALLOW_EMPTY_PASSWORD", "value": "true"}],
                        "ports": [{"containerPort": 3306, "name": "mysql"}],
                    }
                ],
            },
        },
    },
}
# A consumer: the API server reads both Secrets by secretKeyRef and is left alone.
UPSTREAM_API_SERVER = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "ml-pipeline", "namespace": "kubeflow"},
    "spec": {
        "selector": {"matchLabels": {"app": "ml-pipeline"}},
        "template": {
            "metadata": {"labels": {"app": "ml-pipeline"}},
            "spec": {
                "containers": [
                    {
                        "name": "ml-pipeline-api-server",
                        "image": "ghcr.io/kubeflow/kfp-api-server:2.17.0",
                        "env": [
                            {"name": "DBCONFIG_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "mysql-secret", "key": "password"}}},
                            {
                                "name": "OBJECTSTORECONFIG_SECRETACCESSKEY",
                                "valueFrom": {"secretKeyRef": {"name": "mlpipeline-minio-artifact", "key": "secretkey"}},
                            },
                        ],
                    }
                ],
            },
        },
    },
}
CREDENTIALS = {
    Credential.ARTIFACT_ACCESS_KEY: pulumi.Output.secret("AKgenerated"),
    Credential.ARTIFACT_SECRET_KEY: pulumi.Output.secret("SKgenerated"),
    Credential.DATABASE_PASSWORD: pulumi.Output.secret("DBgenerated"),
}


@pulumi.runtime.test
def test_credentials_transform_replaces_the_upstream_defaults() -> pulumi.Output[Any]:
    artifact = upstream_credentials_transform(UPSTREAM_ARTIFACT_SECRET, CREDENTIALS)
    database = upstream_credentials_transform(UPSTREAM_MYSQL_SECRET, CREDENTIALS)
    mysql = upstream_credentials_transform(UPSTREAM_MYSQL, CREDENTIALS)
    assert artifact is not None and database is not None and mysql is not None
    assert artifact["metadata"] == UPSTREAM_ARTIFACT_SECRET["metadata"] and list(artifact["stringData"]) == ["accesskey", "secretkey"]
    assert database["stringData"]["username"] == "root"
    (container,) = mysql["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [{"name": "MYSQL_ROOT_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "mysql-secret", "key": "password"}}}]
    assert container["args"] == ["--datadir", "/var/lib/mysql"] and container["image"] == "mysql:8.4"
    assert UPSTREAM_MYSQL["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "MYSQL_ALLOW_EMPTY_PASSWORD", "value": "true"}]
    kubernetes_validate.validate(mysql, "1.34", strict=True)
    # Consumers read the Secrets and stay as upstream ships them; other namespaces are not ours.
    assert upstream_credentials_transform(UPSTREAM_API_SERVER, CREDENTIALS) is None
    assert upstream_credentials_transform({**UPSTREAM_MYSQL_SECRET, "metadata": {"name": "mysql-secret", "namespace": "db"}}, CREDENTIALS) is None
    values = [artifact["stringData"]["accesskey"], artifact["stringData"]["secretkey"], database["stringData"]["password"]]

    def check(resolved: list[Any]) -> None:
        assert resolved == ["AKgenerated", "SKgenerated", "DBgenerated", True, True, True]  # and they stay Pulumi secrets

    return pulumi.Output.all(*values, *[v.is_secret() for v in values]).apply(check)


def test_credentials_transform_fails_when_mysql_has_no_mysql_container() -> None:
    renamed = json.loads(json.dumps(UPSTREAM_MYSQL))
    renamed["spec"]["template"]["spec"]["containers"][0]["name"] = "db"
    with pytest.raises(ValueError, match=r"Deployment kubeflow/mysql has no container named mysql \(got \['db'\]\)"):
        upstream_credentials_transform(renamed, CREDENTIALS)


@pulumi.runtime.test
def test_pulumi_transform_applies_the_credentials_on_pipelines_only() -> pulumi.Output[Any]:
    transform = as_pulumi_transform(KubeflowInstallArgs(), None, None, CREDENTIALS)
    secret = transformed(transform, "kubernetes:core/v1:Secret", "kf:kubeflow/mysql-secret", UPSTREAM_MYSQL_SECRET)
    mysql = transformed(transform, "kubernetes:apps/v1:Deployment", "kf:kubeflow/mysql", UPSTREAM_MYSQL)
    api = transformed(transform, "kubernetes:apps/v1:Deployment", "kf:kubeflow/ml-pipeline", UPSTREAM_API_SERVER)
    without = transformed(as_pulumi_transform(KubeflowInstallArgs(), None), "kubernetes:core/v1:Secret", "kf:kubeflow/mysql-secret", UPSTREAM_MYSQL_SECRET)

    def check(results: list[Any]) -> None:
        changed_secret, changed_mysql, unchanged_api, unchanged_secret = results
        assert changed_secret is not None and changed_mysql is not None
        assert changed_secret.props["stringData"]["password"] is not None
        assert [e["name"] for e in changed_mysql.props["spec"]["template"]["spec"]["containers"][0]["env"]] == ["MYSQL_ROOT_PASSWORD"]
        # The API server reads the password through the Secret: its spec as upstream has it (only not awaited).
        assert unchanged_api is not None and unchanged_api.props["spec"] == UPSTREAM_API_SERVER["spec"] and skips_await(unchanged_api.props["metadata"])
        assert unchanged_secret is None

    return pulumi.Output.all(secret, mysql, api, without).apply(check)


@pulumi.runtime.test
def test_pipelines_edition_generates_its_credentials(engine: Engine) -> pulumi.Output[Any]:
    kf = KubeflowInstall("kf", KubeflowInstallArgs(), training_pools=[TRAINING_POOL])

    def check(_: Any) -> None:
        passwords = {r.name: r for r in engine.of_type("random:index/randomPassword:RandomPassword")}
        assert sorted(passwords) == ["kf-artifact-store-access-key", "kf-artifact-store-secret-key", "kf-database-password"]
        assert [passwords[n].inputs["length"] for n in sorted(passwords)] == [20, 40, 32]
        for password in passwords.values():
            assert password.inputs["special"] is False  # they reach a shell command and MySQL DSNs unquoted
            assert password.parent == engine.resource("kf").urn

    return settled_tree(kf).apply(check)


@pulumi.runtime.test
def test_platform_edition_generates_every_platform_credential(engine: Engine) -> pulumi.Output[Any]:
    kf = KubeflowInstall("kf", KubeflowInstallArgs.model_validate(PLATFORM), training_pools=[TRAINING_POOL], dex_password_hash="$2b$12$h")

    def check(_: Any) -> None:
        passwords = {r.name: r.inputs for r in engine.of_type("random:index/randomPassword:RandomPassword")}
        assert sorted(passwords) == sorted(f"kf-{c.value}" for c in Credential)
        assert passwords["kf-oauth2-cookie-secret"]["length"] == 32  # oauth2-proxy takes 16, 24 or 32 bytes
        assert all(p["special"] is False for p in passwords.values())

    return settled_tree(kf).apply(check)


# --- credentials the user brings ----------------------------------------------------------------------

BROUGHT = {c: pulumi.Output.secret(f"brought{c.name.replace('_', '')}0123456789abcdef"[:32]) for c in Credential}


def captured_transform(monkeypatch: pytest.MonkeyPatch) -> list[pulumi.ResourceTransform]:
    """The transform each kustomize Directory is given, as the component builds it."""
    import pulumi_kubernetes as k8s

    captured: list[pulumi.ResourceTransform] = []
    upstream = k8s.kustomize.v2.Directory

    class Recording(upstream):  # type: ignore[misc, valid-type]
        def __init__(self, resource_name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> None:
            captured.extend((opts.transforms or []) if opts else [])
            super().__init__(resource_name, args, opts=opts)

    monkeypatch.setattr(k8s.kustomize.v2, "Directory", Recording)
    return captured


@pulumi.runtime.test
def test_brought_credentials_replace_the_generated_ones(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> pulumi.Output[Any]:
    transforms = captured_transform(monkeypatch)
    brought = {Credential.DATABASE_PASSWORD: pulumi.Output.secret("teamDatabasePassword01"), "artifact-store-access-key": "teamAccessKey01"}
    kf = KubeflowInstall("kf", KubeflowInstallArgs(), training_pools=[TRAINING_POOL], credentials=brought)
    artifact = transformed(transforms[-1], "kubernetes:core/v1:Secret", "kf:kubeflow/mlpipeline-minio-artifact", UPSTREAM_ARTIFACT_SECRET)
    database = transformed(transforms[-1], "kubernetes:core/v1:Secret", "kf:kubeflow/mysql-secret", UPSTREAM_MYSQL_SECRET)

    def check(values: list[Any]) -> None:
        _, artifact_secret, database_secret = values
        passwords = sorted(r.name for r in engine.of_type("random:index/randomPassword:RandomPassword"))
        assert passwords == ["kf-artifact-store-secret-key"]  # only what was not brought is generated, under its old name
        assert artifact_secret.props["stringData"]["accesskey"] is not None and database_secret is not None

    values = [artifact.apply(lambda r: r.props["stringData"]["accesskey"]), database.apply(lambda r: r.props["stringData"]["password"])]
    resolved = pulumi.Output.all(*values, *[pulumi.Output.from_input(v).is_secret() for v in values])

    def check_values(found: list[Any]) -> None:
        assert found == ["teamAccessKey01", "teamDatabasePassword01", True, True]  # brought, and still Pulumi secrets

    return pulumi.Output.all(settled_tree(kf), artifact, database).apply(check).apply(lambda _: resolved.apply(check_values))


@pulumi.runtime.test
def test_every_credential_brought_declares_no_random_password(engine: Engine) -> pulumi.Output[Any]:
    kf = KubeflowInstall("kf", KubeflowInstallArgs.model_validate(PLATFORM), training_pools=[TRAINING_POOL], dex_password_hash="$2b$12$h", credentials=BROUGHT)

    def check(_: Any) -> None:
        assert engine.of_type("random:index/randomPassword:RandomPassword") == []

    return settled_tree(kf).apply(check)


@pulumi.runtime.test
def test_credentials_secret_is_read_instead_of_generating(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> pulumi.Output[Any]:
    """The existing Secret is read once (Secret.get, a read the offline engine answers with placeholders and a
    notice); its keys stand for every credential not brought otherwise."""
    from gpu_platform.infra.preview.engine import PLACEHOLDER_PASSWORD

    transforms = captured_transform(monkeypatch)
    args = KubeflowInstallArgs.model_validate({"credentials_secret": {"namespace": "team-secrets", "name": "kubeflow-credentials"}})
    kf = KubeflowInstall("kf", args, training_pools=[TRAINING_POOL], credentials={"database-password": "teamDatabasePassword01"})
    artifact = transformed(transforms[-1], "kubernetes:core/v1:Secret", "kf:kubeflow/mlpipeline-minio-artifact", UPSTREAM_ARTIFACT_SECRET)
    database = transformed(transforms[-1], "kubernetes:core/v1:Secret", "kf:kubeflow/mysql-secret", UPSTREAM_MYSQL_SECRET)
    values = pulumi.Output.all(
        artifact.apply(lambda r: r.props["stringData"]["secretkey"]),
        database.apply(lambda r: r.props["stringData"]["password"]),
    )

    def check(found: list[Any]) -> None:
        assert engine.of_type("random:index/randomPassword:RandomPassword") == []
        assert any("Secret team-secrets/kubeflow-credentials was not read offline" in n for n in engine.mocks.notices)
        assert found == [PLACEHOLDER_PASSWORD[:40], "teamDatabasePassword01"]

    return pulumi.Output.all(settled_tree(kf), values).apply(lambda v: check(v[1]))


@pytest.mark.parametrize(
    ("credentials", "path", "reason"),
    [
        (
            {"katib-database-password": "teamKatibPassword01"},
            "credentials[katib-database-password]",
            "credentials[katib-database-password]: not a credential of the pipelines edition; the pipelines edition has "
            "artifact-store-access-key, artifact-store-secret-key, database-password",
        ),
        (
            {"database": "x"},
            "credentials[database]",
            "credentials[database]: no credential; the pipelines edition has artifact-store-access-key, artifact-store-secret-key, database-password",
        ),
        (
            {Credential.ARTIFACT_SECRET_KEY: "minio123"},
            "credentials[artifact-store-secret-key]",
            "credentials[artifact-store-secret-key]: artifact-store-secret-key is the value upstream Kubeflow ships; choose your own (got a secret value)",
        ),
        (
            {Credential.DATABASE_PASSWORD: 42},
            "credentials[database-password]",
            "credentials[database-password]: expected a string or a pulumi.Output[str] (pass a secret) (got an int)",
        ),
    ],
)
def test_component_refuses_credentials_it_cannot_use(credentials: dict[Any, Any], path: str, reason: str) -> None:
    with pytest.raises(pulumi.InputPropertyError) as error:
        KubeflowInstall("kf", KubeflowInstallArgs(), training_pools=[TRAINING_POOL], credentials=credentials)
    assert error.value.property_path == path and error.value.reason == reason


def test_credentials_secret_refuses_a_missing_or_unusable_key() -> None:
    from gpu_platform.components.kubeflow.args import CredentialsSecret
    from gpu_platform.components.kubeflow.install import _read_credential

    where = CredentialsSecret(namespace="team-secrets", name="kubeflow-credentials")
    data = {"database-password": base64.b64encode(b"teamDatabasePassword01").decode(), "artifact-store-secret-key": base64.b64encode(b"minio123").decode()}
    assert _read_credential(data, Credential.DATABASE_PASSWORD, where) == "teamDatabasePassword01"
    with pytest.raises(
        ValueError,
        match=r"^kubeflow credentials: Secret team-secrets/kubeflow-credentials has no key artifact-store-access-key "
        r"\(it holds artifact-store-secret-key, database-password\)$",
    ):
        _read_credential(data, Credential.ARTIFACT_ACCESS_KEY, where)
    with pytest.raises(ValueError, match="artifact-store-secret-key is the value upstream Kubeflow ships") as error:
        _read_credential(data, Credential.ARTIFACT_SECRET_KEY, where)
    assert "minio123" not in str(error.value)


def test_brought_credential_problems_never_quote_the_value() -> None:
    for credential in Credential:
        for value in ("", credential.upstream, "has space", "x" * 7, "y" * 20):
            problem = credential.problem(value)
            assert problem is None or (value == "" or value not in problem), (credential, problem)


def test_each_edition_replaces_only_what_it_renders() -> None:
    assert edition_credentials(Edition.PIPELINES) == [
        Credential.ARTIFACT_ACCESS_KEY,
        Credential.ARTIFACT_SECRET_KEY,
        Credential.DATABASE_PASSWORD,
    ]
    assert edition_credentials(Edition.PLATFORM) == list(Credential)


# As kubeflow/manifests' example/ renders them at v1.10.2 (values shortened where they do not matter).
def _data(**values: str) -> dict[str, str]:
    return {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}


UPSTREAM_KATIB_SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "type": "Opaque",
    "metadata": {"name": "katib-mysql-secrets", "namespace": "kubeflow"},
    "data": _data(MYSQL_ROOT_PASSWORD="test"),
}
UPSTREAM_KATIB_MYSQL = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "katib-mysql", "namespace": "kubeflow"},
    "spec": {
        "selector": {"matchLabels": {"katib.kubeflow.org/component": "mysql"}},
        "template": {
            "metadata": {"labels": {"katib.kubeflow.org/component": "mysql"}},
            "spec": {
                "containers": [
                    {
                        "name": "katib-mysql",
                        "image": "mysql:8.0.29",
                        "args": ["--datadir", "/var/lib/mysql/datadir"],
                        "env": [
                            {"name": "MYSQL_ROOT_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "katib-mysql-secrets", "key": "MYSQL_ROOT_PASSWORD"}}},
                            {"name": "MYSQL_ALLOW_EMPTY_PASSWORD", "value": "true"},
                            {"name": "MYSQL_DATABASE", "value": "katib"},
                        ],
                    }
                ]
            },
        },
    },
}
UPSTREAM_CLIENT_SECRET = "pUBnBOY80SnXgjibTYM9ZWNzY2xreNGQok"
UPSTREAM_DEX_CLIENT = {
    "apiVersion": "v1",
    "kind": "Secret",
    "type": "Opaque",
    "metadata": {"name": "dex-oidc-client", "namespace": "auth"},
    "data": _data(OIDC_CLIENT_ID="kubeflow-oidc-authservice", OIDC_CLIENT_SECRET=UPSTREAM_CLIENT_SECRET),
}
UPSTREAM_OAUTH2_PROXY = {
    "apiVersion": "v1",
    "kind": "Secret",
    "type": "Opaque",
    "metadata": {"name": "oauth2-proxy-h675gf55ht", "namespace": "oauth2-proxy"},
    "data": _data(**{"client-id": "kubeflow-oidc-authservice", "client-secret": UPSTREAM_CLIENT_SECRET, "cookie-secret": "7d16fee92f8d11b8940b081b3f8b8acb"}),
}
UPSTREAM_INSTALL_CONFIG = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "default-install-config-9h2h2b6hbk"},
    "data": {"profile-name": "kubeflow-user-example-com", "user": "user@example.com"},
}
PLATFORM_CREDENTIALS = {c: pulumi.Output.secret(f"generated-{c.value}") for c in Credential}


@pulumi.runtime.test
def test_platform_credentials_replace_katib_and_oauth2_defaults() -> pulumi.Output[Any]:
    katib = upstream_credentials_transform(UPSTREAM_KATIB_SECRET, PLATFORM_CREDENTIALS)
    dex = upstream_credentials_transform(UPSTREAM_DEX_CLIENT, PLATFORM_CREDENTIALS)
    proxy = upstream_credentials_transform(UPSTREAM_OAUTH2_PROXY, PLATFORM_CREDENTIALS)
    mysql = upstream_credentials_transform(UPSTREAM_KATIB_MYSQL, PLATFORM_CREDENTIALS)
    assert katib is not None and dex is not None and proxy is not None and mysql is not None
    for secret in (katib, dex, proxy):
        assert "data" not in secret and secret["metadata"]["name"] in {"katib-mysql-secrets", "dex-oidc-client", "oauth2-proxy-h675gf55ht"}
    assert dex["stringData"]["OIDC_CLIENT_ID"] == proxy["stringData"]["client-id"] == "kubeflow-oidc-authservice"
    (container,) = mysql["spec"]["template"]["spec"]["containers"]
    assert [e["name"] for e in container["env"]] == ["MYSQL_DATABASE", "MYSQL_ROOT_PASSWORD"]
    assert container["env"][1]["valueFrom"] == {"secretKeyRef": {"name": "katib-mysql-secrets", "key": "MYSQL_ROOT_PASSWORD"}}
    kubernetes_validate.validate(mysql, "1.34", strict=True)
    # The Pipelines edition's credentials leave the platform's other Secrets alone.
    assert upstream_credentials_transform(UPSTREAM_KATIB_SECRET, CREDENTIALS) is None
    assert upstream_credentials_transform(UPSTREAM_OAUTH2_PROXY, CREDENTIALS) is None
    assert upstream_credentials_transform(UPSTREAM_KATIB_MYSQL, CREDENTIALS) is None
    values = [
        katib["stringData"]["MYSQL_ROOT_PASSWORD"],
        dex["stringData"]["OIDC_CLIENT_SECRET"],
        proxy["stringData"]["client-secret"],
        proxy["stringData"]["cookie-secret"],
    ]

    def check(resolved: list[Any]) -> None:
        katib_password, dex_secret, proxy_secret, cookie, *secret = resolved
        assert katib_password == "generated-katib-database-password"
        assert dex_secret == proxy_secret == "generated-oauth2-client-secret"  # both sides of the client change together
        assert cookie == "generated-oauth2-cookie-secret"
        assert secret == [True] * 4

    return pulumi.Output.all(*values, *[v.is_secret() for v in values]).apply(check)


@pulumi.runtime.test
def test_platform_transforms_leave_no_upstream_default() -> pulumi.Output[Any]:
    """Every upstream default object of the platform edition, through the component's own transform chain."""
    args = KubeflowInstallArgs.model_validate(PLATFORM)
    steps = rendered_object_transforms(args, "$2b$12$ours", None, PLATFORM_CREDENTIALS)
    upstream = [
        UPSTREAM_ARTIFACT_SECRET,
        UPSTREAM_MYSQL_SECRET,
        UPSTREAM_MYSQL,
        UPSTREAM_KATIB_SECRET,
        UPSTREAM_KATIB_MYSQL,
        UPSTREAM_DEX_CLIENT,
        UPSTREAM_OAUTH2_PROXY,
        UPSTREAM_INSTALL_CONFIG,
        UPSTREAM_PROFILE,
    ]
    changed = [apply_transforms(steps, obj) for obj in upstream]
    assert all(c is not None for c in changed), [o["metadata"]["name"] for o, c in zip(upstream, changed, strict=True) if c is None]
    assert changed[7] == {**UPSTREAM_INSTALL_CONFIG, "data": {"profile-name": "kubeflow-user-example-com", "user": "ml-admin@corp.example"}}
    assert default_profile_transform({**UPSTREAM_INSTALL_CONFIG, "metadata": {"name": "other-config"}}, "a@b.c") is None

    def plain(resolved: list[Any]) -> None:
        text = json.dumps(resolved)
        for default in (
            "minio123",
            '"minio"',
            "MYSQL_ALLOW_EMPTY_PASSWORD",
            "user@example.com",
            UPSTREAM_CLIENT_SECRET,
            "7d16fee92f8d11b8940b081b3f8b8acb",
            '"password": ""',
            '"test"',
        ):
            assert default not in text, default
        for obj in resolved:
            assert "data" not in obj or obj["kind"] == "ConfigMap"  # no base64 left to hide a default in

    return pulumi.Output.all(*changed).apply(plain)


# --- the Directories carry the transform -----------------------------------------------------------


@pytest.mark.parametrize("data", [{}, PLATFORM])
@pulumi.runtime.test
def test_every_directory_carries_the_transform(engine: Engine, monkeypatch: pytest.MonkeyPatch, data: dict[str, Any]) -> pulumi.Output[Any]:
    import pulumi_kubernetes as k8s

    captured: dict[str, pulumi.ResourceOptions] = {}
    upstream = k8s.kustomize.v2.Directory

    class Recording(upstream):  # type: ignore[misc, valid-type]
        def __init__(self, resource_name: str, args: Any, opts: pulumi.ResourceOptions | None = None) -> None:
            captured[resource_name] = opts or pulumi.ResourceOptions()
            super().__init__(resource_name, args, opts=opts)

    monkeypatch.setattr(k8s.kustomize.v2, "Directory", Recording)
    args = KubeflowInstallArgs.model_validate({**data, "artifact_storage_gib": 750})
    kf = KubeflowInstall("kf", args, training_pools=[TRAINING_POOL], dex_password_hash="$2b$12$h" if data else None)
    assert sorted(captured) == sorted(f"kf-{role}" for role, _ in manifest_sources(args))
    results = []
    for name, opts in captured.items():
        assert opts.transforms and len(opts.transforms) == 1, f"{name} carries no transform"
        (transform,) = opts.transforms
        results.append(transformed(transform, "kubernetes:core/v1:PersistentVolumeClaim", "kf:kubeflow/seaweedfs-pvc", claim("seaweedfs-pvc")))

    def check(answers: list[Any]) -> None:
        for name, result in zip(captured, answers, strict=True):
            assert result is not None, f"{name}'s transform leaves the artifact claim alone"
            assert result.props["spec"]["resources"]["requests"]["storage"] == "750Gi"
            assert result.opts.protect is True and result.opts.retain_on_delete is True

    return pulumi.Output.all(settled(kf, *kf.directories), *results).apply(lambda v: check(v[1:]))


# --- the platform's default Profile ------------------------------------------------------------------

UPSTREAM_PROFILE = {  # kubeflow/manifests common/user-namespace at v1.10.2, after its replacements
    "apiVersion": "kubeflow.org/v1beta1",
    "kind": "Profile",
    "metadata": {"name": "kubeflow-user-example-com"},
    "spec": {"owner": {"kind": "User", "name": "user@example.com"}},
}


@pulumi.runtime.test
def test_default_profile_transform_gives_the_profile_our_owner() -> pulumi.Output[Any]:
    changed = default_profile_transform(UPSTREAM_PROFILE, "ml-admin@corp.example")
    assert changed == {**UPSTREAM_PROFILE, "spec": {"owner": {"kind": "User", "name": "ml-admin@corp.example"}}}
    assert UPSTREAM_PROFILE["spec"]["owner"]["name"] == "user@example.com"  # the input is not mutated
    ours = {**UPSTREAM_PROFILE, "spec": {"owner": {"kind": "User", "name": "nlp@corp.example"}}}
    assert default_profile_transform(ours, "ml-admin@corp.example") is None  # a tenant's Profile stays its own
    assert default_profile_transform({**UPSTREAM_PROFILE, "apiVersion": "other.io/v1"}, "a@b.c") is None
    transform = as_pulumi_transform(KubeflowInstallArgs.model_validate(PLATFORM), "$2b$12$h")
    result = transformed(transform, "kubernetes:kubeflow.org/v1beta1:Profile", "kf:kubeflow-user-example-com", UPSTREAM_PROFILE)

    def check(changed: Any) -> None:
        assert changed is not None and changed.props["spec"]["owner"]["name"] == "ml-admin@corp.example"

    return result.apply(check)


# --- the load balancer's health check ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, {"alb.ingress.kubernetes.io/healthcheck-path": "/apis/v1beta1/healthz"}),
        (PLATFORM, {"alb.ingress.kubernetes.io/healthcheck-path": "/healthz/ready", "alb.ingress.kubernetes.io/healthcheck-port": "15021"}),
    ],
)
@pulumi.runtime.test
def test_ingress_health_check_matches_the_backend(engine: Engine, data: dict[str, Any], expected: dict[str, str]) -> pulumi.Output[Any]:
    args = KubeflowInstallArgs.model_validate({**data, "ingress": INGRESS})
    kf = KubeflowInstall("kf", args, training_pools=[TRAINING_POOL], dex_password_hash="$2b$12$h" if data else None)
    assert kf.ingress is not None

    def check(_: Any) -> None:
        annotations = engine.resource("kf-ingress").inputs["metadata"]["annotations"]
        assert {k: v for k, v in annotations.items() if "healthcheck" in k} == expected

    return settled(kf.ingress).apply(check)


# --- the GPU quota on the kubeflow namespace (pipelines edition) ------------------------------------


@pulumi.runtime.test
def test_pipelines_gpu_quota_bounds_the_kubeflow_namespace(engine: Engine) -> pulumi.Output[Any]:
    kf = KubeflowInstall("kf", KubeflowInstallArgs(pipelines_gpu_quota=24), training_pools=[TRAINING_POOL])
    assert kf.pipelines_quota is not None

    def check(_: Any) -> None:
        quota = engine.resource("kf-pipelines-gpu-quota")
        assert quota.inputs["metadata"] == {"name": "pipelines-gpu-quota", "namespace": "kubeflow"}
        assert quota.inputs["spec"] == {"hard": {"requests.nvidia.com/gpu": "24"}}
        assert engine.resource("kf-pipelines").urn in quota.depends_on  # the kubeflow namespace exists first
        kubernetes_validate.validate(quota.inputs, "1.34", strict=True)

    return settled(kf.pipelines_quota).apply(check)


@pulumi.runtime.test
def test_no_pipelines_gpu_quota_by_default(engine: Engine) -> pulumi.Output[Any]:
    kf = KubeflowInstall("kf", KubeflowInstallArgs(), training_pools=[TRAINING_POOL])
    assert kf.pipelines_quota is None

    def check(_: Any) -> None:
        assert "kf-pipelines-gpu-quota" not in engine.names()

    return settled_tree(kf).apply(check)
