"""Alertmanager's routing tree: which receivers an alert reaches.

Source: prometheus/alertmanager v0.28 dispatch/route.go (`NewRoute`, `Route.Match`) and pkg/labels/parse.go
(`ParseMatchers`), config/config.go (`match`, `match_re` and `matchers`, all ANDed into one matcher set):
- a route's receiver, group_by etc. default to its parent's (`NewRoute`);
- `Match` returns nothing unless the route's matchers match; then it tries the children in order, collecting
  every matching child's matches and stopping after the first match whose `continue` is false; with no
  matching child, the route itself is the match;
- a regex matcher is anchored (`^(?:re)$`, pkg/labels/matcher.go `NewMatcher`); an absent label is "".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# pkg/labels/parse.go: `name op value`, value optionally double-quoted; ops =, !=, =~, !~.
_MATCHER = re.compile(r"""^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*(?:"((?:[^"\\]|\\.)*)"|([^",}]*?))\s*$""")


def parse_matchers(text: str) -> list[tuple[str, str, str]]:
    """One `matchers:` entry as (name, op, value) triples: `a="b"`, or `{a="b", c=~"d"}` (parse.go `ParseMatchers`)."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    out = []
    for part in re.findall(r'(?:[^,"]|"(?:[^"\\]|\\.)*")+', body):
        m = _MATCHER.match(part)
        if m is None:
            raise ValueError(f'bad matcher {part!r}; allowed: name="value", name!="value", name=~"re", name!~"re"')
        name, op, quoted, bare = m.groups()
        out.append((name, op, bytes(quoted, "utf-8").decode("unicode_escape") if quoted is not None else (bare or "")))
    return out


def matches(matcher: tuple[str, str, str], labels: Mapping[str, str]) -> bool:
    """pkg/labels/matcher.go `Matcher.Matches`."""
    name, op, value = matcher
    have = labels.get(name, "")
    if op == "=":
        return have == value
    if op == "!=":
        return have != value
    full = re.fullmatch(value, have) is not None
    return full if op == "=~" else not full


def route_matchers(route: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """config.go: `match` (equality), `match_re` (regex) and `matchers`, ANDed."""
    out = [(k, "=", str(v)) for k, v in (route.get("match") or {}).items()]
    out += [(k, "=~", str(v)) for k, v in (route.get("match_re") or {}).items()]
    for m in route.get("matchers") or []:
        out += parse_matchers(str(m))
    return out


def match(route: Mapping[str, Any], labels: Mapping[str, str], inherited: str = "") -> list[str]:
    """route.go `Route.Match`: the receivers of the routes an alert with these labels is dispatched to."""
    if not all(matches(m, labels) for m in route_matchers(route)):
        return []
    receiver = str(route.get("receiver") or inherited)
    found: list[str] = []
    for child in route.get("routes") or []:
        got = match(child, labels, receiver)
        found += got
        if got and not child.get("continue", False):
            break
    return found or [receiver]
