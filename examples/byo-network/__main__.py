"""Bring your own network: a GKE cluster on a network and an EKS cluster in a VPC, both made
in this same program and handed to the components as Outputs.

docs/getting-started/library.md ("Bring your own network") shows this file; tests/test_packaging.py previews it from
a freshly built wheel through the CLI and the testing module.
"""

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from gpu_platform.components import (
    AutoscalingBounds,
    BoundsScope,
    EksCluster,
    EksClusterArgs,
    ExistingVpcArgs,
    GpuGkeCluster,
    GpuGkeClusterArgs,
    GpuNodePoolArgs,
)

# GCP: a custom-mode network with one subnetwork in the cluster's region.
network = gcp.compute.Network("ml-net", gcp.compute.NetworkArgs(auto_create_subnetworks=False))
subnetwork = gcp.compute.Subnetwork(
    "ml-subnet",
    gcp.compute.SubnetworkArgs(network=network.id, region="us-central1", ip_cidr_range="10.10.0.0/20"),
)
gke = GpuGkeCluster(
    "ml-gke",
    GpuGkeClusterArgs(
        location="us-central1",
        node_locations=["us-central1-b", "us-central1-c"],
        network=network.name,
        subnetwork=subnetwork.name,
        gpu_pools=[
            GpuNodePoolArgs(
                name="l4",
                machine_type="g2-standard-8",
                accelerator_type="nvidia-l4",
                autoscaling=AutoscalingBounds(scope=BoundsScope.TOTAL, min_nodes=0, max_nodes=4),
            )
        ],
    ),
)

# AWS: a VPC with a public and a private subnet in two zones, and one NAT gateway.
vpc = aws.ec2.Vpc("ml-vpc", aws.ec2.VpcArgs(cidr_block="10.20.0.0/16", enable_dns_hostnames=True, enable_dns_support=True))
igw = aws.ec2.InternetGateway("ml-igw", aws.ec2.InternetGatewayArgs(vpc_id=vpc.id))
public_rt = aws.ec2.RouteTable(
    "ml-public", aws.ec2.RouteTableArgs(vpc_id=vpc.id, routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)])
)
zones = ["us-west-2a", "us-west-2b"]
public, private = {}, {}
for i, zone in enumerate(zones):
    public[zone] = aws.ec2.Subnet(
        f"ml-public-{zone[-1]}",
        aws.ec2.SubnetArgs(
            vpc_id=vpc.id,
            availability_zone=zone,
            cidr_block=f"10.20.{i * 16}.0/20",
            map_public_ip_on_launch=True,
            tags={"kubernetes.io/role/elb": "1"},
        ),
    )
    aws.ec2.RouteTableAssociation(f"ml-public-{zone[-1]}", aws.ec2.RouteTableAssociationArgs(subnet_id=public[zone].id, route_table_id=public_rt.id))
nat = aws.ec2.NatGateway(
    "ml-nat",
    aws.ec2.NatGatewayArgs(allocation_id=aws.ec2.Eip("ml-nat", aws.ec2.EipArgs(domain="vpc")).id, subnet_id=public[zones[0]].id),
    opts=pulumi.ResourceOptions(depends_on=[igw]),
)
private_rt = aws.ec2.RouteTable(
    "ml-private", aws.ec2.RouteTableArgs(vpc_id=vpc.id, routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)])
)
for i, zone in enumerate(zones):
    private[zone] = aws.ec2.Subnet(
        f"ml-private-{zone[-1]}",
        aws.ec2.SubnetArgs(
            vpc_id=vpc.id,
            availability_zone=zone,
            cidr_block=f"10.20.{128 + i * 16}.0/20",
            tags={"kubernetes.io/role/internal-elb": "1"},
        ),
    )
    aws.ec2.RouteTableAssociation(f"ml-private-{zone[-1]}", aws.ec2.RouteTableAssociationArgs(subnet_id=private[zone].id, route_table_id=private_rt.id))
bastion = aws.ec2.SecurityGroup("ml-api-from-vpn", aws.ec2.SecurityGroupArgs(vpc_id=vpc.id, description="VPN clients reach the Kubernetes API"))

eks = EksCluster(
    "ml-eks",
    EksClusterArgs(
        vpc=ExistingVpcArgs(
            vpc_id=vpc.id,
            private_subnet_ids={zone: subnet.id for zone, subnet in private.items()},
            public_subnet_ids={zone: subnet.id for zone, subnet in public.items()},
        ),
        security_group_ids=[bastion.id],
        deletion_protection=False,
    ),
)

pulumi.export("gkeKubeconfig", gke.kubeconfig)
pulumi.export("eksKubeconfig", eks.kubeconfig)
pulumi.export("eksVpcId", eks.vpc_id)
