"""Fixtures for the Ansible tests."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ansible.helpers import load_lockfile


@pytest.fixture(scope="session")
def lockfile() -> dict[str, Any]:
    """The version lockfile."""
    return load_lockfile()
