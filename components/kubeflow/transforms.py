"""What KubeflowInstall changes in upstream's rendered manifests: volume sizes and protection, the Dex login and OIDC client, every upstream default credential replaced, the default Profile's owner, and the tenant quotas."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pulumi
import yaml

from gpu_platform.components.core.engine_values import (
    UNKNOWN,
    as_output,
    is_opaque,
    is_plain,
    merged,
    on_value,
    read_known,
    replace_if,
    update_in,
)
from gpu_platform.components.core.labels import GPU_QUOTA_KEY
from gpu_platform.components.kubeflow.args import (
    ARTIFACT_CLAIMS,
    ARTIFACT_SECRET,
    DATABASE_CLAIMS,
    DATABASE_DEPLOYMENT,
    DATABASE_SECRET,
    DEFAULT_INSTALL_CONFIG,
    KUBEFLOW_NAMESPACE,
    OIDC_CONNECTOR_ID,
    OIDC_DIGEST_ANNOTATION,
    OIDC_SECRET,
    OIDC_SECRET_ENV,
    PIPELINE_STORAGE_TYPE,
    UPSTREAM_PROFILE_OWNER,
    Edition,
    KubeflowInstallArgs,
    OidcIssuer,
    TenantProfile,
)
from gpu_platform.components.pools.awaits import SKIP_AWAIT

__all__ = [
    "Credential",
    "UPSTREAM_EMPTY_ROOT_PASSWORDS",
    "UPSTREAM_SECRETS",
    "apply_transforms",
    "as_pulumi_transform",
    "default_profile_transform",
    "dex_oidc_transform",
    "dex_password_transform",
    "edition_credentials",
    "empty_field_transform",
    "pipeline_volume_transform",
    "pipelines_gpu_quota_hard",
    "rendered_object_transforms",
    "storage_summary",
    "tenant_quota_hard",
    "unawaited_workload_transform",
    "upstream_credentials_transform",
]


def pipeline_volume_transform(obj: dict[str, Any], args: KubeflowInstallArgs) -> dict[str, Any] | None:
    """The artifact store or database claim resized (and classed), or None for any other object."""
    name = (obj.get("metadata") or {}).get("name")
    if obj.get("kind") != "PersistentVolumeClaim" or name not in ARTIFACT_CLAIMS | DATABASE_CLAIMS:
        return None
    size = args.artifact_storage_gib if name in ARTIFACT_CLAIMS else args.database_storage_gib
    spec = update_in(obj.get("spec"), ("resources", "requests"), lambda requests: merged(requests, {"storage": f"{size}Gi"}))
    if args.storage_class is not None:
        storage_class = args.storage_class
        spec = update_in(spec, ("storageClassName",), lambda _: storage_class)
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


def _dex_config(obj: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """ConfigMap auth/dex with ``change`` made to its config.yaml (parsed, changed in place, written back)."""

    def edit(text: str | None) -> str:
        config = yaml.safe_load(text or "{}")
        change(config)
        return yaml.safe_dump(config, sort_keys=False)

    return {**obj, "data": update_in(obj.get("data"), ("config.yaml",), lambda text: on_value(text, edit))}


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

        def static_user(config: dict[str, Any]) -> None:
            for user in config.get("staticPasswords") or []:
                user["email"] = email
                user["username"] = email.split("@", 1)[0]

        return _dex_config(obj, static_user)
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

        def add_connector(config: dict[str, Any]) -> None:
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

        return _dex_config(obj, add_connector)
    if obj.get("kind") == "Secret" and metadata.get("name") == OIDC_SECRET:
        string_data = merged(obj.get("stringData"), {OIDC_SECRET_ENV: pulumi.Output.secret(client_secret)})
        return {**obj, "stringData": _secret(string_data)}
    if obj.get("kind") == "Deployment" and metadata.get("name") == "dex":
        digest = pulumi.Output.secret(client_secret).apply(lambda value: hashlib.sha256(value.encode()).hexdigest())
        spec = update_in(
            obj.get("spec"),
            ("template", "metadata", "annotations"),
            lambda annotations: merged(annotations, {OIDC_DIGEST_ANNOTATION: digest}),
        )
        return {**obj, "spec": spec}
    return None


class Credential(StrEnum):
    """An upstream default credential replaced by ours: one the user brings, or one generated (the value names
    its RandomPassword child, its key in the credentials Secret, and its stack config key)."""

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

    @property
    def upstream(self) -> str:
        """The value upstream ships (kubeflow/pipelines 2.17.0, kubeflow/manifests v1.10.2), never deployed."""
        return _UPSTREAM_VALUES[self]

    def problem(self, value: str) -> str | None:
        """Why ``value`` cannot stand for this credential, or None. The message never quotes the value."""
        if not value:
            return f"{self.value} is empty"
        if value == self.upstream:
            return f"{self.value} is the value upstream Kubeflow ships; choose your own"
        if not _ALPHANUMERIC.match(value):
            return f"{self.value} must be letters and digits only: it reaches a shell command and MySQL DSNs unquoted"
        if self is Credential.OAUTH2_COOKIE_SECRET and len(value) not in (16, 24, 32):
            return f"{self.value} must be 16, 24 or 32 characters (oauth2-proxy's AES key), got {len(value)}"
        shortest = _SHORTEST.get(self, 1)
        if len(value) < shortest:
            return f"{self.value} must be at least {shortest} characters (the object store refuses shorter keys), got {len(value)}"
        return None


_UPSTREAM_VALUES = {
    Credential.ARTIFACT_ACCESS_KEY: "minio",
    Credential.ARTIFACT_SECRET_KEY: "minio123",
    Credential.DATABASE_PASSWORD: "",
    Credential.KATIB_DATABASE_PASSWORD: "test",
    Credential.OAUTH2_CLIENT_SECRET: "pUBnBOY80SnXgjibTYM9ZWNzY2xreNGQok",
    Credential.OAUTH2_COOKIE_SECRET: "7d16fee92f8d11b8940b081b3f8b8acb",
}
_SHORTEST = {Credential.ARTIFACT_ACCESS_KEY: 3, Credential.ARTIFACT_SECRET_KEY: 8}
"""MinIO's (and SeaweedFS's S3 gateway's) shortest access and secret keys."""
_ALPHANUMERIC = re.compile(r"^[A-Za-z0-9]+$")


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
    SecretSlot(KUBEFLOW_NAMESPACE, re.compile(r"^katib-mysql-secrets$"), "MYSQL_ROOT_PASSWORD", Credential.KATIB_DATABASE_PASSWORD, _PLATFORM),
    # Dex's static client and oauth2-proxy must hold the same client secret: one credential, both sides.
    SecretSlot("auth", re.compile(rf"^{OIDC_SECRET}$"), "OIDC_CLIENT_SECRET", Credential.OAUTH2_CLIENT_SECRET, _PLATFORM),
    SecretSlot("oauth2-proxy", re.compile(r"^oauth2-proxy(-[a-z0-9]{10})?$"), "client-secret", Credential.OAUTH2_CLIENT_SECRET, _PLATFORM),
    SecretSlot("oauth2-proxy", re.compile(r"^oauth2-proxy(-[a-z0-9]{10})?$"), "cookie-secret", Credential.OAUTH2_COOKIE_SECRET, _PLATFORM),
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


