"""The stack config model, built from Pulumi config.

Stack files (stacks/Pulumi.<stack>.yaml) hold values only; this module turns the
``gpu-platform:*`` keys into one frozen pydantic model. A wrong value stops the program
before any resource is registered, with one line per problem:
``gpu-platform:<key path>: <what is wrong> (got <value>)``.
"""

from __future__ import annotations

import functools
import re
from enum import StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from gpu_platform.components.catalog.gpu_zones import pool_gpu_notices
from gpu_platform.components.catalog.zones import unchecked_region
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.kube import kubernetes_owns
from gpu_platform.components.core.labels import PoolRole
from gpu_platform.components.core.models import ARGS_CONFIG, PlannedOnce
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.dask.args import DaskOperatorArgs
from gpu_platform.components.datasets.args import SharedDatasetsArgs
from gpu_platform.components.eks.args import (
    EksClusterArgs,
    SystemNodeGroupArgs,
)
from gpu_platform.components.eks.node_group_args import (
    KarpenterNodePoolsArgs,
    SpotFailoverEksNodeGroupsArgs,
    ami_problem,
    autoscaler_image,
)
from gpu_platform.components.eks.plan import EksPlan, plan_node_groups
from gpu_platform.components.existing.args import ExistingClusterArgs
from gpu_platform.components.gke.args import GpuGkeClusterArgs
from gpu_platform.components.inference.args import GpuInferenceServiceArgs
from gpu_platform.components.karpenter.args import Provisioner
from gpu_platform.components.karpenter.plan import NodePoolPlan
from gpu_platform.components.kubeflow.args import (
    DEFAULT_DEX_PASSWORD,
    EDITION_NAMESPACES,
    Edition,
    KubeflowInstallArgs,
)
from gpu_platform.components.kubeflow.plan import capacity_problem
from gpu_platform.components.kubeflow.transforms import Credential, edition_credentials
from gpu_platform.components.load_balancer.args import AwsLoadBalancerControllerArgs
from gpu_platform.components.monitoring.dcgm_args import DcgmExporterArgs
from gpu_platform.components.monitoring.prometheus_args import PrometheusStackArgs
from gpu_platform.components.pools.shapes import Environment, NodePoolShape
from gpu_platform.components.queues.args import KueueArgs
from gpu_platform.components.queues.plan import QueuesPlan, QueueTenant, dask_queue_tenants, kubeflow_queue_tenants, planned_queues
from gpu_platform.components.warm.args import WarmCapacityArgs, warm_capacity_problems
from gpu_platform.infra.kubernetes_api import supported_kubernetes_versions
from gpu_platform.infra.stack.headlamp import HeadlampConfig
from gpu_platform.infra.stack.load_balancing import load_balancer_controller, load_balancing_problems

__all__ = [
    "KUBEFLOW_CREDENTIAL_KEYS",
    "STACK_CHECK",
    "PROJECT",
    "CapacityCheck",
    "KubeflowConfig",
    "MonitoringConfig",
    "StackConfig",
]

PROJECT = "gpu-platform"
"""The Pulumi project name, and so the namespace of the stack config keys."""

KUBEFLOW_CREDENTIAL_KEYS = {c: f"kubeflow_{c.value.replace('-', '_')}" for c in Credential}
"""The secret stack config key of each Kubeflow credential a stack may bring (gpu-platform:kubeflow_database_password)."""

Problem = tuple[tuple[str | int, ...], str, Any]
"""One cross-field problem: (key path, what is wrong and the fix, the value received)."""


STACK_CHECK = "stack_check"
"""The error type of the problems StackConfig's own cross-field checks find (_cloud_section): they ran on
a config whose every field was valid, so infra/stack/read.py's every_problem has nothing to set aside for them."""


def _raise_all(model: str, problems: list[Problem], kind: str = "invalid_combination") -> None:
    """Every problem at once: one ValidationError holding one error per problem, each located
    at its key (pydantic prefixes the enclosing location, as for field_error)."""
    if not problems:
        return
    raise ValidationError.from_exception_data(
        model,
        [InitErrorDetails(type=PydanticCustomError(kind, message), loc=loc, input=value) for loc, message, value in problems],
    )


_K8S_MINOR = re.compile(r"^1\.[0-9]{2}$")


class MonitoringConfig(BaseModel):
    """Prometheus, Grafana, GPU telemetry and GPU custom metrics on the stack's cluster."""

    model_config = ARGS_CONFIG

    enabled: bool = True
    """Deploy monitoring (needs gpu-platform:grafana_admin_password). Default: true."""
    prometheus: PrometheusStackArgs = Field(default_factory=PrometheusStackArgs)
    """kube-prometheus-stack, the adapter, dashboards and alerts. Default: see PrometheusStackArgs."""
    dcgm_exporter: DcgmExporterArgs | None = None
    """GPU telemetry by dcgm-exporter; null when GKE's managed DCGM metrics collect it (gke.managed_dcgm_metrics). Default: none."""


