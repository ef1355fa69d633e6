"""The golden-image Packer template validates and builds only on an OS the lockfile's pins exist for.

`packer validate` (the `packer` apt package, 1.6) evaluates the template's variable `validation`
blocks and the Ansible provisioner's start-up (it runs `ansible-playbook --version`), as
`packer build` does before it launches anything.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import hcl2
import pytest
import yaml

from gpu_platform.behaviour.packer import providing_plugin, required_plugin_problems, undeclared
from gpu_platform.versions import node_oses, parse_lockfile
from tests.ansible.helpers import ANSIBLE_DIR, BIN, DEBIAN_12, HERE, RHEL_9, UBUNTU_2204, UBUNTU_2404, failure_messages, load_lockfile, run_playbook

TEMPLATE = ANSIBLE_DIR / "packer" / "gpu-node.pkr.hcl"
PLACEHOLDER_AMI = "ami-0123456789abcdef0"
BASE_OS = "ubuntu2404"
AMI_ID = re.compile(r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$")
needs_packer = pytest.mark.skipif(shutil.which("packer") is None, reason="packer not installed (apt-get install packer)")


def packer_validate(*args: str) -> subprocess.CompletedProcess[str]:
    """`packer validate` of the template, offline."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "CHECKPOINT_DISABLE": "1"}
    return subprocess.run(["packer", "validate", *args, str(TEMPLATE)], capture_output=True, text=True, env=env, check=False)


@needs_packer
def test_packer_validate():
    result = packer_validate("-var", f"base_os={BASE_OS}", "-var", f"base_ami_id={PLACEHOLDER_AMI}")
    assert result.returncode == 0, result.stdout + result.stderr


@needs_packer
def test_base_ami_is_required():
    result = packer_validate("-var", f"base_os={BASE_OS}")
    assert result.returncode != 0
    assert 'Unset variable "base_ami_id"' in result.stdout + result.stderr


@needs_packer
def test_base_os_is_required():
    result = packer_validate("-var", f"base_ami_id={PLACEHOLDER_AMI}")
    assert result.returncode != 0
    assert 'Unset variable "base_os"' in result.stdout + result.stderr


@needs_packer
@pytest.mark.parametrize("ami", ["ami-12345678", PLACEHOLDER_AMI])
def test_base_ami_accepts_both_ami_id_lengths(ami: str):
    assert AMI_ID.match(ami)
    result = packer_validate("-var", f"base_os={BASE_OS}", "-var", f"base_ami_id={ami}")
    assert result.returncode == 0, result.stdout + result.stderr


@needs_packer
@pytest.mark.parametrize("ami", ["debian-12-amd64-*", "ami-123", "ami-0123456789ABCDEF0", "ami-0123456789abcdefg", "xami-12345678", "ami-1234 678"])
def test_base_ami_rejects_anything_but_an_ami_id(ami: str):
    assert not AMI_ID.match(ami)
    result = packer_validate("-var", f"base_os={BASE_OS}", "-var", f"base_ami_id={ami}")
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
    found = re.findall(r"packer validate -var base_os=(\S+) -var base_ami_id=(\S+) ", lint)
    assert found == [(BASE_OS, PLACEHOLDER_AMI)]
    assert AMI_ID.match(found[0][1])


def test_template_reads_versions_from_the_lockfile_and_runs_golden_image():
    text = TEMPLATE.read_text()
    assert 'yamldecode(file("${path.root}/../../infra/gpu_platform/data/versions.yaml"))' in text
    assert 'playbook_file = "${path.root}/../golden_image.yml"' in text
    assert 'groups        = ["golden_image"]' in text


def oses_the_pins_exist_for() -> set[str]:
    """package_availability keys whose repository publishes the pinned driver branch and CUDA minor, booting cgroup v2."""
    return set(node_oses(parse_lockfile(load_lockfile())))


def template_base_os_choices() -> list[str]:
    text = TEMPLATE.read_text()
    match = re.search(r"condition\s*=\s*contains\(\[([^\]]*)\], var\.base_os\)", text)
    assert match, "base_os has no validation list"
    return re.findall(r'"([a-z0-9]+)"', match.group(1))


def test_base_os_choices_are_the_oses_the_production_pins_exist_for():
    """A Debian 12 base (Debian's archive has no R580) must be refused by `packer validate`, before a
    build instance is paid for, and every OS NVIDIA publishes the pins for must be buildable."""
    choices = template_base_os_choices()
    assert set(choices) == oses_the_pins_exist_for()
    assert "debian12" not in choices
    # RHEL 8 boots cgroup v1, which the 1.35 kubelet refuses (failCgroupV1): its nodes never turn Ready.
    assert "rhel8" not in choices
    logins = re.search(r"ssh_username = lookup\(\{([^}]*)\}, var\.base_os", TEMPLATE.read_text())
    assert logins
    assert dict(re.findall(r'(\w+) = "([\w-]+)"', logins.group(1))) == {key: "ubuntu" if key.startswith("ubuntu") else "ec2-user" for key in choices}


