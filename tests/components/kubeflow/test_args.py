"""KubeflowInstallArgs and its parts (components/kubeflow/args.py): the pinned releases per edition, the documented
defaults and every validator."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_platform.components import KubeflowInstallArgs, TrainingPoolSelector
from gpu_platform.components.kubeflow.args import KNOWN_RELEASES, Edition
from tests.components.kubeflow.test_install import OIDC, PLATFORM, refused


@pytest.mark.parametrize("ref", ["master", "main", "v1.10-branch", "latest"])
def test_fails_when_release_is_not_pinned(ref: str) -> None:
    (line,) = refused({"release": ref})
    assert line.startswith(f"release: release {ref!r} is not pinned: use a release tag such as 2.17.0 or v1.10.2")


@pytest.mark.parametrize(
    ("data", "ref"),
    [
        ({}, "2.14.5"),  # sdk-2.14.5 is the SDK's tag; kubeflow/pipelines has no release 2.14.5
        ({}, "2.14"),
        ({}, "v1.10.2"),  # a kubeflow/manifests tag on the pipelines edition
        (PLATFORM, "2.17.0"),
        (PLATFORM, "v1.11.0"),  # exists, but its example/ cannot be rendered and checked offline
    ],
)
def test_fails_when_release_is_not_a_known_release_of_the_edition(data: dict[str, Any], ref: str) -> None:
    (line,) = refused({**data, "release": ref})
    edition = Edition(data.get("edition", "pipelines"))
    repository = "kubeflow/pipelines" if edition is Edition.PIPELINES else "kubeflow/manifests"
    assert line == (
        f"release: release {ref} is not a {repository} release this component is checked against for the "
        f"{edition.value} edition (kustomize cannot fetch a tag that does not exist); use one of "
        f'{", ".join(KNOWN_RELEASES[edition])}, or a full 40-character commit (got "{ref}")'
    )


@pytest.mark.parametrize("ref", KNOWN_RELEASES[Edition.PIPELINES])
def test_every_known_pipelines_release_is_accepted(ref: str) -> None:
    assert KubeflowInstallArgs(release=ref).release_ref == ref


def test_default_releases_are_the_newest_known() -> None:
    for edition, known in KNOWN_RELEASES.items():
        newest = max(known, key=lambda tag: tuple(int(p) for p in tag.lstrip("v").split(".")))
        assert KubeflowInstallArgs.model_validate({**(PLATFORM if edition is Edition.PLATFORM else {})}).release_ref == newest


def test_release_defaults_per_edition_and_takes_commits() -> None:
    assert KubeflowInstallArgs().release_ref == "2.17.0"
    assert KubeflowInstallArgs.model_validate(PLATFORM).release_ref == "v1.10.2"
    commit = "0123456789abcdef0123456789abcdef01234567"
    assert KubeflowInstallArgs(release=commit).release_ref == commit


def test_fails_when_platform_has_no_dex_user() -> None:
    (line,) = refused({"edition": "platform"})
    assert line == "dex_user_email: dex_user_email is required on the platform edition (the upstream user@example.com is never deployed) (got null)"


def test_fails_when_dex_user_is_the_upstream_default() -> None:
    (line,) = refused({**PLATFORM, "dex_user_email": "user@example.com"})
    assert line.startswith("dex_user_email: dex_user_email user@example.com is the upstream default login")


def test_fails_when_pipelines_edition_gets_a_dex_user() -> None:
    (line,) = refused({"dex_user_email": "a@corp.example"})
    assert line.startswith("dex_user_email: dex_user_email applies to the platform edition only")


def test_fails_when_artifact_store_is_smaller_than_upstream() -> None:
    (line,) = refused({"artifact_storage_gib": 10})
    assert line == "artifact_storage_gib: Input should be greater than or equal to 20 (got 10)"


def test_fails_when_platform_gets_a_pipelines_gpu_quota() -> None:
    (line,) = refused({**PLATFORM, "pipelines_gpu_quota": 8})
    assert line == (
        "pipelines_gpu_quota: pipelines_gpu_quota 8 applies to the pipelines edition only; on the platform edition "
        "pipeline runs happen in the tenants' Profile namespaces, bounded by their quotas (got 8)"
    )


def test_fails_when_pipelines_gpu_quota_is_negative() -> None:
    (line,) = refused({"pipelines_gpu_quota": -1})
    assert line == "pipelines_gpu_quota: Input should be greater than or equal to 0 (got -1)"


def test_fails_when_a_tenant_is_listed_twice() -> None:
    tenant = {"name": "vision", "owner": "a@corp.example", "gpus": 4}
    (line,) = refused({"tenants": [tenant, tenant]})
    assert line == 'tenants[1].name: tenant vision is listed twice; names must be unique (got "vision")'


def test_fails_when_a_tenant_takes_a_platform_namespace() -> None:
    (line,) = refused({"tenants": [{"name": "kubeflow", "owner": "a@corp.example", "gpus": 4}]})
    assert line.startswith("tenants[0].name: tenant kubeflow is a namespace the platform uses")


def test_fails_when_tenant_owner_is_not_an_email() -> None:
    (line,) = refused({"tenants": [{"name": "vision", "owner": "vision-team", "gpus": 4}]})
    assert line == "tenants[0].owner: 'vision-team' is not an email address (got \"vision-team\")"


def test_fails_when_tenant_has_no_gpu_quota() -> None:
    (line,) = refused({"tenants": [{"name": "vision", "owner": "a@corp.example"}]})
    assert line == "tenants[0].gpus: required (got nothing)"


def test_fails_when_ingress_certificate_is_not_an_acm_arn() -> None:
    ingress = {
        "hostname": "kubeflow.corp.example",
        "certificate_arn": "arn:aws:iam::123456789012:server-certificate/x",
        "cognito_user_pool_arn": "arn:aws:cognito-idp:us-west-2:123456789012:userpool/us-west-2_abc",
        "cognito_user_pool_client_id": "client",
        "cognito_user_pool_domain": "corp-auth",
    }
    (line,) = refused({"ingress": ingress})
    assert line.startswith("ingress.certificate_arn: String should match pattern")


def test_fails_when_training_taint_has_no_value() -> None:
    (line,) = refused({"training_pool": {"taint": {"key": "gpu-platform.io/workload", "value": ""}}})
    assert line.startswith("training_pool.taint.value: String should have at least 1 character")


def test_kubeflow_defaults() -> None:
    args = KubeflowInstallArgs()
    assert args.edition is Edition.PIPELINES
    assert (args.artifact_storage_gib, args.database_storage_gib) == (500, 100)  # upstream: 10-20 Gi
    assert args.training_pool == TrainingPoolSelector()
    assert args.pipelines_gpu_quota is None and args.tenants == [] and args.ingress is None
    selector = TrainingPoolSelector()
    assert (selector.label_key, selector.label_value) == ("gpu-platform.io/workload", "training")
    assert str(selector.taint) == "gpu-platform.io/workload=training:NoSchedule"


def test_fails_when_oidc_is_given_to_pipelines_or_is_not_https() -> None:
    assert refused({"oidc": OIDC}) == ['oidc: oidc applies to the platform edition only; Pipelines standalone has no Dex (got "https://login.corp.example")']
    (line,) = refused({**PLATFORM, "oidc": {**OIDC, "issuer": "http://login.corp.example"}})
    assert line.startswith("oidc.issuer: String should match pattern")
    (line,) = refused({**PLATFORM, "oidc": {**OIDC, "redirect_uri": "https://kubeflow.corp.example/callback"}})
    assert line.startswith("oidc.redirect_uri: String should match pattern")
