"""Collection pins: requirements.yml matches what the bundled `ansible` package ships, and covers every use."""

from __future__ import annotations

import json
import re

import yaml

from tests.ansible.helpers import ANSIBLE_DIR, BIN

SITE = next((BIN.parent / "lib").glob("python3*/site-packages/ansible_collections"))


def test_pinned_collections_are_the_bundled_versions():
    reqs = yaml.safe_load((ANSIBLE_DIR / "requirements.yml").read_text())["collections"]
    for req in reqs:
        namespace, name = req["name"].split(".")
        manifest = json.loads((SITE / namespace / name / "MANIFEST.json").read_text())
        assert req["version"] == "==" + manifest["collection_info"]["version"], req["name"]


def test_every_collection_used_is_pinned():
    pinned = {r["name"] for r in yaml.safe_load((ANSIBLE_DIR / "requirements.yml").read_text())["collections"]}
    used = set()
    for path in ANSIBLE_DIR.rglob("*.yml"):
        if ".gpu-host-deps" in path.parts:
            continue
        used |= set(re.findall(r"^\s*-?\s*([a-z_]+\.[a-z_]+)\.[a-z_]+:", path.read_text(), flags=re.MULTILINE))
        used |= set(re.findall(r"callbacks_enabled: ([a-z_]+\.[a-z_]+)\.", path.read_text()))
    used.discard("ansible.builtin")
    assert used, "no collection use found; the scan is broken"
    assert used <= pinned, f"used but not pinned: {sorted(used - pinned)}"