@needs_packer
@pytest.mark.parametrize("base_os", template_base_os_choices())
def test_every_base_os_choice_validates(base_os: str):
    result = packer_validate("-var", f"base_os={base_os}", "-var", f"base_ami_id={PLACEHOLDER_AMI}")
    assert result.returncode == 0, result.stdout + result.stderr


@needs_packer
@pytest.mark.parametrize("base_os", ["debian12", "rhel8", "ubuntu2004", "Ubuntu2404", ""])
def test_a_base_os_the_pins_do_not_exist_for_is_refused(base_os: str):
    result = packer_validate("-var", f"base_os={base_os}", "-var", f"base_ami_id={PLACEHOLDER_AMI}")
    assert result.returncode != 0
    assert "base_os value must be one of" in " ".join((result.stdout + result.stderr).split())


def test_build_passes_the_declared_os_and_the_packer_run_to_the_playbook():
    """The image manifest records the Packer run (packer main.go sets PACKER_RUN_UUID for the run, and the manifest
    post-processor records the same id with the AMI): golden-image-matches-lockfile ties the two files by it."""
    text = TEMPLATE.read_text()
    assert '"image_manifest_os=${var.base_os} image_manifest_packer_run_uuid=${var.packer_run_uuid}"' in text
    assert 'default     = env("PACKER_RUN_UUID")' in text
    first = yaml.safe_load((ANSIBLE_DIR / "golden_image.yml").read_text())[0]["pre_tasks"][0]
    assert first["ansible.builtin.include_role"] == {"name": "image_manifest", "tasks_from": "declared_os"}


def image_os_check(facts: dict[str, str], **extra: str) -> tuple[int, str]:
    result = run_playbook(HERE / "playbooks" / "image_os.yml", {"fake": facts, **extra})
    return result.returncode, " | ".join(failure_messages(result))


@pytest.mark.parametrize(
    ("facts", "os_key"),
    [(UBUNTU_2204, "ubuntu2204"), (UBUNTU_2404, "ubuntu2404"), (RHEL_9, "rhel9"), (DEBIAN_12, "debian12")],
    ids=["ubuntu2204", "ubuntu2404", "rhel9", "debian12"],
)
def test_image_os_check_accepts_the_os_the_instance_runs(facts: dict[str, str], os_key: str):
    rc, msg = image_os_check(facts, image_manifest_os=os_key)
    assert rc == 0, msg


def test_image_os_check_refuses_a_base_ami_of_another_os_in_one_line():
    rc, msg = image_os_check(DEBIAN_12, image_manifest_os="ubuntu2404")
    assert rc != 0
    assert msg == (
        "image_manifest: the build instance runs debian12 (Debian 12.8) but image_manifest_os is ubuntu2404; "
        "set Packer's base_os (or -e image_manifest_os=...) to the OS of base_ami_id"
    )


def test_image_os_check_needs_the_declaration():
    rc, msg = image_os_check(UBUNTU_2404)
    assert rc != 0
    assert "image_manifest_os is unset" in msg


# Packer >= 1.10 bundles no amazon or ansible plugin: the directory must declare both.
PLUGINS_FILE = ANSIBLE_DIR / "packer" / "plugins.pkr.hcl"


def _unquote(value: str) -> str:
    # python-hcl2 keeps an HCL string's quotes in the value it returns.
    return value[1:-1] if value.startswith('"') and value.endswith('"') else value


def parse_packer_dir(files: list[Path]) -> dict[str, list]:
    """The blocks Packer reads from these .pkr.hcl files (a directory is the union of its files' blocks)."""
    merged: dict[str, list] = {}
    for path in files:
        with path.open() as f:
            for key, blocks in hcl2.load(f).items():
                if not key.startswith("__"):
                    merged.setdefault(key, []).extend(blocks)
    return merged


def required_plugins(parsed: dict[str, list]) -> dict[str, dict[str, str]]:
    """name -> {version, source} from every packer { required_plugins { ... } } block."""
    found: dict[str, dict[str, str]] = {}
    for packer in parsed.get("packer", []):
        for block in packer.get("required_plugins", []):
            for name, spec in block.items():
                if not name.startswith("__"):
                    found[name] = {k: _unquote(v) for k, v in spec.items() if not k.startswith("__")}
    return found


def components_used(parsed: dict[str, list]) -> list[tuple[str, str]]:
    """(kind, type) of every source, provisioner and post-processor the template uses."""
    used = [("source", _unquote(kind)) for block in parsed.get("source", []) for kind in block if not kind.startswith("__")]
    for build in parsed.get("build", []):
        for kind in ("provisioner", "post-processor"):
            used += [(kind, _unquote(name)) for block in build.get(kind, []) for name in block if not name.startswith("__")]
    return used


