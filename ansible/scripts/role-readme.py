#!/usr/bin/env python3
"""Write each role's README variable table from its meta/argument_specs.yml.

role-readme.py           rewrite the tables (creating READMEs that are missing)
role-readme.py --check   exit 1 if a table is out of date
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROLES = Path(__file__).resolve().parents[1] / "roles"
BEGIN, END = "<!-- BEGIN VARIABLES (scripts/role-readme.py) -->", "<!-- END VARIABLES -->"


def _cell(value: object) -> str:
    text = " ".join((value if isinstance(value, str) else json.dumps(value)).split()) or '""'

    return text.replace("|", "\\|")


def table(role: Path) -> str:
    """Markdown table of every entry point's options."""
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    defaults_file = role / "defaults" / "main.yml"
    defaults = (yaml.safe_load(defaults_file.read_text()) or {}) if defaults_file.exists() else {}
    lines = [BEGIN]
    for entry, spec in specs.items():
        lines += [
            "",
            f"Entry point `{entry}`: {spec.get('short_description', '')}",
            "",
            "| Variable | Type | Default | Description |",
            "|---|---|---|---|",
        ]
        for name, opt in (spec.get("options") or {}).items():
            if opt.get("required"):
                default = "**required**"
            elif name in defaults:
                raw = defaults[name]
                default = "from the lockfile" if "gpu_platform_versions" in str(raw) else f"`{_cell(raw)}`"
                default = "empty" if default == '`""`' else default
            else:
                default = f"`{_cell(opt.get('default'))}`" if "default" in opt else ""
            if default == '`""`':
                default = "empty"
            desc = _cell(" ".join(opt.get("description", [])) if isinstance(opt.get("description"), list) else opt.get("description", ""))
            if opt.get("choices"):
                desc += " Choices: " + ", ".join(f"`{c}`" for c in opt["choices"] if c != "") + "."
            kind = opt.get("type", "str") + (f" of {opt['elements']}" if opt.get("elements") else "")
            lines.append(f"| `{name}` | {kind} | {default} | {desc} |")
    lines.append(END)
    return "\n".join(lines)


def render(role: Path, current: str | None) -> str:
    """README text with a fresh table."""
    if current and BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        return head + table(role) + rest.split(END, 1)[1]
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]
    intro = " ".join(spec.get("description", []) or [spec.get("short_description", "")])
    return f"# Role `{role.name}`\n\n{intro}\n\n## Variables\n\n{table(role)}\n"


def main() -> int:
    """Rewrite or check every role README."""
    check = "--check" in sys.argv
    stale = []
    for role in sorted(p for p in ROLES.iterdir() if (p / "meta" / "argument_specs.yml").exists()):
        path = role / "README.md"
        current = path.read_text() if path.exists() else None
        new = render(role, current)
        if new != current:
            stale.append(str(path))
            if not check:
                path.write_text(new)
    if check and stale:
        print("out of date (run ansible/scripts/role-readme.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
