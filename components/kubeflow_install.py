"""KubeflowInstall: Kubeflow Pipelines (standalone) or the full Kubeflow platform, at a
pinned release, sized for many parallel pipelines on a dedicated training pool.

How the manifests are installed, and why this way
-------------------------------------------------
The upstream kustomizations are rendered by ``kustomize.v2.Directory``: kustomize runs
inside the Kubernetes provider (no kustomize binary) straight from the pinned git ref.
The Pipelines edition applies ``manifests/kustomize/cluster-scoped-resources`` (the
namespace and the CRDs) first and ``env/platform-agnostic`` after it (``depends_on``),
as kubeflow/pipelines documents; the platform edition applies kubeflow/manifests'
``example`` as one Directory, within which the provider orders CRDs and namespaces
before the objects that need them.

v2 Directory is a remote component: it takes no Python ``transformations`` (v1
``kustomize.Directory`` did, by registering every rendered object from the program).
What changes the rendered objects here is Pulumi's resource ``transforms`` option, set
on each Directory: the engine calls the transforms for every child the provider
registers, including children of remote components, before the child is created. So the
artifact store and metadata database claims get their typed size, storage class and
protect and retain-on-delete; every upstream default credential either edition renders (the
object store keys minio/minio123, KFP's and Katib's MySQL root passwords, the oauth2-proxy <-> Dex
client secret and oauth2-proxy's cookie secret; UPSTREAM_SECRETS) is replaced by a generated
one (``pulumi_random``), Dex's static user gets its password hash from a Pulumi secret, and the
upstream default Profile and its install ConfigMap get our owner, on a real ``pulumi up``.
Under the SDK's mocks (the offline preview, the tests) a remote component's children are
never registered, so the transforms are not called there: they are plain functions over one
Kubernetes object (``rendered_object_transforms``, applied in order by ``apply_transforms``),
unit tested directly and run over the rendered manifests.

Nothing here imports the KFP SDK at import time; ``place_on_training_pool`` does, when
a pipeline author calls it (``pip install 'gpu-platform[kfp]'``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random
import yaml
from pydantic import AfterValidator, BaseModel, Field, model_validator

from gpu_platform.components.kube import DnsLabel, DnsSubdomain
from gpu_platform.components.labels import PART_OF_LABEL, TENANT_LABEL
from gpu_platform.components.models import first_repeat, input_error
from gpu_platform.components.numbers import Int
from gpu_platform.components.pools import ARGS_CONFIG, LabelKey, LabelValue, NodePoolShape, PoolPlacement, Taint, field_error, tolerations

__all__ = [
    "EDITION_FOOTPRINT",
    "AlbCognitoIngress",
    "OidcIssuer",
    "Edition",
    "Footprint",
    "KubeflowInstall",
    "KubeflowInstallArgs",
    "TenantProfile",
    "TrainingPoolSelector",
    "KNOWN_RELEASES",
    "place_on_training_pool",
]

DEFAULT_DEX_PASSWORD = "12341234"
"""The password of the upstream Dex static user user@example.com; never deployed."""
ALB_INGRESS_CLASS = "alb"
KUBEFLOW_NAMESPACE = "kubeflow"
"""Where both editions' kustomizations put Kubeflow (fixed upstream)."""
EDITION_NAMESPACES = {
    "pipelines": ("kubeflow",),
    "platform": (
        "kubeflow", "auth", "istio-system", "cert-manager", "oauth2-proxy", "knative-serving", "kubeflow-user-example-com",
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
        raise ValueError(
            f"release {value!r} is not pinned: use a release tag such as 2.17.0 or v1.10.2, "
            "or a full 40-character commit, never a branch"
        )
    return value


def _email(value: str) -> str:
    if not _EMAIL.match(value):
        raise ValueError(f"{value!r} is not an email address")
    return value


def _hostname(value: str) -> str:
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

    label_key: LabelKey = "gpu-platform.io/workload"
    """Node label key of the training pool. Default: gpu-platform.io/workload."""
    label_value: LabelValue = "training"
    """Node label value of the training pool. Default: training."""
    taint: Taint = Field(default_factory=lambda: Taint(key="gpu-platform.io/workload", value="training"))
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

    The Ingress (class alb) is acted on by the AWS Load Balancer Controller, a prerequisite this
    component does not install: without it the Ingress stays without an address.
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
    """Expose the UI on an AWS ALB with Cognito sign-in (EKS). Needs the AWS Load Balancer Controller on the cluster, which this component does not install. Default: none (in-cluster only)."""

    @model_validator(mode="after")
    def _edition_rules(self) -> KubeflowInstallArgs:
        known = KNOWN_RELEASES[self.edition]
        if self.release is not None and not _COMMIT.match(self.release) and self.release not in known:
            raise field_error(
                "KubeflowInstallArgs", "release",
                f"release {self.release} is not a {MANIFEST_REPOSITORY[self.edition]} release this component is "
                f"checked against for the {self.edition.value} edition (kustomize cannot fetch a tag that does not "
                f"exist); use one of {', '.join(known)}, or a full 40-character commit",
                self.release,
            )
        if self.edition is Edition.PLATFORM and self.dex_user_email is None:
            raise field_error(
                "KubeflowInstallArgs", "dex_user_email",
                "dex_user_email is required on the platform edition (the upstream user@example.com is never deployed)",
                None,
            )
        if self.edition is Edition.PIPELINES and self.dex_user_email is not None:
            raise field_error(
                "KubeflowInstallArgs", "dex_user_email",
                "dex_user_email applies to the platform edition only; Pipelines standalone has no Dex",
                self.dex_user_email,
            )
        if self.edition is Edition.PIPELINES and self.oidc is not None:
            raise field_error(
                "KubeflowInstallArgs", "oidc",
                "oidc applies to the platform edition only; Pipelines standalone has no Dex", self.oidc.issuer,
            )
        if self.edition is Edition.PLATFORM and self.pipelines_gpu_quota is not None:
            raise field_error(
                "KubeflowInstallArgs", "pipelines_gpu_quota",
                f"pipelines_gpu_quota {self.pipelines_gpu_quota} applies to the pipelines edition only; on the platform "
                "edition pipeline runs happen in the tenants' Profile namespaces, bounded by their quotas",
                self.pipelines_gpu_quota,
            )
        if self.dex_user_email == "user@example.com":
            raise field_error(
                "KubeflowInstallArgs", "dex_user_email",
                "dex_user_email user@example.com is the upstream default login; use your own address",
                self.dex_user_email,
            )
        if (i := first_repeat([t.name for t in self.tenants])) is not None:
            tenant = self.tenants[i]
            raise field_error(
                "KubeflowInstallArgs", ("tenants", i, "name"),
                f"tenant {tenant.name} is listed twice; names must be unique", tenant.name,
            )
        for i, tenant in enumerate(self.tenants):
            if tenant.name in ("kubeflow", "kube-system", "default", "auth", "istio-system"):
                raise field_error(
                    "KubeflowInstallArgs", ("tenants", i, "name"),
                    f"tenant {tenant.name} is a namespace the platform uses; choose another name", tenant.name,
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


def manifest_sources(args: KubeflowInstallArgs) -> list[tuple[str, str]]:
    """(role, kustomize git URL) in the order they must be applied."""
    ref = args.release_ref
    if args.edition is Edition.PIPELINES:
        base = "https://github.com/kubeflow/pipelines//manifests/kustomize"
        return [
            ("cluster-scoped", f"{base}/cluster-scoped-resources?ref={ref}"),
            ("pipelines", f"{base}/env/platform-agnostic?ref={ref}"),
        ]
    return [("platform", f"https://github.com/kubeflow/manifests//example?ref={ref}")]


# --- the training pool ------------------------------------------------------------------------


def training_placement(selector: TrainingPoolSelector, pools: Sequence[NodePoolShape]) -> PoolPlacement:
    """How a pipeline step lands on the training pool, from the stack's pools.

    One matching pool: its own placement (on GKE a spot-then-on-demand pool is selected
    through its ComputeClass, so the class keeps its spot-first order). Several: the
    training label, tolerating every taint they carry. None: ValueError.
    """
    matching = [p for p in pools if selector.matches(p)]
    if not matching:
        raise ValueError(
            f"no pool carries label {selector.label_key}={selector.label_value} and taint {selector.taint}"
        )
    if len(matching) == 1:
        return matching[0].placement
    tolerations: dict[str, Taint] = {}
    for pool in matching:
        for taint in pool.placement.tolerations:
            tolerations.setdefault(str(taint), taint)
    return PoolPlacement({selector.label_key: selector.label_value}, tuple(tolerations.values()))


def place_on_training_pool(task: Any, placement: PoolPlacement) -> Any:
    """Confine one KFP pipeline task to the training pool: its node selector and tolerations.

    Uses kfp-kubernetes (``pip install 'gpu-platform[kfp]'``); returns the task.
    """
    from kfp import kubernetes  # the KFP SDK is heavy: only pipeline authors import it

    for key, value in placement.node_selector.items():
        kubernetes.add_node_selector(task, label_key=key, label_value=value)
    for toleration in tolerations(placement.tolerations):
        kubernetes.add_toleration(task, **toleration)
    return task


# --- capacity ---------------------------------------------------------------------------------


def capacity_problem(edition: Edition, system_pools: Sequence[NodePoolShape], reserve_percent: int) -> str | None:
    """Why the system pools cannot hold the edition at their maximum size, or None.

    ``reserve_percent`` of the pools is kept for the kubelet, system pods and the other
    add-ons (monitoring, operators).
    """
    need = EDITION_FOOTPRINT[edition]
    vcpus = sum(p.vcpus * p.max_nodes for p in system_pools) * (100 - reserve_percent) / 100
    memory = sum(p.memory_mib * p.max_nodes for p in system_pools) * (100 - reserve_percent) / 100
    if need.vcpus <= vcpus and need.memory_mib <= memory:
        return None
    pools = ", ".join(f"{p.name} ({p.max_nodes}x {p.machine_type})" for p in system_pools) or "none"
    return (
        f"the {edition.value} edition needs {need.vcpus:g} vCPU and {need.memory_mib // 1024} GiB on the system pool; "
        f"{pools} offer {vcpus:g} vCPU and {memory / 1024:g} GiB after the {reserve_percent}% reserve: "
        "raise the system pool's max_nodes or machine type"
    )


# --- transforms of the rendered manifests -----------------------------------------------------


def pipeline_volume_transform(obj: dict[str, Any], args: KubeflowInstallArgs) -> dict[str, Any] | None:
    """The artifact store or database claim resized (and classed), or None for any other object."""
    name = (obj.get("metadata") or {}).get("name")
    if obj.get("kind") != "PersistentVolumeClaim" or name not in ARTIFACT_CLAIMS | DATABASE_CLAIMS:
        return None
    size = args.artifact_storage_gib if name in ARTIFACT_CLAIMS else args.database_storage_gib
    spec = dict(obj.get("spec") or {})
    resources = dict(spec.get("resources") or {})
    resources["requests"] = {**(resources.get("requests") or {}), "storage": f"{size}Gi"}
    spec["resources"] = resources
    if args.storage_class is not None:
        spec["storageClassName"] = args.storage_class
    return {**obj, "spec": spec}


def storage_summary(args: KubeflowInstallArgs) -> dict[str, Any]:
    """The claims the volume transform changes and what it gives them."""
    return {
        "artifactStore": {"claims": sorted(ARTIFACT_CLAIMS), "storage": f"{args.artifact_storage_gib}Gi"},
        "database": {"claims": sorted(DATABASE_CLAIMS), "storage": f"{args.database_storage_gib}Gi"},
        "storageClassName": args.storage_class,
        "protect": args.keep_volumes_on_delete,
        "retainOnDelete": args.keep_volumes_on_delete,
    }


def dex_password_transform(obj: dict[str, Any], email: str, password_hash: pulumi.Input[str]) -> dict[str, Any] | None:
    """Dex's static user: our email in its config, our hash in its password Secret; None otherwise.

    kubeflow/manifests' Dex reads the user's bcrypt hash from Secret auth/dex-passwords
    (key DEX_USER_PASSWORD, ``hashFromEnv``) and the user from ConfigMap auth/dex.
    """
    metadata = obj.get("metadata") or {}
    if metadata.get("namespace") != "auth":
        return None
    if obj.get("kind") == "Secret" and metadata.get("name") == "dex-passwords":
        rest = {k: v for k, v in obj.items() if k not in ("data", "stringData")}
        return {**rest, "stringData": {"DEX_USER_PASSWORD": pulumi.Output.secret(password_hash)}}
    if obj.get("kind") == "ConfigMap" and metadata.get("name") == "dex":
        config = yaml.safe_load((obj.get("data") or {}).get("config.yaml") or "{}")
        for user in config.get("staticPasswords") or []:
            user["email"] = email
            user["username"] = email.split("@", 1)[0]
        return {**obj, "data": {**obj["data"], "config.yaml": yaml.safe_dump(config, sort_keys=False)}}
    return None


def dex_oidc_transform(obj: dict[str, Any], oidc: OidcIssuer, client_secret: pulumi.Input[str]) -> dict[str, Any] | None:
    """Dex with an OIDC connector; None for any other object.

    kubeflow/manifests' Dex Deployment takes its environment from Secrets auth/dex-oidc-client
    (the static client oauth2-proxy uses: OIDC_CLIENT_ID, OIDC_CLIENT_SECRET) and
    auth/dex-passwords through ``envFrom``. The upstream client's secret goes into the rendered
    dex-oidc-client under its own key, UPSTREAM_OIDC_CLIENT_SECRET, so Dex has it from its first
    start and nothing upstream is overwritten; the connector reads it as
    ``$UPSTREAM_OIDC_CLIENT_SECRET``, which Dex expands. The Deployment's pod template carries
    a digest of the secret, so rotating it rolls Dex (envFrom is read at start only).
    """
    metadata = obj.get("metadata") or {}
    if metadata.get("namespace") != "auth":
        return None
    if obj.get("kind") == "ConfigMap" and metadata.get("name") == "dex":
        config = yaml.safe_load((obj.get("data") or {}).get("config.yaml") or "{}")
        connector = {
            "type": "oidc",
            "id": OIDC_CONNECTOR_ID,
            "name": oidc.name,
            "config": {
                "issuer": oidc.issuer,
                "clientID": oidc.client_id,
                "clientSecret": f"${OIDC_SECRET_ENV}",
                "redirectURI": oidc.redirect_uri,
                "scopes": ["openid", "profile", "email"],
            },
        }
        connectors = [c for c in config.get("connectors") or [] if c.get("id") != OIDC_CONNECTOR_ID]
        config["connectors"] = [*connectors, connector]
        return {**obj, "data": {**obj["data"], "config.yaml": yaml.safe_dump(config, sort_keys=False)}}
    if obj.get("kind") == "Secret" and metadata.get("name") == OIDC_SECRET:
        string_data = {**(obj.get("stringData") or {}), OIDC_SECRET_ENV: pulumi.Output.secret(client_secret)}
        return {**obj, "stringData": string_data}
    if obj.get("kind") == "Deployment" and metadata.get("name") == "dex":
        spec = obj["spec"]
        template = spec["template"]
        template_metadata = template.get("metadata") or {}
        digest = pulumi.Output.secret(client_secret).apply(lambda value: hashlib.sha256(value.encode()).hexdigest())
        annotations = {**(template_metadata.get("annotations") or {}), OIDC_DIGEST_ANNOTATION: digest}
        template = {**template, "metadata": {**template_metadata, "annotations": annotations}}
        return {**obj, "spec": {**spec, "template": template}}
    return None


class Credential(StrEnum):
    """An upstream default credential replaced by a generated one (the value names its RandomPassword child)."""

    ARTIFACT_ACCESS_KEY = "artifact-store-access-key"
    """KFP's object store access key (upstream minio)."""
    ARTIFACT_SECRET_KEY = "artifact-store-secret-key"
    """KFP's object store secret key (upstream minio123)."""
    DATABASE_PASSWORD = "database-password"
    """KFP's MySQL root password (upstream empty)."""
    KATIB_DATABASE_PASSWORD = "katib-database-password"
    """Katib's MySQL root password (upstream test, with MYSQL_ALLOW_EMPTY_PASSWORD)."""
    OAUTH2_CLIENT_SECRET = "oauth2-client-secret"
    """The secret of Dex's static client that oauth2-proxy signs in with (upstream a fixed string in both)."""
    OAUTH2_COOKIE_SECRET = "oauth2-cookie-secret"
    """oauth2-proxy's cookie signing secret (upstream a fixed string; 32 bytes)."""

    @property
    def length(self) -> int:
        """Generated length (alphanumeric: the values reach shell commands and DSNs unquoted)."""
        return {Credential.ARTIFACT_ACCESS_KEY: 20, Credential.ARTIFACT_SECRET_KEY: 40}.get(self, 32)


@dataclass(frozen=True)
class SecretSlot:
    """One key of an upstream Secret that holds a default credential."""

    namespace: str
    name: re.Pattern[str]
    """The Secret's name; kustomize's secretGenerator appends a content hash (oauth2-proxy-h675gf55ht)."""
    key: str
    credential: Credential
    editions: frozenset[Edition]


@dataclass(frozen=True)
class RootPasswordSlot:
    """A MySQL Deployment upstream starts with MYSQL_ALLOW_EMPTY_PASSWORD: its container gets
    MYSQL_ROOT_PASSWORD from the Secret key that holds the generated password instead."""

    deployment: str
    container: str
    secret: str
    key: str
    editions: frozenset[Edition]


_BOTH = frozenset(Edition)
_PLATFORM = frozenset({Edition.PLATFORM})
UPSTREAM_SECRETS: tuple[SecretSlot, ...] = (
    # KFP (both editions): read by secretKeyRef by the object store, the API server, the UI, the
    # multi-user profile controller (which copies them into every profile namespace), the cache
    # server and metadata-grpc; by the launcher through the Kubernetes API.
    SecretSlot(KUBEFLOW_NAMESPACE, re.compile(rf"^{ARTIFACT_SECRET}$"), "accesskey", Credential.ARTIFACT_ACCESS_KEY, _BOTH),
    SecretSlot(KUBEFLOW_NAMESPACE, re.compile(rf"^{ARTIFACT_SECRET}$"), "secretkey", Credential.ARTIFACT_SECRET_KEY, _BOTH),
    SecretSlot(KUBEFLOW_NAMESPACE, re.compile(rf"^{DATABASE_SECRET}$"), "password", Credential.DATABASE_PASSWORD, _BOTH),
    # Katib (platform): katib-mysql and katib-db-manager read MYSQL_ROOT_PASSWORD by secretKeyRef.
    SecretSlot(KUBEFLOW_NAMESPACE, re.compile(r"^katib-mysql-secrets$"), "MYSQL_ROOT_PASSWORD",
               Credential.KATIB_DATABASE_PASSWORD, _PLATFORM),
    # Dex's static client and oauth2-proxy must hold the same client secret: one credential, both sides.
    SecretSlot("auth", re.compile(rf"^{OIDC_SECRET}$"), "OIDC_CLIENT_SECRET", Credential.OAUTH2_CLIENT_SECRET, _PLATFORM),
    SecretSlot("oauth2-proxy", re.compile(r"^oauth2-proxy(-[a-z0-9]{10})?$"), "client-secret",
               Credential.OAUTH2_CLIENT_SECRET, _PLATFORM),
    SecretSlot("oauth2-proxy", re.compile(r"^oauth2-proxy(-[a-z0-9]{10})?$"), "cookie-secret",
               Credential.OAUTH2_COOKIE_SECRET, _PLATFORM),
)
"""Every upstream default credential either edition renders (found by building kubeflow/pipelines'
manifests at each known release and kubeflow/manifests' example/ at v1.10.2), and what replaces it.
Dex's static user's password (auth/dex-passwords) has its own transform: its hash is configured."""
UPSTREAM_EMPTY_ROOT_PASSWORDS: tuple[RootPasswordSlot, ...] = (
    RootPasswordSlot(DATABASE_DEPLOYMENT, "mysql", DATABASE_SECRET, "password", _BOTH),
    RootPasswordSlot("katib-mysql", "katib-mysql", "katib-mysql-secrets", "MYSQL_ROOT_PASSWORD", _PLATFORM),
)


def edition_credentials(edition: Edition) -> list[Credential]:
    """The credentials an edition generates, in a stable order."""
    wanted = {slot.credential for slot in UPSTREAM_SECRETS if edition in slot.editions}
    return [c for c in Credential if c in wanted]


def _string_data(obj: dict[str, Any]) -> dict[str, Any]:
    """A Secret's content as stringData (data decoded), so single keys can be replaced."""
    decoded = {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
    return {**decoded, **(obj.get("stringData") or {})}


def upstream_credentials_transform(
    obj: dict[str, Any], credentials: Mapping[Credential, pulumi.Input[str]]
) -> dict[str, Any] | None:
    """Upstream default credentials replaced by ours; None for any other object.

    A Secret listed in UPSTREAM_SECRETS gets the generated value under each listed key (other keys
    kept); a MySQL Deployment in UPSTREAM_EMPTY_ROOT_PASSWORDS loses MYSQL_ALLOW_EMPTY_PASSWORD and
    takes MYSQL_ROOT_PASSWORD from its Secret. Every consumer reads these Secrets (envFrom,
    secretKeyRef or the Kubernetes API), so nothing else changes. Only the credentials given are
    replaced (an edition passes its own). MySQL applies MYSQL_ROOT_PASSWORD only when it initialises
    an empty data directory.
    """
    metadata = obj.get("metadata") or {}
    kind, name, namespace = obj.get("kind"), str(metadata.get("name")), metadata.get("namespace")
    if kind == "Secret":
        slots = [
            s for s in UPSTREAM_SECRETS
            if s.namespace == namespace and s.name.match(name) and s.credential in credentials
        ]
        if not slots:
            return None
        rest = {k: v for k, v in obj.items() if k not in ("data", "stringData")}
        values = {s.key: pulumi.Output.secret(credentials[s.credential]) for s in slots}
        return {**rest, "stringData": {**_string_data(obj), **values}}
    if kind != "Deployment" or namespace != KUBEFLOW_NAMESPACE:
        return None
    slot = next((s for s in UPSTREAM_EMPTY_ROOT_PASSWORDS if s.deployment == name), None)
    if slot is None or not any(
        c.name.match(slot.secret) and c.key == slot.key and c.credential in credentials for c in UPSTREAM_SECRETS
    ):
        return None
    spec = obj["spec"]
    template = spec["template"]
    containers = template["spec"]["containers"]
    if not any(c.get("name") == slot.container for c in containers):
        raise ValueError(
            f"Deployment {KUBEFLOW_NAMESPACE}/{slot.deployment} has no container named {slot.container} "
            f"(got {[c.get('name') for c in containers]}); its root password cannot be set"
        )
    root_password = {"name": "MYSQL_ROOT_PASSWORD", "valueFrom": {"secretKeyRef": {"name": slot.secret, "key": slot.key}}}
    changed = []
    for container in containers:
        if container.get("name") == slot.container:
            env = [e for e in container.get("env") or [] if e.get("name") not in ("MYSQL_ALLOW_EMPTY_PASSWORD", "MYSQL_ROOT_PASSWORD")]
            container = {**container, "env": [*env, root_password]}
        changed.append(container)
    template = {**template, "spec": {**template["spec"], "containers": changed}}
    return {**obj, "spec": {**spec, "template": template}}


def default_profile_transform(obj: dict[str, Any], email: str) -> dict[str, Any] | None:
    """kubeflow/manifests' default Profile owned by ``email`` instead of user@example.com; None otherwise.

    common/user-namespace renders Profile kubeflow-user-example-com (kubeflow.org/v1beta1) with
    ``spec.owner`` {kind: User, name: user@example.com}, and the namespace-less ConfigMap it was
    generated from, default-install-config-<hash> (keys profile-name and user), which gets ``email``
    as its user too.
    """
    if obj.get("kind") == "ConfigMap":
        name = str((obj.get("metadata") or {}).get("name"))
        data = obj.get("data") or {}
        if not DEFAULT_INSTALL_CONFIG.match(name) or data.get("user") != UPSTREAM_PROFILE_OWNER:
            return None
        return {**obj, "data": {**data, "user": email}}
    if obj.get("kind") != "Profile" or not str(obj.get("apiVersion", "")).startswith("kubeflow.org/"):
        return None
    spec = obj.get("spec") or {}
    owner = spec.get("owner") or {}
    if owner.get("name") != UPSTREAM_PROFILE_OWNER:
        return None
    return {**obj, "spec": {**spec, "owner": {**owner, "name": email}}}


Transform = Callable[[dict[str, Any]], "dict[str, Any] | None"]


def rendered_object_transforms(
    args: KubeflowInstallArgs,
    dex_password_hash: pulumi.Input[str] | None = None,
    oidc_client_secret: pulumi.Input[str] | None = None,
    credentials: Mapping[Credential, pulumi.Input[str]] | None = None,
) -> list[Transform]:
    """The transforms of one rendered object, in the order they apply (each sees the previous one's result;
    each returns None for an object it does not target)."""
    steps: list[Transform] = [lambda obj: pipeline_volume_transform(obj, args)]
    if credentials:
        steps.append(lambda obj: upstream_credentials_transform(obj, credentials))
    if args.dex_user_email:
        email = args.dex_user_email
        steps.append(lambda obj: default_profile_transform(obj, email))
        if dex_password_hash is not None:
            steps.append(lambda obj: dex_password_transform(obj, email, dex_password_hash))
    if args.oidc is not None and oidc_client_secret is not None:
        oidc = args.oidc
        steps.append(lambda obj: dex_oidc_transform(obj, oidc, oidc_client_secret))
    return steps


def apply_transforms(steps: Sequence[Transform], obj: dict[str, Any]) -> dict[str, Any] | None:
    """``obj`` after every step, or None when no step changed it."""
    changed = None
    for step in steps:
        changed = step(changed or obj) or changed
    return changed


def _as_pulumi_transform(
    args: KubeflowInstallArgs,
    dex_password_hash: pulumi.Input[str] | None,
    oidc_client_secret: pulumi.Input[str] | None = None,
    credentials: Mapping[Credential, pulumi.Input[str]] | None = None,
) -> pulumi.ResourceTransform:
    """rendered_object_transforms as the Pulumi resource transform of every child of a Directory."""
    steps = rendered_object_transforms(args, dex_password_hash, oidc_client_secret, credentials)

    def transform(t: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        changed = apply_transforms(steps, dict(t.props))
        if changed is None:
            return None
        opts = t.opts
        if t.type_ == PIPELINE_STORAGE_TYPE and args.keep_volumes_on_delete:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=True, retain_on_delete=True))
        return pulumi.ResourceTransformResult(changed, opts)

    return transform


# --- tenants ----------------------------------------------------------------------------------


def tenant_quota_hard(tenant: TenantProfile) -> dict[str, str]:
    """The ResourceQuota ``hard`` limits of a tenant."""
    hard = {"requests.nvidia.com/gpu": str(tenant.gpus)}
    if tenant.cpus is not None:
        hard["requests.cpu"] = str(tenant.cpus)
    if tenant.memory_gib is not None:
        hard["requests.memory"] = f"{tenant.memory_gib}Gi"
    return hard


def pipelines_gpu_quota_hard(gpus: int) -> dict[str, str]:
    """The ResourceQuota ``hard`` limits on the kubeflow namespace, where KFP standalone runs steps."""
    return {"requests.nvidia.com/gpu": str(gpus)}


class KubeflowInstall(pulumi.ComponentResource):
    """Kubeflow Pipelines or the Kubeflow platform, pinned, with enlarged pipeline storage."""

    namespace: pulumi.Output[str]
    """Where Kubeflow runs (kubeflow)."""
    ui_service: pulumi.Output[str]
    """In-cluster address of the UI (host:port)."""
    pipelines_endpoint: pulumi.Output[str]
    """In-cluster Kubeflow Pipelines API URL."""
    ui_url: pulumi.Output[str | None]
    """The public UI URL when an ingress is configured, else None."""
    training_placement: pulumi.Output[dict[str, Any]]
    """nodeSelector and tolerations that put a pod (a pipeline step) on the training pool."""
    storage: pulumi.Output[dict[str, Any]]
    """What the transforms give the artifact store and database claims (size, class, retained)."""
    directories: list[k8s.kustomize.v2.Directory]
    """The upstream kustomizations, in the order they are applied."""
    tenant_quotas: dict[str, pulumi.CustomResource]
    """Per tenant, the object that carries its quota (a Profile, or a ResourceQuota on pipelines)."""
    ingress: k8s.networking.v1.Ingress | None
    """The ALB ingress of the UI, when configured."""
    pipelines_quota: k8s.core.v1.ResourceQuota | None
    """The GPU quota on the kubeflow namespace (pipelines edition with pipelines_gpu_quota), else None."""

    def __init__(
        self,
        name: str,
        args: KubeflowInstallArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        training_pools: Sequence[NodePoolShape],
        dex_password_hash: pulumi.Input[str] | None = None,
        oidc_client_secret: pulumi.Input[str] | None = None,
    ) -> None:
        """``dex_password_hash`` and ``oidc_client_secret``: Pulumi secrets (the platform edition's Dex)."""
        if args.edition is Edition.PLATFORM and dex_password_hash is None:
            raise input_error("dex_password_hash", "the platform edition needs dex_password_hash (a bcrypt hash, as a Pulumi secret)")
        if args.oidc is not None and oidc_client_secret is None:
            raise input_error("oidc_client_secret", "oidc needs oidc_client_secret (the client's secret at the issuer, as a Pulumi secret)")
        try:
            placement = training_placement(args.training_pool, training_pools)
        except ValueError as exc:
            raise input_error("training_pools", str(exc)) from None
        super().__init__("gpu-platform:kubeflow_install:KubeflowInstall", name, None, opts)

        credentials = self._credentials(name, args.edition)
        transform = _as_pulumi_transform(args, dex_password_hash, oidc_client_secret, credentials)
        self.directories = []
        for role, url in manifest_sources(args):
            self.directories.append(
                k8s.kustomize.v2.Directory(
                    f"{name}-{role}",
                    k8s.kustomize.v2.DirectoryArgs(directory=url),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.directories), transforms=[transform]),
                )
            )
        installed = pulumi.ResourceOptions(parent=self, depends_on=list(self.directories))
        self.tenant_quotas = {t.name: self._tenant(name, args.edition, t, installed) for t in args.tenants}
        self.pipelines_quota = None
        if args.pipelines_gpu_quota is not None:
            self.pipelines_quota = k8s.core.v1.ResourceQuota(
                f"{name}-pipelines-gpu-quota",
                metadata=k8s.meta.v1.ObjectMetaArgs(name="pipelines-gpu-quota", namespace=KUBEFLOW_NAMESPACE),
                spec=k8s.core.v1.ResourceQuotaSpecArgs(hard=pipelines_gpu_quota_hard(args.pipelines_gpu_quota)),
                opts=installed,
            )
        self.ingress = None
        ui_url: str | None = None
        if args.ingress is not None:
            self.ingress = self._ingress(name, args, args.ingress, installed)
            ui_url = f"https://{args.ingress.hostname}"

        self.namespace = pulumi.Output.from_input(KUBEFLOW_NAMESPACE)
        self.ui_service = pulumi.Output.from_input(args.ui_service)
        self.pipelines_endpoint = pulumi.Output.from_input(args.pipelines_endpoint)
        self.ui_url = pulumi.Output.from_input(ui_url)
        self.training_placement = pulumi.Output.from_input(placement.pod_spec_fields())
        self.storage = pulumi.Output.from_input(storage_summary(args))
        self.register_outputs(
            {
                "namespace": self.namespace,
                "uiService": self.ui_service,
                "pipelinesEndpoint": self.pipelines_endpoint,
                "uiUrl": self.ui_url,
                "trainingPlacement": self.training_placement,
                "storage": self.storage,
            }
        )

    def _credentials(self, name: str, edition: Edition) -> dict[Credential, pulumi.Output[str]]:
        """A generated value (alphanumeric, a Pulumi secret) for each upstream default credential of the edition."""
        return {
            credential: random.RandomPassword(
                f"{name}-{credential.value}",
                random.RandomPasswordArgs(length=credential.length, special=False),
                opts=pulumi.ResourceOptions(parent=self),
            ).result
            for credential in edition_credentials(edition)
        }

    def _tenant(self, name: str, edition: Edition, tenant: TenantProfile, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
        hard = tenant_quota_hard(tenant)
        if edition is Edition.PLATFORM:
            # The profile controller creates the namespace, the owner's RBAC and the quota.
            return k8s.apiextensions.CustomResource(
                f"{name}-profile-{tenant.name}",
                api_version="kubeflow.org/v1",
                kind="Profile",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=tenant.name),
                spec={"owner": {"kind": "User", "name": tenant.owner}, "resourceQuotaSpec": {"hard": hard}},
                opts=opts,
            )
        # Pipelines standalone has no profile controller: a namespace and its quota.
        namespace = k8s.core.v1.Namespace(
            f"{name}-tenant-{tenant.name}",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=tenant.name,
                labels={**PART_OF_LABEL, TENANT_LABEL: tenant.name},
                annotations={"gpu-platform.io/owner": tenant.owner},
            ),
            opts=opts,
        )
        return k8s.core.v1.ResourceQuota(
            f"{name}-quota-{tenant.name}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="tenant-quota", namespace=namespace.metadata.name),
            spec=k8s.core.v1.ResourceQuotaSpecArgs(hard=hard),
            opts=opts,
        )

    def _ingress(
        self, name: str, args: KubeflowInstallArgs, ingress: AlbCognitoIngress, opts: pulumi.ResourceOptions
    ) -> k8s.networking.v1.Ingress:
        service_name, service_namespace, port = args.ui_backend
        health_port, health_path = args.ui_health_check
        health = {"alb.ingress.kubernetes.io/healthcheck-path": health_path}
        if health_port is not None:
            health["alb.ingress.kubernetes.io/healthcheck-port"] = str(health_port)
        cognito = json.dumps(
            {
                "userPoolARN": ingress.cognito_user_pool_arn,
                "userPoolClientID": ingress.cognito_user_pool_client_id,
                "userPoolDomain": ingress.cognito_user_pool_domain,
            }
        )
        return k8s.networking.v1.Ingress(
            f"{name}-ingress",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="kubeflow-ui",
                namespace=service_namespace,
                annotations={
                    "alb.ingress.kubernetes.io/scheme": "internal" if ingress.internal else "internet-facing",
                    "alb.ingress.kubernetes.io/target-type": "ip",
                    "alb.ingress.kubernetes.io/listen-ports": '[{"HTTPS":443}]',
                    "alb.ingress.kubernetes.io/certificate-arn": ingress.certificate_arn,
                    "alb.ingress.kubernetes.io/auth-type": "cognito",
                    "alb.ingress.kubernetes.io/auth-idp-cognito": cognito,
                    "alb.ingress.kubernetes.io/auth-on-unauthenticated-request": "authenticate",
                    "alb.ingress.kubernetes.io/auth-scope": "openid email",
                    **health,
                },
            ),
            spec=k8s.networking.v1.IngressSpecArgs(
                ingress_class_name=ALB_INGRESS_CLASS,
                rules=[
                    k8s.networking.v1.IngressRuleArgs(
                        host=ingress.hostname,
                        http=k8s.networking.v1.HTTPIngressRuleValueArgs(
                            paths=[
                                k8s.networking.v1.HTTPIngressPathArgs(
                                    path="/",
                                    path_type="Prefix",
                                    backend=k8s.networking.v1.IngressBackendArgs(
                                        service=k8s.networking.v1.IngressServiceBackendArgs(
                                            name=service_name,
                                            port=k8s.networking.v1.ServiceBackendPortArgs(number=port),
                                        )
                                    ),
                                )
                            ]
                        ),
                    )
                ],
            ),
            opts=opts,
        )
