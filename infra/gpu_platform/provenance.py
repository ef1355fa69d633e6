"""Which stack key produced each resource: the program says it once, where it builds from that key.

The program wraps each piece it builds in `with source("gpu-platform:nodePools[2]"):`. A stack
transformation (Pulumi runs transformations synchronously in every resource's constructor,
pulumi `resource.py` `Resource.__init__` -> `_transformations`) records the innermost key for each
resource as it is constructed, so children built inside a component inherit their component's key
without saying so. The offline engine attaches the record to each planned resource; the gate turns
it into the file line a finding points at. Under `pulumi up` the record is kept and never read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pulumi

NS = "gpu-platform:"

_stack: list[str] = []
_recorded: dict[tuple[str, str], str] = {}


@contextmanager
def source(key: str) -> Iterator[None]:
    """Resources constructed inside come from stack key `key` (a path such as `gpu-platform:tenants[0]`)."""
    _stack.append(key)
    try:
        yield
    finally:
        _stack.pop()


def _record(args: pulumi.ResourceTransformationArgs) -> None:
    if _stack:
        _recorded[(args.type_, args.name)] = _stack[-1]


def start_recording() -> None:
    """Forget earlier runs and record every resource of this one (call inside the program, before building)."""
    _recorded.clear()
    _stack.clear()
    pulumi.runtime.register_stack_transformation(_record)


def recorded(type_token: str, name: str) -> str | None:
    """The stack key a resource was built from, if the program said."""
    return _recorded.get((type_token, name))


# The keys a MultiKueue worker sets itself (gpu_platform.federation.worker_spec); every other key is shared.
WORKER_KEYS = ("cluster", "network", "nodePools")


def key(spec: Any, path: str) -> str:
    """The stack key of `path` in `spec`: `gpu-platform:<path>`, or under its worker (`gpu-platform:workers[0].<path>`)."""
    root = getattr(spec, "_config_root", "") if path.split(".", 1)[0].split("[", 1)[0] in WORKER_KEYS else ""
    return f"{NS}{root}{path}"


def pool_key(spec: Any, name: str) -> str:
    """`gpu-platform:nodePools[i]` of the pool called `name` (a worker's, or on a manager the first worker's that has it)."""
    names = [p.name for p in spec.node_pools]
    for i, worker in enumerate(getattr(spec, "workers", ())):
        pools = [p.name for p in worker.node_pools]
        if name in pools:
            return f"{NS}workers[{i}].nodePools[{pools.index(name)}]"
    return key(spec, f"nodePools[{names.index(name)}]")


def tenant_key(spec: Any, name: str) -> str:
    """`gpu-platform:tenants[i]` of the tenant called `name`."""
    return f"{NS}tenants[{[t.name for t in spec.tenants].index(name)}]"
