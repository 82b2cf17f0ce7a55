"""EksClusterArgs and its parts: the typed, validated inputs of EksCluster (endpoint access, add-ons, the system node group, EBS storage, zones and tags)."""

from __future__ import annotations

import functools
import ipaddress
import re
from enum import StrEnum
from typing import Annotated, Any

import pulumi
from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from gpu_platform.components.catalog.gpus import aws_shape, shape_checked
from gpu_platform.components.catalog.zones import zone_problem
from gpu_platform.components.core.cloud import Cloud
from gpu_platform.components.core.kube import DnsSubdomain
from gpu_platform.components.core.labels import EKS_NODEGROUP_LABEL
from gpu_platform.components.core.models import ARGS_CONFIG, CheckedWhenKnown, PlannedOnce, StrInput, check_min_max, check_unique, field_error, unique
from gpu_platform.components.core.numbers import Int
from gpu_platform.components.eks.plan import system_shape
from gpu_platform.components.pools.shapes import (
    ENVIRONMENT_LABEL,
    Environment,
    LabelMap,
    MachineShapeArgs,
    NodePoolShape,
)

__all__ = [
    "ExistingVpcArgs",
    "AccessScope",
    "EbsStorageArgs",
    "EksAccessEntryArgs",
    "EksAccessPolicy",
    "EksAddon",
    "EksClusterArgs",
    "EksEndpointAccess",
    "EksLogType",
    "NatGateways",
    "SecretsEncryption",
    "SystemNodeGroupArgs",
]

NODEGROUP_LABEL = EKS_NODEGROUP_LABEL
AWS_MANAGED_POLICY = "arn:aws:iam::aws:policy/"
NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")
CLUSTER_POLICIES = ("AmazonEKSClusterPolicy",)

