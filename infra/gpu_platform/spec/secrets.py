"""Pulumi secrets in stack config: `secure:` values are accepted, credentials in plain text are refused.

A stack file holds a secret as `{secure: <ciphertext>}` (Pulumi `sdk/go/common/resource/config/value.go`:
`unmarshalValue` and `isSecureValue` take a one-key mapping `secure:` with a string as a secret, also
nested in structured values via `hasSecureValue`). `pulumi up` decrypts it (`decryptObject`) before the
program runs, so the program receives plain text; the offline tools cannot decrypt,
so they validate the rest of the stack with a placeholder in its place and never report it as a type error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpu_platform.errors import Problem

# Stands in for a value the offline tools cannot decrypt: a valid tag value and Kubernetes label value.
PLACEHOLDER = "secret-not-decrypted-offline"

# Formats documented by their issuers (AWS IAM User Guide "Manage access keys" and the
# `AccessKey.AccessKeyId`/`SecretAccessKey` shapes; GitHub Docs "About authentication to GitHub" token
# prefixes; Slack API "Token types"; RFC 7468 private-key labels; RFC 7519 JWT compact form).
CREDENTIAL_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an AWS access key id", re.compile(r"(?<![A-Z0-9])(AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Z0-9])")),
    ("a GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
)
# A secret access key is 40 characters of base64 alphabet; requiring mixed case and a digit keeps
# 40-hex-digit commit ids and plain words out.
AWS_SECRET_KEY = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
# Key names that announce a credential; their value must also look like one: 12 or more characters
# mixing upper case, lower case and digits, with no spaces or hyphens (so `token-budget: Q4-2026-ml`
# or `secret-scanning: enabled` stay plain labels).
SECRET_KEY_NAME = re.compile(r"(password|passwd|secret|token|api[-_]?key|access[-_]?key|credential|private[-_]?key)", re.IGNORECASE)
SECRET_LOOKING_VALUE = re.compile(r"^(?=.*[A-Z])(?=.*[a-z])(?=.*[0-9])[^\s-]{12,}$")


def is_secure(value: Any) -> bool:
    """True for Pulumi's encrypted form `{secure: <ciphertext>}`."""
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("secure"), str)


def replace_secure(value: Any, path: str, found: list[str]) -> Any:
    """`value` with every `{secure: ...}` replaced by PLACEHOLDER; their key paths appended to `found`."""
    if is_secure(value):
        found.append(path)
        return PLACEHOLDER
    if isinstance(value, Mapping):
        return {k: replace_secure(v, f"{path}.{k}", found) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_secure(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
    return value


def secure_problem(problem: Problem, secure_paths: list[str]) -> Problem:
    """A validation problem on a secret value, said as such instead of as a type or format error."""
    if not any(problem.path == p or problem.path.startswith((p + ".", p + "[")) for p in secure_paths):
        return problem
    return Problem(
        problem.file,
        problem.path,
        "is a secret (secure:) value, which the offline tools cannot decrypt, and this key must be checked before deploying",
        "allowed: a plain value here (it is not sensitive); keep `pulumi config set --secret` for credentials",
    )


def _mask(text: str) -> str:
    return f"{text[:4]}…({len(text)} characters)"


def credential_kind(key: str, value: str) -> str | None:
    """What credential `value` (under `key`) looks like, or None."""
    for kind, pattern in CREDENTIAL_PATTERNS:
        if pattern.search(value):
            return kind
    for match in AWS_SECRET_KEY.finditer(value):
        text = match.group(0)
        if any(c.isupper() for c in text) and any(c.islower() for c in text) and any(c.isdigit() for c in text):
            return "an AWS secret access key"
    if SECRET_KEY_NAME.search(key) and SECRET_LOOKING_VALUE.match(value):
        return f"a credential (the key is named '{key}')"
    return None


def plain_text_credentials(value: Any, path: str, file: str) -> list[Problem]:
    """Every plain-text string (keys and values) under `path` that looks like a credential."""
    out: list[Problem] = []
    if isinstance(value, Mapping):
        if is_secure(value):
            return out
        for k, v in value.items():
            here = f"{path}.{k}" if path else str(k)
            kind = credential_kind("", str(k))
            if kind:
                out.append(credential_problem(file, here, kind, str(k)))
            if isinstance(v, str):
                kind = credential_kind(str(k), v)
                if kind:
                    out.append(credential_problem(file, here, kind, v))
            else:
                out += plain_text_credentials(v, here, file)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            here = f"{path}[{i}]"
            kind = credential_kind("", v) if isinstance(v, str) else None
            if kind:
                out.append(credential_problem(file, here, kind, v))
            elif not isinstance(v, str):
                out += plain_text_credentials(v, here, file)
    return out


def credential_problem(file: str, path: str, kind: str, text: str) -> Problem:
    """One line for a credential in plain text: the key path, the value masked, what it looks like."""
    return Problem(
        file,
        path,
        f"{_mask(text)} looks like {kind} in plain text (it would be written to the state and onto every resource it labels or tags)",
        "allowed: no credentials in stack config: remove it and rotate it; a program secret is stored with `pulumi config set --secret KEY`",
    )
