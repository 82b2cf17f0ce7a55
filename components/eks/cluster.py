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

import functools
import ipaddress
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpu_platform.components.core.cluster import ClusterComponent
from gpu_platform.components.core.labels import ELB_ROLE_TAG, INTERNAL_ELB_ROLE_TAG, KARPENTER_DISCOVERY_TAG, POOL_ROLE_LABEL, PoolRole
from gpu_platform.components.core.models import input_error, report_checks_not_made
from gpu_platform.components.eks.args import (
    AWS_MANAGED_POLICY,
    CLUSTER_POLICIES,
    DEFAULT_CLASS_ANNOTATION,
    EBS_CSI_ADDON,
    EBS_CSI_POLICY,
    EBS_CSI_SERVICE_ACCOUNT,
    NODE_POLICIES,
    NODELESS_ADDONS,
    VPC_CNI_NETWORK_POLICY,
    EbsStorageArgs,
    EksAddon,
    EksClusterArgs,
    EksEndpointAccess,
    EksLogType,
    NatGateways,
    SystemNodeGroupArgs,
    valid_eks_cluster_name,
)
from gpu_platform.components.eks.plan import system_node_group
from gpu_platform.components.eks.resources import (
    assume_role_policy,
    eks_kubeconfig,
    irsa_role,
    secrets_key_policy,
    zones_offering,
)
from gpu_platform.components.monitoring.prometheus_args import ClusterKind, MetricSource
from gpu_platform.components.pools.shapes import ENVIRONMENT_LABEL, NodePoolShape

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


