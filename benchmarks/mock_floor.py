"""The floor under `gpu-platform plan`: Pulumi's mock engine registering N plain resources, nothing else.

Imports the same provider modules the plan's resources come from (pulumi_aws and pulumi_kubernetes
load their submodules lazily, and that import is most of the cost), installs a mock monitor, and
registers N small AWS resources inside one `pulumi.runtime.test`-wrapped function, as the offline
engine does with the real program. Run as a fresh process:
`python benchmarks/mock_floor.py N [MODULE ...]` (the provider modules the plan loaded).
"""

from __future__ import annotations

import gc
import importlib
import sys
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)

import pulumi  # noqa: E402
import pulumi_aws as aws  # noqa: E402
import pulumi_kubernetes  # noqa: E402, F401  (imported by the plan too; its import time is part of the floor)


class IdsOnly(pulumi.runtime.Mocks):
    """A provider that returns an ID and no outputs: the least the engine's own mock (`computed_outputs`) returns."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        return f"{args.name}-id", {}

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]] | None]:
        return {}, None


def import_like_the_plan(modules: list[str]) -> None:
    """Execute exactly the provider modules the plan executed (plan_bench lists them: `plan_modules`).

    The SDKs load a module's classes lazily on first attribute access, and a package creates lazy
    stubs for all its submodules; importing the loaded ones, parents first, loads the same code the
    plan loaded and leaves the same stubs unloaded. (Mapping type tokens to modules instead loaded
    typed classes for kinds the program registers as plain custom resources, which made the floor
    heavier than the plan.)
    """
    for name in sorted(modules):
        # Any attribute but the introspection ones (pulumi._utils._INTROSPECTION_ATTRS) makes a lazy
        # stub execute its module, as the program's `k8s.core.v1` does for `pulumi_kubernetes.core`.
        getattr(importlib.import_module(name), "__all__", None)


def start_mock_engine(mocks: pulumi.runtime.Mocks, project: str) -> None:
    """Install the mock engine as the offline engine does before it runs the program (gpu_platform.engine.run_program).

    The import-time heap is frozen first, so the collector's full passes walk only what registration
    creates; left out, they walk ~160,000 import-time objects the plan's do not. It is a dry run
    (`preview`), as the engine's.
    """
    gc.collect()
    gc.freeze()
    pulumi.runtime.set_mocks(mocks, project=project, stack=project, preview=True)


def register(count: int) -> None:
    """Register `count` plain resources under the mock engine and wait for all of them."""
    start_mock_engine(IdsOnly(), "floor")

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
