"""The golden-image Packer template validates (needs the `packer` apt package and ansible-playbook on PATH)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.ansible.helpers import ANSIBLE_DIR, BIN

TEMPLATE = ANSIBLE_DIR / "packer" / "gpu-node.pkr.hcl"
PLACEHOLDER_AMI = "ami-0123456789abcdef0"
AMI_ID = re.compile(r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$")
needs_packer = pytest.mark.skipif(shutil.which("packer") is None, reason="packer not installed (apt-get install packer)")


def packer_validate(*args: str) -> subprocess.CompletedProcess[str]:
    """`packer validate` of the template, offline."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "CHECKPOINT_DISABLE": "1"}
    return subprocess.run(["packer", "validate", *args, str(TEMPLATE)], capture_output=True, text=True, env=env, check=False)


@needs_packer
def test_packer_validate():
    result = packer_validate("-var", f"base_ami_id={PLACEHOLDER_AMI}")
    assert result.returncode == 0, result.stdout + result.stderr


@needs_packer
def test_base_ami_is_required():
    result = packer_validate()
    assert result.returncode != 0
    assert 'Unset variable "base_ami_id"' in result.stdout + result.stderr


@needs_packer
@pytest.mark.parametrize("ami", ["ami-12345678", PLACEHOLDER_AMI])
def test_base_ami_accepts_both_ami_id_lengths(ami: str):
    assert AMI_ID.match(ami)
    result = packer_validate("-var", f"base_ami_id={ami}")
    assert result.returncode == 0, result.stdout + result.stderr


@needs_packer
@pytest.mark.parametrize("ami", ["debian-12-amd64-*", "ami-123", "ami-0123456789ABCDEF0", "ami-0123456789abcdefg", "xami-12345678", "ami-1234 678"])
def test_base_ami_rejects_anything_but_an_ami_id(ami: str):
    assert not AMI_ID.match(ami)
    result = packer_validate("-var", f"base_ami_id={ami}")
    assert result.returncode != 0
    assert "base_ami_id value must be an AMI id" in " ".join((result.stdout + result.stderr).split())


def test_base_image_is_pinned_not_searched():
    text = TEMPLATE.read_text()
    assert "source_ami    = var.base_ami_id" in text
    assert "source_ami_filter" not in text and "most_recent" not in text
    block = text[text.index('variable "base_ami_id"') :]
    block = block[: block.index("\n}\n")]
    assert not re.search(r"^\s*default\s*=", block, re.MULTILINE), "base_ami_id must have no default"


def test_lint_validates_with_a_well_formed_placeholder():
    lint = (ANSIBLE_DIR / "scripts" / "lint.sh").read_text()
    found = re.findall(r"packer validate -var base_ami_id=(\S+) ", lint)
    assert found == [PLACEHOLDER_AMI]
    assert AMI_ID.match(found[0])


def test_template_reads_versions_from_the_lockfile_and_runs_golden_image():
    text = TEMPLATE.read_text()
    assert 'yamldecode(file("${path.root}/../../infra/gpu_platform/data/versions.yaml"))' in text
    assert 'playbook_file = "${path.root}/../golden_image.yml"' in text
    assert 'groups        = ["golden_image"]' in text
