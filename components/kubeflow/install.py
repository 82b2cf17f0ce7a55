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
client secret and oauth2-proxy's cookie secret; UPSTREAM_SECRETS) is replaced by one the user brings
(``credentials=``, Pulumi secrets such as the stack's secret config, or ``args.credentials_secret``, an
existing Kubernetes Secret read when the stack deploys) or else a generated one (``pulumi_random``; with
every credential brought, no RandomPassword is declared and the random provider is never loaded), Dex's
static user gets its password hash from a Pulumi secret, and the
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
import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from gpu_platform.components.core.cluster import CLUSTER_COMPONENTS, ClusterComponent, check_live, check_pools, on_cluster
from gpu_platform.components.core.kube import prefix_ingress_spec
from gpu_platform.components.core.labels import OWNER_ANNOTATION, PART_OF_LABEL, TENANT_LABEL
from gpu_platform.components.core.models import input_error
from gpu_platform.components.kubeflow.args import (
    ALB_INGRESS_CLASS,
    EDITION_FOOTPRINT,
    KNOWN_RELEASES,
    KUBEFLOW_NAMESPACE,
    AlbCognitoIngress,
    CredentialsSecret,
    Edition,
    Footprint,
    KubeflowInstallArgs,
    OidcIssuer,
    TenantProfile,
    TrainingPoolSelector,
)
from gpu_platform.components.kubeflow.plan import manifest_sources, place_on_training_pool, training_placement
from gpu_platform.components.kubeflow.transforms import (
    Credential,
    as_pulumi_transform,
    edition_credentials,
    pipelines_gpu_quota_hard,
    storage_summary,
    tenant_quota_hard,
)
from gpu_platform.components.pools.shapes import NodePoolShape