def test_the_template_alone_uses_plugins_no_current_packer_bundles():
    """The defect: gpu-node.pkr.hcl on its own (as it was) fails `packer build` on Packer >= 1.10."""
    parsed = parse_packer_dir([TEMPLATE])
    assert required_plugins(parsed) == {}
    assert undeclared(components_used(parsed), []) == ['source "amazon-ebs"', 'provisioner "ansible"']


def test_the_directory_declares_every_plugin_it_uses_at_the_locked_version():
    parsed = parse_packer_dir(sorted((ANSIBLE_DIR / "packer").glob("*.pkr.hcl")))
    plugins = required_plugins(parsed)
    used = components_used(parsed)
    assert undeclared(used, plugins) == []
    tools = load_lockfile()["tools"]
    assert plugins == {
        "amazon": {"version": f"= {tools['packer-plugin-amazon']}", "source": "github.com/hashicorp/amazon"},
        "ansible": {"version": f"= {tools['packer-plugin-ansible']}", "source": "github.com/hashicorp/ansible"},
    }
    # Every declared plugin is used: a stale declaration would make `packer init` fetch for nothing.
    assert {providing_plugin(kind, name, plugins) for kind, name in used} - {""} == set(plugins)
    (packer,) = parsed["packer"]
    assert _unquote(packer["required_version"]) == ">= 1.10.0"


def test_the_packer_block_lives_outside_the_file_packer_1_6_validates():
    """CI validates gpu-node.pkr.hcl with Debian's Packer 1.6, which rejects a required_plugins block."""
    assert "required_plugins" not in TEMPLATE.read_text()
    lint = (ANSIBLE_DIR / "scripts" / "lint.sh").read_text()
    assert '"${ansible_dir}/packer/gpu-node.pkr.hcl"' in lint


def test_readme_says_packer_init_before_the_build():
    readme = (ANSIBLE_DIR / "README.md").read_text()
    init, build = readme.find("packer init ansible/packer"), readme.find("packer build")
    assert init != -1, "ansible/README.md never says `packer init ansible/packer`"
    assert init < build, "`packer init` must come before `packer build`"
    assert re.search(r"packer build [^\n`]* ansible/packer(`|\s|$)", readme), "the build must name the directory, so plugins.pkr.hcl is read"


def _requirements(text: str) -> dict[str, object]:
    """name -> requirement of a required_plugins block as python-hcl2 reads it (quotes stripped, a string left a string)."""
    out: dict[str, object] = {}
    for packer in hcl2.loads(text).get("packer", []):
        for block in packer.get("required_plugins", []):
            for name, spec in block.items():
                if name.startswith("__"):
                    continue
                out[name] = {k: _unquote(v) for k, v in spec.items() if not k.startswith("__")} if isinstance(spec, dict) else _unquote(spec)
    return out


def test_packer_accepts_every_required_plugin_the_directory_declares():
    """Packer 1.16's decoding of required_plugins (behaviour.packer), over the real file: CI's Packer 1.6 cannot read it."""
    reqs = _requirements(PLUGINS_FILE.read_text())
    assert set(reqs) == {"amazon", "ansible"}
    assert {name: required_plugin_problems(name, req) for name, req in reqs.items()} == {"amazon": [], "ansible": []}


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ('amazon = "1.8.2"', "is not possible; write an object"),
        ('amazon = { source = "github.com/hashicorp/amazon" }', "no version constraint was set"),
        ('amazon = { version = "latest", source = "github.com/hashicorp/amazon" }', "is not a version constraint"),
        ('amazon = { version = "= 1.8.2-rc1", source = "github.com/hashicorp/amazon" }', "names a pre-release"),
        ('amazon = { version = "= 1.8.2" }', "no source was set"),
        ('amazon = { version = "= 1.8.2", source = "hashicorp/amazon" }', "a host and a path with 2 components"),
        ('amazon = { version = "= 1.8.2", source = "github.com/hashicorp/packer-plugin-amazon" }', "'packer-' prefix"),
        ('amazon = { version = "= 1.8.2", source = "https://github.com/hashicorp/amazon" }', "must not contain a scheme"),
        ('Amazon = { version = "= 1.8.2", source = "github.com/hashicorp/amazon" }', "must be normalized"),
        ('amazon = { version = "= 1.8.2", source = "github.com/hashicorp/amazon", sha = "x" }', "can only contain version and source"),
    ],
)
def test_a_required_plugin_packer_refuses_is_refused_here(entry: str, says: str):
    reqs = _requirements(f"packer {{\n  required_plugins {{\n    {entry}\n  }}\n}}\n")
    ((name, req),) = reqs.items()
    problems = required_plugin_problems(name, req)
    assert any(says in p for p in problems), problems
