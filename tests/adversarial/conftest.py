"""Every adversarial case runs within a time and memory bound, measured in the process that runs it.

A hostile input must be refused within 10 s and 1 GiB (issue contract); a pull request is planned twice
(base and change), so its cases get 60 s. Memory is the process's peak resident set during the case above
what it held when the case began: Linux resets the peak (VmHWM) when "5" is written to /proc/self/clear_refs
(Documentation/filesystems/proc.rst, "clear_refs"). Cases that run the CLI in a child process bound the
child themselves (test_hostile_files). A machine without clear_refs gets the time bound only.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

MIB = 1024
BOUNDS = {  # module -> (seconds, MiB)
    "test_hostile_files": (60.0, 1024),
    "test_malformed_input": (120.0, 1024),  # one explain or check per field of a file  # the child's own 10 s / 1 GiB are checked inside each case
    "test_pull_requests": (60.0, 1024),
    "test_render_folder": (10.0, 1024),
    "test_secrets_in_stacks": (10.0, 1024),
    "test_tenant_attempts": (10.0, 1024),
}


def _status_kib(field: str) -> int:
    match = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    return int(match.group(1)) if match else 0


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class Overran(Exception):
    """A case ran past twice its bound: stopped, so a hang fails the case instead of the whole run."""


def _overran(signum: int, frame: object) -> None:
    raise Overran("stopped after twice its time bound (a hang?)")


@pytest.fixture(autouse=True)
def bounded(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the case when it ran longer, or grew the process more, than its module's bound; stop it at twice the time."""
    module = request.node.module.__name__.rsplit(".", 1)[-1]
    seconds, mib = BOUNDS[module]
    start_rss = _status_kib("VmRSS")
    measured = _reset_peak()
    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _overran)
    signal.setitimer(signal.ITIMER_REAL, 2 * seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    took = time.monotonic() - start
    assert took <= seconds, f"{request.node.name} took {took:.1f} s; its bound is {seconds:g} s"
    if measured:
        grew = (_status_kib("VmHWM") - start_rss) / MIB
        assert grew <= mib, f"{request.node.name} grew the process by {grew:.0f} MiB; its bound is {mib} MiB"