_REGION = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$")
_ZONE = re.compile(r"^([a-z]{2}(-gov)?-[a-z]+-[0-9])[a-z]$")
MAX_ZONES = 6
"""The most zones of a cluster: no region has more, and the VPC range's 16 blocks hold a public and a private subnet for up to 8."""
_VPC_ID = re.compile(r"^vpc-([0-9a-f]{8}|[0-9a-f]{17})$")
_SUBNET_ID = re.compile(r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$")
_SECURITY_GROUP_ID = re.compile(r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$")
_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9\-_]*$")
_EKS_VERSION = re.compile(r"^1\.(2[89]|3[0-9])$")


def valid_eks_cluster_name(name: str) -> bool:
    """EKS cluster names: letters, digits, '-' and '_', starting alphanumeric, at most 100."""
    return bool(_CLUSTER_NAME.match(name)) and len(name) <= 100


AWS_MAX_TAGS = 50
"""User-defined tags per AWS resource (docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html)."""
OWN_TAGS = 5
"""Tags the component adds itself at most (Name, the cluster and ELB role tags on subnets, gpu-platform-environment)."""
_AWS_TAG_TEXT = re.compile(r"^[\w\s.:/=+@-]*$", re.UNICODE)


def _check_aws_tags(value: dict[str, str]) -> dict[str, str]:
    room = AWS_MAX_TAGS - OWN_TAGS
    if len(value) > room:
        raise ValueError(f"{len(value)} tags: AWS allows {AWS_MAX_TAGS} per resource and the component adds up to {OWN_TAGS}; use at most {room}")
    for key, tag in value.items():
        if key == ENVIRONMENT_LABEL:
            raise ValueError(f"tag key {key!r} is the component's own (set environment instead)")
        if key.lower().startswith("aws:"):
            raise ValueError(f"tag key {key!r}: the aws: prefix is reserved for AWS's own tags")
        if not 1 <= len(key) <= 128 or not _AWS_TAG_TEXT.match(key):
            raise ValueError(f"tag key {key!r}: 1 to 128 letters, digits, spaces and _ . : / = + - @")
        if len(tag) > 256 or not _AWS_TAG_TEXT.match(tag):
            raise ValueError(f"tag value {tag!r} (key {key}): at most 256 letters, digits, spaces and _ . : / = + - @")
    return value


AwsTagMap = Annotated[dict[str, str], AfterValidator(_check_aws_tags)]
"""AWS tags: at most 45 (50 less the component's own), no reserved aws: prefix, AWS's tag characters."""


class EksLogType(StrEnum):
    """Control plane log types sent to CloudWatch."""

    API = "api"
    """The Kubernetes API server's logs."""
    AUDIT = "audit"
    """Kubernetes audit logs: who did what to which object."""
    AUTHENTICATOR = "authenticator"
    """The IAM authenticator's logs: which IAM principal became which Kubernetes user."""
    CONTROLLER_MANAGER = "controllerManager"
    """The controller manager's logs."""
    SCHEDULER = "scheduler"
    """The scheduler's logs."""


class NatGateways(StrEnum):
    """How many NAT gateways the private subnets share: one (cheap) or one per zone (zone-redundant)."""

    SINGLE = "single"
    """One NAT gateway in the first zone: cheapest; a zone outage cuts the other zones' egress."""
    PER_ZONE = "per_zone"
    """A NAT gateway in every zone: each zone's egress survives another zone's outage."""


class EksEndpointAccess(BaseModel):
    """Who reaches the Kubernetes API."""

    model_config = ARGS_CONFIG

    public: bool = True
    """The API has a public endpoint. Default: true."""
    private: bool = True
    """The API is reachable from inside the VPC (nodes use it). Default: true."""
    public_access_cidrs: list[str] = Field(default_factory=list, max_length=40)
    """CIDR blocks allowed to reach the public endpoint; empty allows any address. Default: []."""

    @field_validator("public_access_cidrs")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        for cidr in value:
            try:
                ipaddress.IPv4Network(cidr, strict=True)
            except ValueError as exc:
                raise ValueError(f"{cidr!r} is not an IPv4 network in CIDR notation ({exc})") from None
        return value

    @model_validator(mode="after")
    def _reachable(self) -> EksEndpointAccess:
        if not self.public and not self.private:
            raise field_error("EksEndpointAccess", "public", "public and private are both false: nothing could reach the API; enable one", False)
        if self.public_access_cidrs and not self.public:
            raise field_error(
                "EksEndpointAccess",
                "public_access_cidrs",
                "public_access_cidrs applies to the public endpoint only; set public: true or remove them",
                self.public_access_cidrs,
            )
        return self

    @property
    def restricted(self) -> bool:
        """True when the API is private or its public endpoint is limited to given networks."""
        return not self.public or bool(self.public_access_cidrs)


class EksAddon(BaseModel):
    """An EKS add-on AWS manages (vpc-cni, coredns, kube-proxy, ...)."""

    model_config = ARGS_CONFIG

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=63)
    """Add-on name as `aws eks describe-addon-versions` lists it. Required."""
    version: str | None = None
    """Add-on version, e.g. v1.19.2-eksbuild.1. Default: none (the default version for the cluster's Kubernetes version)."""


DEFAULT_ADDONS = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")
NODELESS_ADDONS = frozenset({"vpc-cni", "kube-proxy", "eks-pod-identity-agent"})
"""Add-ons that run as DaemonSets nodes need before they are Ready; the others need nodes to run on."""
VPC_CNI_NETWORK_POLICY = {"enableNetworkPolicy": "true"}
"""vpc-cni add-on configuration that starts its network policy agent (VPC CNI 1.14+)."""
EBS_CSI_ADDON = "aws-ebs-csi-driver"
EBS_CSI_SERVICE_ACCOUNT = "ebs-csi-controller-sa"
"""The add-on's controller service account in kube-system (the IRSA role's subject)."""
EBS_CSI_POLICY = "service-role/AmazonEBSCSIDriverPolicy"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


