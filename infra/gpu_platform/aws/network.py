"""The cluster network: a new VPC with public and private subnets per zone, or existing subnets."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpu_platform.spec.models import NetworkSpec


def subnet_plan(cidr: str, zones: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """Zone -> (private CIDR, public CIDR): large private subnets for pod IPs, small public ones for NAT/LBs."""
    net = ipaddress.IPv4Network(cidr)
    eighths = list(net.subnets(prefixlen_diff=3))
    publics = list(eighths[-1].subnets(prefixlen_diff=3))
    if len(zones) > len(eighths) - 1:
        raise ValueError(f"{cidr} is too small for {len(zones)} zones")
    return {z: (str(eighths[i]), str(publics[i])) for i, z in enumerate(zones)}


@dataclass(frozen=True)
class NetworkArgs:
    """Inputs of the Network component."""

    spec: NetworkSpec
    cluster_name: str
    tags: dict[str, str]


class Network(pulumi.ComponentResource):
    """VPC, subnets, gateways and routes; exposes private subnet ids by zone."""

    vpc_id: pulumi.Output[str]
    private_subnets: dict[str, pulumi.Output[str]]
    # Only for a VPC this stack creates: the private subnets' route tables (VPC endpoints attach there).
    private_route_tables: dict[str, pulumi.Output[str]]
    # Only for a VPC this stack creates: the NAT gateways' public addresses, the cluster's egress to the internet
    # (a MultiKueue manager's path to its workers' API endpoints: program.build_workers).
    egress_ips: list[pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec = args.spec
        if spec.mode == "existing":
            assert spec.vpc_id is not None
            self.vpc_id = pulumi.Output.from_input(spec.vpc_id)
            self.private_subnets = {z: pulumi.Output.from_input(s) for z, s in spec.subnets.items()}
            self.private_route_tables = {}
            self.egress_ips = []
            self.register_outputs({"vpc_id": self.vpc_id})
            return
        cluster_tag = {f"kubernetes.io/cluster/{args.cluster_name}": "shared"}
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=spec.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**args.tags, "Name": f"{args.cluster_name}-vpc"},
            opts=child,
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=args.tags, opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags=args.tags,
            opts=child,
        )
        self.private_subnets = {}
        self.private_route_tables = {}
        self.egress_ips = []
        for zone, (private_cidr, public_cidr) in subnet_plan(spec.cidr, spec.availability_zones).items():
            public = aws.ec2.Subnet(
                f"{name}-public-{zone}",
                vpc_id=vpc.id,
                cidr_block=public_cidr,
                availability_zone=zone,
                map_public_ip_on_launch=False,
                tags={**args.tags, **cluster_tag, "kubernetes.io/role/elb": "1", "Name": f"{args.cluster_name}-public-{zone}"},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(f"{name}-public-{zone}", subnet_id=public.id, route_table_id=public_rt.id, opts=child)
            eip = aws.ec2.Eip(f"{name}-nat-{zone}", domain="vpc", tags=args.tags, opts=child)
            nat = aws.ec2.NatGateway(f"{name}-nat-{zone}", allocation_id=eip.id, subnet_id=public.id, tags=args.tags, opts=child)
            self.egress_ips.append(eip.public_ip)
            private = aws.ec2.Subnet(
                f"{name}-private-{zone}",
                vpc_id=vpc.id,
                cidr_block=private_cidr,
                availability_zone=zone,
                tags={**args.tags, **cluster_tag, "kubernetes.io/role/internal-elb": "1", "Name": f"{args.cluster_name}-private-{zone}"},
                opts=child,
            )
            rt = aws.ec2.RouteTable(
                f"{name}-private-{zone}",
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
                tags=args.tags,
                opts=child,
            )
            aws.ec2.RouteTableAssociation(f"{name}-private-{zone}", subnet_id=private.id, route_table_id=rt.id, opts=child)
            self.private_subnets[zone] = private.id
            self.private_route_tables[zone] = rt.id
        self.vpc_id = vpc.id
        self.register_outputs({"vpc_id": self.vpc_id})
