"""Credentials a pull request puts in a stack file in plain text, caught by the gate with Yelp's detect-secrets.

`check` runs detect-secrets' default plugins and filters over every plain-text string of the stack's config
(gpu_platform.spec.secret_scan): each hit is bad input, exit 2, one line naming the key path with the value
masked. The loader's own patterns (AWS keys, GitHub and Slack tokens, ...) stay in every command; these are what
they missed before: a Slack webhook, a PagerDuty routing key, a password with a hyphen.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform import cli
from tests.conftest import stack_path, without_lines

WEBHOOK = "https://hooks.slack.com/services/T0123ABCD/B0123ABCD/abcdefghijklmnopqrstuvwx"
CASES = [
    # (id, tag key, value, what the line says)
    ("slack-webhook", "team-slack", WEBHOOK, "a Slack Token (detect-secrets)"),
    ("pagerduty-routing-key", "pd-routing", "0a1b2c3d4e5f60718293a4b5c6d7e8f9", "a Hex High Entropy String (detect-secrets)"),
    ("password-with-a-hyphen", "db-password", "s3cr3t-prod-db", "a Secret Keyword (detect-secrets)"),
]


def _with_tags(tmp_path: Path, lines: str) -> Path:
    text = stack_path("prod").read_text()
    out = tmp_path / "Pulumi.prod.yaml"
    out.write_text(text.replace("  gpu-platform:tags:\n", "  gpu-platform:tags:\n" + lines, 1))
    return out


@pytest.mark.parametrize(("key", "value", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_credential_in_plain_text_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, says: str) -> None:
    path = _with_tags(tmp_path, f'    {key}: "{value}"\n')
    code = cli.main(["check", "--config", str(path)])
    err = without_lines(capsys.readouterr().err)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"{path}: gpu-platform:tags.{key}: ") and f"looks like {says} in plain text" in lines[0]
    assert value not in err and "Traceback" not in err  # masked


def test_what_is_not_a_credential_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Reservation ids, ARNs, image tags and a Pulumi `secure:` value are not reported (every repository stack passes too)."""
    lines = '    budget-code: "Q4-2026-ml"\n    vault: {secure: "AAABAJx9kVh2YjE4ZGQ3YTU2ZmU0OGQ1MzRhNDg3NjQ5ZTc0NzI3YTVjYjk5"}\n'
    path = _with_tags(tmp_path, lines)
    code = cli.main(["check", "--config", str(path)])
    _, err = capsys.readouterr()
    assert code == 0 and "looks like" not in err, err


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ('    db-password: "hunter2!!#"\n', "hunter2"),  # refused characters: the value is not echoed
        ("    api-token: 123456789\n", "123456789"),  # not a string: the value is not echoed either
    ],
)
def test_a_bad_value_under_a_credential_named_key_is_never_echoed(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, value: str) -> None:
    """The value of a credential-named key may be one even when it does not look like one: its error line says where
    and what is wrong, never the value (a CI log is read by more people than the stack file)."""
    path = _with_tags(tmp_path, line)
    code = cli.main(["check", "--config", str(path)])
    captured = capsys.readouterr()
    assert code == 2
    assert value not in captured.err and value not in captured.out
    assert "(not shown: the key names a credential)" in captured.err