class EbsStorageArgs(BaseModel):
    """Block storage for claims: the EBS CSI driver add-on (EKS has no in-tree EBS provisioner
    any more) with its IRSA role, and a gp3 StorageClass."""

    model_config = ARGS_CONFIG

    enabled: bool = True
    """Install the aws-ebs-csi-driver add-on and the StorageClass; without a CSI driver no claim binds. Default: true."""
    version: str | None = None
    """Add-on version, e.g. v1.48.0-eksbuild.1. Default: none (the default version for the cluster's Kubernetes version)."""
    storage_class: DnsSubdomain = "gp3"
    """Name of the gp3 StorageClass (volumes bound where their pod lands, expandable). Default: gp3."""
    default_class: bool = True
    """Mark the StorageClass the cluster's default, for claims that name none (EKS marks none since 1.30). Default: true."""
    encrypted: bool = True
    """Encrypt the volumes (the account's default EBS key). Default: true."""


class SystemNodeGroupArgs(PlannedOnce, BaseModel):
    """The small on-demand node group for controllers (CoreDNS, the autoscaler, operators). Not tainted."""

    model_config = ARGS_CONFIG

    name: str = Field(default="system", pattern=r"^[a-z][a-z0-9-]*$", max_length=40)
    """Node group name. Default: system."""
    instance_types: list[str] = Field(default_factory=lambda: ["m6i.large"], min_length=1)
    """CPU instance types, all of one shape. Default: [m6i.large]."""
    shape: MachineShapeArgs | None = None
    """The instance types' one shape (vcpus, memory_gib), stated for CPU types the catalog does not know (m7a, c7i): every type the catalog knows must match it. Default: none (the catalog's)."""
    min_nodes: Int = Field(default=2, ge=1, le=100)
    """Fewest nodes (controllers need somewhere to run). Default: 2."""
    max_nodes: Int = Field(default=4, ge=1, le=100)
    """Most nodes. Default: 4."""
    disk_size_gib: Int = Field(default=50, ge=20, le=16384)
    """Root volume size in GiB. Default: 50."""
    labels: LabelMap = Field(default_factory=dict)
    """Extra Kubernetes labels on the nodes. Default: {}."""

    @model_validator(mode="after")
    def _cpu_types(self) -> SystemNodeGroupArgs:
        shape_checked(self, lambda: aws_shape(self.instance_types, self.shape, gpu=False))
        return self

    @model_validator(mode="after")
    def _bounds(self) -> SystemNodeGroupArgs:
        check_min_max(self, "min_nodes", "max_nodes")
        return self

    def pool_shape(self) -> NodePoolShape:
        """The system node group as workloads see it (the plan's, eks_plan.system_shape; ``planned_shape``)."""
        return self.planned_shape

    @functools.cached_property
    def planned_shape(self) -> NodePoolShape:
        """The system node group as workloads see it (eks_plan.system_shape), planned once for these Args."""
        return system_shape(self)


_PRINCIPAL_ARN = re.compile(r"^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:(role|user)/[\w+=,.@/-]{1,512}$")
_KMS_KEY_ARN = re.compile(r"^arn:aws(-cn|-us-gov)?:kms:[a-z0-9-]+:[0-9]{12}:(key/[0-9a-f-]{36}|alias/[\w/-]+)$")


class EksAccessPolicy(StrEnum):
    """The EKS access policies a principal may be granted (AWS-managed; like cluster-admin, admin, edit and view)."""

    CLUSTER_ADMIN = "AmazonEKSClusterAdminPolicy"
    """Everything, cluster-wide (cluster-admin)."""
    ADMIN = "AmazonEKSAdminPolicy"
    """Most things within a namespace, including RBAC (admin)."""
    EDIT = "AmazonEKSEditPolicy"
    """Create and change most objects, not RBAC (edit)."""
    VIEW = "AmazonEKSViewPolicy"
    """Read most objects, not Secrets (view)."""
    ADMIN_VIEW = "AmazonEKSAdminViewPolicy"
    """Read every object, Secrets included."""

    @property
    def arn(self) -> str:
        return f"arn:aws:eks::aws:cluster-access-policy/{self.value}"


