"""EksCluster: an EKS cluster for shared GPU work, in a VPC whose zones offer its GPUs.

A VPC with a public and a private subnet in each availability zone (zones typed, or
looked up as those that offer every GPU instance type the stack uses; a zone that offers
none of them is refused, as the Kubeflow-on-EKS guide's ap-northeast-2b), NAT for the private subnets, the
EKS control plane with a typed version and endpoint access, the OIDC provider that IAM
roles for service accounts (IRSA) need, the core add-ons, a small on-demand system node
group for controllers, a secret kubeconfig and a Kubernetes provider.

GPU node groups are not part of this component: SpotFailoverEksNodeGroups adds them,
with the cluster autoscaler, to the cluster this component describes as ``ref``.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import yaml
from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from gpu_platform.components.gpu_catalog import aws_instance_type, check_one_shape
from gpu_platform.components.kube import DnsSubdomain
from gpu_platform.components.labels import POOL_ROLE_LABEL, PoolRole
from gpu_platform.components.models import check_min_max, check_unique, input_error
from gpu_platform.components.numbers import Int
from gpu_platform.components.reserves import ReserveFormula
from gpu_platform.components.pools import ARGS_CONFIG, ENVIRONMENT_LABEL, CapacityStrategy, Environment, LabelMap, NodePoolShape, PoolPlacement, field_error
from gpu_platform.components.zones import zone_problem

__all__ = [
    "EbsStorageArgs",
    "EksAddon",
    "EksCluster",
    "EksClusterArgs",
    "EksClusterRef",
    "EksEndpointAccess",
    "EksLogType",
    "NatGateways",
    "SystemNodeGroupArgs",
]

NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
AWS_MANAGED_POLICY = "arn:aws:iam::aws:policy/"
NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")
CLUSTER_POLICIES = ("AmazonEKSClusterPolicy",)

_REGION = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$")
_ZONE = re.compile(r"^([a-z]{2}(-gov)?-[a-z]+-[0-9])[a-z]$")
MAX_ZONES = 6
"""The most zones of a cluster: no region has more, and the VPC range's 16 blocks hold a public and a private subnet for up to 8."""
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
    AUDIT = "audit"
    AUTHENTICATOR = "authenticator"
    CONTROLLER_MANAGER = "controllerManager"
    SCHEDULER = "scheduler"


class NatGateways(StrEnum):
    """How many NAT gateways the private subnets share: one (cheap) or one per zone (zone-redundant)."""

    SINGLE = "single"
    PER_ZONE = "per_zone"


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
            raise field_error(
                "EksEndpointAccess", "public", "public and private are both false: nothing could reach the API; enable one", False
            )
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


