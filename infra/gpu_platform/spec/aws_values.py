"""Values the AWS APIs would refuse at `pulumi up`, caught while reading the stack.

The lists come from the AWS provider the program already depends on: `pulumi_aws.Region` and
`pulumi_aws.ec2.InstanceType` are generated from the AWS API models (the same `ec2` `InstanceType` enum
botocore ships; tests compare them). Length limits are those of the EKS API model (botocore
`data/eks/2017-11-01/service-2.json`, shapes `TagKey`, `TagValue`, `labelKey`, `labelValue`).
"""

from __future__ import annotations

import importlib
import re
from functools import cache

from gpu_platform.errors import Problem, did_you_mean, one_of
from gpu_platform.spec.models import PlatformSpec
from gpu_platform.spec.secrets import SECRET_KEY_NAME

P = "gpu-platform:"
TAG_KEY_MAX, TAG_VALUE_MAX = 128, 256
EKS_LABEL_MAX = 63
# EC2 User Guide, "Tag your Amazon EC2 resources" > "Tag restrictions": letters, numbers, spaces
# representable in UTF-8, and + - = . _ : / @; the `aws:` prefix is reserved for AWS.
TAG_CHARS = re.compile(r"^[\w\s+\-=.:/@]*$")


@cache
def aws_regions() -> frozenset[str]:
    """Region codes the AWS provider knows (commercial, China and GovCloud partitions)."""
    # Imported on first use: pulumi_aws costs about a second, and on-prem stacks never need it.
    return frozenset(r.value for r in importlib.import_module("pulumi_aws").Region)


@cache
def ec2_instance_types() -> frozenset[str]:
    """Every EC2 instance type of the AWS API model, as the provider ships it."""
    return frozenset(t.value for t in importlib.import_module("pulumi_aws.ec2").InstanceType)


def check_region(spec: PlatformSpec, file: str) -> list[Problem]:
    """aws:region must be a region AWS has (the zones are only judged against a real one)."""
    if spec.region is None or spec.region in aws_regions():
        return []
    return [Problem(file, "aws:region", f"unknown AWS region '{spec.region}'{did_you_mean(spec.region, aws_regions())}", one_of(aws_regions()))]


def zone_problem(zone: str, region: str) -> str | None:
    """Why `zone` is not an Availability Zone of `region` (None when it is one)."""
    # EC2 User Guide, "Regions and Zones" > "Availability Zones": a zone's name is its region code
    # followed by one letter (us-east-1a). Local and Wavelength Zones (us-east-1-bos-1a) carry more
    # after the region and cannot hold an EKS cluster's subnets.
    if re.fullmatch(re.escape(region) + r"[a-z]", zone):
        return None
    if zone.startswith(region + "-"):
        return f"'{zone}' is a Local or Wavelength Zone, not an Availability Zone of {region}"
    return f"'{zone}' is not an Availability Zone of {region}"


def check_cluster(spec: PlatformSpec, file: str) -> list[Problem]:
    """The system node group's instance type (endpoint access is the deploy path's check)."""
    out: list[Problem] = []
    c = spec.cluster
    # Both endpoints off is refused with the deploy path (gpu_platform.aws.access.unreachable_reason).
    t = c.system_nodes.instance_type
    if t not in ec2_instance_types():
        out.append(
            Problem(
                file,
                f"{P}cluster.systemNodes.instanceType",
                f"unknown EC2 instance type '{t}'{did_you_mean(t, ec2_instance_types())}",
                "allowed: an EC2 instance type such as m7i.xlarge",
            )
        )
    return out


def check_tags(spec: PlatformSpec, file: str) -> list[Problem]:
    """Tag keys and values AWS accepts on every resource the stack tags."""
    out: list[Problem] = []
    for key, value in spec.tags.items():
        at = f"{P}tags.{key}"
        if key.lower().startswith("aws:"):
            out.append(Problem(file, at, f"tag key '{key}' uses the reserved prefix 'aws:'", "allowed: keys not starting with aws: (reserved)"))
        if not 1 <= len(key) <= TAG_KEY_MAX:
            out.append(Problem(file, at, f"tag key is {len(key)} characters", f"allowed: 1..{TAG_KEY_MAX} characters"))
        if len(value) > TAG_VALUE_MAX:
            out.append(Problem(file, at, f"tag value is {len(value)} characters", f"allowed: at most {TAG_VALUE_MAX} characters"))
        for what, text in (("key", key), ("value", value)):
            if not TAG_CHARS.match(text):
                bad = sorted({ch for ch in text if not TAG_CHARS.match(ch)})
                # a credential-named tag's value is never echoed, whatever it looks like (it may be one)
                hidden = what == "value" and bool(SECRET_KEY_NAME.search(key))
                shown = "(not shown: the key names a credential)" if hidden else repr(text)
                chars = "not shown" if hidden else " ".join(bad)
                out.append(
                    Problem(
                        file,
                        at,
                        f"tag {what} {shown} has characters AWS refuses ({chars})",
                        "allowed: letters, digits, spaces and + - = . _ : / @",
                    )
                )
    return out