class AccessScope(StrEnum):
    """Where an access entry's policies apply."""

    CLUSTER = "cluster"
    """Every namespace and the cluster-scoped objects."""
    NAMESPACE = "namespace"
    """Only the listed namespaces."""


class EksAccessEntryArgs(BaseModel):
    """One IAM principal's access to the cluster: an EKS access entry and its policy associations."""

    model_config = ARGS_CONFIG

    principal_arn: str
    """The IAM role or user (arn:aws:iam::<account>:role/<name>). Required."""
    policies: Annotated[list[EksAccessPolicy], unique("policies", "a policy", lambda p: p.value)] = Field(min_length=1)
    """The access policies granted, each once. Required."""
    scope: AccessScope = AccessScope.CLUSTER
    """cluster, or namespace (only the listed namespaces). Default: cluster."""
    namespaces: list[str] = Field(default_factory=list)
    """The namespaces of a namespace-scoped entry (required then, refused otherwise). Default: []."""
    kubernetes_groups: list[str] = Field(default_factory=list)
    """Kubernetes groups the principal is a member of, for your own RBAC bindings. Default: []."""

    @field_validator("principal_arn")
    @classmethod
    def _principal(cls, value: str) -> str:
        if not _PRINCIPAL_ARN.match(value):
            raise ValueError(f"principal_arn {value!r} is not an IAM role or user ARN (arn:aws:iam::<12-digit account>:role/<name>)")
        return value

    @model_validator(mode="after")
    def _scope(self) -> EksAccessEntryArgs:
        if self.scope is AccessScope.NAMESPACE and not self.namespaces:
            raise field_error("EksAccessEntryArgs", "namespaces", "a namespace-scoped entry needs namespaces", self.namespaces)
        if self.scope is AccessScope.CLUSTER and self.namespaces:
            raise field_error("EksAccessEntryArgs", "namespaces", "namespaces apply to scope namespace only; set scope: namespace", self.namespaces)
        if self.scope is AccessScope.NAMESPACE and EksAccessPolicy.CLUSTER_ADMIN in self.policies:
            raise field_error(
                "EksAccessEntryArgs",
                "policies",
                "AmazonEKSClusterAdminPolicy applies to the whole cluster; use scope cluster or AmazonEKSAdminPolicy",
                "AmazonEKSClusterAdminPolicy",
            )
        return self

    @property
    def slug(self) -> str:
        """The principal's name as a child resource name: its last path segment, lowercase."""
        return re.sub(r"[^a-z0-9]+", "-", self.principal_arn.rsplit("/", 1)[1].lower()).strip("-")[:40] or "principal"


def _known_id(pattern: re.Pattern[str], what: str, example: str) -> AfterValidator:
    def check(value: str | pulumi.Output[str]) -> str | pulumi.Output[str]:
        if isinstance(value, str) and not pattern.match(value):
            raise ValueError(f"{value!r} is not {what} ({example})")
        return value

    return AfterValidator(check)


VpcId = Annotated[StrInput, _known_id(_VPC_ID, "a VPC id", "vpc- and 8 or 17 hex digits")]
SubnetId = Annotated[StrInput, _known_id(_SUBNET_ID, "a subnet id", "subnet- and 8 or 17 hex digits")]
SecurityGroupId = Annotated[StrInput, _known_id(_SECURITY_GROUP_ID, "a security group id", "sg- and 8 or 17 hex digits")]


