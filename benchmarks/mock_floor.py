"""The floor under `gpu-platform plan`: Pulumi's mock engine registering N plain resources, nothing else.

Imports the same provider modules the plan's resources come from (pulumi_aws and pulumi_kubernetes
load their submodules lazily, and that import is most of the cost), installs a mock monitor, and
registers N small AWS resources inside one `pulumi.runtime.test`-wrapped function, as the offline
engine does with the real program. Run as a fresh process:
`python benchmarks/mock_floor.py N [TYPE_TOKEN ...]` (the plan's type tokens select the modules).
"""

from __future__ import annotations

import importlib
import sys
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)

import pulumi  # noqa: E402
import pulumi_aws as aws  # noqa: E402
import pulumi_kubernetes  # noqa: E402, F401  (imported by the plan too; its import time is part of the floor)


class _Echo(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]] | None]:
        return {}, None


def provider_module(type_token: str) -> str | None:
    """The SDK module a Pulumi type token's class lives in (None for components)."""
    package, _, rest = type_token.partition(":")
    if package == "aws":
        return f"pulumi_aws.{rest.split('/', 1)[0]}"
    if package == "kubernetes":
        group, _, version = rest.partition(":")[0].partition("/")
        return f"pulumi_kubernetes.{group.split('.')[0]}" + (f".{version}" if version else "")
    if type_token == "pulumi:providers:kubernetes":
        return "pulumi_kubernetes"
    return None


def import_like_the_plan(type_tokens: list[str]) -> None:
    """Load every resource class the plan's resources need, the way the program does.

    The SDKs load a module's classes lazily on first attribute access, so touching the class (not
    only importing the module) is what the program pays for.
    """
    for token in sorted(type_tokens):
        module_name = provider_module(token)
        if module_name is None:
            continue
        try:
            module = importlib.import_module(module_name)
            getattr(module, token.rsplit(":", 1)[-1], None)
        except ModuleNotFoundError:  # a CRD kind (Kueue, Volcano, ...): registered as a CustomResource
            importlib.import_module("pulumi_kubernetes.apiextensions").CustomResource  # noqa: B018


def register(count: int) -> None:
    """Register `count` plain resources under the mock engine and wait for all of them."""
    pulumi.runtime.set_mocks(_Echo(), project="floor", stack="floor", preview=False)

    @pulumi.runtime.test
    def _run() -> None:
        for i in range(count):
            aws.autoscaling.Tag(
                f"floor-{i}",
                autoscaling_group_name="asg",
                tag=aws.autoscaling.TagTagArgs(key=f"k{i}", value="v", propagate_at_launch=False),
            )

    _run()


if __name__ == "__main__":
    import_like_the_plan(sys.argv[2:])
    register(int(sys.argv[1]))
