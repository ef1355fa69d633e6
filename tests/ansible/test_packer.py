"""The golden-image Packer template validates (needs the `packer` apt package and ansible-playbook on PATH)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.ansible.helpers import ANSIBLE_DIR, BIN

TEMPLATE = ANSIBLE_DIR / "packer" / "gpu-node.pkr.hcl"


@pytest.mark.skipif(shutil.which("packer") is None, reason="packer not installed (apt-get install packer)")
def test_packer_validate():
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "CHECKPOINT_DISABLE": "1"}
    result = subprocess.run(["packer", "validate", str(TEMPLATE)], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_template_reads_versions_from_the_lockfile_and_runs_golden_image():
    text = TEMPLATE.read_text()
    assert 'yamldecode(file("${path.root}/../../infra/gpu_platform/data/versions.yaml"))' in text
    assert 'playbook_file = "${path.root}/../golden_image.yml"' in text
    assert 'groups        = ["golden_image"]' in text
