"""Which ECR registry an EKS node pulls AWS's own images from, as amazon-eks-ami decides it.

Reproduces awslabs/amazon-eks-ami `templates/shared/runtime/bin/get-ecr-uri.sh` (the script the AL2023
node image runs to find its pause and add-on images; its header points at the EKS user guide,
"View Amazon container image registries for Amazon EKS add-ons"): a region's registry is
`<account>.dkr.ecr.<region>.amazonaws.com`, the account is 602401143452 for the commercial non-opt-in
regions and the one listed below for the others. Every region serves its own copy, so a node pulls in its
own region, where the VPC's `ecr.dkr` interface endpoint answers (behaviour.vpc.private_dns_names): an
image named in another region's registry goes out through NAT, cross-region, and fails without NAT.
"""

from __future__ import annotations

import re

DEFAULT_ACCOUNT = "602401143452"
# get-ecr-uri.sh's `case "${region}"`: the regions whose registry is not in DEFAULT_ACCOUNT.
ACCOUNTS = {
    "ap-east-1": "800184023465",
    "ap-east-2": "533267051163",
    "me-south-1": "558608220178",
    "cn-north-1": "918309763551",
    "cn-northwest-1": "961992271922",
    "us-gov-west-1": "013241004608",
    "us-gov-east-1": "151742754352",
    "af-south-1": "877085696533",
    "ap-southeast-3": "296578399912",
    "me-central-1": "759879836304",
    "eu-south-1": "590381155156",
    "eu-south-2": "455263428931",
    "eu-central-2": "900612956339",
    "ap-south-2": "900889452093",
    "ap-southeast-4": "491585149902",
    "il-central-1": "066635153087",
    "ca-west-1": "761377655185",
    "ap-southeast-5": "151610086707",
    "ap-southeast-6": "333609536671",
    "ap-southeast-7": "121268973566",
    "mx-central-1": "730335286997",
}
EKS_ACCOUNTS = frozenset({DEFAULT_ACCOUNT, *ACCOUNTS.values()})
_ECR = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?/(?P<path>.+)$")


def registry(region: str) -> str:
    """The EKS image registry a node in `region` pulls from (get-ecr-uri.sh; `.com.cn` in the China regions)."""
    domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"{ACCOUNTS.get(region, DEFAULT_ACCOUNT)}.dkr.ecr.{region}.{domain}"


def ecr_region(repository: str) -> str | None:
    """The region of an ECR image repository (`602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/x` -> us-west-2), else None."""
    found = _ECR.match(repository)
    return found.group("region") if found else None


def _eks_path(repository: str) -> str | None:
    """The image path of a repository in any region's EKS registry (`eks/aws-efa-k8s-device-plugin`), else None."""
    found = _ECR.match(repository)
    return found.group("path") if found is not None and found.group("account") in EKS_ACCOUNTS else None


def in_region(repository: str, region: str) -> str:
    """An EKS-registry repository moved to `region`'s own registry (the same path); any other repository unchanged."""
    path = _eks_path(repository)
    return repository if path is None else f"{registry(region)}/{path}"


def canonical(repository: str) -> str:
    """One name for an EKS-registry image in any region (`eks-registry/<path>`); any other repository as it is."""
    path = _eks_path(repository)
    return repository if path is None else f"eks-registry/{path}"
