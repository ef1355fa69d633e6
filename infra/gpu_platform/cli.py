"""`gpu-platform` command line: plan, render, check and capacity over one stack, offline."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

from gpu_platform.commands import capacity_plan_args
from gpu_platform.commands.bad_input import located, print_bad_input
from gpu_platform.commands.options import FORMATS, add_format
from gpu_platform.commands.stacks import resolve_stack_file
from gpu_platform.errors import ConfigError

# command -> (module, function, help). Each function takes (args, spec_path, stack) and returns an exit code.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "plan": ("gpu_platform.commands.plan", "run", "run the program on the offline engine and list every resource"),
    "capacity": ("gpu_platform.commands.capacity", "run", "capacity, coverage, Spot exposure and cost of the stack"),
    "render": ("gpu_platform.commands.render", "run", "write every Kubernetes object and Helm values of the stack as YAML"),
    "check": ("gpu_platform.commands.check", "run", "run every policy over the offline plan; exit 1 on a mandatory violation"),
    "diff": ("gpu_platform.commands.change", "run_diff", "plan the stack at a git revision and at the working tree, and diff them per resource"),
    "explain": ("gpu_platform.commands.explain", "run", "say what the platform does with one workload manifest, stage by stage"),
    "versions": ("gpu_platform.commands.versions", "run", "every pinned version of the stack with its end of support and the days left"),
}


STACK_HELP = "stack name: stacks/Pulumi.NAME.yaml of the repository around the current directory (default dev), or a stack file's path"


def _common(command: str, nested: bool = False, stack_help: str = STACK_HELP) -> argparse.ArgumentParser:
    """The options every command takes (a parent parser): where the stack is, and `--format` where it prints one.

    `nested` (`capacity plan`): defaults are suppressed, so `capacity --format json plan` keeps the value
    given before the subcommand instead of having the subcommand's default overwrite it.
    """
    common = argparse.ArgumentParser(add_help=False)
    default = argparse.SUPPRESS if nested else None
    where = common.add_mutually_exclusive_group()
    where.add_argument(
        "--stack",
        default=default,
        metavar="NAME|FILE",
        help=stack_help,
    )
    where.add_argument("--config", type=Path, default=default, metavar="FILE", help="path of any stack file")
    if command == "check":
        where.add_argument("--all", action="store_true", help="every stacks/Pulumi.*.yaml, in one process (CI runs this once)")
    if command in FORMATS:
        add_format(common, command, suppress=nested)
    return common


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-platform", description="Offline tools for gpu-platform stacks (no cloud credentials needed).")
    parser.add_argument("--version", action="version", version=f"gpu-platform {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, _, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text, parents=[_common(name)])
        if name in ("check", "diff"):
            _add_base(p, check=name == "check")
        if name == "render":
            p.add_argument("--out", type=Path, required=True, metavar="DIR", help="directory to write manifests and Helm values into")
        if name == "capacity":
            _add_capacity_plan(p)
        if name == "versions":
            p.add_argument("--today", metavar="YYYY-MM-DD", help="the day to judge support on (default today)")
        if name == "explain":
            p.add_argument(
                "--workload", type=Path, required=True, metavar="FILE", help="a workload manifest: Pod, Job, JobSet, PyTorchJob, Deployment, ..."
            )
    return parser


def package_version() -> str:
    """The installed distribution's version (pyproject.toml's `project.version`)."""
    try:
        return metadata.version("gpu-platform")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "unknown (not installed: run `make setup`)"


def _add_base(p: argparse.ArgumentParser, check: bool) -> None:
    """`--base` (gpu_platform.commands.change); for `check` also what the change rules may compare against."""
    p.add_argument("--base", metavar="GIT_REF", required=not check, help="git revision to compare with (a pull request's target branch)")
    if check:
        p.add_argument("--usage", type=Path, metavar="FILE", help="with --base: Prometheus query_range export of per-tenant GPU use")
        p.add_argument("--demand", type=Path, metavar="FILE", help="with --base: demand input, as `capacity plan --demand` reads it")


def _add_capacity_plan(capacity: argparse.ArgumentParser) -> None:
    """`capacity plan`: the planner's own options (gpu_platform.commands.capacity_plan) and the common ones again."""
    sub = capacity.add_subparsers(dest="capacity_command", metavar="plan|fragmentation")
    help_text = "size reserved / on-demand / Spot tiers from declared demand or a usage history"
    stack_help = "stack to compare with (shortfall) and base --write-stack on: a name of this repository's stacks/ or a stack file's path"
    p = sub.add_parser("plan", help=help_text, description=help_text, parents=[_common("capacity", nested=True, stack_help=stack_help)])
    capacity_plan_args.add_arguments(p)
    help_text = "replay a pod list onto a node list as the trace paper's simulator does: the GPUs sharing pods leave unallocatable"
    f = sub.add_parser("fragmentation", help=help_text, description=help_text)
    add_format(f, "capacity", suppress=True)
    capacity_plan_args.add_fragmentation_arguments(f)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run one command, map bad input to exit code 2 with one line per problem."""
    parser = _parser()
    if not list(sys.argv[1:] if argv is None else argv):  # bare `gpu-platform`: the help, not an error
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    module, func, _ = COMMANDS[args.command]
    if getattr(args, "capacity_command", None) == "plan":
        module, func = "gpu_platform.commands.capacity_plan", "run"
    if getattr(args, "capacity_command", None) == "fragmentation":  # reads no stack
        module, func = "gpu_platform.commands.fragmentation", "run"
        args.stack = args.config = None
    if args.command == "check" and getattr(args, "base", None) and not getattr(args, "all", False):
        module, func = "gpu_platform.commands.change", "run_check"
    path, stack = Path(), ""
    try:
        if not getattr(args, "all", False):
            path, stack = resolve_stack_file(args.stack, args.config, optional=module.endswith(("capacity_plan", "fragmentation")))
        command: Callable[[argparse.Namespace, Path, str], int] = getattr(importlib.import_module(module), func)
        return command(args, path, stack)
    except ConfigError as err:
        for problem in err.problems:
            print(located(problem), file=sys.stderr)
        if args.command == "check":  # check prints its format on stdout whatever went wrong
            print_bad_input(args.format, stack, str(path) if stack else "", err.problems)
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
