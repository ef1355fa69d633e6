"""Which stack file a command reads: `--stack NAME` from any directory of the repository, or a path.

The repository root is the nearest directory, from the current one upward, that holds both
`Pulumi.yaml` and `stacks/` (what `pulumi` itself needs to find the project), unless
`GPU_PLATFORM_ROOT` names it. `--stack` also takes a path to a stack file (`--stack ../x/Pulumi.a.yaml`),
and `--config FILE` any stack file. An unknown name is one line that lists the stacks there are.
"""

from __future__ import annotations

import os
from pathlib import Path

from gpu_platform.errors import ConfigError, Problem, did_you_mean

DEFAULT_STACK = "dev"


def find_root(start: Path | None = None) -> Path | None:
    """`GPU_PLATFORM_ROOT`, else the nearest directory at or above `start` (the cwd) with Pulumi.yaml and stacks/."""
    if os.environ.get("GPU_PLATFORM_ROOT"):
        return Path(os.environ["GPU_PLATFORM_ROOT"])
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / "Pulumi.yaml").is_file() and (directory / "stacks").is_dir():
            # relative to the cwd, so files are named as the user (and a GitHub annotation) would name them
            return Path(os.path.relpath(directory))
    return None


def repository_root(start: Path | None = None) -> Path:
    """`find_root`, or ConfigError (one line) when the cwd is in no gpu-platform repository."""
    root = find_root(start)
    if root is None:
        where = str((start or Path.cwd()).resolve())
        raise ConfigError(
            [
                Problem(
                    where,
                    "--stack",
                    "no gpu-platform repository here or above (a directory with Pulumi.yaml and stacks/)",
                    "allowed: run inside a clone, set GPU_PLATFORM_ROOT, or pass --config FILE",
                )
            ]
        )
    return root


def stack_name(path: Path) -> str:
    """`stacks/Pulumi.prod.yaml` -> `prod` (Pulumi's own naming of stack files)."""
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")


def stack_names(root: Path) -> list[str]:
    """The stacks of the repository at `root`, by name."""
    return sorted(stack_name(p) for p in (root / "stacks").glob("Pulumi.*.yaml"))


def _looks_like_path(value: str) -> bool:
    return os.sep in value or "/" in value or value.endswith((".yaml", ".yml"))


def resolve_stack_file(stack: str | None, config: Path | None, optional: bool = False) -> tuple[Path, str]:
    """(stack file, stack name) from `--stack NAME|PATH` or `--config FILE` (default: the `dev` stack).

    `optional`: the command can run without a stack (`capacity plan`), so a default that is not there is no error.
    """
    if config is not None:
        return config, stack_name(config)
    if stack is not None and _looks_like_path(stack):
        return Path(stack), stack_name(Path(stack))
    if stack is None and optional:
        return (find_root() or Path()) / "stacks" / f"Pulumi.{DEFAULT_STACK}.yaml", DEFAULT_STACK
    name = stack or DEFAULT_STACK
    root = repository_root()
    path = root / "stacks" / f"Pulumi.{name}.yaml"
    if not path.is_file():
        names = stack_names(root)
        there = f"allowed: {', '.join(names) or 'none: stacks/ has no Pulumi.<name>.yaml'}, or a path to a stack file"
        raise ConfigError([Problem(str(path), "--stack", f"no stack '{name}'{did_you_mean(name, names)}", there)])
    return path, name
