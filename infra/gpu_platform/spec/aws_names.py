"""Names AWS refuses, caught while reading the stack: IAM role ARNs and S3 bucket names.

Each validator raises ValueError with "<what is wrong>; allowed: <what is allowed>", which
`spec.errors.problems_from_validation` turns into the one-line problem a user sees.
"""

from __future__ import annotations

import ipaddress
import re

# IAM User Guide, "IAM identifiers" > "IAM ARNs" and "IAM and AWS STS quotas": a role ARN is
# arn:<partition>:iam::<12-digit account>:role/<path><name>; a path is "/" or /-delimited printable
# ASCII (U+0021..U+007E, at most 512 characters); a role name is 1..64 of [\w+=,.@-].
PARTITIONS = ("aws", "aws-cn", "aws-us-gov")
ROLE_ARN = re.compile(r"^arn:(aws|aws-cn|aws-us-gov):iam::(\d{12}):role/((?:[\x21-\x7e]*/)?)([\w+=,.@-]{1,64})$")
ROLE_ALLOWED = "an IAM role ARN, arn:aws:iam::<12-digit account>:role/[<path>/]<name> (name: 1..64 of letters, digits, +=,.@_-)"
# S3 User Guide, "General purpose bucket naming rules".
BUCKET_CHARS = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
BUCKET_ALLOWED = "an S3 bucket name: 3..63 of a-z 0-9 . -, starting and ending with a letter or digit, no '..', not an IP address, no wildcards"


def role_arn(value: str) -> str:
    """`value` when it is the ARN of an IAM role; ValueError naming what is wrong otherwise.

    botocore eks CreateAccessEntry.principalArn: an STS session principal
    (arn:aws:sts::<account>:assumed-role/...) cannot be an access entry, so it is refused here too.
    """
    if ":sts::" in value and ":assumed-role/" in value:
        raise ValueError(f"an STS session ARN, which access entries refuse; allowed: {ROLE_ALLOWED}")
    m = ROLE_ARN.match(value)
    if m is None:
        raise ValueError(f"not an IAM role ARN; allowed: {ROLE_ALLOWED}")
    path = m.group(3)
    if len(path) + 1 > 512:
        raise ValueError(f"the role path is {len(path) + 1} characters; allowed: a path of at most 512 characters")
    return value


def bucket_name(value: str) -> str:
    """`value` when S3 accepts it as a general purpose bucket name; ValueError naming the broken rule otherwise."""
    if any(c in value for c in "*?"):
        raise ValueError(f"has a wildcard (a role may reach only the buckets listed); allowed: {BUCKET_ALLOWED}")
    if not 3 <= len(value) <= 63:
        raise ValueError(f"is {len(value)} characters; allowed: {BUCKET_ALLOWED}")
    if not BUCKET_CHARS.match(value):
        raise ValueError(f"has characters or ends S3 refuses; allowed: {BUCKET_ALLOWED}")
    if ".." in value:
        raise ValueError(f"has two adjacent periods; allowed: {BUCKET_ALLOWED}")
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        pass
    else:
        raise ValueError(f"is formatted as an IP address; allowed: {BUCKET_ALLOWED}")
    for prefix in BUCKET_PREFIXES:
        if value.startswith(prefix):
            raise ValueError(f"starts with the reserved prefix {prefix!r}; allowed: {BUCKET_ALLOWED}")
    for suffix in BUCKET_SUFFIXES:
        if value.endswith(suffix):
            raise ValueError(f"ends with the reserved suffix {suffix!r}; allowed: {BUCKET_ALLOWED}")
    return value