class ExistingVpcArgs(BaseModel):
    """An existing VPC the cluster runs in, instead of one the component creates: its id and its
    subnets by availability zone. The subnets need the tags the AWS load balancer controller looks
    for (kubernetes.io/role/internal-elb on private, kubernetes.io/role/elb on public subnets) and
    NAT or endpoints that let the private subnets reach ECR, EKS and S3."""

    model_config = ARGS_CONFIG

    vpc_id: Annotated[VpcId, CheckedWhenKnown("its form (vpc-...)")]
    """The VPC's id; in a program also an Output (a VPC made in the same program). Required."""
    private_subnet_ids: Annotated[dict[str, SubnetId], CheckedWhenKnown("its form (subnet-...)"), Field(min_length=2, max_length=8)]
    """Private subnets by zone, e.g. {us-west-2a: subnet-0123...}: the node groups and the control plane's network interfaces run in them, and their zones are the cluster's zones (two to eight; each must offer the stack's GPU instance types). Values may be Outputs. Required."""
    public_subnet_ids: Annotated[dict[str, SubnetId], CheckedWhenKnown("its form (subnet-...)")] = Field(default_factory=dict)
    """Public subnets by zone, for internet-facing load balancers; values may be Outputs. Default: {} (none: internal load balancers only)."""

    @field_validator("private_subnet_ids", "public_subnet_ids")
    @classmethod
    def _zones(cls, value: dict[str, Any]) -> dict[str, Any]:
        for zone in value:
            if not _ZONE.match(zone):
                raise ValueError(f"{zone!r} is not an availability zone (e.g. us-west-2a); key the subnets by their zone")
        return value

    def subnets(self) -> list[tuple[str, str, Any]]:
        """Every listed subnet as (field, zone, subnet id or Output): the private ones, then the public ones."""
        return [(f, zone, subnet) for f in ("private_subnet_ids", "public_subnet_ids") for zone, subnet in getattr(self, f).items()]

    @model_validator(mode="after")
    def _subnets_once(self) -> ExistingVpcArgs:
        seen: dict[str, str] = {}
        for field, zone, subnet in self.subnets():
            if not isinstance(subnet, str):
                continue
            if subnet in seen:
                raise field_error(
                    "ExistingVpcArgs", (field, zone), f"subnet {subnet} is already listed as {seen[subnet]}; give each zone and role its own subnet", subnet
                )
            seen[subnet] = f"{field}[{zone}]"
        return self


class SecretsEncryption(BaseModel):
    """Envelope encryption of Kubernetes Secrets with a KMS key."""

    model_config = ARGS_CONFIG

    enabled: bool = True
    """Encrypt Secrets in etcd with a KMS key (EKS cannot turn it off once on). Default: true."""
    kms_key_arn: str | None = None
    """The key to use. Default: none (the component creates a key with yearly rotation)."""

    @field_validator("kms_key_arn")
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        if value is not None and not _KMS_KEY_ARN.match(value):
            raise ValueError(f"kms_key_arn {value!r} is not a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>)")
        return value


