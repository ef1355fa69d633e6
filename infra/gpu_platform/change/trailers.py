"""`GPU-Maintenance:` commit trailers: a stated maintenance names what it covers, when, and under which ticket.

A trailer lets exactly three change rules through for what it names (fixed-capacity-replaced and
fixed-capacity-recycled for its pools, driver-or-cuda-moved for `driver`); every other change rule ignores
trailers. A trailer that names no subject, no window or no ticket, or `all`, is bad input: one line, exit 2,
saying the format, so a bare `GPU-Maintenance: all` can no longer silence the capacity rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpu_platform.errors import ConfigError, Problem

FORMAT = (
    "GPU-Maintenance: <pool>[,<pool>...]|driver <start>/<end> <ticket>, the window in UTC "
    "(e.g. train-h100-reserved 2026-12-05T02:00Z/2026-12-05T08:00Z OPS-4711, or .../6h), the ticket KEY-123, #123 or an https URL"
)
SUBJECT = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
INSTANT = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z"
WINDOW = re.compile(rf"^({INSTANT})/({INSTANT}|\d{{1,3}}h)$")
TICKET = re.compile(r"^(?:[A-Z][A-Z0-9]+-\d+|#\d+|https://\S+)$")
LONGEST = timedelta(days=7)


@dataclass(frozen=True)
class Maintenance:
    """One stated maintenance window."""

    subjects: tuple[str, ...]
    start: datetime
    end: datetime
    ticket: str
    text: str


def _instant(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%MZ")


def parse(text: str) -> Maintenance:
    """The maintenance a trailer states; ValueError saying what is missing or wrong."""
    parts = text.split()
    if len(parts) != 3:
        raise ValueError(f"has {len(parts)} part(s), not a subject, a window and a ticket")
    subjects, window, ticket = parts
    names = tuple(s for s in subjects.split(",") if s)
    if "all" in names:
        raise ValueError("`all` covers nothing in particular: name each pool, or `driver`")
    bad = [s for s in names if not SUBJECT.match(s)]
    if not names or bad:
        raise ValueError(f"subject {subjects!r} is not a list of pool names or `driver`")
    m = WINDOW.match(window)
    if m is None:
        raise ValueError(f"window {window!r} is not <start>/<end> in UTC")
    try:
        start = _instant(m.group(1))
        end = start + timedelta(hours=int(m.group(2)[:-1])) if m.group(2).endswith("h") else _instant(m.group(2))
    except ValueError:
        raise ValueError(f"window {window!r} is not a date and time") from None
    if not start < end <= start + LONGEST:
        raise ValueError(f"window {window!r} does not end after it starts, within 7 days")
    if not TICKET.match(ticket):
        raise ValueError(f"ticket {ticket!r} is not KEY-123, #123 or an https URL")
    return Maintenance(names, start, end, ticket, text)


def read_trailers(statements: tuple[str, ...], where: str) -> tuple[Maintenance, ...]:
    """Every trailer parsed; ConfigError with one line per malformed trailer (`where`: the commit range read)."""
    out, problems = [], []
    for text in statements:
        try:
            out.append(parse(text))
        except ValueError as why:
            problems.append(Problem(where, "GPU-Maintenance", f"{text!r} {why}", f"allowed: {FORMAT}"))
    if problems:
        raise ConfigError(problems)
    return tuple(out)
