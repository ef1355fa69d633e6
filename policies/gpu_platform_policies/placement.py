"""Where a violation is fixed: the file and line of its stack key path, for every output format.

The line comes from the YAML node marks of the file the user edits (gpu_platform.change.lines): the
stack file for `gpu-platform:` keys, the repository file a rule names otherwise (the lockfile). A key
the file does not spell out (a default) points at its nearest written parent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from gpu_platform.change.lines import key_line, segments
from gpu_platform_policies.model import Violation


def file_line(text: str, key: str) -> int | None:
    """Line of `key` in a repository file: YAML by node marks; INI or HCL by the first line naming its last segment."""
    line = key_line(text, key, under=None)
    if (line is not None and line > 1) or not text:
        return line
    last = str(segments(key)[-1]) if segments(key) else key
    rows = text.splitlines()
    for pattern in (rf"(^|[\s\[.]){re.escape(last)}\s*[=:\]]", rf"\b{re.escape(last)}\b"):  # a setting, else any mention
        found = next((i for i, row in enumerate(rows, 1) if re.search(pattern, row)), None)
        if found:
            return found
    return line


def place(violations: Iterable[Violation], stack_file: Path, root: Path | None = None) -> list[Violation]:
    """Each violation with its file (the stack file unless the rule named another) and the line of its key path."""
    texts: dict[Path, str] = {}

    def text(path: Path) -> str:
        if path not in texts:
            texts[path] = path.read_text(encoding="utf-8") if path.is_file() else ""
        return texts[path]

    out = []
    for v in violations:
        if v.file is None:
            line = key_line(text(stack_file), v.key, under="config") if v.key else None
            out.append(replace(v, file=str(stack_file), line=v.line or line))
        elif v.key and not v.line:
            target = (root or Path(".")) / v.file
            if not target.is_file() and Path(v.file).is_file():
                target = Path(v.file)  # a file of the repository the gate runs from (the lockfile), not of the tree it judged
            # The file stays as the rule names it, relative to the repository root: what GitHub annotates.
            out.append(replace(v, line=file_line(text(target), v.key)))
        else:
            out.append(v)
    return out