class SystemNodeGroupArgs(BaseModel):
    """The small on-demand node group for controllers (CoreDNS, the autoscaler, operators). Not tainted."""

    model_config = ARGS_CONFIG

    name: str = Field(default="system", pattern=r"^[a-z][a-z0-9-]*$", max_length=40)
    """Node group name. Default: system."""
    instance_types: list[str] = Field(default_factory=lambda: ["m6i.large"], min_length=1)
    """CPU instance types, all of one shape. Default: [m6i.large]."""
    min_nodes: Int = Field(default=2, ge=1, le=100)
    """Fewest nodes (controllers need somewhere to run). Default: 2."""
    max_nodes: Int = Field(default=4, ge=1, le=100)
    """Most nodes. Default: 4."""
    disk_size_gib: Int = Field(default=50, ge=20, le=16384)
    """Root volume size in GiB. Default: 50."""
    labels: LabelMap = Field(default_factory=dict)
    """Extra Kubernetes labels on the nodes. Default: {}."""

    @field_validator("instance_types")
    @classmethod
    def _cpu_types(cls, value: list[str]) -> list[str]:
        check_one_shape(value, gpu=False)
        return value

    @model_validator(mode="after")
    def _bounds(self) -> SystemNodeGroupArgs:
        check_min_max(self, "min_nodes", "max_nodes")
        return self

    def shape(self) -> NodePoolShape:
        machine = aws_instance_type(self.instance_types[0])
        return NodePoolShape(
            name=self.name, role=PoolRole.SYSTEM, machine_type=machine.name, vcpus=machine.vcpus,
            memory_mib=machine.memory_mib, gpus_per_node=0, accelerator=None,
            capacity=CapacityStrategy.ON_DEMAND, min_nodes=self.min_nodes, max_nodes=self.max_nodes,
            labels={POOL_ROLE_LABEL: PoolRole.SYSTEM.value, **self.labels}, taints=(),
            placement=PoolPlacement({NODEGROUP_LABEL: self.name}, ()), reserve_formula=ReserveFormula.EKS,
        )


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
    endpoint: EksEndpointAccess = Field(default_factory=EksEndpointAccess)
    """Who reaches the Kubernetes API. Default: public and private endpoints, any address."""
    addons: list[EksAddon] = Field(default_factory=lambda: [EksAddon(name=n) for n in DEFAULT_ADDONS])
    """EKS add-ons. Default: vpc-cni, kube-proxy, coredns, eks-pod-identity-agent at their default versions."""
    system_node_group: SystemNodeGroupArgs = Field(default_factory=SystemNodeGroupArgs)
    """The on-demand node group for controllers. Default: see SystemNodeGroupArgs."""
    block_storage: EbsStorageArgs = Field(default_factory=EbsStorageArgs)
    """The EBS CSI driver and a gp3 StorageClass. Default: see EbsStorageArgs."""
    network_policy: bool = True
    """Turn on the VPC CNI's network policy agent (vpc-cni add-on enableNetworkPolicy), which enforces NetworkPolicy (tenant isolation). Default: true."""
    log_types: list[EksLogType] = Field(
        default_factory=lambda: [EksLogType.API, EksLogType.AUDIT, EksLogType.AUTHENTICATOR]
    )
    """Control plane logs sent to CloudWatch. Default: [api, audit, authenticator]."""
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
                    "EksClusterArgs", ("addons", i, "name"),
                    f"{EBS_CSI_ADDON} comes with block_storage (with its IAM role and StorageClass); "
                    "remove it here, or set block_storage.enabled: false",
                    addon.name,
                )
        return self

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, value: str | None) -> str | None:
        if value is not None and not valid_eks_cluster_name(value):
            raise ValueError(
                f"{value!r} is not a valid EKS cluster name: letters, digits, '-' and '_', starting with a letter or digit"
            )
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
            raise ValueError(f"version must be an EKS Kubernetes minor version from 1.28 to 1.39 such as \"1.34\"{hint}")
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

    @field_validator("addons")
    @classmethod
    def _addons(cls, value: list[EksAddon]) -> list[EksAddon]:
        check_unique([a.name for a in value], "addons", "an add-on")
        return value

    @model_validator(mode="after")
    def _zones_in_region(self) -> EksClusterArgs:
        if self.zones and self.region:
            for i, zone in enumerate(self.zones):
                m = _ZONE.match(zone)
                if m and m.group(1) != self.region:
                    raise field_error(
                        "EksClusterArgs", ("zones", i),
                        f"zone {zone} is not in region {self.region}; use zones of {self.region}", zone,
                    )
                if problem := zone_problem("aws", self.region, zone):
                    raise field_error("EksClusterArgs", ("zones", i), problem, zone)
        return self


def zones_offering(
    offerings: Sequence[tuple[str, str]], instance_types: Sequence[str], zones: Sequence[str] | None
) -> list[str]:
    """Which zones offer every instance type; raises ValueError naming each typed zone that does not.

    ``offerings`` holds (zone, instance type) pairs as ec2:DescribeInstanceTypeOfferings
    returns them with LocationType availability-zone.
    """
    offered: dict[str, set[str]] = {}
    for zone, itype in offerings:
        offered.setdefault(zone, set()).add(itype)
    wanted = set(instance_types)
    if zones is None:
        return sorted(z for z, types in offered.items() if wanted <= types)
    problems = []
    for zone in zones:
        missing = sorted(wanted - offered.get(zone, set()))
        if missing:
            problems.append(f"zone {zone} does not offer {', '.join(missing)}")
    if problems:
        good = sorted(z for z, types in offered.items() if wanted <= types)
        raise ValueError("; ".join(problems) + f"; zones that offer every GPU instance type: {', '.join(good) or 'none'}")
    return list(zones)


