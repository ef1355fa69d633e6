"""VPC endpoints of a VPC the stack creates: S3 through a gateway, ECR and STS through interface endpoints.

Without them every image layer, checkpoint and dataset byte leaves through the NAT gateways, billed
per GB. ECR serves image layers from S3, so an image pull needs the S3 gateway endpoint as well as the
ECR api and dkr endpoints (ECR user guide, "Amazon ECR interface VPC endpoints (AWS PrivateLink)":
"Create the Amazon S3 gateway endpoint"). STS serves IRSA (AssumeRoleWithWebIdentity) and SDKs' own role
chaining. EKS Pod Identity's agent gets its credentials from EKS Auth (`AssumeRoleForPodIdentity`, service
`com.amazonaws.<region>.eks-auth`), not STS; without an endpoint for it that call leaves through NAT.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpu_platform.aws.sg_rules import add_sg_rule, sg_rule

# Interface endpoints by short name -> service suffix (AWS PrivateLink guide, "AWS services that
# integrate with AWS PrivateLink": com.amazonaws.<region>.ecr.api, .ecr.dkr, .sts).
INTERFACE_SERVICES = {"ecr-api": "ecr.api", "ecr-dkr": "ecr.dkr", "sts": "sts"}
GATEWAY_SERVICES = {"s3": "s3"}
HTTPS = 443


def service_name(region: str, service: str) -> str:
    """The endpoint service name AWS gives a service in a region: `com.amazonaws.<region>.<service>`."""
    return f"com.amazonaws.{region}.{service}"


@dataclass(frozen=True)
class EndpointPlan:
    """One VPC endpoint, as data: short name, service name, and Gateway or Interface."""

    name: str
    service_name: str
    endpoint_type: str


def endpoint_plan(region: str) -> list[EndpointPlan]:
    """Every endpoint a stack-created VPC gets, gateways first."""
    out = [EndpointPlan(n, service_name(region, s), "Gateway") for n, s in GATEWAY_SERVICES.items()]
    out += [EndpointPlan(n, service_name(region, s), "Interface") for n, s in INTERFACE_SERVICES.items()]
    return out


@dataclass(frozen=True)
class VpcEndpointsArgs:
    """Inputs of the VpcEndpoints component."""

    region: str
    vpc_id: pulumi.Input[str]
    vpc_cidr: str
    private_subnets: dict[str, pulumi.Output[str]]
    private_route_tables: dict[str, pulumi.Output[str]]
    tags: dict[str, str]


class VpcEndpoints(pulumi.ComponentResource):
    """The S3 gateway endpoint on the private route tables; ECR api/dkr and STS interface endpoints in the private subnets."""

    def __init__(self, name: str, args: VpcEndpointsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:VpcEndpoints", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # Interface endpoints are ENIs: their group must admit HTTPS from whatever in the VPC calls them
        # (nodes, pods on VPC CNI addresses); the response is allowed back because groups are stateful.
        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description="HTTPS from the VPC to the ECR and STS interface endpoints",
            tags={**args.tags, "Name": f"{name}-interface-endpoints"},
            opts=child,
        )
        https = sg_rule(
            f"{name}-https-from-vpc",
            "ingress",
            sg.id,
            cidr_ipv4=args.vpc_cidr,
            protocol="tcp",
            ports=(HTTPS, HTTPS),
            description="HTTPS from the VPC to the interface endpoints",
            tags=args.tags,
        )
        add_sg_rule(https, child)
        for ep in endpoint_plan(args.region):
            if ep.endpoint_type == "Gateway":
                aws.ec2.VpcEndpoint(
                    f"{name}-{ep.name}",
                    vpc_id=args.vpc_id,
                    service_name=ep.service_name,
                    vpc_endpoint_type="Gateway",
                    route_table_ids=list(args.private_route_tables.values()),
                    tags={**args.tags, "Name": f"{name}-{ep.name}"},
                    opts=child,
                )
            else:
                aws.ec2.VpcEndpoint(
                    f"{name}-{ep.name}",
                    vpc_id=args.vpc_id,
                    service_name=ep.service_name,
                    vpc_endpoint_type="Interface",
                    private_dns_enabled=True,
                    subnet_ids=list(args.private_subnets.values()),
                    security_group_ids=[sg.id],
                    tags={**args.tags, "Name": f"{name}-{ep.name}"},
                    opts=child,
                )
        self.security_group_id = sg.id
        self.register_outputs({})
