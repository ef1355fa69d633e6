"""`gpu-platform versions`: every pinned component of a stack with its end of standard support and the days left.

Read from the stack's effective lockfile (the repository's with the stack's `versions` override) and its
`support:` section, judged on one day (`--today`, default today) by the same windows the gate uses:
`versions-support-ending` (advisory) below `min-support-days-advisory` (90) days left, `versions-in-support`
(mandatory) below `min-support-days` (30) or past the end. Exit 1 when any pin is in the
mandatory window, as `check` would.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from gpu_platform.errors import ConfigError, Problem
from gpu_platform.spec.loader import load_stack_file
from gpu_platform.spec.models import PlatformSpec
from gpu_platform.versions import (
    SUPPORT_DRIVER_BRANCHES,
    SUPPORT_EKS_AMI,
    SUPPORT_KUBERNETES,
    SUPPORT_WINDOWS,
    days_left,
    node_support_keys,
    support_end,
    support_window,
)
from gpu_platform_policies import THRESHOLD_DEFAULTS

WINDOWS = ("min-support-days", "min-support-days-advisory")  # the thresholds of versions-in-support and versions-support-ending


@dataclass(frozen=True)
class Pin:
    """One pinned component of the stack and where its support stands on the day."""

    key: str  # lockfile key path
    component: str  # support component
    version: str
    ends: date | None
    days_left: int | None
    status: str  # ok, advisory, mandatory, past, no-date, no-entry
    source: str
    policy: str | None = None
    judged: bool = True  # versions-in-support / versions-support-ending judge it (else shown for the record)

    def to_json(self) -> dict[str, Any]:
        """camelCase, like every command's JSON."""
        return {
            "key": self.key,
            "component": self.component,
            "version": self.version,
            "ends": self.ends.isoformat() if self.ends else None,
            "daysLeft": self.days_left,
            "status": self.status,
            "source": self.source,
            "policy": self.policy,
            "judgedByGate": self.judged,
        }


def pins(spec: PlatformSpec) -> list[tuple[str, str, str, bool]]:
    """(lockfile key, support component, version, judged by versions-in-support) of what the stack runs.

    EKS: the control plane's Kubernetes minor, the AMI release and the AMI's driver branch (all judged), and with a
    golden-image pool the node stack built into the image too.
    On-prem: the bare-metal node stack the Ansible roles install; the gate judges its driver branch here
    (the rest through the Ansible repository rules), and EKS's Kubernetes calendar does not apply.
    """
    lock = spec.lock
    node_stack = [(key, component, version, key == "nvidia_driver.branch") for key, component, version in node_support_keys(lock)]
    if spec.is_eks:
        eks = [
            ("kubernetes.version", SUPPORT_KUBERNETES, lock.kubernetes.version, True),
            ("eks.ami_release_version", SUPPORT_EKS_AMI, lock.eks.ami_release_version, True),
            ("eks.ami_driver_branch", SUPPORT_DRIVER_BRANCHES, lock.eks.ami_driver_branch, True),
        ]
        # Pools on a golden image run the node stack the Ansible roles built into it.
        return eks + (node_stack if any(p.image for p in spec.node_pools) else [])
    return node_stack


def report(spec: PlatformSpec, today: date) -> list[Pin]:
    """Every pin with its end of support, days left and status on `today`, with the stack's own thresholds."""
    days = {k: float(spec.policy.thresholds.get(k, THRESHOLD_DEFAULTS[k])) for k in WINDOWS}
    out = []
    for key, component, version, judged in pins(spec):
        entry = support_end(spec.lock, component, version)
        left = days_left(entry, today)
        status = support_window(entry, today, days["min-support-days"], days["min-support-days-advisory"])
        source = entry.source if entry else f"no support.{component} entry in the lockfile"
        policy = entry.policy if entry else None
        out.append(Pin(key, component, version, entry.ends if entry else None, left, status, source, policy, judged))
    return out


FAILING = tuple(status for status, level in SUPPORT_WINDOWS.items() if level == "mandatory")


def _when(p: Pin) -> str:
    if p.status == "no-date":
        return "no published end date"
    if p.days_left is None or p.ends is None:
        return "no entry"
    if p.days_left < 0:
        return f"ended {p.ends} ({-p.days_left} days ago)"
    return f"{p.ends} ({p.days_left} days left)"


def render_text(stack: str, today: date, found: list[Pin]) -> str:
    """One line per pin and a verdict."""
    lines = [f"Stack {stack}: pinned versions and their end of standard support on {today}", ""]
    lines.append(f"  {'PIN':<26} {'VERSION':<18} {'SUPPORT ENDS':<34} STATUS")
    lines += [f"  {p.key:<26} {p.version:<18} {_when(p):<34} {p.status}{'' if p.judged else ' (not judged here)'}" for p in found]
    failing = [p for p in found if p.status in FAILING and p.judged]
    soon = [p for p in found if p.status == "advisory" and p.judged]
    lines += ["", f"{len(failing)} pin(s) the gate fails (versions-in-support), {len(soon)} advisory (versions-support-ending)."]
    return "\n".join(lines)


def render_markdown(stack: str, today: date, found: list[Pin]) -> str:
    """The same table for a wiki page or an issue."""
    lines = [f"### Pinned versions of `{stack}` on {today}", "", "| pin | version | support ends | status | source |", "|---|---|---|---|---|"]
    lines += [f"| `{p.key}` | {p.version} | {_when(p)} | {p.status} | {p.source} |" for p in found]
    return "\n".join(lines)


def parse_day(text: str | None, path: Path) -> date:
    """`--today YYYY-MM-DD`, default the machine's day; one clear line when it is not a date."""
    if text is None:
        return date.today()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ConfigError([Problem(str(path), "--today", f"'{text}' is not a date", "allowed: YYYY-MM-DD, e.g. 2027-01-31")]) from None


def run(args: argparse.Namespace, path: Path, stack: str) -> int:
    """Entry point of the subcommand: exit 1 when a pin is in the gate's mandatory window, else 0."""
    today = parse_day(args.today, path)
    spec = load_stack_file(path, stack)
    found = report(spec, today)
    if args.format == "json":
        print(json.dumps({"stack": stack, "today": today.isoformat(), "pins": [p.to_json() for p in found]}, indent=2))
    elif args.format == "markdown":
        print(render_markdown(stack, today, found))
    else:
        print(render_text(stack, today, found))
    # The stack's own enforcement decides, as in `check`: versions-in-support lowered to advisory never fails.
    fails = spec.policy.enforcement.get("versions-in-support", "mandatory") == "mandatory"
    return 1 if fails and any(p.status in FAILING and p.judged for p in found) else 0