def eks_kubeconfig(cluster_name: str, region: str, endpoint: str, ca_data: str) -> str:
    """A kubeconfig whose user runs `aws eks get-token` (the AWS CLI's exec credential plugin)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"certificate-authority-data": ca_data, "server": endpoint}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "preferences": {},
        "users": [
            {
                "name": cluster_name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["--region", region, "eks", "get-token", "--cluster-name", cluster_name, "--output", "json"],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
    return yaml.safe_dump(config, sort_keys=False)


@dataclass(frozen=True)
class EksClusterRef:
    """What node groups and controllers need of an EKS cluster (EksCluster.ref, or your own cluster's values)."""

    name: str
    """The EKS cluster's name."""
    region: str
    """Its region."""
    node_role_arn: pulumi.Input[str]
    """The IAM role nodes run as."""
    subnet_ids: pulumi.Input[Sequence[str]]
    """Subnets for node groups (private)."""
    oidc_provider_arn: pulumi.Input[str]
    """The IAM OIDC provider of the cluster (IRSA)."""
    oidc_issuer: pulumi.Input[str]
    """The cluster's OIDC issuer without https:// (the prefix of IRSA condition keys)."""
    cluster_resource: pulumi.Resource | None = None
    """The cluster resource, for dependencies. Default: none."""
    version: str | None = None
    """The cluster's Kubernetes minor version ("1.34"); picks the autoscaler release. Default: none (the chart's image)."""
    node_prerequisites: Sequence[pulumi.Resource] = ()
    """What a node needs before it can be Ready (the CNI add-on): node groups wait for these. Default: none."""
    controllers_ready: Sequence[pulumi.Resource] = ()
    """What controllers need before they deploy (the system node group, CoreDNS): Helm releases wait for these. Default: none."""


def irsa_trust_policy(oidc_provider_arn: str, issuer: str, namespace: str, service_account: str) -> dict[str, Any]:
    """IRSA: only ``namespace``/``service_account`` of the cluster whose OIDC ``issuer`` (no
    https://) this is may assume the role, and only for STS."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": oidc_provider_arn},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                        f"{issuer}:aud": "sts.amazonaws.com",
                    }
                },
            }
        ],
    }


def _assume_role_policy(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
        }
    )


class EksCluster(pulumi.ComponentResource):
    """An EKS cluster in its own VPC, with IRSA, core add-ons, a system node group and a Kubernetes provider."""

    cluster_name: pulumi.Output[str]
    """The EKS cluster's name."""
    endpoint: pulumi.Output[str]
    """The API server URL."""
    kubeconfig: pulumi.Output[str]
    """A kubeconfig (aws eks get-token exec form); a Pulumi secret."""
    provider: k8s.Provider
    """A Kubernetes provider for downstream components."""
    vpc_id: pulumi.Output[str]
    """The VPC."""
    private_subnet_ids: pulumi.Output[list[str]]
    """The private subnets, one per zone (node groups run here)."""
    zones: list[str]
    """The availability zones the subnets are in."""
    oidc_provider_arn: pulumi.Output[str]
    """The IAM OIDC provider for IRSA."""
    node_role_arn: pulumi.Output[str]
    """The IAM role every node group runs as."""
    system_node_group: aws.eks.NodeGroup
    """The on-demand node group for controllers."""
    ref: EksClusterRef
    """What SpotFailoverEksNodeGroups needs of this cluster."""
    storage_class: k8s.storage.v1.StorageClass | None
    """The gp3 StorageClass of the EBS CSI driver (the cluster default when ebs_storage.default_class), or None without EBS storage."""

    def __init__(
        self,
        name: str,
        args: EksClusterArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        gpu_instance_types: Sequence[str] = (),
    ) -> None:
        """``gpu_instance_types``: every GPU instance type the node groups will use; each zone must offer them all."""
        region = args.region or aws.config.region
        if not region:
            raise input_error("args.region", "no AWS region; set EksClusterArgs.region or the aws:region config")
        cluster_name = args.cluster_name or name
        if not valid_eks_cluster_name(cluster_name):
            raise input_error("args.cluster_name", f"the default (the component name {name!r}) is not a valid EKS cluster name; set cluster_name")
        # Before anything is registered: a zone without the GPUs would leave node groups that never scale.
        types = sorted(set(gpu_instance_types))
        if types or args.zones is None:
            filters = [aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=types or ["*"])]
            if args.zones:
                filters.append(aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="location", values=list(args.zones)))
            found = aws.ec2.get_instance_type_offerings(filters=filters, location_type="availability-zone", region=region)
            pairs = list(zip(found.locations, found.instance_types))
            try:
                zones = zones_offering(pairs, types, args.zones)
            except ValueError as exc:
                raise input_error("args.zones", str(exc)) from None
            if args.zones is None:
                if len(zones) < 2:
                    raise input_error(
                        "args.zones", f"fewer than two zones of {region} offer {', '.join(types)} (found {', '.join(zones) or 'none'})"
                    )
                zones = zones[: args.zone_count]
        else:
            zones = list(args.zones)
        self.zones = zones

        super().__init__("gpu-platform:eks_cluster:EksCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = {**args.tags, **({ENVIRONMENT_LABEL: args.environment.value} if args.environment else {})}

        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            aws.ec2.VpcArgs(
                cidr_block=args.vpc_cidr, enable_dns_hostnames=True, enable_dns_support=True,
                tags={**tags, "Name": f"{cluster_name}-vpc"},
            ),
            opts=child,
        )
        igw = aws.ec2.InternetGateway(
            f"{name}-igw", aws.ec2.InternetGatewayArgs(vpc_id=vpc.id, tags={**tags, "Name": cluster_name}), opts=child
        )
        # Sixteen equal blocks of the VPC range (/20s of a /16): a public one per zone, then a private one per zone.
        network = ipaddress.IPv4Network(args.vpc_cidr)
        blocks = list(network.subnets(new_prefix=network.prefixlen + 4))
        cluster_tag = {f"kubernetes.io/cluster/{cluster_name}": "shared"}
        public_rt = aws.ec2.RouteTable(
            f"{name}-public-rt",
            aws.ec2.RouteTableArgs(
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
                tags={**tags, "Name": f"{cluster_name}-public"},
            ),
            opts=child,
        )

        def subnet(kind: str, zone: str, block: ipaddress.IPv4Network, elb_role: str, route_table: aws.ec2.RouteTable) -> aws.ec2.Subnet:
            made = aws.ec2.Subnet(
                f"{name}-{kind}-{zone[-1]}",
                aws.ec2.SubnetArgs(
                    vpc_id=vpc.id, availability_zone=zone, cidr_block=str(block), map_public_ip_on_launch=kind == "public",
                    tags={**tags, **cluster_tag, "Name": f"{cluster_name}-{kind}-{zone}", f"kubernetes.io/role/{elb_role}": "1"},
                ),
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-{kind}-{zone[-1]}-rta",
                aws.ec2.RouteTableAssociationArgs(subnet_id=made.id, route_table_id=route_table.id),
                opts=child,
            )
            return made

        public_subnets, private_subnets, nats = [], [], []
        for i, zone in enumerate(zones):
            public = subnet("public", zone, blocks[i], "elb", public_rt)
            public_subnets.append(public)
            if args.nat_gateways is NatGateways.PER_ZONE or i == 0:
                eip = aws.ec2.Eip(f"{name}-nat-{zone[-1]}-ip", aws.ec2.EipArgs(domain="vpc", tags=tags), opts=child)
                nats.append(
                    aws.ec2.NatGateway(
                        f"{name}-nat-{zone[-1]}",
                        aws.ec2.NatGatewayArgs(allocation_id=eip.id, subnet_id=public.id, tags={**tags, "Name": f"{cluster_name}-{zone}"}),
                        opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
                    )
                )
            private_rt = aws.ec2.RouteTable(
                f"{name}-private-{zone[-1]}-rt",
                aws.ec2.RouteTableArgs(
                    vpc_id=vpc.id,
                    routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nats[-1].id)],
                    tags={**tags, "Name": f"{cluster_name}-private-{zone}"},
                ),
                opts=child,
            )
            private_subnets.append(subnet("private", zone, blocks[len(zones) + i], "internal-elb", private_rt))

        def role(role_name: str, service: str, policies: Sequence[str]) -> aws.iam.Role:
            r = aws.iam.Role(
                f"{name}-{role_name}",
                aws.iam.RoleArgs(assume_role_policy=_assume_role_policy(service), tags=tags),
                opts=child,
            )
            for policy in policies:
                aws.iam.RolePolicyAttachment(
                    f"{name}-{role_name}-{policy.lower().replace('_', '-')}",
                    aws.iam.RolePolicyAttachmentArgs(role=r.name, policy_arn=AWS_MANAGED_POLICY + policy),
                    opts=child,
                )
            return r

        cluster_role = role("cluster-role", "eks.amazonaws.com", CLUSTER_POLICIES)
        node_role = role("node-role", "ec2.amazonaws.com", NODE_POLICIES)

        cluster = aws.eks.Cluster(
            f"{name}-cluster",
            aws.eks.ClusterArgs(
                name=cluster_name,
                region=region,
                version=args.version,
                role_arn=cluster_role.arn,
                vpc_config=aws.eks.ClusterVpcConfigArgs(
                    subnet_ids=[s.id for s in private_subnets + public_subnets],
                    endpoint_public_access=args.endpoint.public,
                    endpoint_private_access=args.endpoint.private,
                    public_access_cidrs=list(args.endpoint.public_access_cidrs) or None,
                ),
                access_config=aws.eks.ClusterAccessConfigArgs(
                    authentication_mode="API", bootstrap_cluster_creator_admin_permissions=True
                ),
                # Add-ons are declared below, at versions this stack controls.
                bootstrap_self_managed_addons=False,
                enabled_cluster_log_types=[t.value for t in args.log_types],
                deletion_protection=args.deletion_protection,
                tags=tags,
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=args.deletion_protection),
        )

        issuer = cluster.identities.apply(lambda ids: ids[0].oidcs[0].issuer)
        oidc = aws.iam.OpenIdConnectProvider(
            f"{name}-oidc",
            aws.iam.OpenIdConnectProviderArgs(url=issuer, client_id_lists=["sts.amazonaws.com"], tags=tags),
            opts=child,
        )

        def addon(
            addon_name: str, version: str | None, after: Sequence[pulumi.Resource], role_arn: pulumi.Input[str] | None = None,
            configuration: dict[str, Any] | None = None,
        ) -> aws.eks.Addon:
            return aws.eks.Addon(
                f"{name}-{addon_name}",
                aws.eks.AddonArgs(
                    cluster_name=cluster.name,
                    region=region,
                    addon_name=addon_name,
                    addon_version=version,
                    service_account_role_arn=role_arn,
                    configuration_values=json.dumps(configuration) if configuration else None,
                    resolve_conflicts_on_create="OVERWRITE",
                    resolve_conflicts_on_update="PRESERVE",
                    tags=tags,
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(after)),
            )

        # The CNI (and kube-proxy, the pod identity agent) before any node: a node without a CNI
        # never becomes Ready, and bootstrap_self_managed_addons=False installs none.
        nodeless = [
            addon(a.name, a.version, [], configuration=VPC_CNI_NETWORK_POLICY if a.name == "vpc-cni" and args.network_policy else None)
            for a in args.addons
            if a.name in NODELESS_ADDONS
        ]
        system = args.system_node_group
        self.system_node_group = aws.eks.NodeGroup(
            f"{name}-{system.name}",
            aws.eks.NodeGroupArgs(
                cluster_name=cluster.name,
                region=region,
                node_group_name=system.name,
                node_role_arn=node_role.arn,
                subnet_ids=[s.id for s in private_subnets],
                instance_types=list(system.instance_types),
                capacity_type="ON_DEMAND",
                ami_type="AL2023_x86_64_STANDARD",
                disk_size=system.disk_size_gib,
                scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                    min_size=system.min_nodes, max_size=system.max_nodes, desired_size=system.min_nodes
                ),
                update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
                labels={POOL_ROLE_LABEL: PoolRole.SYSTEM.value, **system.labels},
                tags=tags,
            ),
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["scalingConfig.desiredSize"], depends_on=nodeless),
        )
        # CoreDNS and the rest run on nodes.
        on_nodes = [addon(a.name, a.version, [self.system_node_group]) for a in args.addons if a.name not in NODELESS_ADDONS]

        storage = args.block_storage
        ebs_csi: aws.eks.Addon | None = None
        if storage.enabled:
            ebs_role = aws.iam.Role(
                f"{name}-ebs-csi-role",
                aws.iam.RoleArgs(
                    description=f"EBS CSI driver of {cluster_name} (IRSA)",
                    assume_role_policy=pulumi.Output.all(oidc.arn, issuer).apply(
                        lambda v: json.dumps(
                            irsa_trust_policy(v[0], v[1].removeprefix("https://"), "kube-system", EBS_CSI_SERVICE_ACCOUNT)
                        )
                    ),
                    tags=tags,
                ),
                opts=child,
            )
            ebs_policy = aws.iam.RolePolicyAttachment(
                f"{name}-ebs-csi-role-policy",
                aws.iam.RolePolicyAttachmentArgs(role=ebs_role.name, policy_arn=AWS_MANAGED_POLICY + EBS_CSI_POLICY),
                opts=child,
            )
            ebs_csi = addon(EBS_CSI_ADDON, storage.version, [self.system_node_group, ebs_policy], ebs_role.arn)

        self.cluster_name = cluster.name
        self.endpoint = cluster.endpoint
        self.vpc_id = vpc.id
        self.private_subnet_ids = pulumi.Output.all(*[s.id for s in private_subnets])
        self.oidc_provider_arn = oidc.arn
        self.node_role_arn = node_role.arn
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, cluster.endpoint, cluster.certificate_authority.data).apply(
                lambda v: eks_kubeconfig(v[0], region, v[1], v[2])
            )
        )
        self.provider = k8s.Provider(f"{name}-k8s", k8s.ProviderArgs(kubeconfig=self.kubeconfig), opts=child)
        self.storage_class = None
        if ebs_csi is not None:
            self.storage_class = k8s.storage.v1.StorageClass(
                f"{name}-{storage.storage_class}-storage-class",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=storage.storage_class,
                    annotations={DEFAULT_CLASS_ANNOTATION: "true"} if storage.default_class else None,
                ),
                provisioner="ebs.csi.aws.com",
                parameters={"type": "gp3", "encrypted": "true" if storage.encrypted else "false", "csi.storage.k8s.io/fstype": "ext4"},
                # Bound where the pod lands (an EBS volume lives in one zone), grown in place.
                volume_binding_mode="WaitForFirstConsumer",
                allow_volume_expansion=True,
                reclaim_policy="Delete",
                opts=pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=[ebs_csi]),
            )
        self.ref = EksClusterRef(
            name=cluster_name,
            region=region,
            node_role_arn=node_role.arn,
            subnet_ids=self.private_subnet_ids,
            oidc_provider_arn=oidc.arn,
            oidc_issuer=issuer.apply(lambda url: url.removeprefix("https://")),
            cluster_resource=cluster,
            version=args.version,
            node_prerequisites=nodeless,
            controllers_ready=[self.system_node_group, *on_nodes],
        )
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "endpoint": self.endpoint,
                "kubeconfig": self.kubeconfig,
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "zones": self.zones,
                "oidcProviderArn": self.oidc_provider_arn,
                "nodeRoleArn": self.node_role_arn,
            }
        )