class EksClusterArgs(BaseModel):
    """Inputs of EksCluster."""

    model_config = ARGS_CONFIG

    cluster_name: str | None = Field(default=None, max_length=100)
    """EKS cluster name. Default: the component's name."""
    region: str | None = None
    """AWS region, e.g. ap-northeast-2. Default: the aws provider's region (aws:region)."""
    version: str = "1.34"
    """Kubernetes minor version of the control plane; quote it in YAML ("1.34"). Default: "1.34"."""
    zones: list[str] | None = None
    """Availability zones for the subnets (two to six, all offering every GPU instance type of the stack). Default: none (looked up: the zones that offer them)."""
    zone_count: Int = Field(default=3, ge=2, le=MAX_ZONES)
    """How many zones to use when they are looked up. Default: 3."""
    vpc_cidr: str = "10.0.0.0/16"
    """The VPC's IPv4 range, /16 to /20; each zone gets a public and a private subnet carved from it. Default: 10.0.0.0/16."""
    nat_gateways: NatGateways = NatGateways.SINGLE
    """single (one NAT gateway, cheapest) or per_zone (survives a zone outage). Default: single."""
    vpc: ExistingVpcArgs | None = None
    """An existing VPC to run in (its id and subnets by zone) instead of creating one; then zones come from its private subnets, and vpc_cidr, nat_gateways and zone_count do not apply. Default: none (the component creates the VPC, subnets and NAT)."""
    security_group_ids: Annotated[list[SecurityGroupId], CheckedWhenKnown("its form (sg-...)"), Field(max_length=5)] = Field(default_factory=list)
    """Further security groups for the control plane's network interfaces (EKS allows five), e.g. one that admits a bastion or a VPN to the API; values may be Outputs. Default: [] (the cluster security group EKS creates)."""
    endpoint: EksEndpointAccess = Field(default_factory=EksEndpointAccess)
    """Who reaches the Kubernetes API. Default: public and private endpoints, any address."""
    addons: Annotated[list[EksAddon], unique("addons", "an add-on", lambda a: a.name)] = Field(
        default_factory=lambda: [EksAddon(name=n) for n in DEFAULT_ADDONS]
    )
    """EKS add-ons. Default: vpc-cni, kube-proxy, coredns, eks-pod-identity-agent at their default versions."""
    system_node_group: SystemNodeGroupArgs = Field(default_factory=SystemNodeGroupArgs)
    """The on-demand node group for controllers. Default: see SystemNodeGroupArgs."""
    block_storage: EbsStorageArgs = Field(default_factory=EbsStorageArgs)
    """The EBS CSI driver and a gp3 StorageClass. Default: see EbsStorageArgs."""
    network_policy: bool = True
    """Turn on the VPC CNI's network policy agent (vpc-cni add-on enableNetworkPolicy), which enforces NetworkPolicy (tenant isolation). Default: true."""
    log_types: list[EksLogType] = Field(default_factory=lambda: [EksLogType.API, EksLogType.AUDIT, EksLogType.AUTHENTICATOR])
    """Control plane logs sent to CloudWatch. Default: [api, audit, authenticator]."""
    access_entries: list[EksAccessEntryArgs] = Field(default_factory=list)
    """IAM principals given access to the cluster, each once. Default: [] (only the bootstrap admin)."""
    bootstrap_creator_admin: bool = True
    """Make the identity that creates the cluster a cluster admin (EKS's bootstrap admin). Set false once access_entries grant someone AmazonEKSClusterAdminPolicy. Default: true."""
    secrets_encryption: SecretsEncryption = Field(default_factory=SecretsEncryption)
    """Envelope encryption of Secrets with KMS. Default: on, with a key the component creates."""
    deletion_protection: bool = True
    """Protect the cluster from deletion (EKS deletion protection and Pulumi protect). Default: true."""
    tags: AwsTagMap = Field(default_factory=dict)
    """AWS tags on every resource that takes them: at most 45 (AWS allows 50 and the component adds up to 5), no key under aws:. Default: {}."""
    environment: Environment | None = None
    """What the cluster is for, set as the gpu-platform-environment tag; the policy pack's production rules read it (the program sets it from gpu-platform:environment). Default: none (the rules fall back to the stack name)."""

    @model_validator(mode="after")
    def _ebs_csi_once(self) -> EksClusterArgs:
        for i, addon in enumerate(self.addons):
            if addon.name == EBS_CSI_ADDON and self.block_storage.enabled:
                raise field_error(
                    "EksClusterArgs",
                    ("addons", i, "name"),
                    f"{EBS_CSI_ADDON} comes with block_storage (with its IAM role and StorageClass); remove it here, or set block_storage.enabled: false",
                    addon.name,
                )
        return self

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, value: str | None) -> str | None:
        if value is not None and not valid_eks_cluster_name(value):
            raise ValueError(f"{value!r} is not a valid EKS cluster name: letters, digits, '-' and '_', starting with a letter or digit")
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if value is not None and not _REGION.match(value):
            raise ValueError(f"{value!r} is not an AWS region (e.g. ap-northeast-2)")
        return value

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not _EKS_VERSION.match(value):
            hint = "; YAML reads an unquoted 1.30 as 1.3: quote it" if re.fullmatch(r"1\.[0-9]", value) else ""
            raise ValueError(f'version must be an EKS Kubernetes minor version from 1.28 to 1.39 such as "1.34"{hint}')
        return value

    @field_validator("zones")
    @classmethod
    def _zones(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        for zone in value:
            if not _ZONE.match(zone):
                raise ValueError(f"{zone!r} is not an availability zone (e.g. ap-northeast-2a)")
        check_unique(value, "zones", "a zone")
        if len(value) < 2:
            raise ValueError(f"EKS needs subnets in at least two zones (got {len(value)})")
        if len(value) > MAX_ZONES:
            raise ValueError(f"at most {MAX_ZONES} zones, as zone_count (got {len(value)})")
        return value

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc_cidr(cls, value: str) -> str:
        try:
            net = ipaddress.IPv4Network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not an IPv4 network in CIDR notation ({exc})") from None
        if not 16 <= net.prefixlen <= 20:
            raise ValueError(f"vpc_cidr must be a /16 to /20 (got /{net.prefixlen})")
        return value

    @field_validator("access_entries")
    @classmethod
    def _entries_once(cls, value: list[EksAccessEntryArgs]) -> list[EksAccessEntryArgs]:
        check_unique([e.principal_arn for e in value], "access_entries", "a principal")
        check_unique([e.slug for e in value], "access_entries", "a principal name", "entries are named by the ARN's last segment")
        return value

    @model_validator(mode="after")
    def _someone_administers(self) -> EksClusterArgs:
        admins = [e for e in self.access_entries if EksAccessPolicy.CLUSTER_ADMIN in e.policies]
        if not self.bootstrap_creator_admin and not admins:
            raise field_error(
                "EksClusterArgs",
                "bootstrap_creator_admin",
                "bootstrap_creator_admin false leaves the cluster without an admin: grant AmazonEKSClusterAdminPolicy in access_entries",
                False,
            )
        return self

    @model_validator(mode="after")
    def _existing_vpc(self) -> EksClusterArgs:
        if self.vpc is None:
            return self
        for key in ("vpc_cidr", "nat_gateways", "zone_count"):
            if key in self.model_fields_set:
                raise field_error("EksClusterArgs", key, f"{key} applies to a VPC the component creates; remove it, or remove vpc", getattr(self, key))
        subnet_zones = list(self.vpc.private_subnet_ids)
        if self.zones is not None and sorted(self.zones) != sorted(subnet_zones):
            raise field_error(
                "EksClusterArgs",
                "zones",
                f"zones {', '.join(self.zones)} differ from the zones of vpc.private_subnet_ids ({', '.join(subnet_zones)}); "
                "remove zones (the subnets' zones are used)",
                self.zones,
            )
        if self.region:
            for field, zone, _ in self.vpc.subnets():
                m = _ZONE.match(zone)
                if m and m.group(1) != self.region:
                    raise field_error("EksClusterArgs", ("vpc", field, zone), f"zone {zone} is not in region {self.region}; use zones of {self.region}", zone)
                if problem := zone_problem(Cloud.AWS, self.region, zone):
                    raise field_error("EksClusterArgs", ("vpc", field, zone), problem, zone)
        return self

    @property
    def configured_zones(self) -> list[str] | None:
        """The zones the stack names: ``zones``, or those of an existing VPC's private subnets; None: looked up."""
        if self.vpc is not None:
            return list(self.vpc.private_subnet_ids)
        return self.zones

    @model_validator(mode="after")
    def _zones_in_region(self) -> EksClusterArgs:
        if self.zones and self.region:
            for i, zone in enumerate(self.zones):
                m = _ZONE.match(zone)
                if m and m.group(1) != self.region:
                    raise field_error(
                        "EksClusterArgs",
                        ("zones", i),
                        f"zone {zone} is not in region {self.region}; use zones of {self.region}",
                        zone,
                    )
                if problem := zone_problem(Cloud.AWS, self.region, zone):
                    raise field_error("EksClusterArgs", ("zones", i), problem, zone)
        return self
