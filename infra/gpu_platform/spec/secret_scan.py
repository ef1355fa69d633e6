"""Credentials in a stack's config found by Yelp's detect-secrets, as the gate (`check`) runs it.

Its own module so that only `check` imports the detector (a tenth of a second `plan` and `explain` do not pay);
every command runs the cheaper checks of gpu_platform.spec.secrets on load.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from detect_secrets import SecretsCollection
from detect_secrets.settings import default_settings

from gpu_platform.errors import Problem
from gpu_platform.spec.secrets import credential_problem, is_secure


def _strings(value: Any, path: str, key: str) -> Iterator[tuple[str, str, str]]:
    """(key path, the key the string sits under, the string) for every plain-text string; `secure:` values left out."""
    if is_secure(value):
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k), str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]", key)
    elif isinstance(value, str):
        yield path, key, value


def detected_credentials(config: Mapping[str, Any], file: str) -> list[Problem]:
    """Every plain-text string of a stack's config that Yelp's detect-secrets (pinned in requirements.in) reports.

    Run as `detect-secrets scan` runs on a YAML file (detect_secrets/core/secrets_collection.py
    SecretsCollection.scan_file: every default plugin (AWS, Slack tokens and webhooks, private keys, JWTs,
    keyword-named secrets, Base64 and hex high-entropy strings, ...) with the default filters), over one line
    `<key>_<n>: "<value>"` per string: the key keeps keyword detection, the quotes keep the entropy plugins, and the
    line number leads back to the key path. The gate (`check`) runs it; every command runs the cheaper checks above.
    """
    strings = list(_strings(config, "", ""))
    if not strings:
        return []
    lines = [f"{re.sub(r'[^A-Za-z0-9_-]', '_', key) or 'value'}_{i}: {json.dumps(text)}" for i, (_, key, text) in enumerate(strings)]
    with tempfile.TemporaryDirectory() as folder:
        scanned = Path(folder) / "stack.yaml"
        scanned.write_text("\n".join(lines) + "\n")
        with default_settings():
            found = SecretsCollection()
            found.scan_file(str(scanned))
    out: dict[str, Problem] = {}
    for _, secret in found:
        path, _, text = strings[secret.line_number - 1]
        out.setdefault(path, credential_problem(file, path, f"a {secret.type} (detect-secrets)", text))
    return list(out.values())
