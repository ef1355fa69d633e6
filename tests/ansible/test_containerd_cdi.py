"""containerd gets CDI in the table its major version reads, and gpu_node_validate checks the effective result.

containerd 1.x reads `enable_cdi`/`cdi_spec_dirs` as fields of the CRI plugin's own config
(`PluginConfig`, pkg/cri/config/config.go at v1.7.x, plugin `io.containerd.grpc.v1.cri`); 2.x reads
them from the CRI runtime plugin (`RuntimeConfig`, internal/cri/config/config.go at v2.1.x, plugin
`io.containerd.cri.v1.runtime`, registered in plugins/cri/runtime/plugin.go). Keys under the
`containerd` sub-table are not fields of either and are dropped when the TOML is decoded. `crictl info`
prints the running CRI's config (pkg/cri/server/status.go: `Info["config"]` is the JSON of that
struct, so `enableCDI` and `cdiSpecDirs` sit at the top of `config`).
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from gpu_platform.behaviour.containerd import load_config
from tests.ansible.helpers import DEBIAN_12, FIXTURES, HERE, UBUNTU_2204, failure_messages, load_nvidia_smi_module, run_playbook

smi = load_nvidia_smi_module()
OLD_DUMP = (FIXTURES / "containerd-1.7-config-dump-cdi-in-containerd-subtable.toml").read_text()
NEW_DUMP = (FIXTURES / "containerd-1.7-config-dump-cdi-in-cri-table.toml").read_text()
SPEC = "/var/run/cdi/nvidia.yaml"


def crictl_info(enable: bool, dirs: list[str], major: int) -> str:
    """`crictl info` output: status plus the CRI config, whose CDI fields are inline (1.x PluginConfig, 2.x RuntimeConfig)."""
    config = {"containerd": {"defaultRuntimeName": "nvidia"}, "enableCDI": enable, "cdiSpecDirs": dirs}
    if major == 2:
        config.update(containerdRootDir="/var/lib/containerd", containerdEndpoint="/run/containerd/containerd.sock")
    return json.dumps({"status": {"conditions": [{"type": "RuntimeReady", "status": True}]}, "config": config})


def test_the_former_drop_in_leaves_cdi_off_in_real_containerd_1_7():
    cdi = smi.containerd_cdi(config_dump=OLD_DUMP)
    assert cdi == {"source": "containerd config dump", "enabled": False, "spec_dirs": ["/etc/cdi", "/var/run/cdi"]}
    assert smi.containerd_failures(cdi, SPEC) == [
        'containerd: CDI is off in the effective configuration (containerd config dump); set enable_cdi in [plugins."io.containerd.grpc.v1.cri"] '
        '(containerd 1.7) or [plugins."io.containerd.cri.v1.runtime"] (2.x)'
    ]


def test_the_cri_table_drop_in_turns_cdi_on_in_real_containerd_1_7():
    cdi = smi.containerd_cdi(config_dump=NEW_DUMP)
    assert cdi["enabled"] is True
    assert smi.containerd_failures(cdi, SPEC) == []


@pytest.mark.parametrize("major", [1, 2])
def test_crictl_info_is_preferred_and_read_per_major(major: int):
    on = smi.containerd_cdi(crictl_info(True, ["/etc/cdi", "/var/run/cdi"], major), OLD_DUMP)
    assert on == {"source": "crictl info", "enabled": True, "spec_dirs": ["/etc/cdi", "/var/run/cdi"]}
    off = smi.containerd_cdi(crictl_info(False, ["/etc/cdi", "/var/run/cdi"], major), NEW_DUMP)
    assert smi.containerd_failures(off, SPEC)[0].startswith("containerd: CDI is off in the effective configuration (crictl info)")


def test_a_spec_directory_containerd_does_not_scan_is_reported():
    cdi = smi.containerd_cdi(crictl_info(True, ["/etc/cdi"], 1))
    assert smi.containerd_failures(cdi, SPEC) == ["containerd: CDI spec directory /var/run/cdi is not in cdi_spec_dirs ['/etc/cdi']"]


def test_no_readable_configuration_is_a_failure_not_a_pass():
    assert smi.containerd_failures(smi.containerd_cdi("", ""), SPEC) == [
        "containerd: effective configuration unreadable (crictl info and containerd config dump both failed)"
    ]


def fake_node(answers: dict[str, tuple[int, str]]):
    """`run` and `which` for read_containerd: the commands a node has and what each answers."""
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int, str]:
        calls.append(argv)
        return answers[os.path.basename(argv[0])]

    def which(name: str) -> str | None:
        return f"/usr/bin/{name}" if name in answers else None

    return run, which, calls


def test_the_module_asks_the_cri_first_and_skips_the_dump_when_it_answers():
    info = crictl_info(True, ["/etc/cdi", "/var/run/cdi"], 1)
    run, which, calls = fake_node({"crictl": (0, info), "containerd": (0, OLD_DUMP)})
    read = smi.read_containerd(run, which, "unix:///run/containerd/containerd.sock")
    assert calls == [["/usr/bin/crictl", "--runtime-endpoint", "unix:///run/containerd/containerd.sock", "info"]]
    assert smi.containerd_cdi(**read)["source"] == "crictl info"


@pytest.mark.parametrize("crictl", [None, (1, "connect: connection refused")])
def test_the_module_falls_back_to_containerd_config_dump(crictl: tuple[int, str] | None):
    answers = {"containerd": (0, OLD_DUMP)} | ({"crictl": crictl} if crictl else {})
    run, which, calls = fake_node(answers)
    cdi = smi.containerd_cdi(**smi.read_containerd(run, which, "unix:///run/containerd/containerd.sock"))
    assert calls[-1] == ["/usr/bin/containerd", "config", "dump"]
    assert cdi == {"source": "containerd config dump", "enabled": False, "spec_dirs": ["/etc/cdi", "/var/run/cdi"]}


def test_the_module_reports_an_unreadable_configuration_when_both_fail():
    run, which, _ = fake_node({"crictl": (1, ""), "containerd": (1, "")})
    cdi = smi.containerd_cdi(**smi.read_containerd(run, which, "unix:///run/containerd/containerd.sock"))
    assert smi.containerd_failures(cdi, SPEC) == [
        "containerd: effective configuration unreadable (crictl info and containerd config dump both failed)"
    ]


NODE_1_7 = tomllib.loads((FIXTURES / "containerd-1.7-node-config.toml").read_text())
NODE_2_1 = tomllib.loads((FIXTURES / "containerd-2.1-node-config.toml").read_text())
FORMER_DROP_IN = tomllib.loads((FIXTURES / "containerd-1.7-former-nvidia-dropin.toml").read_text())


def node_settings_1_7(config: dict) -> dict:
    """What the node set itself and a GPU node must keep, read from an effective containerd 1.7 config."""
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    return {
        "SystemdCgroup": cri.get("containerd", {}).get("runtimes", {}).get("runc", {}).get("options", {}).get("SystemdCgroup"),
        "sandbox_image": cri.get("sandbox_image"),
        "registry.config_path": cri.get("registry", {}).get("config_path"),
    }


KEPT_1_7 = {"SystemdCgroup": True, "sandbox_image": "registry.k8s.io/pause:3.10", "registry.config_path": "/etc/containerd/certs.d"}


def test_the_former_drop_in_wiped_the_nodes_cri_settings_in_containerd_1_7():
    """containerd 1.7 mergeConfig: `to.Plugins[k] = v`, the drop-in's CRI table replaces the node's whole table."""
    effective = load_config([NODE_1_7, FORMER_DROP_IN], major=1)
    assert effective["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"] is True, "CDI shows as on: validation stayed green"
    assert node_settings_1_7(effective) == {"SystemdCgroup": None, "sandbox_image": None, "registry.config_path": None}


def test_the_same_drop_in_keeps_them_in_containerd_2():
    """containerd 2.x mergeConfig merges plugin tables key by key (containerd's own TestMergingPluginsWithTwoCriCniDropInConfigs)."""
    effective = load_config([NODE_1_7, FORMER_DROP_IN], major=2)
    assert node_settings_1_7(effective) == KEPT_1_7
    cni = load_config(
        [
            {"plugins": {"io.containerd.grpc.v1.cri": {"cni": {"bin_dir": "/b"}}}},
            {"plugins": {"io.containerd.grpc.v1.cri": {"cni": {"conf_dir": "/tmp"}}}},
        ],
        2,
    )
    assert cni["plugins"]["io.containerd.grpc.v1.cri"] == {"cni": {"bin_dir": "/b", "conf_dir": "/tmp"}}


def render_containerd(tmp_path: Path, major: str, node_config: str = "") -> Path:
    """What the role writes for containerd `major` on a node whose main config is `node_config`."""
    out = tmp_path / "out"
    out.mkdir()
    extra = {
        "fake": UBUNTU_2204,
        "out_dir": str(out),
        "nvidia_container_toolkit_containerd_major": major,
        "nvidia_container_toolkit_default_runtime": True,
        "_nvidia_container_toolkit_containerd_text": node_config,
    }
    result = run_playbook(HERE / "playbooks" / "render.yml", extra)
    assert result.returncode == 0, result.stdout[-3000:]
    return out


def test_containerd_1_keeps_every_cri_setting_of_the_node_and_adds_cdi(tmp_path: Path):
    node_text = (FIXTURES / "containerd-1.7-node-config.toml").read_text()
    out = render_containerd(tmp_path, "1", node_text)
    assert not (out / "containerd-nvidia-runtime.toml").exists(), "containerd 1.x gets no drop-in"
    main_text = (out / "containerd-config.toml").read_text()
    assert main_text.startswith(node_text.split("\n[plugins]")[0]), "the node's comments and version line stay as written"
    effective = load_config([tomllib.loads(main_text)], major=1)
    assert node_settings_1_7(effective) == KEPT_1_7
    cri = effective["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["enable_cdi"] is True and cri["cdi_spec_dirs"] == ["/etc/cdi", os.path.dirname(SPEC)]
    assert "enable_cdi" not in cri["containerd"], "a key under the containerd sub-table is ignored by every major"
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    assert cri["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert set(effective["plugins"]) == {"io.containerd.grpc.v1.cri"}


def test_containerd_1_without_a_config_gets_a_version_2_file_with_the_cri_table(tmp_path: Path):
    main = tomllib.loads((render_containerd(tmp_path, "1") / "containerd-config.toml").read_text())
    assert main["version"] == 2
    assert main["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"] is True


def test_containerd_1_refuses_a_config_of_another_schema(tmp_path: Path):
    extra = {"fake": UBUNTU_2204, "out_dir": str(tmp_path), "nvidia_container_toolkit_containerd_major": "1"}
    extra["_nvidia_container_toolkit_containerd_text"] = "version = 3\n"
    result = run_playbook(HERE / "playbooks" / "render.yml", extra)
    assert result.returncode != 0
    assert "/etc/containerd/config.toml: version = 3; containerd 1.x with this role needs version = 2" in result.stdout


def test_containerd_2_drop_in_puts_cdi_in_the_runtime_table_and_keeps_the_nodes_settings(tmp_path: Path):
    out = render_containerd(tmp_path, "2")
    dropin = tomllib.loads((out / "containerd-nvidia-runtime.toml").read_text())
    main = tomllib.loads((out / "containerd-config.toml").read_text())
    assert dropin["version"] == main["version"] == 3
    assert set(dropin["plugins"]) == {"io.containerd.cri.v1.runtime"}
    effective = load_config([NODE_2_1, dropin], major=2)
    runtime = effective["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["enable_cdi"] is True and runtime["cdi_spec_dirs"] == ["/etc/cdi", os.path.dirname(SPEC)]
    assert runtime["containerd"]["default_runtime_name"] == "nvidia"
    assert runtime["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    images = effective["plugins"]["io.containerd.cri.v1.images"]
    assert images["pinned_images"]["sandbox"] == "registry.k8s.io/pause:3.10"
    assert images["registry"]["config_path"] == "/etc/containerd/certs.d"


def fake_containerd(tmp_path: Path, version_line: str) -> dict[str, str]:
    from tests.ansible.helpers import ansible_env

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "containerd").write_text(f"#!/bin/sh\necho '{version_line}'\n")
    (bindir / "containerd").chmod(0o755)
    env = ansible_env()
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    return env


def toolkit_preflight(env: dict[str, str] | None, **role_vars: object) -> tuple[int, str]:
    extra = {"fake": DEBIAN_12, "role_name": "nvidia_container_toolkit", "role_tasks": "preflight", **role_vars}
    result = run_playbook(HERE / "playbooks" / "role_under_test.yml", extra, "--check", env=env)
    return result.returncode, " | ".join(failure_messages(result))


def test_preflight_refuses_containerd_1_6_which_cannot_inject_cdi_devices(tmp_path: Path):
    """Debian 12's own containerd is 1.6.20: its CRI PluginConfig has no EnableCDI field at all."""
    env = fake_containerd(tmp_path, "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3")
    rc, msg = toolkit_preflight(env)
    assert rc != 0
    assert msg.startswith("nvidia_container_toolkit: containerd 1.6.20 on localhost has no CDI support (enable_cdi arrived in containerd 1.7.0)")


def test_preflight_reads_the_major_from_containerd(tmp_path: Path):
    env = fake_containerd(tmp_path, "containerd containerd.io v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376")
    rc, msg = toolkit_preflight(env)
    assert rc == 0, msg


def test_preflight_without_containerd_asks_for_the_major(tmp_path: Path):
    env = fake_containerd(tmp_path, "")
    (tmp_path / "bin" / "containerd").unlink()
    rc, msg = toolkit_preflight(env)
    assert rc != 0
    assert "containerd is not installed on localhost" in msg and "nvidia_container_toolkit_containerd_major to 1 or 2" in msg
