"""`gpu-platform` command line: plan, render, check and capacity over one stack, offline."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from gpu_platform.commands import capacity_plan_args
from gpu_platform.errors import ConfigError

# command -> (module, function, help). Each function takes (args, spec_path, stack) and returns an exit code.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "plan": ("gpu_platform.commands.plan", "run", "run the program on the offline engine and list every resource"),
    "capacity": ("gpu_platform.commands.capacity", "run", "capacity, coverage, Spot exposure and cost of the stack"),
    "render": ("gpu_platform.commands.render", "run", "write every Kubernetes object and Helm values of the stack as YAML"),
    "check": ("gpu_platform.commands.check", "run", "run every policy over the offline plan; exit 1 on a mandatory violation"),
    "diff": ("gpu_platform.commands.change", "run_diff", "plan the stack at a git revision and at the working tree, and diff them per resource"),
    "explain": ("gpu_platform.commands.explain", "run", "say what the platform does with one workload manifest, stage by stage"),
}
FORMATS = {
    "plan": ("table", "json"),
    "capacity": ("table", "json"),
    "check": ("text", "json", "github", "markdown"),
    "diff": ("text", "json", "markdown"),
    "explain": ("text", "json"),
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-platform", description="Offline tools for gpu-platform stacks (no cloud credentials needed).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, _, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        where = p.add_mutually_exclusive_group()
        where.add_argument("--stack", help="stack name: reads stacks/Pulumi.NAME.yaml (default: dev)")
        where.add_argument("--config", type=Path, help="path of any stack file")
        if name == "check":
            where.add_argument("--all", action="store_true", help="every stacks/Pulumi.*.yaml, in one process (CI runs this once)")
        if name in FORMATS:
            p.add_argument("--format", choices=FORMATS[name], default=FORMATS[name][0])
        if name in ("check", "diff"):
            _add_base(p, check=name == "check")
        if name == "render":
            p.add_argument("--out", type=Path, required=True, help="directory to write manifests and Helm values into")
        if name == "capacity":
            _add_capacity_plan(p)
        if name == "explain":
            p.add_argument("--workload", type=Path, required=True, help="a workload manifest: Pod, Job, JobSet, PyTorchJob, Deployment, ...")
    return parser


def _add_base(p: argparse.ArgumentParser, check: bool) -> None:
    """`--base` (gpu_platform.commands.change); for `check` also what the change rules may compare against."""
    p.add_argument("--base", metavar="GIT_REF", required=not check, help="git revision to compare with (a pull request's target branch)")
    if check:
        p.add_argument("--usage", type=Path, metavar="FILE", help="with --base: Prometheus query_range export of per-tenant GPU use")
        p.add_argument("--demand", type=Path, metavar="FILE", help="with --base: demand input, as `capacity plan --demand` reads it")


def _add_capacity_plan(capacity: argparse.ArgumentParser) -> None:
    """`capacity plan`: the planner's own options (gpu_platform.commands.capacity_plan)."""
    sub = capacity.add_subparsers(dest="capacity_command", metavar="plan")
    help_text = "size reserved / on-demand / Spot tiers from declared demand or a usage history"
    p = sub.add_parser("plan", help=help_text, description=help_text)
    where = p.add_mutually_exclusive_group()
    # SUPPRESS: a value given before `plan` (capacity --stack X plan) is not reset by the subcommand
    where.add_argument("--stack", default=argparse.SUPPRESS, help="stack to compare with (shortfall) and base --write-stack on")
    where.add_argument("--config", type=Path, default=argparse.SUPPRESS, help="path of any stack file")
    capacity_plan_args.add_arguments(p)


def resolve_stack_file(stack: str | None, config: Path | None) -> tuple[Path, str]:
    """(stack file, stack name) from --stack or --config."""
    if config is not None:
        name = config.name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")
        return config, name
    name = stack or "dev"
    root = Path(os.environ.get("GPU_PLATFORM_ROOT", "."))
    return root / "stacks" / f"Pulumi.{name}.yaml", name


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run one command, map bad input to exit code 2 with one line per problem."""
    args = _parser().parse_args(argv)
    path, stack = resolve_stack_file(args.stack, args.config)
    module, func, _ = COMMANDS[args.command]
    if getattr(args, "capacity_command", None) == "plan":
        module, func = "gpu_platform.commands.capacity_plan", "run"
    if args.command == "check" and getattr(args, "base", None) and not getattr(args, "all", False):
        module, func = "gpu_platform.commands.change", "run_check"
    command: Callable[[argparse.Namespace, Path, str], int] = getattr(importlib.import_module(module), func)
    try:
        return command(args, path, stack)
    except ConfigError as err:
        for problem in err.problems:
            print(problem, file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug of ours, not bad input: one line, traceback only on request
        if os.environ.get("GPU_PLATFORM_DEBUG"):
            raise
        print(f"gpu-platform: internal error: {type(exc).__name__}: {exc} (set GPU_PLATFORM_DEBUG=1 for a traceback)", file=sys.stderr)
        return 70


if __name__ == "__main__":
    sys.exit(main())
