"""KubeflowInstallArgs and its parts: edition and release (only the tags the component is checked against), storage, tenants, the training pool, OIDC and ALB exposure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, model_validator

from gpu_platform.components.core.kube import DnsLabel, DnsSubdomain, ip_address
from gpu_platform.components.core.labels import WORKLOAD_LABEL
from gpu_platform.components.core.models import ARGS_CONFIG, field_error, first_repeat
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.pools.shapes import LabelKey, LabelValue, NodePoolShape, Taint

__all__ = [
    "KNOWN_RELEASES",
    "AlbCognitoIngress",
    "CredentialsSecret",
    "Edition",
    "KubeflowInstallArgs",
    "OidcIssuer",
    "TenantProfile",
    "TrainingPoolSelector",
]

DEFAULT_DEX_PASSWORD = "12341234"
"""The password of the upstream Dex static user user@example.com; never deployed."""
ALB_INGRESS_CLASS = "alb"
KUBEFLOW_NAMESPACE = "kubeflow"
"""Where both editions' kustomizations put Kubeflow (fixed upstream)."""
EDITION_NAMESPACES = {
    "pipelines": ("kubeflow",),
    "platform": (
        "kubeflow",
        "auth",
        "istio-system",
        "cert-manager",
        "oauth2-proxy",
        "knative-serving",
        "kubeflow-user-example-com",
    ),
}
"""Namespaces each edition's manifests create, which no other component or tenant may take."""

PIPELINE_STORAGE_TYPE = "kubernetes:core/v1:PersistentVolumeClaim"
ARTIFACT_CLAIMS = frozenset({"minio-pvc", "seaweedfs-pvc"})
"""The artifact store's claim: MinIO before 2.15 of KFP, SeaweedFS since (10 Gi or 20 Gi upstream)."""
DATABASE_CLAIMS = frozenset({"mysql-pv-claim"})
"""The metadata/pipelines MySQL claim (20 Gi upstream)."""

ARTIFACT_SECRET = "mlpipeline-minio-artifact"
"""KFP's object store credentials (accesskey, secretkey; upstream minio / minio123). SeaweedFS (or
MinIO) takes its admin keys from it, the API server, the UI and Argo's artifact repository read it by
secretKeyRef, the launcher through the Kubernetes API."""
DATABASE_SECRET = "mysql-secret"
"""KFP's database login (username root, upstream password ""), read by secretKeyRef by the API
server, metadata-grpc and the cache server."""
DATABASE_DEPLOYMENT = "mysql"
UPSTREAM_PROFILE_OWNER = "user@example.com"
"""The owner of kubeflow/manifests' default Profile (common/user-namespace, kubeflow-user-example-com)."""
DEFAULT_INSTALL_CONFIG = re.compile(r"^default-install-config(-[a-z0-9]{10})?$")
"""common/user-namespace's generated ConfigMap (namespace-less) naming the default Profile and its user."""


class Edition(StrEnum):
    """What to install."""

    PIPELINES = "pipelines"
    """Kubeflow Pipelines standalone (kubeflow/pipelines manifests): no login, no profiles."""
    PLATFORM = "platform"
    """The full platform (kubeflow/manifests example/): dashboard, notebooks, Katib, profiles, Dex."""


@dataclass(frozen=True)
class Footprint:
    """What an edition asks of the system pool (sum of its controllers' requests, rounded up)."""

    vcpus: float
    memory_mib: int


EDITION_FOOTPRINT = {
    # kubeflow/manifests README: the example needs about 16 GB of memory and 8 CPUs.
    Edition.PLATFORM: Footprint(vcpus=8, memory_mib=16384),
    # Pipelines alone: API server, UI, persistence agent, scheduled workflows, cache,
    # metadata, Argo, MySQL and the artifact store; an estimate with headroom.
    Edition.PIPELINES: Footprint(vcpus=2, memory_mib=4096),
}

KNOWN_RELEASES: dict[Edition, tuple[str, ...]] = {
    # kubeflow/pipelines release tags from 2.14.4 on (sdk-* tags are the Python SDK's, not releases
    # of the manifests: there is no 2.14.5). 2.15.0 replaced MinIO with SeaweedFS; every one of them
    # renders the Secrets, claims and MySQL Deployment the transforms below change, under the same names.
    Edition.PIPELINES: ("2.14.4", "2.15.0", "2.16.1", "2.17.0"),
    # kubeflow/manifests: v1.10.2 only. v1.11.0's example/ pulls the jobset release asset over
    # HTTP, so it cannot be rendered and checked offline (CHANGELOG).
    Edition.PLATFORM: ("v1.10.2",),
}
"""Per edition, the upstream release tags that exist and whose rendered objects the transforms are
checked against; ``release`` takes one of them or a full commit. One place: the lock of upstream
sources pins the same tags."""
DEFAULT_RELEASE = {Edition.PIPELINES: "2.17.0", Edition.PLATFORM: "v1.10.2"}
"""The newest known release of each edition."""
MANIFEST_REPOSITORY = {Edition.PIPELINES: "kubeflow/pipelines", Edition.PLATFORM: "kubeflow/manifests"}

