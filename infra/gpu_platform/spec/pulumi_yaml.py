r"""Read a stack file's scalars as the Pulumi CLI reads them, not as PyYAML's YAML 1.1 resolver would.

The Pulumi CLI loads `Pulumi.<stack>.yaml` and `Pulumi.yaml` with gopkg.in/yaml.v3 (the release its sdk/go.mod
pins; pulumi sdk/go/common/encoding/marshal.go `yamlMarshaler`; workspace/loaders.go `LoadProjectStackBytes`,
read at the newest 3.x tag held here below the lockfile's CLI, these files unchanged there since 2022), and the
program receives each value as JSON (resource/config/object.go `unmarshalObject`,
`MarshalString`). Its resolver (yaml.v3 resolve.go `resolve`) differs from PyYAML's SafeLoader:

- booleans are only `true|True|TRUE|false|False|FALSE`: `yes`, `no`, `on`, `off`, `y`, `n` stay strings;
- null is `~|null|Null|NULL|` (empty);
- integers are what Go's `strconv.ParseInt(s, 0, 64)` reads once `_` is removed (`0x1F`, `0o17`, `0b101`,
  and `017` as octal), else `ParseUint`;
- floats match `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` (`1e3` is 1000, `09` is 9.0);
  `.inf` and `.nan` load, but then `json.Marshal` fails the whole stack (`json: unsupported value: +Inf`);
- no sexagesimal (`1:30` stays a string; PyYAML makes it 90);
- a timestamp (`2026-11-16`, `2026-1-2`, with a time) becomes a Go `time.Time`, which reaches the program as
  `time.Time.String()` text (`2026-11-16 00:00:00 +0000 UTC`), not the ISO date that was written.

`PulumiLoader` resolves the same way: what the gate plans is what `pulumi up` deploys. Infinities, NaN and
unquoted timestamps are reported by `unsupported_scalars` (one problem each, with its line).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import yaml

from gpu_platform.errors import Problem, safe_loader

INF_NAN = ("tag:yaml.org,2002:float", re.compile(r"^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"))
# yaml.v3 resolve.go allowedTimestampFormats: "2006-1-2T15:4:5.999999999Z07:00", "2006-1-2t15:4:5.999999999Z07:00",
# "2006-1-2 15:4:5.999999999", "2006-1-2"; parseTimestamp first requires four digits and a '-'.
TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:(?:[Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]{1,9})?(?:Z|[-+][0-9]{2}:[0-9]{2}))"
    r"|(?: [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]{1,9})?))?$"
)
YAML_STYLE_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
GO_INT = re.compile(r"^[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
INT64 = (-(2**63), 2**63 - 1)
UINT64_MAX = 2**64 - 1


def go_int(text: str) -> int | None:
    """`strconv.ParseInt(s, 0, 64)`, else `ParseUint(s, 0, 64)`, of the text with `_` removed; None when neither reads it."""
    plain = text.replace("_", "")
    if not GO_INT.match(plain):
        return None
    sign = -1 if plain.startswith("-") else 1
    digits = plain.lstrip("+-")
    octal = len(digits) > 1 and digits[0] == "0" and digits[1] in "01234567"  # Go base 0: a leading 0 is octal, as yaml.v3 keeps
    value = sign * (int(digits, 8) if octal else int(digits, 0))
    if INT64[0] <= value <= INT64[1] or 0 <= value <= UINT64_MAX:
        return value
    return None


def _resolve(value: str) -> str:
    """The tag yaml.v3's `resolve` gives a plain scalar."""
    if NULL.match(value):
        return "tag:yaml.org,2002:null"
    if BOOL.match(value):
        return "tag:yaml.org,2002:bool"
    if INF_NAN[1].match(value):
        return "tag:yaml.org,2002:float"
    if value[:1].isdigit() or value[:1] in "+-.":
        if value[:1].isdigit() and TIMESTAMP.match(value):
            return "tag:yaml.org,2002:timestamp"
        if go_int(value) is not None:
            return "tag:yaml.org,2002:int"
        if YAML_STYLE_FLOAT.match(value.replace("_", "")):
            return "tag:yaml.org,2002:float"
    return "tag:yaml.org,2002:str"


