"""The ids the offline engine gives resources, so plan readers can follow one resource's id to another.

The engine's mock (`engine.run_program`'s Recorder.new_resource) answers every registration with the
id `<logical name>-id`; a RouteTableAssociation's `routeTableId` or a rule's `securityGroupId` in the
plan is therefore the id of the resource with that logical name.
"""

from __future__ import annotations

import hashlib


def planned_id(logical_name: str) -> str:
    """The id the offline engine gives the resource with this logical name."""
    return f"{logical_name}-id"


def planned_ip(logical_name: str) -> str:
    """The public address the offline engine gives an Elastic IP: one of TEST-NET-3 (RFC 5737), stable per name."""
    return f"203.0.113.{int(hashlib.sha256(logical_name.encode()).hexdigest()[:4], 16) % 254 + 1}"


# The id the engine's mock EKS cluster reports as `vpcConfig.clusterSecurityGroupId`: the group EKS
# creates for the cluster and attaches to the control plane's ENIs and to every managed node.
CLUSTER_SECURITY_GROUP = "sg-0mock0cluster"


def planned_arn(type_token: str, logical_name: str) -> str:
    """The ARN the offline engine reports for a resource that does not set its own (`arn:aws:mock:::<kind>/<name>`)."""
    return f"arn:aws:mock:::{type_token.rsplit(':', maxsplit=1)[-1].lower()}/{logical_name}"


# S3's managed prefix list (`com.amazonaws.<region>.s3`), which the gateway endpoint routes and the tenants'
# `allow-s3` NetworkPolicy names. `pulumi up` reads the live list (aws.ec2.get_prefix_list); the offline
# engine's mock answers that read with this stand-in for any region: one of S3's us-east-1 ranges
# (ip-ranges.json, service S3, 52.216.0.0/15). PLANNED_S3_ADDRESS is an address inside it, where a pod's
# packets to S3 go in the plan's world.
PLANNED_S3_PREFIX_LIST = ("52.216.0.0/15",)
PLANNED_S3_ADDRESS = "52.216.8.10"


def s3_prefix_list_name(region: str) -> str:
    """The name of S3's managed prefix list in a region (EC2 DescribeManagedPrefixLists, `PrefixListName`)."""
    return f"com.amazonaws.{region}.s3"