class CapacityCheck(StrEnum):
    """What a failed capacity check does."""

    REFUSE = "refuse"
    """Stop before anything is deployed."""
    WARN = "warn"
    """Deploy, with a warning in the preview and `pulumi up`."""


class KubeflowConfig(BaseModel):
    """Kubeflow on the stack's cluster, and the check that its system pool can hold it."""

    model_config = ARGS_CONFIG

    install: KubeflowInstallArgs = Field(default_factory=KubeflowInstallArgs)
    """Edition, release, storage, tenants, training pool and exposure. Default: see KubeflowInstallArgs."""
    capacity_check: CapacityCheck = CapacityCheck.REFUSE
    """refuse or warn when the system pool at its maximum cannot hold the edition's footprint. Default: refuse."""
    system_reserve_percent: Int = Field(default=30, ge=0, le=90)
    """Share of the system pool kept for the kubelet, system pods and the other add-ons. Default: 30."""

    def capacity_problem(self, pools: list[NodePoolShape]) -> str | None:
        """Why the stack's system pool cannot hold this Kubeflow, or None."""
        system = [p for p in pools if p.role is PoolRole.SYSTEM]
        return capacity_problem(self.install.edition, system, self.system_reserve_percent)


def default_dex_password_problem(password_hash: str) -> str | None:
    """Why a Dex password hash must not be deployed (it is the upstream login's), or None."""
    import bcrypt

    if password_hash == DEFAULT_DEX_PASSWORD:
        return "the Dex password hash must be a bcrypt hash, not a password (and never the upstream 12341234)"
    try:
        default = bcrypt.checkpw(DEFAULT_DEX_PASSWORD.encode(), password_hash.encode())
    except ValueError:
        default = False  # not a bcrypt hash: Dex refuses it at start-up
    if default:
        return f"the Dex password hash is the hash of the upstream default password {DEFAULT_DEX_PASSWORD}; choose another password"
    return None


