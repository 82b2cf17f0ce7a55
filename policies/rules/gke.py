"""GKE guardrails: production clusters protected and private, dedicated node identity,
Workload Identity, allowed regions."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pydantic import Field

from gpu_platform.policies.rules.base import EKS_CLUSTER, GKE_CLUSTER, GKE_NODE_POOL, Resource, ResourceRule, RuleConfig, is_production


class ProductionConfig(RuleConfig):
    productionStacks: list[str] = Field(default_factory=lambda: ["prod*", "production*"])  # noqa: N815
    """Stack-name patterns (fnmatch) that mark production stacks whose clusters declare no environment (the gpu-platform-environment label or tag decides where present). Default: prod*, production*."""


class AllowedRegionsConfig(RuleConfig):
    allowedRegions: list[str] = Field(default_factory=list)  # noqa: N815
    """Regions clusters may run in; empty allows any. Default: [] (any)."""


_DEFAULT_COMPUTE_SA = re.compile(r"^[0-9]+-compute@developer\.gserviceaccount\.com$")


def check_prod_deletion_protection(r: Resource, config: ProductionConfig) -> Iterator[str]:
    if r.type not in (GKE_CLUSTER, EKS_CLUSTER) or not is_production(r, config.productionStacks):
        return
    if r.props.get("deletionProtection") is False:
        yield "production cluster has deletionProtection false"
    if not r.protect:
        yield "production cluster is not protected in Pulumi (protect: true), so pulumi destroy would delete it"


def check_prod_secrets_encryption(r: Resource, config: ProductionConfig) -> Iterator[str]:
    if r.type != EKS_CLUSTER or not is_production(r, config.productionStacks):
        return
    encryption = r.props.get("encryptionConfig") or {}
    if "secrets" not in (encryption.get("resources") or []) or not (encryption.get("provider") or {}).get("keyArn"):
        yield "production EKS cluster does not encrypt Secrets with a KMS key (no encryptionConfig for secrets)"


def check_prod_control_plane(r: Resource, config: ProductionConfig) -> Iterator[str]:
    if r.type == EKS_CLUSTER and is_production(r, config.productionStacks):
        vpc = r.props.get("vpcConfig") or {}
        cidrs = list(vpc.get("publicAccessCidrs") or [])
        if vpc.get("endpointPublicAccess", True) is not False:  # EKS's default is a public endpoint
            if "0.0.0.0/0" in cidrs:
                yield "production EKS endpoint allows 0.0.0.0/0, which is the whole internet"
            elif not cidrs:
                yield "production EKS endpoint is public and unrestricted: no publicAccessCidrs"
        return
    if r.type != GKE_CLUSTER or not is_production(r, config.productionStacks):
        return
    private = bool((r.props.get("privateClusterConfig") or {}).get("enablePrivateEndpoint"))
    blocks = [b.get("cidrBlock") for b in (r.props.get("masterAuthorizedNetworksConfig") or {}).get("cidrBlocks") or []]
    if "0.0.0.0/0" in blocks:
        yield "production control plane authorizes 0.0.0.0/0, which is the whole internet"
    elif not private and not blocks:
        yield "production control plane is public and unrestricted: no private endpoint and no authorized networks"


def _account(r: Resource) -> str | None:
    return (r.props.get("nodeConfig") or {}).get("serviceAccount")


def check_node_service_account(r: Resource, config: RuleConfig) -> Iterator[str]:
    if r.type not in (GKE_CLUSTER, GKE_NODE_POOL):
        return
    account = _account(r)
    if not account or account == "default":
        yield "nodes run as the Compute Engine default service account (no nodeConfig.serviceAccount)"
    elif _DEFAULT_COMPUTE_SA.match(account):
        yield f"nodes run as the Compute Engine default service account {account}"


def check_workload_identity(r: Resource, config: RuleConfig) -> Iterator[str]:
    if r.type == GKE_CLUSTER and not (r.props.get("workloadIdentityConfig") or {}).get("workloadPool"):
        yield "cluster has no Workload Identity pool (workloadIdentityConfig.workloadPool)"
    if r.type == GKE_NODE_POOL:
        mode = ((r.props.get("nodeConfig") or {}).get("workloadMetadataConfig") or {}).get("mode")
        if mode != "GKE_METADATA":
            yield f"node pool exposes the node's metadata server (workloadMetadataConfig.mode {mode or 'unset'}, not GKE_METADATA)"


def check_region(r: Resource, config: AllowedRegionsConfig) -> Iterator[str]:
    if r.type != GKE_CLUSTER or not config.allowedRegions:
        return
    location = str(r.props.get("location") or "")
    region = re.sub(r"-[a-z]$", "", location)
    if region not in config.allowedRegions:
        yield f"cluster location {location} is outside the allowed regions ({', '.join(config.allowedRegions)})"


RULES = [
    ResourceRule(
        "prod-cluster-deletion-protected",
        "Production clusters cannot be deleted by accident (GKE/EKS deletion protection and Pulumi protect).",
        "Set gke.deletion_protection or eks.deletion_protection: true in the production stack.",
        check_prod_deletion_protection,
        ProductionConfig,
    ),
    ResourceRule(
        "prod-secrets-encrypted",
        "Production EKS clusters encrypt Kubernetes Secrets with a KMS key (envelope encryption).",
        "Leave eks.secrets_encryption.enabled true (the component creates a key) or give eks.secrets_encryption.kms_key_arn.",
        check_prod_secrets_encryption,
        ProductionConfig,
    ),
    ResourceRule(
        "prod-control-plane-restricted",
        "Production control planes are private or limited to authorized networks.",
        "Set gke.control_plane.private_endpoint or list authorized_networks; on EKS set eks.endpoint.public: false or list public_access_cidrs (never 0.0.0.0/0).",
        check_prod_control_plane,
        ProductionConfig,
    ),
    ResourceRule(
        "gke-dedicated-node-service-account",
        "GKE nodes run as a dedicated least-privilege service account, never the default compute one.",
        "Set node_config.service_account (GpuGkeCluster creates a dedicated account).",
        check_node_service_account,
    ),
    ResourceRule(
        "gke-workload-identity",
        "Workload Identity is on: pods get their own identity, not the node's.",
        "Set workload_identity_config.workload_pool on the cluster and workload_metadata_config.mode GKE_METADATA on pools.",
        check_workload_identity,
    ),
    ResourceRule(
        "region-allowed",
        "Clusters run only in the allowed regions.",
        "Move the cluster to an allowed region, or add the region to allowedRegions in the policy config.",
        check_region,
        AllowedRegionsConfig,
    ),
]