def _secret(value: Any) -> Any:
    """A Secret's data as it goes back to the engine: a map as it stands (its values keep their own
    secrecy), or, where it had to be worked on as an Output, that Output marked secret."""
    return pulumi.Output.secret(value) if isinstance(value, pulumi.Output) else value


def _decoded(data: Any, string_data: Any) -> dict[str, Any]:
    decoded = {k: base64.b64decode(v).decode() for k, v in (data or {}).items()}
    return {**decoded, **(string_data or {})}


def _string_data(obj: dict[str, Any]) -> Any:
    """A Secret's content as stringData (data decoded), so single keys can be replaced: a map when
    ``data`` can be read, else an Output of it (secret when the content was)."""
    data, string_data = obj.get("data"), obj.get("stringData")
    if is_plain(data) and not is_opaque(string_data):
        return _decoded(data, string_data)
    return pulumi.Output.all(as_output(data), as_output(string_data)).apply(lambda both: _decoded(*both))


def upstream_credentials_transform(obj: dict[str, Any], credentials: Mapping[Credential, pulumi.Input[str]]) -> dict[str, Any] | None:
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
        slots = [s for s in UPSTREAM_SECRETS if s.namespace == namespace and s.name.match(name) and s.credential in credentials]
        if not slots:
            return None
        rest = {k: v for k, v in obj.items() if k not in ("data", "stringData")}
        values = {s.key: pulumi.Output.secret(credentials[s.credential]) for s in slots}
        return {**rest, "stringData": _secret(merged(_string_data(obj), values))}
    if kind != "Deployment" or namespace != KUBEFLOW_NAMESPACE:
        return None
    slot = next((s for s in UPSTREAM_EMPTY_ROOT_PASSWORDS if s.deployment == name), None)
    if slot is None or not any(c.name.match(slot.secret) and c.key == slot.key and c.credential in credentials for c in UPSTREAM_SECRETS):
        return None
    root_password = {"name": "MYSQL_ROOT_PASSWORD", "valueFrom": {"secretKeyRef": {"name": slot.secret, "key": slot.key}}}
    spec = update_in(
        obj.get("spec"),
        ("template", "spec", "containers"),
        lambda containers: _with_root_password(containers, slot, root_password),
    )
    return {**obj, "spec": spec}