class PulumiLoader(safe_loader()):  # type: ignore[misc]
    """PyYAML's safe loader (libyaml where installed) resolving plain scalars as yaml.v3 does."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """yaml.v3 `resolve` for plain scalars; explicit tags, quoted scalars and collections as PyYAML (and Go) do."""
        if kind is yaml.ScalarNode and implicit[0]:
            if value == "<<":
                return "tag:yaml.org,2002:merge"
            return _resolve(value)
        return super().resolve(kind, value, implicit)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """Go's integer reading (leading-0 octal, `0o`, underscores anywhere)."""
        value = go_int(str(self.construct_scalar(node)))
        assert value is not None, node.value
        return value

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float | int:
        """`strconv.ParseFloat` of the text without `_`, then what the program's `json.loads` makes of Go's JSON for it.

        encoding/json writes a float64 with the shortest digits and no exponent below 1e21, so a whole number
        (`1e3`, `1.0`) reaches the program as an integer. Infinities and NaN stay floats for `unsupported_scalars`.
        """
        text = str(self.construct_scalar(node)).replace("_", "")
        lowered = text.lower()
        if lowered in (".inf", "+.inf"):
            return float("inf")
        if lowered == "-.inf":
            return float("-inf")
        if lowered == ".nan":
            return float("nan")
        value = float(text)
        if value.is_integer() and abs(value) < 1e21:
            return int(Decimal(repr(value)))
        return value

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> str:
        """The text Pulumi hands the program, `time.Time.String()` (only a UTC or bare date renders exactly here)."""
        text = str(self.construct_scalar(node))
        y, m, d = (int(p) for p in re.split(r"[-Tt ]", text)[:3])
        if len(text) <= 10:
            return f"{y:04d}-{m:02d}-{d:02d} 00:00:00 +0000 UTC"
        return text  # with a time: refused by `unsupported_scalars` before anyone reads it


PulumiLoader.add_constructor("tag:yaml.org,2002:int", PulumiLoader.construct_yaml_int)
PulumiLoader.add_constructor("tag:yaml.org,2002:float", PulumiLoader.construct_yaml_float)
PulumiLoader.add_constructor("tag:yaml.org,2002:timestamp", PulumiLoader.construct_yaml_timestamp)


def _child(path: str, key: str) -> str:
    return key if path in ("", "config") else f"{path}.{key}"


def _plain_scalars(node: yaml.Node, path: str) -> Iterator[tuple[str, yaml.ScalarNode]]:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            yield from _plain_scalars(value_node, _child(path, key))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield from _plain_scalars(item, f"{path}[{i}]")
    elif isinstance(node, yaml.ScalarNode) and not node.style:  # plain: None (Python parser) or "" (libyaml)
        yield path, node


def unsupported_scalars(root: yaml.Node | None, file: str) -> list[Problem]:
    """Values Pulumi would not deploy as written: `.inf`/`.nan` (the stack does not load) and unquoted timestamps."""
    out: list[Problem] = []
    if root is None:
        return out
    for path, node in _plain_scalars(root, ""):
        line = node.start_mark.line + 1
        if node.tag == "tag:yaml.org,2002:float" and INF_NAN[1].match(str(node.value)):
            why = f"{node.value} (line {line}) makes `pulumi up` fail to load the stack (json: unsupported value)"
            out.append(Problem(file, path, why, "allowed: a finite number"))
        elif node.tag == "tag:yaml.org,2002:timestamp":
            seen = PulumiLoader.construct_yaml_timestamp(PulumiLoader(""), node)
            why = f"unquoted date {node.value} (line {line}) reaches the program as {seen!r} (Pulumi reads it as a Go time)"
            out.append(Problem(file, path, why, f'allowed: the date quoted, "{node.value}"'))
    return out