__all__ = [
    "EDITION_FOOTPRINT",
    "AlbCognitoIngress",
    "Credential",
    "CredentialsSecret",
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


def _brought_credentials(edition: Edition, credentials: Mapping[Credential | str, pulumi.Input[str]] | None) -> dict[Credential, pulumi.Input[str]]:
    """``credentials=`` by Credential, or an InputPropertyError naming the key: a name that is no credential or
    not one of the edition's, a value that is not a string or an Output, a plain string Credential.problem refuses."""
    if credentials is None:
        return {}
    if not isinstance(credentials, Mapping):
        raise input_error("credentials", f"credentials: expected a mapping of credential names to Pulumi secrets (got {type(credentials).__name__})")
    wanted = edition_credentials(edition)
    brought: dict[Credential, pulumi.Input[str]] = {}
    for key, value in credentials.items():
        credential = next((c for c in Credential if key == c or key == c.value), None)
        where = f"credentials[{key}]"
        if credential is None or credential not in wanted:
            what = "no credential" if credential is None else f"not a credential of the {edition.value} edition"
            raise input_error(where, f"{where}: {what}; the {edition.value} edition has {', '.join(c.value for c in wanted)}")
        check_live(where, value, (str,), "a string or a pulumi.Output[str] (pass a secret)", optional=False)
        if isinstance(value, str) and (problem := credential.problem(value)):
            raise input_error(where, f"{where}: {problem} (got a secret value)")
        brought[credential] = value
    return brought


def _read_credential(data: Mapping[str, str] | None, credential: Credential, where: CredentialsSecret) -> str:
    """One credential's value from the credentials Secret's data; an error naming the key, never the value."""
    secret = f"Secret {where.namespace}/{where.name}"
    if not data or credential.value not in data:
        held = ", ".join(sorted(data or {})) or "no keys"
        raise ValueError(f"kubeflow credentials: {secret} has no key {credential.value} (it holds {held})")
    value = base64.b64decode(data[credential.value]).decode()
    if problem := credential.problem(value):
        raise ValueError(f"kubeflow credentials: {secret}: {problem}")
    return value


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
        training_pools: Sequence[NodePoolShape] | None = None,
        dex_password_hash: pulumi.Input[str] | None = None,
        oidc_client_secret: pulumi.Input[str] | None = None,
        cluster: ClusterComponent | None = None,
        ingress_controller: pulumi.Resource | None = None,
        credentials: Mapping[Credential | str, pulumi.Input[str]] | None = None,
    ) -> None:
        """``cluster``: the cluster component it runs on (GpuGkeCluster, or on EKS the
        SpotFailoverEksNodeGroups built with the EksCluster): its provider, its node pools waited for, its
        ``pool_shapes()`` as ``training_pools``. ``training_pools``: the pools training steps may run on
        without a cluster component (other languages' ``poolShapes`` outputs); one of the two, not both.
        ``dex_password_hash`` and ``oidc_client_secret``: Pulumi secrets (the platform edition's Dex).
        ``ingress_controller``: what acts on the UI's ALB Ingress (AwsLoadBalancerController.release); the
        Ingress waits for it (the controller's webhooks must answer). Default: none (a controller installed
        outside this program; without any, the Ingress never gets an address).
        ``credentials``: values the user brings for upstream's default credentials, by Credential (or its name,
        e.g. ``database-password``), as Pulumi secrets; each is used instead of ``args.credentials_secret``'s key
        and of a generated value. A plain string is checked here (Credential.problem); an Output is used as it
        resolves. Default: none (read from ``args.credentials_secret``, else generated)."""
        placed = on_cluster(cluster, opts)
        if placed.component is not None and training_pools is not None:
            raise input_error(
                "training_pools", "training_pools: the cluster component given as cluster= gives them; pass cluster= or training_pools=, not both"
            )
        if placed.component is None and training_pools is None:
            raise input_error("cluster", f"cluster: expected {CLUSTER_COMPONENTS}, or training_pools= (got nothing)")
        training_pools = placed.component.pool_shapes() if placed.component is not None else check_pools("training_pools", training_pools)
        for keyword, value in (("dex_password_hash", dex_password_hash), ("oidc_client_secret", oidc_client_secret)):
            check_live(keyword, value, (str,), "a string or a pulumi.Output[str] (pass a secret)")
        check_live("ingress_controller", ingress_controller, (pulumi.Resource,), "the AWS Load Balancer Controller (AwsLoadBalancerController.release)")
        brought = _brought_credentials(args.edition, credentials)
        opts = placed.opts
        if args.edition is Edition.PLATFORM and dex_password_hash is None:
            raise input_error("dex_password_hash", "the platform edition needs dex_password_hash (a bcrypt hash, as a Pulumi secret)")
        if args.oidc is not None and oidc_client_secret is None:
            raise input_error("oidc_client_secret", "oidc needs oidc_client_secret (the client's secret at the issuer, as a Pulumi secret)")
        try:
            placement = training_placement(args.training_pool, training_pools)
        except ValueError as exc:
            raise input_error("training_pools", str(exc)) from None
        super().__init__("gpu-platform:kubeflow_install:KubeflowInstall", name, None, opts)

        transform = as_pulumi_transform(args, dex_password_hash, oidc_client_secret, self._credentials(name, args, brought))
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
            # The controller's webhooks must answer before the Ingress is created, and it gives the Ingress its address.
            controller = [] if ingress_controller is None else [ingress_controller]
            after = pulumi.ResourceOptions(parent=self, depends_on=[*self.directories, *controller])
            self.ingress = self._ingress(name, args, args.ingress, after)
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

    def _credentials(self, name: str, args: KubeflowInstallArgs, brought: Mapping[Credential, pulumi.Input[str]]) -> dict[Credential, pulumi.Output[str]]:
        """The value (a Pulumi secret) of each upstream default credential of the edition: the one brought,
        else the key of ``args.credentials_secret``, else a generated one (alphanumeric)."""
        found: dict[Credential, pulumi.Output[str]] = {}
        source: k8s.core.v1.Secret | None = None
        for credential in edition_credentials(args.edition):
            if credential in brought:
                found[credential] = pulumi.Output.secret(brought[credential])
            elif args.credentials_secret is not None:
                where = args.credentials_secret
                if source is None:
                    source = k8s.core.v1.Secret.get(f"{name}-credentials-secret", f"{where.namespace}/{where.name}", opts=pulumi.ResourceOptions(parent=self))
                # Typed as an Input: Output.secret has no Output[U] overload (from_input has), so mypy cannot solve U from an Output.
                data: pulumi.Input[Mapping[str, str]] = source.data
                found[credential] = pulumi.Output.secret(data).apply(functools.partial(_read_credential, credential=credential, where=where))
            else:
                found[credential] = random.RandomPassword(
                    f"{name}-{credential.value}",
                    random.RandomPasswordArgs(length=credential.length, special=False),
                    opts=pulumi.ResourceOptions(parent=self),
                ).result
        return found

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
                annotations={OWNER_ANNOTATION: tenant.owner},
            ),
            opts=opts,
        )
        return k8s.core.v1.ResourceQuota(
            f"{name}-quota-{tenant.name}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="tenant-quota", namespace=namespace.metadata.name),
            spec=k8s.core.v1.ResourceQuotaSpecArgs(hard=hard),
            opts=opts,
        )

    def _ingress(self, name: str, args: KubeflowInstallArgs, ingress: AlbCognitoIngress, opts: pulumi.ResourceOptions) -> k8s.networking.v1.Ingress:
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
            spec=prefix_ingress_spec(ALB_INGRESS_CLASS, ingress.hostname, "/", service_name, k8s.networking.v1.ServiceBackendPortArgs(number=port)),
            opts=opts,
        )