def _unreadable_names(items: Any) -> bool:
    """Whether a list of named maps (containers, env) cannot be read by name as it stands."""
    return is_opaque(items) or any(is_opaque(i) or is_opaque((i or {}).get("name")) for i in items or [])


def _with_root_password(containers: Any, slot: RootPasswordSlot, root_password: dict[str, Any]) -> Any:
    """The MySQL container's env without MYSQL_ALLOW_EMPTY_PASSWORD and with MYSQL_ROOT_PASSWORD from the Secret."""
    if _unreadable_names(containers):
        return as_output(containers).apply(lambda known: pulumi.Output.from_input(_with_root_password(known, slot, root_password)))
    if not any(c.get("name") == slot.container for c in containers or []):
        raise ValueError(
            f"Deployment {KUBEFLOW_NAMESPACE}/{slot.deployment} has no container named {slot.container} "
            f"(got {[c.get('name') for c in containers or []]}); its root password cannot be set"
        )
    return [{**c, "env": _with_env(c.get("env"), root_password)} if c.get("name") == slot.container else c for c in containers]


def _with_env(env: Any, variable: dict[str, Any]) -> Any:
    if _unreadable_names(env):
        return as_output(env).apply(lambda known: pulumi.Output.from_input(_with_env(known, variable)))
    kept = [e for e in env or [] if e.get("name") not in ("MYSQL_ALLOW_EMPTY_PASSWORD", "MYSQL_ROOT_PASSWORD")]
    return [*kept, variable]


def default_profile_transform(obj: dict[str, Any], email: str) -> dict[str, Any] | None:
    """kubeflow/manifests' default Profile owned by ``email`` instead of user@example.com; None otherwise.

    common/user-namespace renders Profile kubeflow-user-example-com (kubeflow.org/v1beta1) with
    ``spec.owner`` {kind: User, name: user@example.com}, and the namespace-less ConfigMap it was
    generated from, default-install-config-<hash> (keys profile-name and user), which gets ``email``
    as its user too.
    """
    if obj.get("kind") == "ConfigMap":
        name = str((obj.get("metadata") or {}).get("name"))
        if not DEFAULT_INSTALL_CONFIG.match(name):
            return None
        data = replace_if(obj.get("data"), ("user",), lambda user: user == UPSTREAM_PROFILE_OWNER, email)
        return None if data is None else {**obj, "data": data}
    if obj.get("kind") != "Profile" or not str(obj.get("apiVersion", "")).startswith("kubeflow.org/"):
        return None
    spec = replace_if(obj.get("spec"), ("owner", "name"), lambda owner: owner == UPSTREAM_PROFILE_OWNER, email)
    return None if spec is None else {**obj, "spec": spec}


