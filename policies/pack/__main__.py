"""Entry point the Pulumi CLI starts for `pulumi preview --policy-pack policies/pack`.

Building the PolicyPack starts CrossGuard's gRPC server and blocks, so nothing imports this
module; tests call each policy's validate function from gpu_platform_policies.crossguard instead.
"""

from pulumi_policy import EnforcementLevel, PolicyPack

from gpu_platform_policies.crossguard import build_policies

PolicyPack(
    name="gpu-platform",
    policies=build_policies(),
    enforcement_level=EnforcementLevel.ADVISORY,
)