class EksCluster(pulumi.ComponentResource, ClusterComponent):
    """An EKS cluster in its own VPC, with IRSA, core add-ons, a system node group and a Kubernetes provider.

    Pass it as ``cluster=`` to SpotFailoverEksNodeGroups, and to the add-ons that run on the system
    nodes (PrometheusStack); the add-ons that run on GPU nodes take the node groups component,
    which carries this cluster.
    """

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
    cluster: aws.eks.Cluster
    """The EKS cluster resource itself (for depends_on, or any attribute not exported here)."""
    cluster_arn: pulumi.Output[str]
    """The cluster's ARN."""
    certificate_authority_data: pulumi.Output[str]
    """The cluster's CA certificate, base64 (what a kubeconfig's certificate-authority-data holds)."""
    oidc_issuer_url: pulumi.Output[str]
    """The cluster's OIDC issuer URL (https://oidc.eks.<region>.amazonaws.com/id/<id>), for IRSA trust policies."""
    cluster_security_group_id: pulumi.Output[str]
    """The security group EKS creates for the control plane and the managed node groups (every node
    group of this component runs in it; there is no separate node security group)."""
    public_subnet_ids: pulumi.Output[list[str]]
    """The public subnets, one per zone (load balancers and the NAT gateways)."""
    secrets_key_arn: pulumi.Output[str] | None
    """The KMS key that encrypts the cluster's Secrets (created, or the one given); None with secrets_encryption off."""
    access_entries: dict[str, aws.eks.AccessEntry]
    """The access entries, by principal ARN."""
    storage_class: k8s.storage.v1.StorageClass | None
    """The gp3 StorageClass of the EBS CSI driver (the cluster default when ebs_storage.default_class), or None without EBS storage."""

    def __init__(
        self,
        name: str,
        args: EksClusterArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        gpu_instance_types: Sequence[str] = (),
        karpenter_discovery: bool = False,
    ) -> None:
        """``gpu_instance_types``: every GPU instance type the node groups will use; each zone must offer them all.
        ``karpenter_discovery``: tag the private subnets and the cluster security group karpenter.sh/discovery=<cluster
        name>, which KarpenterNodePools' EC2NodeClasses select them by. Default: false."""
        region, cluster_name = _region_and_cluster_name(name, args)
        # Before anything is registered: a zone without the GPUs would leave node groups that never scale.
        zones = _zones_offering_gpus(args, region, gpu_instance_types)
        self.zones = zones

        super().__init__("gpu-platform:eks_cluster:EksCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        report_checks_not_made(self, name, args)
        tags = {**args.tags, **({ENVIRONMENT_LABEL: args.environment.value} if args.environment else {})}
        self._discovery = {KARPENTER_DISCOVERY_TAG: cluster_name} if karpenter_discovery else {}

        vpc_id, private_subnet_ids, public_subnet_ids = self._vpc_and_subnets(name, args, cluster_name, zones, tags)

        cluster_role = _role(name, "cluster-role", "eks.amazonaws.com", CLUSTER_POLICIES, tags, child)
        node_role = _role(name, "node-role", "ec2.amazonaws.com", NODE_POLICIES, tags, child)

        self.secrets_key_arn, encryption, key_grant = self._secrets_encryption(name, args, cluster_name, region, tags, cluster_role)
        cluster = self._eks_cluster(name, args, cluster_name, region, cluster_role, [*private_subnet_ids, *public_subnet_ids], encryption, key_grant, tags)
        self.access_entries = _access_entries(name, args, cluster, region, tags, child)

        issuer, oidc = _oidc_provider(name, cluster, tags, child)

        addon = functools.partial(self._addon, name, cluster, region, tags)
        # The CNI (and kube-proxy, the pod identity agent) before any node: a node without a CNI
        # never becomes Ready, and bootstrap_self_managed_addons=False installs none.
        nodeless = [
            addon(a.name, a.version, [], configuration=VPC_CNI_NETWORK_POLICY if a.name == "vpc-cni" and args.network_policy else None)
            for a in args.addons
            if a.name in NODELESS_ADDONS
        ]
        self.system_node_group = self._system_node_group(name, args, cluster, region, node_role, private_subnet_ids, tags, nodeless)
        # CoreDNS and the rest run on nodes.
        on_nodes = [addon(a.name, a.version, [self.system_node_group]) for a in args.addons if a.name not in NODELESS_ADDONS]

        storage = args.block_storage
        ebs_csi = _ebs_csi_driver(name, args, cluster_name, oidc, issuer, tags, child, addon, self.system_node_group)

        self.cluster = cluster
        self.cluster_name = cluster.name
        self.cluster_arn = cluster.arn
        self.certificate_authority_data = cluster.certificate_authority.data
        self.oidc_issuer_url = issuer
        self.cluster_security_group_id = cluster.vpc_config.cluster_security_group_id
        if self._discovery:
            # EKS creates the cluster security group (every node's); Karpenter finds it by this tag.
            aws.ec2.Tag(
                f"{name}-cluster-sg-discovery",
                aws.ec2.TagArgs(resource_id=self.cluster_security_group_id, key=KARPENTER_DISCOVERY_TAG, value=cluster_name, region=region),
                opts=child,
            )
        self.public_subnet_ids = pulumi.Output.all(*public_subnet_ids)
        self.endpoint = cluster.endpoint
        self.vpc_id = vpc_id
        self.private_subnet_ids = pulumi.Output.all(*private_subnet_ids)
        self.oidc_provider_arn = oidc.arn
        self.node_role_arn = node_role.arn
        self.kubeconfig = _kubeconfig(cluster, region)
        self.provider = k8s.Provider(f"{name}-k8s", k8s.ProviderArgs(kubeconfig=self.kubeconfig), opts=child)
        self.storage_class = self._storage_class(name, storage, ebs_csi) if ebs_csi is not None else None
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
        # The plan's shape in the zones this cluster runs in (the GPU classes' shapes take them too: EksGpuPools).
        self._system_pool = args.system_node_group.pool_shape().in_zones(zones, len(zones), region)
        self._region = region
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
                "clusterArn": self.cluster_arn,
                "certificateAuthorityData": self.certificate_authority_data,
                "oidcIssuerUrl": self.oidc_issuer_url,
                "clusterSecurityGroupId": self.cluster_security_group_id,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def _vpc_and_subnets(
        self, name: str, args: EksClusterArgs, cluster_name: str, zones: list[str], tags: dict[str, str]
    ) -> tuple[pulumi.Output[str], Sequence[pulumi.Input[str]], Sequence[pulumi.Input[str]]]:
        """The VPC and its private (one per zone) and public subnets: created (_network), or the ones given."""
        if args.vpc is None:
            return self._network(name, args, cluster_name, zones, tags)
        vpc_id = pulumi.Output.from_input(args.vpc.vpc_id)
        private_subnet_ids = [args.vpc.private_subnet_ids[z] for z in zones]
        for zone, subnet_id in zip(zones, private_subnet_ids, strict=True):
            for key, value in self._discovery.items():
                aws.ec2.Tag(
                    f"{name}-private-{zone[-1]}-discovery",
                    aws.ec2.TagArgs(resource_id=subnet_id, key=key, value=value, region=args.region),
                    opts=pulumi.ResourceOptions(parent=self),
                )
        public_subnet_ids = list(args.vpc.public_subnet_ids.values())
        return vpc_id, private_subnet_ids, public_subnet_ids

    def _secrets_encryption(
        self, name: str, args: EksClusterArgs, cluster_name: str, region: str, tags: dict[str, str], cluster_role: aws.iam.Role
    ) -> tuple[pulumi.Output[str] | None, aws.eks.ClusterEncryptionConfigArgs | None, aws.iam.RolePolicy | None]:
        """The KMS key of the Secrets (created unless given), the cluster's encryption config, and the
        cluster role's grant on the key; all None with secrets_encryption off."""
        if not args.secrets_encryption.enabled:
            return None, None, None
        if args.secrets_encryption.kms_key_arn is not None:
            key_arn = pulumi.Output.from_input(args.secrets_encryption.kms_key_arn)
        else:
            key = aws.kms.Key(
                f"{name}-secrets-key",
                aws.kms.KeyArgs(
                    description=f"Envelope encryption of the Kubernetes Secrets of EKS cluster {cluster_name}",
                    enable_key_rotation=True,
                    deletion_window_in_days=30,
                    region=region,
                    tags=tags,
                ),
                opts=pulumi.ResourceOptions(parent=self, protect=args.deletion_protection),
            )
            key_arn = key.arn
        encryption = aws.eks.ClusterEncryptionConfigArgs(provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key_arn), resources=["secrets"])
        # EKS checks at creation that the cluster role can use the key.
        key_grant = aws.iam.RolePolicy(
            f"{name}-cluster-role-secrets-key",
            aws.iam.RolePolicyArgs(role=cluster_role.name, policy=key_arn.apply(secrets_key_policy)),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return key_arn, encryption, key_grant

    def _eks_cluster(
        self,
        name: str,
        args: EksClusterArgs,
        cluster_name: str,
        region: str,
        cluster_role: aws.iam.Role,
        subnet_ids: list[pulumi.Input[str]],
        encryption: aws.eks.ClusterEncryptionConfigArgs | None,
        key_grant: aws.iam.RolePolicy | None,
        tags: dict[str, str],
    ) -> aws.eks.Cluster:
        """The EKS control plane (API authentication, no self-managed add-ons)."""
        return aws.eks.Cluster(
            f"{name}-cluster",
            aws.eks.ClusterArgs(
                name=cluster_name,
                region=region,
                version=args.version,
                role_arn=cluster_role.arn,
                vpc_config=aws.eks.ClusterVpcConfigArgs(
                    subnet_ids=subnet_ids,
                    endpoint_public_access=args.endpoint.public,
                    endpoint_private_access=args.endpoint.private,
                    public_access_cidrs=list(args.endpoint.public_access_cidrs) or None,
                    security_group_ids=list(args.security_group_ids) or None,
                ),
                access_config=aws.eks.ClusterAccessConfigArgs(
                    authentication_mode="API", bootstrap_cluster_creator_admin_permissions=args.bootstrap_creator_admin
                ),
                encryption_config=encryption,
                # Add-ons are declared below, at versions this stack controls.
                bootstrap_self_managed_addons=False,
                enabled_cluster_log_types=[t.value for t in args.log_types],
                deletion_protection=args.deletion_protection,
                tags=tags,
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=args.deletion_protection, depends_on=[key_grant] if key_grant else None),
        )

    def _addon(
        self,
        name: str,
        cluster: aws.eks.Cluster,
        region: str,
        tags: dict[str, str],
        addon_name: str,
        version: str | None,
        after: Sequence[pulumi.Resource],
        role_arn: pulumi.Input[str] | None = None,
        configuration: dict[str, Any] | None = None,
    ) -> aws.eks.Addon:
        """One EKS add-on, after ``after``."""
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

    def _system_node_group(
        self,
        name: str,
        args: EksClusterArgs,
        cluster: aws.eks.Cluster,
        region: str,
        node_role: aws.iam.Role,
        private_subnet_ids: Sequence[pulumi.Input[str]],
        tags: dict[str, str],
        nodeless: list[aws.eks.Addon],
    ) -> aws.eks.NodeGroup:
        """The on-demand node group of the cluster's controllers, after the node-less add-ons."""
        system = args.system_node_group
        system_group = system_node_group(system)
        return aws.eks.NodeGroup(
            f"{name}-{system.name}",
            aws.eks.NodeGroupArgs(
                cluster_name=cluster.name,
                region=region,
                node_group_name=system.name,
                node_role_arn=node_role.arn,
                subnet_ids=private_subnet_ids,
                instance_types=list(system.instance_types),
                capacity_type="ON_DEMAND",
                ami_type="AL2023_x86_64_STANDARD",
                disk_size=system.disk_size_gib,
                scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                    min_size=system_group.min_nodes, max_size=system_group.max_nodes, desired_size=system_group.min_nodes
                ),
                update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
                labels={POOL_ROLE_LABEL: PoolRole.SYSTEM.value, **system.labels},
                tags=tags,
            ),
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["scalingConfig.desiredSize"], depends_on=nodeless),
        )

    def _storage_class(self, name: str, storage: EbsStorageArgs, ebs_csi: aws.eks.Addon) -> k8s.storage.v1.StorageClass:
        """The gp3 StorageClass of the EBS CSI driver."""
        return k8s.storage.v1.StorageClass(
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

    @property
    def cloud(self) -> ClusterKind:
        """eks."""
        return ClusterKind.EKS

    def pool_shapes(self) -> list[NodePoolShape]:
        """The system node group as workloads see it (the GPU pools are SpotFailoverEksNodeGroups')."""
        return [self._system_pool]

    def in_zones(self, shapes: list[NodePoolShape]) -> list[NodePoolShape]:
        """``shapes`` (the GPU classes') running in this cluster's zones and region, where its subnets are."""
        return [s.in_zones(self.zones, len(self.zones), self._region) for s in shapes]

    def ready(self) -> list[pulumi.Resource]:
        """The system node group, CoreDNS and the other add-ons on nodes, and the StorageClass claims name."""
        return [*self.ref.controllers_ready, *([self.storage_class] if self.storage_class else [])]

    def metric_sources(self) -> frozenset[MetricSource]:
        """Nothing: the cluster autoscaler comes with SpotFailoverEksNodeGroups."""
        return frozenset()

    def _network(
        self, name: str, args: EksClusterArgs, cluster_name: str, zones: list[str], tags: dict[str, str]
    ) -> tuple[pulumi.Output[str], list[pulumi.Output[str]], list[pulumi.Output[str]]]:
        """The VPC the component creates: a public and a private subnet per zone, the internet
        gateway, NAT (one, or one per zone) and the route tables. Returns the VPC id and the
        private and public subnet ids, in zone order."""
        child = pulumi.ResourceOptions(parent=self)
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            aws.ec2.VpcArgs(
                cidr_block=args.vpc_cidr,
                enable_dns_hostnames=True,
                enable_dns_support=True,
                tags={**tags, "Name": f"{cluster_name}-vpc"},
            ),
            opts=child,
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", aws.ec2.InternetGatewayArgs(vpc_id=vpc.id, tags={**tags, "Name": cluster_name}), opts=child)
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

        def subnet(kind: str, zone: str, block: ipaddress.IPv4Network, role_tag: str, route_table: aws.ec2.RouteTable) -> aws.ec2.Subnet:
            made = aws.ec2.Subnet(
                f"{name}-{kind}-{zone[-1]}",
                aws.ec2.SubnetArgs(
                    vpc_id=vpc.id,
                    availability_zone=zone,
                    cidr_block=str(block),
                    map_public_ip_on_launch=kind == "public",
                    tags={
                        **tags,
                        **cluster_tag,
                        "Name": f"{cluster_name}-{kind}-{zone}",
                        role_tag: "1",
                        **(self._discovery if kind == "private" else {}),
                    },
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
            public = subnet("public", zone, blocks[i], ELB_ROLE_TAG, public_rt)
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
            private_subnets.append(subnet("private", zone, blocks[len(zones) + i], INTERNAL_ELB_ROLE_TAG, private_rt))
        return vpc.id, [s.id for s in private_subnets], [s.id for s in public_subnets]


def _region_and_cluster_name(name: str, args: EksClusterArgs) -> tuple[str, str]:
    """The AWS region (args, else the aws:region config) and the EKS cluster name; refused before
    anything is registered."""
    region = args.region or aws.config.region
    if not region:
        raise input_error("args.region", "no AWS region; set EksClusterArgs.region or the aws:region config")
    cluster_name = args.cluster_name or name
    if not valid_eks_cluster_name(cluster_name):
        raise input_error("args.cluster_name", f"the default (the component name {name!r}) is not a valid EKS cluster name; set cluster_name")
    return region, cluster_name


def _zones_offering_gpus(args: EksClusterArgs, region: str, gpu_instance_types: Sequence[str]) -> list[str]:
    """The cluster's zones: the configured ones, each offering every GPU type; or, none configured,
    the first zone_count zones of the region that offer them all (at least two)."""
    types = sorted(set(gpu_instance_types))
    configured = args.configured_zones
    if types or configured is None:
        filters = [aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="instance-type", values=types or ["*"])]
        if configured:
            filters.append(aws.ec2.GetInstanceTypeOfferingsFilterArgs(name="location", values=list(configured)))
        found = aws.ec2.get_instance_type_offerings(filters=filters, location_type="availability-zone", region=region)
        pairs = list(zip(found.locations, found.instance_types, strict=True))
        try:
            zones = zones_offering(pairs, types, configured)
        except ValueError as exc:
            where = "args.vpc.private_subnet_ids" if args.vpc is not None else "args.zones"
            raise input_error(where, str(exc)) from None
        if configured is None:
            if len(zones) < 2:
                raise input_error("args.zones", f"fewer than two zones of {region} offer {', '.join(types)} (found {', '.join(zones) or 'none'})")
            zones = zones[: args.zone_count]
    else:
        zones = list(configured)
    return zones


def _oidc_issuer(identities: Sequence[aws.eks.outputs.ClusterIdentity]) -> str:
    """The OIDC issuer URL EKS reports for every cluster (the provider types it optional)."""
    oidcs = identities[0].oidcs
    if not oidcs or oidcs[0].issuer is None:
        raise ValueError("the EKS cluster reports no OIDC issuer")
    return oidcs[0].issuer


def _oidc_provider(
    name: str, cluster: aws.eks.Cluster, tags: dict[str, str], child: pulumi.ResourceOptions
) -> tuple[pulumi.Output[str], aws.iam.OpenIdConnectProvider]:
    """The cluster's OIDC issuer URL and the IAM OIDC provider IRSA trusts."""
    issuer = cluster.identities.apply(_oidc_issuer)
    oidc = aws.iam.OpenIdConnectProvider(
        f"{name}-oidc",
        aws.iam.OpenIdConnectProviderArgs(url=issuer, client_id_lists=["sts.amazonaws.com"], tags=tags),
        opts=child,
    )
    return issuer, oidc


def _kubeconfig(cluster: aws.eks.Cluster, region: str) -> pulumi.Output[str]:
    """The cluster's kubeconfig (eks_kubeconfig), as a secret."""
    return pulumi.Output.secret(
        pulumi.Output.all(cluster.name, cluster.endpoint, cluster.certificate_authority.data).apply(lambda v: eks_kubeconfig(v[0], region, v[1], v[2]))
    )


def _role(name: str, role_name: str, service: str, policies: Sequence[str], tags: dict[str, str], child: pulumi.ResourceOptions) -> aws.iam.Role:
    """An IAM role ``service`` assumes, with AWS managed policies attached."""
    r = aws.iam.Role(
        f"{name}-{role_name}",
        aws.iam.RoleArgs(assume_role_policy=assume_role_policy(service), tags=tags),
        opts=child,
    )
    for policy in policies:
        aws.iam.RolePolicyAttachment(
            f"{name}-{role_name}-{policy.lower().replace('_', '-')}",
            aws.iam.RolePolicyAttachmentArgs(role=r.name, policy_arn=AWS_MANAGED_POLICY + policy),
            opts=child,
        )
    return r


def _access_entries(
    name: str, args: EksClusterArgs, cluster: aws.eks.Cluster, region: str, tags: dict[str, str], child: pulumi.ResourceOptions
) -> dict[str, aws.eks.AccessEntry]:
    """The access entries and their policy associations, by principal ARN."""
    entries: dict[str, aws.eks.AccessEntry] = {}
    for entry in args.access_entries:
        access = aws.eks.AccessEntry(
            f"{name}-access-{entry.slug}",
            aws.eks.AccessEntryArgs(
                cluster_name=cluster.name,
                region=region,
                principal_arn=entry.principal_arn,
                kubernetes_groups=list(entry.kubernetes_groups) or None,
                type="STANDARD",
                tags=tags,
            ),
            opts=child,
        )
        entries[entry.principal_arn] = access
        for policy in entry.policies:
            aws.eks.AccessPolicyAssociation(
                f"{name}-access-{entry.slug}-{policy.name.lower().replace('_', '-')}",
                aws.eks.AccessPolicyAssociationArgs(
                    cluster_name=cluster.name,
                    region=region,
                    principal_arn=access.principal_arn,
                    policy_arn=policy.arn,
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type=entry.scope.value, namespaces=list(entry.namespaces) or None),
                ),
                opts=child,
            )
    return entries


def _ebs_csi_driver(
    name: str,
    args: EksClusterArgs,
    cluster_name: str,
    oidc: aws.iam.OpenIdConnectProvider,
    issuer: pulumi.Output[str],
    tags: dict[str, str],
    child: pulumi.ResourceOptions,
    addon: Callable[..., aws.eks.Addon],
    system_node_group: aws.eks.NodeGroup,
) -> aws.eks.Addon | None:
    """The EBS CSI driver add-on with its IRSA role (block_storage.enabled), else None."""
    storage = args.block_storage
    if not storage.enabled:
        return None
    ebs_role = irsa_role(
        f"{name}-ebs-csi-role",
        f"EBS CSI driver of {cluster_name} (IRSA)",
        oidc.arn,
        issuer,
        "kube-system",
        EBS_CSI_SERVICE_ACCOUNT,
        child,
        tags=tags,
    )
    ebs_policy = aws.iam.RolePolicyAttachment(
        f"{name}-ebs-csi-role-policy",
        aws.iam.RolePolicyAttachmentArgs(role=ebs_role.name, policy_arn=AWS_MANAGED_POLICY + EBS_CSI_POLICY),
        opts=child,
    )
    return addon(EBS_CSI_ADDON, storage.version, [system_node_group, ebs_policy], ebs_role.arn)