_RELEASE_TAG = re.compile(r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?(-rc\.[0-9]+)?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$")


def _release_ref(value: str) -> str:
    if not (_RELEASE_TAG.match(value) or _COMMIT.match(value)):
        raise ValueError(f"release {value!r} is not pinned: use a release tag such as 2.17.0 or v1.10.2, or a full 40-character commit, never a branch")
    return value


def _email(value: str) -> str:
    if not _EMAIL.match(value):
        raise ValueError(f"{value!r} is not an email address")
    return value


def _hostname(value: str) -> str:
    if ip_address(value):
        raise ValueError(f"{value!r} is an IP address; the Ingress host is a fully qualified DNS name such as kubeflow.example.com")
    if not _HOSTNAME.match(value):
        raise ValueError(f"{value!r} is not a fully qualified DNS name such as kubeflow.example.com")
    return value


ReleaseRef = Annotated[str, AfterValidator(_release_ref)]
"""A release tag or a commit of the upstream manifests."""
Email = Annotated[str, AfterValidator(_email)]
Hostname = Annotated[str, AfterValidator(_hostname)]


class TrainingPoolSelector(BaseModel):
    """The label and taint that mark the dedicated training pool pipeline steps run on."""

    model_config = ARGS_CONFIG

    label_key: LabelKey = WORKLOAD_LABEL
    """Node label key of the training pool. Default: gpu-platform.io/workload."""
    label_value: LabelValue = "training"
    """Node label value of the training pool. Default: training."""
    taint: Taint = Field(default_factory=lambda: Taint(key=WORKLOAD_LABEL, value="training"))
    """The taint that keeps everything else off the pool. Default: gpu-platform.io/workload=training:NoSchedule."""

    def matches(self, pool: NodePoolShape) -> bool:
        """Whether ``pool`` carries this label and this taint."""
        return pool.labels.get(self.label_key) == self.label_value and self.taint in pool.taints


class TenantProfile(BaseModel):
    """A team: its namespace (a Kubeflow Profile on the platform edition), owner and quota."""

    model_config = ARGS_CONFIG

    name: DnsLabel
    """Profile and namespace name. Required."""
    owner: Email
    """Email of the team's owner (the Profile owner on the platform edition). Required."""
    gpus: Int = Field(ge=0, le=4096)
    """Most GPUs (requests.nvidia.com/gpu) the team's pods may hold at once. Required."""
    cpus: Int | None = Field(default=None, ge=1, le=100000)
    """Most CPUs the team's pods may request. Default: none (unlimited)."""
    memory_gib: Int | None = Field(default=None, ge=1, le=1048576)
    """Most memory (GiB) the team's pods may request. Default: none (unlimited)."""


class AlbCognitoIngress(BaseModel):
    """Expose the UI on an AWS ALB behind Amazon Cognito, as the Kubeflow-on-EKS guide does.

    The Ingress (class alb) is acted on by the AWS Load Balancer Controller (AwsLoadBalancerController),
    which the gpu-platform program installs with it on EKS; a program of one's own installs it beside
    this component: without it the Ingress stays without an address.
    """

    model_config = ARGS_CONFIG

    hostname: Hostname
    """Public DNS name of the UI. Required."""
    certificate_arn: str = Field(pattern=r"^arn:aws[-a-z]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[-0-9a-f]+$")
    """ACM certificate for the hostname (the ALB listens on HTTPS only). Required."""
    cognito_user_pool_arn: str = Field(pattern=r"^arn:aws[-a-z]*:cognito-idp:[a-z0-9-]+:[0-9]{12}:userpool/[-_A-Za-z0-9]+$")
    """Cognito user pool whose users may sign in. Required."""
    cognito_user_pool_client_id: str = Field(min_length=1)
    """App client of the user pool (with a client secret and the ALB's callback URL). Required."""
    cognito_user_pool_domain: str = Field(min_length=1)
    """Domain prefix of the user pool's hosted UI. Required."""
    internal: bool = False
    """An internal ALB (reachable from the VPC only) instead of an internet-facing one. Default: false."""


class OidcIssuer(BaseModel):
    """Sign-in through your identity provider: an OIDC connector in Kubeflow's Dex."""

    model_config = ARGS_CONFIG

    issuer: str = Field(pattern=r"^https://[^\s/]+(/[^\s]*)?$")
    """The provider's issuer URL (its /.well-known/openid-configuration lives below it). Required."""
    client_id: str = Field(min_length=1)
    """Client id Dex uses at the provider; its secret comes from a Pulumi secret. Required."""
    redirect_uri: str = Field(pattern=r"^https://[^\s/]+/dex/callback$")
    """Dex's callback as registered at the provider, https://<kubeflow host>/dex/callback. Required."""
    name: str = Field(default="Single sign-on", min_length=1, max_length=64)
    """Button text on Dex's login page. Default: Single sign-on."""


class CredentialsSecret(BaseModel):
    """An existing Kubernetes Secret that holds the Kubeflow credentials a team keeps in its own secret store
    (synced into the cluster by e.g. External Secrets), read when the stack deploys instead of generating them.

    It holds one key per credential of the edition, named as the credential: artifact-store-access-key,
    artifact-store-secret-key and database-password; on the platform edition also katib-database-password,
    oauth2-client-secret and oauth2-cookie-secret. A key it lacks fails the deploy, naming the key.
    """

    model_config = ARGS_CONFIG

    namespace: DnsLabel
    """Its namespace; not one the Kubeflow manifests create (the Secret must exist before them). Required."""
    name: DnsSubdomain
    """Its name. Required."""


OIDC_SECRET = "dex-oidc-client"
"""Upstream Dex's envFrom Secret in auth (its static client's id and secret); we add our key."""
OIDC_SECRET_ENV = "UPSTREAM_OIDC_CLIENT_SECRET"
"""The key (and so Dex's environment variable) holding the upstream issuer's client secret."""
OIDC_CONNECTOR_ID = "upstream-oidc"
OIDC_DIGEST_ANNOTATION = "gpu-platform.io/upstream-oidc-secret-sha256"


class KubeflowInstallArgs(BaseModel):
    """Inputs of KubeflowInstall."""

    model_config = ARGS_CONFIG

    edition: Edition = Edition.PIPELINES
    """pipelines (Kubeflow Pipelines standalone) or platform (the full kubeflow/manifests example). Default: pipelines."""
    release: ReleaseRef | None = None
    """Release of kubeflow/pipelines (pipelines: 2.14.4, 2.15.0, 2.16.1 or 2.17.0) or kubeflow/manifests (platform: v1.10.2), or a full commit; never a branch or a tag the component is not checked against. Default: none (2.17.0 for pipelines, v1.10.2 for platform)."""
    artifact_storage_gib: Int = Field(default=500, ge=20, le=65536)
    """Size of the pipeline artifact store's volume (upstream: 10-20 Gi, which hundreds of parallel runs fill). Default: 500."""
    database_storage_gib: Int = Field(default=100, ge=20, le=65536)
    """Size of the MySQL volume of pipeline runs and ML metadata (upstream: 20 Gi). Default: 100."""
    storage_class: DnsSubdomain | None = None
    """StorageClass of both volumes. Default: none (the cluster's default class)."""
    keep_volumes_on_delete: bool = True
    """The artifact and database claims are protected (Pulumi protect) and stay in the cluster when deleted from the stack (retainOnDelete). Default: true."""
    dex_user_email: Email | None = None
    """platform only: email of Dex's static user, whose password hash comes from a Pulumi secret. Default: none (required on the platform edition)."""
    training_pool: TrainingPoolSelector = Field(default_factory=TrainingPoolSelector)
    """The pool pipeline steps run on; a node pool or GPU class must carry its label and taint. Default: see TrainingPoolSelector."""
    tenants: list[TenantProfile] = Field(default_factory=list)
    """Teams, each with a GPU quota. platform: a Profile (namespace, owner RBAC, quota), where the team's notebooks and pipeline runs are bounded by it. pipelines: a namespace with a ResourceQuota that bounds only what the team runs there itself; KFP standalone runs every pipeline step in the kubeflow namespace, outside it (see pipelines_gpu_quota). Default: []."""
    pipelines_gpu_quota: Int | None = Field(default=None, ge=0, le=65536)
    """pipelines only: most GPUs (requests.nvidia.com/gpu) all pipeline steps together may hold at once, as a ResourceQuota on the kubeflow namespace where KFP standalone runs them. Default: none (no bound)."""
    oidc: OidcIssuer | None = None
    """platform only: also sign in through an OIDC issuer (Dex connector; client secret from a Pulumi secret). Default: none."""
    ingress: AlbCognitoIngress | None = None
    """Expose the UI on an AWS ALB with Cognito sign-in (EKS). Needs the AWS Load Balancer Controller, which the gpu-platform program installs with it (AwsLoadBalancerController). Default: none (in-cluster only)."""
    credentials_secret: CredentialsSecret | None = None
    """An existing Secret holding the credentials that replace upstream's defaults (object store keys, MySQL root passwords, oauth2-proxy's secrets), read when the stack deploys; a credential also given as a Pulumi secret (KubeflowInstall's credentials=) is taken from there. Default: none (each credential given as a Pulumi secret, else generated)."""

    @model_validator(mode="after")
    def _edition_rules(self) -> KubeflowInstallArgs:
        known = KNOWN_RELEASES[self.edition]
        if self.release is not None and not _COMMIT.match(self.release) and self.release not in known:
            raise field_error(
                "KubeflowInstallArgs",
                "release",
                f"release {self.release} is not a {MANIFEST_REPOSITORY[self.edition]} release this component is "
                f"checked against for the {self.edition.value} edition (kustomize cannot fetch a tag that does not "
                f"exist); use one of {', '.join(known)}, or a full 40-character commit",
                self.release,
            )
        if self.edition is Edition.PLATFORM and self.dex_user_email is None:
            raise field_error(
                "KubeflowInstallArgs",
                "dex_user_email",
                "dex_user_email is required on the platform edition (the upstream user@example.com is never deployed)",
                None,
            )
        if self.edition is Edition.PIPELINES and self.dex_user_email is not None:
            raise field_error(
                "KubeflowInstallArgs",
                "dex_user_email",
                "dex_user_email applies to the platform edition only; Pipelines standalone has no Dex",
                self.dex_user_email,
            )
        if self.edition is Edition.PIPELINES and self.oidc is not None:
            raise field_error(
                "KubeflowInstallArgs",
                "oidc",
                "oidc applies to the platform edition only; Pipelines standalone has no Dex",
                self.oidc.issuer,
            )
        if self.edition is Edition.PLATFORM and self.pipelines_gpu_quota is not None:
            raise field_error(
                "KubeflowInstallArgs",
                "pipelines_gpu_quota",
                f"pipelines_gpu_quota {self.pipelines_gpu_quota} applies to the pipelines edition only; on the platform "
                "edition pipeline runs happen in the tenants' Profile namespaces, bounded by their quotas",
                self.pipelines_gpu_quota,
            )
        if self.dex_user_email == "user@example.com":
            raise field_error(
                "KubeflowInstallArgs",
                "dex_user_email",
                "dex_user_email user@example.com is the upstream default login; use your own address",
                self.dex_user_email,
            )
        if (i := first_repeat([t.name for t in self.tenants])) is not None:
            tenant = self.tenants[i]
            raise field_error(
                "KubeflowInstallArgs",
                ("tenants", i, "name"),
                f"tenant {tenant.name} is listed twice; names must be unique",
                tenant.name,
            )
        if self.credentials_secret is not None and self.credentials_secret.namespace in EDITION_NAMESPACES[self.edition.value]:
            raise field_error(
                "KubeflowInstallArgs",
                ("credentials_secret", "namespace"),
                f"namespace {self.credentials_secret.namespace} is created by the Kubeflow manifests, so the credentials "
                "Secret could not exist before them; keep it in a namespace of your own",
                self.credentials_secret.namespace,
            )
        for i, tenant in enumerate(self.tenants):
            if tenant.name in ("kubeflow", "kube-system", "default", "auth", "istio-system"):
                raise field_error(
                    "KubeflowInstallArgs",
                    ("tenants", i, "name"),
                    f"tenant {tenant.name} is a namespace the platform uses; choose another name",
                    tenant.name,
                )
        return self

    @property
    def release_ref(self) -> str:
        """The pinned ref actually installed."""
        return self.release or DEFAULT_RELEASE[self.edition]

    @property
    def ui_backend(self) -> tuple[str, str, int]:
        """(service, namespace, port) of the UI: the pipelines UI, or the platform's Istio gateway."""
        if self.edition is Edition.PIPELINES:
            return "ml-pipeline-ui", KUBEFLOW_NAMESPACE, 80
        return "istio-ingressgateway", "istio-system", 80

    @property
    def ui_health_check(self) -> tuple[int | None, str]:
        """(port, path) the load balancer probes: the UI's own health endpoint, or the Istio gateway's.

        ml-pipeline-ui serves its single-page app on / and answers /apis/v1beta1/healthz (its
        readiness probe upstream) on the traffic port; the istio-ingressgateway Service's port 80
        routes by host and path through Istio, and the gateway's readiness is /healthz/ready on 15021.
        None: the traffic port.
        """
        if self.edition is Edition.PIPELINES:
            return None, "/apis/v1beta1/healthz"
        return 15021, "/healthz/ready"

    @property
    def ui_service(self) -> str:
        """The in-cluster address of the UI (host:port)."""
        service, namespace, port = self.ui_backend
        return f"{service}.{namespace}.svc.cluster.local:{port}"

    @property
    def pipelines_endpoint(self) -> str:
        """The in-cluster Kubeflow Pipelines API (what kfp.Client(host=...) takes)."""
        return f"http://ml-pipeline.{KUBEFLOW_NAMESPACE}.svc.cluster.local:8888"