class StackConfig(PlannedOnce, BaseModel):
    """Everything a stack file may set under the gpu-platform namespace."""

    model_config = ARGS_CONFIG

    cloud: Cloud
    """The cloud this stack deploys to. Required."""
    environment: Environment = Environment.DEV
    """dev, staging or prod. Default: dev."""
    kubernetes_version: str = "1.34"
    """Kubernetes minor version whose API schemas the offline preview validates objects against; quote it in YAML ("1.34"). Default: "1.34"."""
    gke: GpuGkeClusterArgs | None = None
    """The GKE cluster and its pools (see GpuGkeClusterArgs). Required when cloud is gcp. Default: none."""
    eks: EksClusterArgs | None = None
    """The EKS cluster, its VPC and system node group (see EksClusterArgs). Required when cloud is aws. Default: none."""
    eks_node_groups: SpotFailoverEksNodeGroupsArgs | None = None
    """The EKS GPU classes, the cluster autoscaler and its priority expander (see SpotFailoverEksNodeGroupsArgs). Required when cloud is aws. Default: none."""
    existing_cluster: ExistingClusterArgs | None = None
    """A cluster the stack does not create, and its pools as they are (see ExistingClusterArgs; its kind comes from cloud): the platform's Kubernetes layer goes onto it, in place of gke, or eks and eks_node_groups. Default: none (the stack creates its cluster)."""
    existing_cluster_kubeconfig: SecretStr | None = None
    """The existing cluster's kubeconfig (its contents); a Pulumi secret. Default: none (the ambient kubeconfig: KUBECONFIG, else ~/.kube/config)."""
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    """Monitoring of the cluster. Default: on, with dcgm-exporter off until configured."""
    dask: DaskOperatorArgs | None = None
    """The Dask operator and its tenants (see DaskOperatorArgs). Default: none (no Dask operator)."""
    grafana_admin_password: SecretStr | None = None
    """Grafana's admin password; a Pulumi secret (pulumi config set --secret). Required when monitoring is on. Default: none."""
    kubeflow: KubeflowConfig | None = None
    """Kubeflow Pipelines or the Kubeflow platform on the cluster. Default: none (not installed)."""
    kubeflow_oidc_client_secret: SecretStr | None = None
    """The Kubeflow OIDC client's secret at the issuer; a Pulumi secret. Required when kubeflow.install.oidc is set. Default: none."""
    kubeflow_dex_password_hash: SecretStr | None = None
    """bcrypt hash of the Kubeflow login's password; a Pulumi secret. Required with the platform edition. Default: none."""
    kubeflow_artifact_store_access_key: SecretStr | None = None
    """Kubeflow Pipelines' object store access key (upstream minio); a Pulumi secret, letters and digits, at least 3. Default: none (read from kubeflow.install.credentials_secret, else generated)."""
    kubeflow_artifact_store_secret_key: SecretStr | None = None
    """Kubeflow Pipelines' object store secret key (upstream minio123); a Pulumi secret, letters and digits, at least 8. Default: none (read from kubeflow.install.credentials_secret, else generated)."""
    kubeflow_database_password: SecretStr | None = None
    """Kubeflow Pipelines' MySQL root password (upstream empty); a Pulumi secret, letters and digits. Default: none (read from kubeflow.install.credentials_secret, else generated)."""
    kubeflow_katib_database_password: SecretStr | None = None
    """platform edition: Katib's MySQL root password (upstream test); a Pulumi secret, letters and digits. Default: none (read from kubeflow.install.credentials_secret, else generated)."""
    kubeflow_oauth2_client_secret: SecretStr | None = None
    """platform edition: the client secret Dex's static client and oauth2-proxy share; a Pulumi secret, letters and digits. Default: none (read from kubeflow.install.credentials_secret, else generated)."""
    kubeflow_oauth2_cookie_secret: SecretStr | None = None
    """platform edition: oauth2-proxy's cookie secret; a Pulumi secret, 16, 24 or 32 letters and digits. Default: none (read from kubeflow.install.credentials_secret, else generated)."""
    shared_datasets: SharedDatasetsArgs | None = None
    """Buckets shared with Dask tenants and Kubeflow profiles: FSx for Lustre on EKS, Cloud Storage FUSE on GKE (see SharedDatasetsArgs). Default: none."""
    headlamp: HeadlampConfig = Field(default_factory=HeadlampConfig)
    """The cluster UI (Headlamp) and each tenant's read-only access to its namespace. Default: see HeadlampConfig (not installed)."""
    aws_load_balancer_controller: AwsLoadBalancerControllerArgs | None = None
    """The AWS Load Balancer Controller (cloud aws only; see AwsLoadBalancerControllerArgs). Default: none (installed with its defaults wherever an ALB Ingress needs it: kubeflow.install.ingress, an inference ALB)."""
    inference: GpuInferenceServiceArgs | None = None
    """A GPU inference service with its Ingress and GPU-utilisation HPA (see GpuInferenceServiceArgs); needs monitoring.dcgm_exporter. Default: none."""
    queues: KueueArgs | None = None
    """Kueue tenant queues: a ClusterQueue per Dask and Kubeflow tenant in one Cohort, a ResourceFlavor per pool, a LocalQueue default per tenant namespace (see KueueArgs). Default: none (no Kueue)."""
    warm_capacity: WarmCapacityArgs | None = None
    """GPUs kept warm per pool by placeholder pods at a negative priority, on GKE and EKS alike (see WarmCapacityArgs). Default: none (no warm capacity)."""

    @model_validator(mode="before")
    @classmethod
    def _system_group_beside_the_gpu_groups(cls, data: Any) -> Any:
        """eks_node_groups.other_node_groups defaults to the eks system node group, so explicit
        priority tiers may name it (a pattern for it alone is not a typo)."""
        if not isinstance(data, dict) or not isinstance(data.get("eks_node_groups"), dict):
            return data
        groups = data["eks_node_groups"]
        if "other_node_groups" in groups:
            return data
        eks = data.get("eks")
        if not isinstance(eks, dict):
            eks = {}
        system = eks.get("system_node_group")
        if not isinstance(system, dict):
            system = {}
        name = system.get("name", SystemNodeGroupArgs.model_fields["name"].default)
        if not isinstance(name, str):
            return data
        return {**data, "eks_node_groups": {**groups, "other_node_groups": [name]}}

    @field_validator("eks_node_groups", mode="wrap")
    @classmethod
    def _as_its_provisioner_takes_it(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """Classes that Karpenter provisions are read as KarpenterNodePools' Args (the same fields, the same checks), so
        the program hands the component the stack's one validated and planned Args instead of validating them again."""
        if isinstance(value, dict) and value.get("provisioner") == Provisioner.KARPENTER.value:
            return KarpenterNodePoolsArgs.model_validate(value)
        return handler(value)

    @model_validator(mode="before")
    @classmethod
    def _gcs_fuse_for_datasets(cls, data: Any) -> Any:
        """Shared datasets on GKE need the Cloud Storage FUSE CSI driver add-on: on unless gke says otherwise
        (then refused by _check_datasets), so the component gets the very Args the stack checks read."""
        if not isinstance(data, dict) or not isinstance(data.get("gke"), dict) or "gcs_fuse_csi_driver" in data["gke"]:
            return data
        shared = data.get("shared_datasets")
        if isinstance(shared, dict) and shared.get("datasets"):
            return {**data, "gke": {**data["gke"], "gcs_fuse_csi_driver": True}}
        return data

    @model_validator(mode="before")
    @classmethod
    def _existing_cluster_kind(cls, data: Any) -> Any:
        """existing_cluster.kind comes from gpu-platform:cloud: one place to say it."""
        if not isinstance(data, dict) or not isinstance(data.get("existing_cluster"), dict):
            return data
        existing = data["existing_cluster"]
        if "kind" in existing:
            _raise_all(
                "StackConfig",
                [(("existing_cluster", "kind"), "set gpu-platform:cloud instead; the program sets existing_cluster.kind from it", existing["kind"])],
            )
        cloud = data.get("cloud")
        if isinstance(cloud, str) and cloud in {c.value for c in Cloud}:  # a wrong cloud: its own one line
            return {**data, "existing_cluster": {**existing, "kind": Cloud(cloud).kind.value}}
        return data

    @model_validator(mode="before")
    @classmethod
    def _one_environment(cls, data: Any) -> Any:
        """gke/eks.environment come from gpu-platform:environment: one place to say it. The cluster's Args
        are made with it here, so the component gets the very Args (and plan) the stack checks read."""
        if isinstance(data, dict):
            problems: list[Problem] = [
                (
                    (section, "environment"),
                    f"set gpu-platform:environment instead; the program sets {section}.environment from it",
                    data[section]["environment"],
                )
                for section in ("gke", "eks")
                if isinstance(data.get(section), dict) and "environment" in data[section]
            ]
            _raise_all("StackConfig", problems)
            environment = data.get("environment", Environment.DEV.value)
            if isinstance(environment, str) and environment in {e.value for e in Environment}:  # a wrong value: its own one line
                data = {
                    **data,
                    **{s: {**data[s], "environment": environment} for s in ("gke", "eks") if isinstance(data.get(s), dict)},
                }
        return data

    @field_validator("kubernetes_version")
    @classmethod
    def _minor(cls, value: str) -> str:
        supported = supported_kubernetes_versions()
        if not _K8S_MINOR.match(value):
            hint = ""
            if re.fullmatch(r"1\.[0-9]", value):
                hint = f"; YAML reads an unquoted 1.{value[2:]}0 as {value}: quote it"
            raise ValueError(f'kubernetes_version must be a minor version such as "1.34"{hint}')
        if value not in supported:
            raise ValueError(f"kubernetes_version {value} has no offline API schemas; use {supported[0]} to {supported[-1]}")
        return value

    @model_validator(mode="after")
    def _cloud_section(self) -> StackConfig:
        """Every cross-field rule, all of them checked: one line per problem found, in one run
        (each rule that needs a section skips while that section is missing, itself a problem)."""
        problems: list[Problem] = []
        sections = {Cloud.GCP: ("gke",), Cloud.AWS: ("eks", "eks_node_groups")}
        if self.existing_cluster is not None:
            problems += self._check_existing_cluster(sections[self.cloud])
        else:
            for key in sections[self.cloud]:
                if getattr(self, key) is None:
                    problems.append(
                        ((key,), f"{key} is required when cloud is {self.cloud.value} (or existing_cluster, for a cluster the stack does not create)", None)
                    )
            if self.existing_cluster_kubeconfig is not None:
                problems.append(
                    (
                        ("existing_cluster_kubeconfig",),
                        "existing_cluster_kubeconfig applies to existing_cluster, which this stack does not set; remove it",
                        "[secret]",
                    )
                )
        for cloud, keys in sections.items():
            for key in keys:
                if cloud is not self.cloud and getattr(self, key) is not None:
                    problems.append(((key,), f"{key} applies to cloud {cloud.value}, not {self.cloud.value}; remove it", "set"))
        if self.eks is not None and self.eks.version != self.kubernetes_version:
            problems.append(
                (
                    ("eks", "version"),
                    f"eks.version {self.eks.version} does not match kubernetes_version {self.kubernetes_version}, "
                    "whose schemas the offline preview checks objects against; set both to the cluster's version",
                    self.eks.version,
                )
            )
        dcgm = self.monitoring.dcgm_exporter
        selection = self.cloud.kind
        if dcgm is not None and dcgm.node_selection is not selection:
            problems.append(
                (
                    ("monitoring", "dcgm_exporter", "node_selection"),
                    f"node_selection {dcgm.node_selection.value} does not match cloud {self.cloud.value}; use {selection.value}",
                    dcgm.node_selection.value,
                )
            )
        if self.gke is not None and self.gke.managed_dcgm_metrics and dcgm is not None:
            problems.append(
                (
                    ("monitoring", "dcgm_exporter"),
                    "dcgm_exporter and gke.managed_dcgm_metrics both collect GPU telemetry; keep one",
                    "set",
                )
            )
        problems += self._check_storage_classes()
        problems += self._check_namespaces()
        problems += self._check_isolation()
        problems += self._check_datasets()
        if self.eks is not None and self.eks_node_groups is not None:
            try:
                autoscaler_image(self.eks_node_groups.autoscaler, self.eks.version)
            except ValueError as exc:
                problems.append(
                    (
                        ("eks_node_groups", "autoscaler", "image"),
                        str(exc),
                        self.eks_node_groups.autoscaler.image or None,
                    )
                )
            for i, cls in enumerate(self.eks_node_groups.classes):
                if problem := ami_problem(cls, self.eks.version):
                    problems.append((("eks_node_groups", "classes", i, "ami_type"), problem, cls.ami_type.value))
        if self.kubeflow is not None:
            problems += self._check_kubeflow(self.kubeflow)
        if self.headlamp.enabled:
            problems += self.headlamp.problems(self.tenant_namespaces())
        if self.dask is not None:
            # A notebook or worker bigger than any node of its pool would stay Pending for good.
            problems += [(("dask", *loc), message, value) for loc, message, value in self.dask.placement_problems(self.pool_shapes())]
        problems += load_balancing_problems(self)
        problems += self._check_queued_provisioning()
        if (queues_plan := self.queues_plan) is not None:
            problems += [(("queues", *loc), message, value) for loc, message, value in queues_plan.problems]
        if self.warm_capacity is not None:
            problems += [(("warm_capacity", *loc), message, value) for loc, message, value in warm_capacity_problems(self.warm_capacity, self.pool_shapes())]
        dex_hash = self.kubeflow_dex_password_hash
        if dex_hash is not None and (problem := default_dex_password_problem(dex_hash.get_secret_value())):
            problems.append((("kubeflow_dex_password_hash",), problem, "[secret]"))
        problems += self._check_kubeflow_credentials()
        _raise_all("StackConfig", problems, STACK_CHECK)
        return self

    def kubeflow_credentials(self) -> dict[Credential, str]:
        """The Kubeflow credentials the stack brings as Pulumi secrets (KubeflowInstall's credentials=), by credential."""
        found = {c: getattr(self, key) for c, key in KUBEFLOW_CREDENTIAL_KEYS.items()}
        return {c: value.get_secret_value() for c, value in found.items() if value is not None}

    def _check_kubeflow_credentials(self) -> list[Problem]:
        """A credential key needs Kubeflow, an edition that has the credential, and a value the consumers take
        (Credential.problem; the offline reader's placeholders are checked when the program runs with the real value)."""
        from gpu_platform.infra.stack.errors import SECRET_PLACEHOLDER

        problems: list[Problem] = []
        for credential, key in KUBEFLOW_CREDENTIAL_KEYS.items():
            value = getattr(self, key)
            if value is None:
                continue
            if self.kubeflow is None:
                problems.append(((key,), f"{key} applies to Kubeflow, which this stack does not install (gpu-platform:kubeflow); remove it", "[secret]"))
                continue
            edition = self.kubeflow.install.edition
            if credential not in edition_credentials(edition):
                problems.append(
                    ((key,), f"{key} applies to the platform edition only (Katib and oauth2-proxy); this stack installs {edition.value}; remove it", "[secret]")
                )
                continue
            text = value.get_secret_value()
            if not text.startswith(SECRET_PLACEHOLDER) and (problem := credential.problem(text)):
                problems.append(((key,), problem, "[secret]"))
        return problems

    def _check_namespaces(self) -> list[Problem]:
        """One owner per namespace: a tenant or a component's namespace setting that names another's
        namespace would be two resources for one object (AlreadyExists at the first up)."""
        owners: dict[str, str] = {}
        problems: list[Problem] = []

        def claim(namespace: str, owner: str, path: tuple[str | int, ...] | None) -> None:
            if path is not None and kubernetes_owns(namespace):
                problems.append((path, f"namespace {namespace} belongs to Kubernetes; choose another name", namespace))
            elif namespace in owners and path is not None:
                problems.append((path, f"namespace {namespace} is already {owners[namespace]}'s; choose another name", namespace))
            owners.setdefault(namespace, owner)

        # Fixed upstream first, then each setting in the order the program installs them.
        if self.kubeflow is not None:
            install = self.kubeflow.install
            for namespace in EDITION_NAMESPACES[install.edition.value]:
                claim(namespace, f"Kubeflow ({install.edition.value})", None)
        if self.monitoring.enabled:
            claim(self.monitoring.prometheus.namespace, "the monitoring stack", ("monitoring", "prometheus", "namespace"))
            if self.monitoring.dcgm_exporter is not None:
                claim(self.monitoring.dcgm_exporter.namespace, "dcgm-exporter", ("monitoring", "dcgm_exporter", "namespace"))
        if self.dask is not None:
            claim(self.dask.namespace, "the Dask operator", ("dask", "namespace"))
        if self.kubeflow is not None:
            for i, profile in enumerate(self.kubeflow.install.tenants):
                claim(profile.name, "a Kubeflow tenant", ("kubeflow", "install", "tenants", i, "name"))
        if self.dask is not None:
            for i, tenant in enumerate(self.dask.tenants):
                claim(tenant.name, "a Dask tenant", ("dask", "tenants", i, "name"))
        if self.headlamp.enabled:
            claim(self.headlamp.namespace, "Headlamp", ("headlamp", "namespace"))
        if self.inference is not None:
            claim(self.inference.namespace, "the inference service", ("inference", "namespace"))
        if self.warm_capacity is not None and self.warm_capacity.enabled():
            claim(self.warm_capacity.namespace, "warm capacity", ("warm_capacity", "namespace"))
        if self.queues is not None:
            claim(self.queues.namespace, "Kueue", ("queues", "namespace"))
        return problems

    def _check_existing_cluster(self, sections: tuple[str, ...]) -> list[Problem]:
        """A stack on an existing cluster creates no cluster, and what only a cluster the stack creates can have is
        refused, naming why (docs/getting-started/existing-cluster.md lists these limits)."""
        problems: list[Problem] = [
            ((key,), f"{key} creates a cluster, and existing_cluster names one the stack does not create; keep one of them", "set")
            for key in sections
            if getattr(self, key) is not None
        ]
        if self.shared_datasets is not None and self.shared_datasets.datasets:
            why = (
                "FSx for Lustre in the cluster's VPC and subnets, open to its security group"
                if self.cloud is Cloud.AWS
                else "Workload Identity grants in the cluster's project and its Cloud Storage FUSE CSI driver"
            )
            problems.append(
                (
                    ("shared_datasets",),
                    f"shared datasets need {why}, which the stack has only for a cluster it creates; remove shared_datasets on existing_cluster",
                    "set",
                )
            )
        if self.aws_load_balancer_controller is not None:
            problems.append(
                (
                    ("aws_load_balancer_controller",),
                    "the AWS Load Balancer Controller's IAM role trusts the cluster's OIDC provider, which the stack has only for a cluster it "
                    "creates; on existing_cluster install it with the cluster, and the ALB Ingresses use it; remove aws_load_balancer_controller",
                    "set",
                )
            )
        return problems

    def _check_queued_provisioning(self) -> list[Problem]:
        """A GKE pool with queued provisioning (DWS) gets nodes only for a ProvisioningRequest, which only the
        queues' admission check makes (Kueue's ProvisioningRequest controller): without queues, or with queues
        that admit no tenant, nothing the platform runs could ever get that pool's nodes."""
        if self.gke is not None:
            queued = [(("gke", "gpu_pools", i, "queued_provisioning"), p.name) for i, p in enumerate(self.gke.gpu_pools) if p.queued_provisioning]
        elif self.existing_cluster is not None:
            queued = [
                (("existing_cluster", "pools", i, "queued_provisioning"), p.name) for i, p in enumerate(self.existing_cluster.pools) if p.queued_provisioning
            ]
        else:
            return []
        if not queued:
            return []
        if self.queues is None:
            why = "the stack has no queues, and GKE gives this pool nodes only for a ProvisioningRequest, which the queues' admission check makes; add gpu-platform:queues or turn queued_provisioning off"
        elif not self.queue_tenants():
            why = "the queues have no tenant (no Dask tenant, no queued Kubeflow tenant), so no ClusterQueue carries the admission check that makes the ProvisioningRequest GKE gives this pool nodes for; add a tenant or turn queued_provisioning off"
        else:
            return []
        return [(path, f"pool {name} has queued_provisioning but {why}", True) for path, name in queued]

    def tenant_names(self) -> set[str]:
        """Every tenant a dataset may be mounted by: the Dask tenants and the Kubeflow profiles (tenant_namespaces)."""
        return set(self.tenant_namespaces())

    def _check_datasets(self) -> list[Problem]:
        """Datasets valid on this cloud, mounted by tenants this stack has (see SharedDatasetsArgs.problems)."""
        shared = self.shared_datasets
        if shared is None or not shared.datasets:
            return []
        problems: list[Problem] = [
            (("shared_datasets", "datasets", *loc), message, value) for loc, message, value in shared.problems(self.cloud, self.tenant_names())
        ]
        if self.gke is not None and not self.gke.gcs_fuse_csi_driver:
            problems.append(
                (
                    ("gke", "gcs_fuse_csi_driver"),
                    "shared datasets on gcp are mounted by GKE's Cloud Storage FUSE CSI driver; leave gcs_fuse_csi_driver out (the stack turns it on)",
                    False,
                )
            )
        return problems

    def tenant_namespaces(self) -> list[str]:
        """Every tenant's namespace: the Dask tenants', then the Kubeflow tenants' (one namespace per tenant, the queues' order)."""
        names = [t.name for t in self.dask.tenants] if self.dask is not None else []
        names += [p.name for p in self.kubeflow.install.tenants] if self.kubeflow is not None else []
        return list(dict.fromkeys(names))

    def _check_isolation(self) -> list[Problem]:
        """A Dask tenant's NetworkPolicy only isolates it where the cluster's datapath enforces it."""
        if self.dask is None:
            return []
        if self.gke is not None and not self.gke.dataplane_v2:
            off = "gke.dataplane_v2 is false"
        elif self.eks is not None and not self.eks.network_policy:
            off = "eks.network_policy is false"
        elif self.eks is not None and "vpc-cni" not in [a.name for a in self.eks.addons]:
            off = "eks.addons has no vpc-cni, whose agent enforces it"
        else:
            return []
        return [
            (
                ("dask", "tenants", i, "isolated"),
                f"tenant {tenant.name} is isolated by a NetworkPolicy this cluster would not enforce ({off}); "
                "turn enforcement on, or set isolated: false to run without isolation",
                True,
            )
            for i, tenant in enumerate(self.dask.tenants)
            if tenant.isolated
        ]

    def _check_storage_classes(self) -> list[Problem]:
        """On EKS claims bind only through the EBS CSI driver: with the stack's block storage, a
        claim may name its class or EKS's own gp2 (in-tree, migrated to the driver), and one that
        names none needs the stack's class to be the default (EKS marks none since 1.30)."""
        if self.cloud is not Cloud.AWS or self.eks is None or not self.eks.block_storage.enabled:
            return []
        problems: list[Problem] = []
        storage = self.eks.block_storage
        provided = (storage.storage_class, "gp2")
        wanted: list[tuple[tuple[str | int, ...], str | None]] = []
        if self.monitoring.enabled:
            wanted.append((("monitoring", "prometheus", "storage_class"), self.monitoring.prometheus.storage_class))
        if self.kubeflow is not None:
            install = self.kubeflow.install
            if install.edition is Edition.PLATFORM and not storage.default_class:
                # Katib's database, notebook workspaces and the rest claim no class of ours.
                problems.append(
                    (
                        ("eks", "block_storage", "default_class"),
                        "the Kubeflow platform edition's upstream claims name no StorageClass, and EKS marks none default: keep default_class true",
                        False,
                    )
                )
            wanted.append((("kubeflow", "install", "storage_class"), install.storage_class))
        for path, name in wanted:
            if name is not None and name not in provided:
                problems.append(
                    (
                        path,
                        f"no StorageClass {name} in this stack: the EKS cluster provides {storage.storage_class} "
                        "(eks.block_storage.storage_class) and gp2; use one, or leave storage_class out for the default class",
                        name,
                    )
                )
            if name is None and not storage.default_class:
                problems.append(
                    (
                        path,
                        "storage_class is required: eks.block_storage.default_class is false and EKS marks no class "
                        f"default, so a claim naming none never binds; use {storage.storage_class}",
                        None,
                    )
                )
        return problems

    def _check_kubeflow(self, kubeflow: KubeflowConfig) -> list[Problem]:
        problems: list[Problem] = []
        pools = self.pool_shapes()
        selector = kubeflow.install.training_pool
        if not any(selector.matches(p) for p in pools):
            offered = "; ".join(f"{p.name}: {', '.join(f'{k}={v}' for k, v in p.labels.items())}" for p in pools)
            problems.append(
                (
                    ("kubeflow", "install", "training_pool"),
                    f"no pool carries label {selector.label_key}={selector.label_value} and taint {selector.taint}; "
                    f"add both to a GPU pool (pools: {offered or 'none'})",
                    f"{selector.label_key}={selector.label_value}",
                )
            )
        if kubeflow.capacity_check is CapacityCheck.REFUSE and (problem := kubeflow.capacity_problem(pools)):
            problems.append((("kubeflow", "install", "edition"), problem, kubeflow.install.edition.value))
        if self.cloud is Cloud.GCP and kubeflow.install.ingress is not None:
            problems.append(
                (
                    ("kubeflow", "install", "ingress"),
                    "ingress is an AWS ALB with Cognito; on gcp expose Kubeflow yourself (e.g. IAP) or leave it unset",
                    "set",
                )
            )
        return problems

    def notices(self) -> list[str]:
        """Checks of this config that could not be made offline: a region the zone data does not list, and each GKE
        GPU pool whose GPU the shipped zone data does not list (a zone that does not offer a listed GPU is refused
        by GpuGkeClusterArgs: components/catalog/gpu_zones.py)."""
        region = self.region
        notice = unchecked_region(self.cloud, region) if region else None
        gpus = pool_gpu_notices(self.gke.pool_shapes()) if self.gke is not None else []
        profiles = self.unqueued_profiles()
        unqueued = (
            [
                f"gpu-platform:queues: Kubeflow profiles {', '.join(profiles)} are not queued: on the platform edition the "
                "profile controller makes their namespaces after Pulumi applies, so no LocalQueue can be declared there; "
                "their ResourceQuota alone bounds them"
            ]
            if profiles
            else []
        )
        return ([notice] if notice else []) + gpus + unqueued

    @property
    def region(self) -> str | None:
        """The stack's region, as the program reads it: gke's (its location's region); on AWS eks.region,
        else aws:region. None when the stack does not say."""
        if self.cloud is Cloud.GCP and self.gke is not None:
            return self.gke.region
        if self.cloud is Cloud.AWS and self.eks is not None:
            import pulumi_aws

            region = self.eks.region or pulumi_aws.config.region
            return str(region) if region else None
        if self.existing_cluster is not None:
            return self.existing_cluster.region
        return None

    @property
    def load_balancer_controller(self) -> AwsLoadBalancerControllerArgs | None:
        """The AWS Load Balancer Controller the program installs (infra/stack/load_balancing.py), or None."""
        return load_balancer_controller(self)

    @functools.cached_property
    def eks_plan(self) -> EksPlan | None:
        """The EKS cluster's node-group plan (eks_plan.plan_node_groups), computed once; None on GKE."""
        if self.cloud is Cloud.AWS and self.eks is not None and self.eks_node_groups is not None:
            return plan_node_groups(self.eks, self.eks_node_groups, self.region)
        return None

    @functools.cached_property
    def karpenter_plan(self) -> tuple[NodePoolPlan, ...] | None:
        """The Karpenter NodePools of the GPU classes (karpenter_plan.plan_node_pools: names, weights, limits, the
        same the component renders), computed once; None unless eks_node_groups.provisioner is karpenter."""
        groups = self.eks_node_groups
        if self.eks_plan is None or groups is None or groups.provisioner is not Provisioner.KARPENTER:
            return None
        return groups.planned_node_pools

    @functools.cached_property
    def queues_plan(self) -> QueuesPlan | None:
        """The Kueue objects of the stack's queues (kueue_plan.plan_queues over queue_tenants and the pools),
        computed once; None without queues."""
        if self.queues is None:
            return None
        return planned_queues(self.queues, self.queue_tenants(), self.pool_shapes())

    def shared_gpus(self) -> dict[str, int]:
        """Pool (GKE pool, EKS GPU class) -> clients per GPU, for the pools that share their GPUs: the plan's
        pool shapes' (NodePoolShape.gpu_sharing)."""
        return {s.name: s.gpu_sharing.max_shared_clients_per_gpu for s in self.pool_shapes() if s.gpu_sharing is not None}

    def queue_tenants(self) -> list[QueueTenant]:
        """The tenants the queues admit: the Dask tenants, then the Kubeflow tenants (not the platform edition's
        profiles: see unqueued_profiles), placed on the plan's pools (``planned_queue_tenants``)."""
        return list(self.planned_queue_tenants)

    @functools.cached_property
    def planned_queue_tenants(self) -> tuple[QueueTenant, ...]:
        """The queue tenants (kueue_plan.dask_queue_tenants, kubeflow_queue_tenants on the plan's pools), placed once:
        the stack's checks, the Kueue component and the simulator read these."""
        pools = self.pool_shapes()
        tenants = [] if self.dask is None else dask_queue_tenants(self.dask, pools)
        if self.kubeflow is not None and self.kubeflow.install.edition is not Edition.PLATFORM:
            tenants += kubeflow_queue_tenants(self.kubeflow.install, pools)
        return tuple(tenants)

    def unqueued_profiles(self) -> list[str]:
        """Kubeflow tenants the queues leave out: the platform edition's profiles, whose namespaces the
        profile controller makes after Pulumi has applied (a LocalQueue declared there would be refused)."""
        if self.queues is None or self.kubeflow is None or self.kubeflow.install.edition is not Edition.PLATFORM:
            return []
        return [t.name for t in self.kubeflow.install.tenants]

    def pool_shapes(self) -> list[NodePoolShape]:
        """Every pool of the stack's cluster as workloads see it (see NodePoolShape): the plan's."""
        if self.cloud is Cloud.GCP and self.gke is not None:
            return self.gke.pool_shapes()
        if self.eks_plan is not None:
            return list(self.eks_plan.shapes)
        if self.existing_cluster is not None:
            return self.existing_cluster.pool_shapes()
        return []

    def pool_zones(self) -> dict[str, tuple[str, ...] | int]:
        """Pool name -> the zones its nodes run in: each pool's shape's (``NodePoolShape.zone_names()``, stand-ins
        named ``<region>-zone<n>`` where the cloud picks them at deploy time)."""
        return {s.name: s.zone_names() for s in self.pool_shapes()}


# --- error formatting -------------------------------------------------------------------------