SIBLING_AWAITED_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "Pod", "Service"})
"""The kinds whose readiness the provider awaits through their pods (a Service through its endpoints, which
are those pods): inside an upstream Directory they are not awaited (``unawaited_workload_transform``)."""


def unawaited_workload_transform(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A workload (or the Service in front of one) of an upstream Directory, marked not to be awaited; None
    for any other kind (CRDs, namespaces, RBAC, config and claims are awaited as before).

    The provider registers a Directory's objects in dependency sets (CRDs, then namespaces, then what is
    in them), and all of one set at once, so the engine meets a Deployment, its ServiceAccount, its
    ConfigMaps and its claim in no fixed order. It runs at most ``--parallel`` steps at a time (4 per CPU
    by default: 8 on 2 cores), and a Deployment's step holds its slot until the pods are ready. Measured
    under the engine on 2 cores (tests/engine/test_engine_kubeflow.py), the platform edition filled all 8
    slots with Deployments whose pods the ReplicaSet controller could not create ("serviceaccount ... not
    found", claims "not found"), and the ServiceAccounts and claims that would have freed them queued
    behind them until the provider's 10 minutes ran out. Not awaiting the pod-backed kinds lets every
    object of the Directory be created, after which the controllers start the pods as ``kubectl apply``
    would; ``up`` then does not confirm Kubeflow's pods are ready (``kubectl -n kubeflow rollout status
    deploy``)."""
    if obj.get("kind") not in SIBLING_AWAITED_KINDS:
        return None
    return {**obj, "metadata": update_in(obj.get("metadata"), ("annotations",), lambda annotations: merged(annotations, SKIP_AWAIT))}


EMPTY_OMITTED_FIELDS = {"ClusterRole": ("rules",), "Role": ("rules",), "Secret": ("data", "stringData"), "ConfigMap": ("data", "binaryData")}
"""Top-level fields upstream writes as an empty list or map and the API server gives back absent: the provider
compares the inputs with the live object pruned to them, so ``rules: []`` or ``data: {}`` differs from nothing
at every preview (measured under the engine on the platform edition: kubeflow-spark-admin and three more
ClusterRoles ``update [diff: +rules]``, training-operator-webhook-cert ``replace [diff: +data]``)."""


def empty_field_transform(obj: dict[str, Any]) -> dict[str, Any] | None:
    """An object without what the API server drops or another controller owns: the empty fields of
    EMPTY_OMITTED_FIELDS, and an aggregated ClusterRole's ``rules``; None when there is nothing to drop.

    The clusterrole-aggregation controller writes an aggregated role's rules from the roles its selectors match,
    and owns the field. Upstream ships such roles with ``rules: []``: applied as they are, Pulumi's field manager
    claims ``.rules`` too, and the next preview or `up` fails with a server-side apply conflict with
    "clusterrole-aggregation-controller" (measured under the engine on the platform edition,
    tests/engine/test_engine_kubeflow.py). An empty Secret (training-operator's webhook certificate, which the
    operator fills at run time) is left for its controller the same way."""
    drop = {field for field in EMPTY_OMITTED_FIELDS.get(str(obj.get("kind")), ()) if field in obj and obj[field] in ([], {})}
    if obj.get("kind") == "ClusterRole" and "aggregationRule" in obj and "rules" in obj:
        drop.add("rules")
    if not drop:
        return None
    return {k: v for k, v in obj.items() if k not in drop}


Transform = Callable[[dict[str, Any]], "dict[str, Any] | None"]


def rendered_object_transforms(
    args: KubeflowInstallArgs,
    dex_password_hash: pulumi.Input[str] | None = None,
    oidc_client_secret: pulumi.Input[str] | None = None,
    credentials: Mapping[Credential, pulumi.Input[str]] | None = None,
) -> list[Transform]:
    """The transforms of one rendered object, in the order they apply (each sees the previous one's result;
    each returns None for an object it does not target)."""
    steps: list[Transform] = [lambda obj: pipeline_volume_transform(obj, args), unawaited_workload_transform, empty_field_transform]
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


_IDENTITY = (("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"))
"""What the transforms decide by (which object this is); everything else they work on as it comes."""


async def _identified(props: dict[str, Any]) -> dict[str, Any] | None:
    """``props`` with the fields that say which object it is as plain values (awaited from Outputs, read out of
    secrets), or None when one of them is not known yet. Unchanged (the same dict) when they already are."""
    view = props
    for path in _IDENTITY:
        current: Any = props
        for key in path:
            current = current.get(key) if isinstance(current, Mapping) and not is_opaque(current) else current
        if is_plain(current):
            continue
        known = await read_known(props, path)
        if known is UNKNOWN:
            return None
        if view is props:
            view = {**props, "metadata": dict(await read_known(props, ("metadata",)) or {})}
        if len(path) == 1:
            view[path[0]] = known
        else:
            view["metadata"][path[1]] = known
    return view


def as_pulumi_transform(
    args: KubeflowInstallArgs,
    dex_password_hash: pulumi.Input[str] | None,
    oidc_client_secret: pulumi.Input[str] | None = None,
    credentials: Mapping[Credential, pulumi.Input[str]] | None = None,
) -> pulumi.ResourceTransform:
    """rendered_object_transforms as the Pulumi resource transform of every child of a Directory.

    The engine gives a child's properties as the provider made them (see engine_values): a Secret's
    ``data`` is a secret Output, and during a preview any value may be unknown. The transform is async so
    it can await the fields that say which object it is (kind, apiVersion, name, namespace: always known
    for a rendered child, which kustomize wrote out whole); a child whose identity is not known yet is left
    as it is, with a warning, because whether to change it and which options it gets (protect) must be
    decided before the engine registers it. Everything else the steps work on as it comes (engine_values)."""
    steps = rendered_object_transforms(args, dex_password_hash, oidc_client_secret, credentials)

    async def transform(t: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        props = dict(t.props)
        view = await _identified(props)
        if view is None:
            pulumi.log.warn(f"{t.name}: its kind, name or namespace is not known yet, so the Kubeflow transforms leave it as it is")
            return None
        for name in EMPTY_OMITTED_FIELDS.get(str(view.get("kind")), ()):
            # A Secret's data comes as a secret Output: whether it is empty is read out of it (nothing of it is kept).
            if name in props and not is_plain(props[name]) and await read_known(props, (name,)) in ([], {}):
                view = {**view, name: {}}
        changed = apply_transforms(steps, view)
        if changed is None:
            return None
        if view is not props:
            # The steps decide by the identity but never change it: it goes back as the engine gave it.
            changed = {**changed, **{k: props[k] for k in ("apiVersion", "kind", "metadata") if k in props and changed.get(k) is view.get(k)}}
            if "metadata" in props and changed.get("metadata") is not props["metadata"]:
                # A step added to the metadata (an annotation): what it set goes onto the metadata as the engine gave
                # it, so a name or a label that came as a secret stays one.
                ours = {k: v for k, v in (changed.get("metadata") or {}).items() if (view.get("metadata") or {}).get(k) is not v}
                changed["metadata"] = merged(props["metadata"], ours)
        opts = t.opts
        if t.type_ == PIPELINE_STORAGE_TYPE and args.keep_volumes_on_delete:
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(protect=True, retain_on_delete=True))
        return pulumi.ResourceTransformResult(changed, opts)

    return transform


# --- tenants ----------------------------------------------------------------------------------


def tenant_quota_hard(tenant: TenantProfile) -> dict[str, str]:
    """The ResourceQuota ``hard`` limits of a tenant."""
    hard = {GPU_QUOTA_KEY: str(tenant.gpus)}
    if tenant.cpus is not None:
        hard["requests.cpu"] = str(tenant.cpus)
    if tenant.memory_gib is not None:
        hard["requests.memory"] = f"{tenant.memory_gib}Gi"
    return hard


def pipelines_gpu_quota_hard(gpus: int) -> dict[str, str]:
    """The ResourceQuota ``hard`` limits on the kubeflow namespace, where KFP standalone runs steps."""
    return {GPU_QUOTA_KEY: str(gpus)}
