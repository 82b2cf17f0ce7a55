"""The gpu-platform:kubeflow stack config: the training pool, the capacity check, the
Dex password hash secret, and what a stack's plan shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import bcrypt
import pytest

from gpu_platform.infra.cli import main
from gpu_platform.infra.preview.engine import run_program
from gpu_platform.infra.stack.errors import ConfigError
from gpu_platform.infra.stack.read import load_stack_config, read_stack_file
from tests.conftest import PROJECT_DIR
from tests.factories import gke, t4_pool
from tests.infra.test_cli import project_with_stack
from tests.infra.test_config import set_config
from tests.infra.test_monitoring_plan import _paths_of

UPSTREAM_HASH = "$2y$12$4K/VkmDd1q1Orb3xAt82zu8gk7Ad6ReFR4LCP9UeYE90NLiN9Df72"  # kubeflow/manifests common/dex
TRAINING_POOL = t4_pool(
    name="train",
    labels={"gpu-platform.io/workload": "training"},
    taints=[{"key": "gpu-platform.io/workload", "value": "training"}],
)
BASE = {"gpu-platform:cloud": "gcp", "gcp:project": "p", "gpu-platform:gke": gke(gpu_pools=[t4_pool(), TRAINING_POOL])}
PLATFORM = {"install": {"edition": "platform", "dex_user_email": "ml-admin@corp.example"}}
HASH_KEY = "gpu-platform:kubeflow_dex_password_hash"


def lines_for(values: dict[str, Any], secret: list[str] | None = None) -> list[str]:
    set_config(values, secret)
    with pytest.raises(ConfigError) as info:
        load_stack_config()
    return info.value.lines


def test_pipelines_on_a_training_pool_is_accepted() -> None:
    set_config({**BASE, "gpu-platform:kubeflow": {}})
    config = load_stack_config()
    assert config.kubeflow is not None and config.kubeflow.install.edition.value == "pipelines"


@pytest.mark.parametrize(
    ("install", "ref"),
    [
        ({}, "2.14.5"),  # an SDK tag, no release of the manifests: kustomize would fail at pulumi up
        (PLATFORM["install"], "v1.9.9"),
    ],
)
def test_fails_when_the_release_does_not_exist(install: dict[str, Any], ref: str) -> None:
    (line,) = lines_for({**BASE, "gpu-platform:kubeflow": {"install": {**install, "release": ref}}}, [HASH_KEY] if install else None)
    assert line.startswith(f"gpu-platform:kubeflow.install.release: release {ref} is not a kubeflow/")
    assert line.endswith(f'or a full 40-character commit (got "{ref}")')


def test_preview_exits_2_on_a_release_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def pin(config: dict[str, Any]) -> None:
        pools = config["gpu-platform:gke"]["gpu_pools"]
        pools.append({**pools[0], "name": "train", "labels": TRAINING_POOL["labels"], "taints": TRAINING_POOL["taints"]})
        config["gpu-platform:kubeflow"] = {"install": {"release": "2.14.5"}}

    project = project_with_stack(tmp_path, "kfp", pin)
    assert main(["preview", "kfp", "--project-dir", str(project)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("gpu-platform: gpu-platform:kubeflow.install.release: release 2.14.5 is not a kubeflow/pipelines release")


def test_fails_when_no_pool_provides_the_training_pool() -> None:
    (line,) = lines_for({**BASE, "gpu-platform:gke": gke(), "gpu-platform:kubeflow": {}})
    assert line == (
        "gpu-platform:kubeflow.install.training_pool: no pool carries label gpu-platform.io/workload=training and taint "
        "gpu-platform.io/workload=training:NoSchedule; add both to a GPU pool (pools: system: gpu-platform.io/pool-role=system; "
        't4: gpu-platform.io/pool-role=gpu) (got "gpu-platform.io/workload=training")'
    )


def test_fails_when_the_training_pool_has_the_label_but_not_the_taint() -> None:
    labelled = t4_pool(name="train", labels={"gpu-platform.io/workload": "training"})
    (line,) = lines_for({**BASE, "gpu-platform:gke": gke(gpu_pools=[labelled]), "gpu-platform:kubeflow": {}})
    assert line.startswith("gpu-platform:kubeflow.install.training_pool: no pool carries label")


SMALL_SYSTEM = {"autoscaling": {"scope": "per_zone", "min_nodes": 1, "max_nodes": 1}}  # 2x e2-standard-4


def test_fails_when_the_system_pool_cannot_hold_the_platform() -> None:
    values = {**BASE, "gpu-platform:gke": gke(gpu_pools=[TRAINING_POOL], system_pool=SMALL_SYSTEM), "gpu-platform:kubeflow": PLATFORM}
    (line,) = lines_for({**values, HASH_KEY: "$2b$04$" + "a" * 53}, [HASH_KEY])
    assert line.startswith(
        "gpu-platform:kubeflow.install.edition: the platform edition needs 8 vCPU and 16 GiB on the system pool; system (2x e2-standard-4) offer 5.6 vCPU"
    )


def test_capacity_check_can_warn_instead() -> None:
    values = {**BASE, "gpu-platform:gke": gke(gpu_pools=[TRAINING_POOL], system_pool=SMALL_SYSTEM)}
    set_config({**values, "gpu-platform:kubeflow": {**PLATFORM, "capacity_check": "warn"}, HASH_KEY: "$2b$04$" + "a" * 53}, [HASH_KEY])
    config = load_stack_config()
    assert config.kubeflow is not None and config.kubeflow.capacity_problem(config.pool_shapes()) is not None


def test_fails_when_the_platform_has_no_password_hash() -> None:
    (line,) = lines_for({**BASE, "gpu-platform:kubeflow": PLATFORM})
    assert line.startswith(
        "gpu-platform:kubeflow_dex_password_hash: required when the Kubeflow platform edition is enabled; "
        "set it with `pulumi config set --secret gpu-platform:kubeflow_dex_password_hash"
    )


def test_fails_when_the_password_hash_is_plain_text() -> None:
    our_hash = bcrypt.hashpw(b"a better password", bcrypt.gensalt(rounds=4)).decode()
    (line,) = lines_for({**BASE, "gpu-platform:kubeflow": PLATFORM, HASH_KEY: our_hash})
    assert line.endswith("(got a plaintext value)") and our_hash not in line


def test_fails_when_the_password_hash_is_the_upstream_default() -> None:
    (line,) = lines_for({**BASE, "gpu-platform:kubeflow": PLATFORM, HASH_KEY: UPSTREAM_HASH}, [HASH_KEY])
    assert line.startswith("gpu-platform:kubeflow_dex_password_hash: the Dex password hash is the hash of the upstream default password 12341234")
    assert UPSTREAM_HASH not in line  # a SecretStr is never shown


def test_fails_when_the_password_itself_is_given() -> None:
    (line,) = lines_for({**BASE, "gpu-platform:kubeflow": PLATFORM, HASH_KEY: "12341234"}, [HASH_KEY])
    assert "must be a bcrypt hash, not a password" in line


def test_fails_when_ingress_is_set_on_gcp() -> None:
    ingress = {
        "hostname": "kubeflow.corp.example",
        "certificate_arn": "arn:aws:acm:us-west-2:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555",
        "cognito_user_pool_arn": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_AbCdEf",
        "cognito_user_pool_client_id": "4example",
        "cognito_user_pool_domain": "corp-kubeflow",
    }
    (line,) = lines_for({**BASE, "gpu-platform:kubeflow": {"install": {"ingress": ingress}}})
    assert line.startswith("gpu-platform:kubeflow.install.ingress: ingress is an AWS ALB with Cognito; on gcp")


# --- plans --------------------------------------------------------------------------------------


def test_prod_gke_plan_has_pinned_pipelines_on_the_training_pool() -> None:
    config, secret = read_stack_file(PROJECT_DIR, "prod-gke")
    plan = run_program(PROJECT_DIR, "prod-gke", config, secret)
    directories = [r.inputs["directory"] for r in plan.of_type("kubernetes:kustomize/v2:Directory")]
    assert directories == [
        "https://github.com/kubeflow/pipelines//manifests/kustomize/cluster-scoped-resources?ref=2.17.0",
        "https://github.com/kubeflow/pipelines//manifests/kustomize/env/platform-agnostic?ref=2.17.0",
    ]
    storage = plan.outputs["kubeflowStorage"]
    assert storage["artifactStore"]["storage"] == "1000Gi" and storage["database"]["storage"] == "200Gi"
    assert storage["retainOnDelete"] is True and storage["protect"] is True
    quotas = {r.inputs["metadata"]["namespace"]: r.inputs["spec"]["hard"] for r in plan.of_type("kubernetes:core/v1:ResourceQuota")}
    assert quotas["team-nlp"] == {"requests.nvidia.com/gpu": "16"}
    placement = plan.outputs["kubeflowTrainingPlacement"]
    assert placement["nodeSelector"] == {"cloud.google.com/compute-class": "a100x8"}  # spot first, then on-demand
    assert {"key": "gpu-platform.io/workload", "operator": "Equal", "value": "training", "effect": "NoSchedule"} in placement["tolerations"]


def test_dex_password_hash_never_appears_in_a_plan() -> None:
    config, secret = read_stack_file(PROJECT_DIR, "prod-gke")
    our_hash = bcrypt.hashpw(b"a better password", bcrypt.gensalt(rounds=4)).decode()
    config = {**config, "gpu-platform:kubeflow": {"install": {"edition": "platform", "dex_user_email": "ml-admin@corp.example"}}, HASH_KEY: our_hash}
    plan = run_program(PROJECT_DIR, "prod-gke", config, {*secret, HASH_KEY})
    (directory,) = plan.of_type("kubernetes:kustomize/v2:Directory")
    assert directory.inputs["directory"].endswith("/example?ref=v1.10.2")
    # The hash reaches only the Dex Secret the transform writes, as a Pulumi secret, on a real
    # `pulumi up`; the plan holds it nowhere, not even in plain text outputs.
    assert _paths_of(json.loads(json.dumps(plan.to_json())), our_hash) == []


OIDC = {"issuer": "https://login.corp.example", "client_id": "kubeflow", "redirect_uri": "https://kubeflow.corp.example/dex/callback"}
OIDC_KEY = "gpu-platform:kubeflow_oidc_client_secret"


def test_fails_when_oidc_has_no_client_secret() -> None:
    with_oidc = {"install": {**PLATFORM["install"], "oidc": OIDC}}
    hashed = {HASH_KEY: "$2b$04$" + "a" * 53}
    (line,) = lines_for({**BASE, "gpu-platform:kubeflow": with_oidc, **hashed}, [HASH_KEY])
    assert line == (
        "gpu-platform:kubeflow_oidc_client_secret: required when kubeflow.install.oidc is set; set it with "
        "`pulumi config set --secret gpu-platform:kubeflow_oidc_client_secret <client secret>` (got nothing)"
    )
    (line,) = lines_for({**BASE, "gpu-platform:kubeflow": with_oidc, **hashed, OIDC_KEY: "s3cret"}, [HASH_KEY])
    assert line.endswith("(got a plaintext value)") and "s3cret" not in line
    set_config({**BASE, "gpu-platform:kubeflow": with_oidc, **hashed, OIDC_KEY: "s3cret"}, [HASH_KEY, OIDC_KEY])
    assert load_stack_config().kubeflow_oidc_client_secret is not None


# --- credentials the stack brings (instead of generated ones) ----------------------------------------

PIPELINES_CREDENTIALS = {
    "gpu-platform:kubeflow_artifact_store_access_key": "teamAccessKey01",
    "gpu-platform:kubeflow_artifact_store_secret_key": "teamSecretKey0123456789",
    "gpu-platform:kubeflow_database_password": "teamDatabasePassword01",
}
PLATFORM_CREDENTIALS = {
    **PIPELINES_CREDENTIALS,
    "gpu-platform:kubeflow_katib_database_password": "teamKatibPassword01",
    "gpu-platform:kubeflow_oauth2_client_secret": "teamOauth2ClientSecret01",
    "gpu-platform:kubeflow_oauth2_cookie_secret": "teamCookieSecret0123456789abcdef",
}


def test_every_credential_has_its_secret_config_key() -> None:
    from gpu_platform.components.kubeflow.transforms import Credential
    from gpu_platform.infra.stack.model import KUBEFLOW_CREDENTIAL_KEYS, StackConfig
    from gpu_platform.infra.stack.read import SECRET_FIELDS

    assert set(KUBEFLOW_CREDENTIAL_KEYS) == set(Credential)
    for key in KUBEFLOW_CREDENTIAL_KEYS.values():
        field = StackConfig.model_fields[key]
        assert key in SECRET_FIELDS and field.default is None
        assert field.description and field.description.endswith("Default: none (read from kubeflow.install.credentials_secret, else generated).")


@pytest.mark.parametrize("edition", ["pipelines", "platform"])
def test_credentials_from_secret_config_reach_the_component(edition: str) -> None:
    from gpu_platform.components.kubeflow.transforms import Credential

    given = PIPELINES_CREDENTIALS if edition == "pipelines" else PLATFORM_CREDENTIALS
    kubeflow = {} if edition == "pipelines" else PLATFORM
    extra = {} if edition == "pipelines" else {HASH_KEY: "$2b$04$" + "a" * 53}
    set_config({**BASE, "gpu-platform:kubeflow": kubeflow, **given, **extra}, [*given, *extra])
    brought = load_stack_config().kubeflow_credentials()
    assert {f"gpu-platform:kubeflow_{c.value.replace('-', '_')}": v for c, v in brought.items()} == given
    assert all(isinstance(c, Credential) for c in brought)


def test_fails_when_a_credential_is_plain_text() -> None:
    (line,) = lines_for({**BASE, "gpu-platform:kubeflow": {}, "gpu-platform:kubeflow_database_password": "teamDatabasePassword01"})
    assert line == (
        "gpu-platform:kubeflow_database_password: must be a Pulumi secret, not plain text in the stack file; set it with "
        "`pulumi config set --secret gpu-platform:kubeflow_database_password <letters and digits>` (got a plaintext value)"
    )


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("kubeflow_artifact_store_access_key", "minio", "artifact-store-access-key is the value upstream Kubeflow ships; choose your own"),
        ("kubeflow_artifact_store_secret_key", "minio123", "artifact-store-secret-key is the value upstream Kubeflow ships; choose your own"),
        ("kubeflow_database_password", "", "database-password is empty"),
        ("kubeflow_katib_database_password", "test", "katib-database-password is the value upstream Kubeflow ships; choose your own"),
        ("kubeflow_oauth2_client_secret", "pUBnBOY80SnXgjibTYM9ZWNzY2xreNGQok", "oauth2-client-secret is the value upstream Kubeflow ships; choose your own"),
        ("kubeflow_oauth2_cookie_secret", "7d16fee92f8d11b8940b081b3f8b8acb", "oauth2-cookie-secret is the value upstream Kubeflow ships; choose your own"),
        ("kubeflow_database_password", "it's; rm -rf", "database-password must be letters and digits only: it reaches a shell command and MySQL DSNs unquoted"),
        (
            "kubeflow_artifact_store_secret_key",
            "short7x",
            "artifact-store-secret-key must be at least 8 characters (the object store refuses shorter keys), got 7",
        ),
        ("kubeflow_oauth2_cookie_secret", "a" * 20, "oauth2-cookie-secret must be 16, 24 or 32 characters (oauth2-proxy's AES key), got 20"),
    ],
)
def test_fails_when_a_credential_is_not_one_its_consumers_take(key: str, value: str, problem: str) -> None:
    full = f"gpu-platform:{key}"
    values = {**BASE, "gpu-platform:kubeflow": PLATFORM, HASH_KEY: "$2b$04$" + "a" * 53, full: value}
    (line,) = lines_for(values, [HASH_KEY, full])
    assert line == f"{full}: {problem} (got a secret value)"


@pytest.mark.parametrize(
    ("kubeflow", "problem"),
    [
        (None, "kubeflow_katib_database_password applies to Kubeflow, which this stack does not install (gpu-platform:kubeflow); remove it"),
        ({}, "kubeflow_katib_database_password applies to the platform edition only (Katib and oauth2-proxy); this stack installs pipelines; remove it"),
    ],
)
def test_fails_when_a_credential_has_no_consumer(kubeflow: dict[str, Any] | None, problem: str) -> None:
    key = "gpu-platform:kubeflow_katib_database_password"
    values = {**BASE, key: "teamKatibPassword01", **({} if kubeflow is None else {"gpu-platform:kubeflow": kubeflow})}
    (line,) = lines_for(values, [key])
    assert line == f"{key}: {problem} (got a secret value)"


def test_fails_when_the_credentials_secret_is_in_a_namespace_kubeflow_creates() -> None:
    install = {**PLATFORM["install"], "credentials_secret": {"namespace": "auth", "name": "kubeflow-credentials"}}
    (line,) = lines_for({**BASE, "gpu-platform:kubeflow": {"install": install}, HASH_KEY: "$2b$04$" + "a" * 53}, [HASH_KEY])
    assert line == (
        "gpu-platform:kubeflow.install.credentials_secret.namespace: namespace auth is created by the Kubeflow manifests, "
        'so the credentials Secret could not exist before them; keep it in a namespace of your own (got "auth")'
    )


def _kubeflow_plan(install: dict[str, Any], secrets: dict[str, str]) -> Any:
    config, secret = read_stack_file(PROJECT_DIR, "prod-gke")
    extra = {HASH_KEY: "$2b$04$" + "a" * 53} if install.get("edition") == "platform" else {}
    config = {**config, "gpu-platform:kubeflow": {"install": install}, **secrets, **extra}
    return run_program(PROJECT_DIR, "prod-gke", config, {*secret, *secrets, *extra})


@pytest.mark.parametrize(
    ("install", "secrets"),
    [
        ({}, PIPELINES_CREDENTIALS),
        (PLATFORM["install"], PLATFORM_CREDENTIALS),
        ({"credentials_secret": {"namespace": "team-secrets", "name": "kubeflow-credentials"}}, {}),
    ],
)
def test_brought_credentials_declare_no_random_password(install: dict[str, Any], secrets: dict[str, str]) -> None:
    """With every credential from the stack's secrets or an existing Secret, the plan holds no RandomPassword,
    so the random provider is never loaded (where it cannot be built, the Kubeflow stacks still run), and no
    value brought appears anywhere in the plan."""
    plan = _kubeflow_plan(install, secrets)
    assert plan.of_type("random:index/randomPassword:RandomPassword") == []
    document = json.loads(json.dumps(plan.to_json()))
    for value in secrets.values():
        assert _paths_of(document, value) == []
    if "credentials_secret" in install:
        assert any("Secret team-secrets/kubeflow-credentials was not read offline" in n for n in plan.notices)


def test_credentials_not_brought_are_still_generated() -> None:
    plan = _kubeflow_plan({}, {"gpu-platform:kubeflow_database_password": "teamDatabasePassword01"})
    passwords = sorted(r.name for r in plan.of_type("random:index/randomPassword:RandomPassword"))
    assert passwords == ["prod-gke-kubeflow-artifact-store-access-key", "prod-gke-kubeflow-artifact-store-secret-key"]
