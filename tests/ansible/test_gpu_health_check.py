"""The bare-metal GPU health check (role gpu_health_check): the real script, run as its timer runs it.

It reads the kernel log (the driver's `NVRM: Xid (PCI:<bus>): <code>, ...` lines, as NVIDIA's "XID Errors"
document prints them) and counts the GPUs nvidia-smi still sees; on a fatal XID or a missing GPU it cordons
the node and taints it NoExecute through kubectl (`kubectl cordon NODE`, `kubectl taint node NODE
KEY=VALUE:NoExecute --overwrite`), here a fake kubectl that records its arguments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpu_platform.behaviour.node_health import WELL_KNOWN_XIDS
from gpu_platform.pools import UNHEALTHY_TAINT_KEY
from tests.ansible.fake_kube_api import Cluster, FakeKubeApi, node
from tests.ansible.helpers import ANSIBLE_DIR, BIN, ROLES, ansible_env, failure_messages, run_playbook

SCRIPT = ROLES / "gpu_health_check" / "files" / "gpu-health-check"
DEFAULTS = yaml.safe_load((ROLES / "gpu_health_check" / "defaults" / "main.yml").read_text())
XID_79 = "[ 8123.456789] NVRM: Xid (PCI:0000:3b:00): 79, pid=48213, name=python3, GPU has fallen off the bus.\n"
XID_13 = "[ 9001.000001] NVRM: Xid (PCI:0000:5e:00): 13, pid=50123, name=python3, Graphics Exception: ESR 0x404600=0x80000000\n"


class Node:
    """A node as the script sees it: a config file, a kernel log, fake nvidia-smi and kubectl on disk."""

    def __init__(self, tmp: Path, gpus: int | None = 8, kubectl_rc: int = 0, smi: str | None = None):
        self.tmp = tmp
        self.calls = tmp / "kubectl.calls"
        self.log = tmp / "kern.log"
        self.log.write_text("")
        self.state = tmp / "state" / "gpu-health.json"
        smi_path = tmp / "nvidia-smi"
        smi_path.write_text(smi or ("#!/bin/sh\n" + "".join(f"echo 00000000:{i:02X}:00.0\n" for i in range(gpus or 0))))
        smi = smi_path
        (tmp / "fencer.kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
        kubectl = tmp / "kubectl"
        kubectl.write_text(f'#!/bin/sh\necho "$@" >> {self.calls}\nexit {kubectl_rc}\n')
        for f in (smi, kubectl):
            f.chmod(0o755)
        self.config = tmp / "config.json"
        self.config.write_text(
            json.dumps(
                {
                    "node_name": "dgx-h100-02",
                    "gpu_count": 8,
                    "fatal_xids": DEFAULTS["gpu_health_check_fatal_xids"],
                    "taint_key": DEFAULTS["gpu_health_check_taint_key"],
                    "kubeconfig": str(tmp / "fencer.kubeconfig"),
                    "kubectl": str(kubectl),
                    "nvidia_smi": str(smi),
                    "state_file": str(self.state),
                    "command_timeout_seconds": 2,
                }
            )
        )

    def check(self, journald: bool = False) -> subprocess.CompletedProcess[str]:
        """One timer run, over the kernel log file, or over journald (a fake journalctl in the node's folder)."""
        source = [] if journald else ["--kernel-log", str(self.log)]
        return subprocess.run(
            [sys.executable, str(SCRIPT), "--config", str(self.config), *source],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PATH": f"{self.tmp}:/usr/bin:/bin" if journald else "/usr/bin:/bin"},
        )

    def kubectl_calls(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def recorded(self) -> dict:
        return json.loads(self.state.read_text())


KUBECONFIG = "--kubeconfig {tmp}/fencer.kubeconfig"


def test_the_role_fences_on_the_faults_eks_repairs_with_the_taint_the_platform_tolerates() -> None:
    """Bare metal and EKS act on the same XIDs; the GPU Operator's daemonsets stay on a fenced node."""
    assert set(DEFAULTS["gpu_health_check_fatal_xids"]) == WELL_KNOWN_XIDS
    assert DEFAULTS["gpu_health_check_taint_key"] == UNHEALTHY_TAINT_KEY


def test_a_healthy_node_is_left_alone(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.log.write_text(XID_13)  # an application's fault, not the GPU's
    run = node.check()
    assert run.returncode == 0, run.stderr
    assert node.kubectl_calls() == []
    assert "fenced" not in node.recorded()


def test_xid_79_cordons_the_node_and_evicts_its_gpu_pods(tmp_path: Path) -> None:
    node = Node(tmp_path, gpus=7)
    node.log.write_text(XID_13 + XID_79)
    run = node.check()
    assert run.returncode == 0, run.stderr
    kc = KUBECONFIG.format(tmp=tmp_path)
    assert node.kubectl_calls() == [
        f"{kc} cordon dgx-h100-02",
        f"{kc} taint node dgx-h100-02 gpu-platform.io/gpu-unhealthy=xid-79:NoExecute --overwrite",
    ]
    state = node.recorded()
    assert state["fenced"] is True and state["reason"] == "xid-79"
    assert state["details"] == ["XID 79 on GPU 0000:3b:00"]  # acted on before nvidia-smi, which may hang after an XID 79
    assert "fenced (XID 79 on GPU 0000:3b:00); run gpu_node_repair.yml" in run.stdout


def test_a_missing_gpu_alone_fences(tmp_path: Path) -> None:
    node = Node(tmp_path, gpus=7)
    assert node.check().returncode == 0
    assert node.kubectl_calls()[-1].endswith("gpu-platform.io/gpu-unhealthy=gpu-missing:NoExecute --overwrite")


def test_fencing_is_one_way_and_keeps_its_first_reason(tmp_path: Path) -> None:
    """An uncordon by hand does not return the node: the next run fences again, with the first reason."""
    node = Node(tmp_path, gpus=7)
    node.log.write_text(XID_79)
    node.check()
    node.log.write_text("")
    node.check()
    calls = node.kubectl_calls()
    assert len(calls) == 4 and calls[1] == calls[3]
    assert node.recorded()["reason"] == "xid-79"


def test_a_failed_fence_fails_the_unit_and_is_retried(tmp_path: Path) -> None:
    node = Node(tmp_path, gpus=7, kubectl_rc=1)
    node.log.write_text(XID_79)
    run = node.check()
    assert run.returncode == 1, "systemd must show the unit failed"
    assert "fencing failed: " in run.stderr and "cordon exited 1" in run.stderr
    assert node.recorded()["fenced"] is True
    node.check()
    assert len(node.kubectl_calls()) == 2  # cordon tried on each run (it fails first, so no taint call)


def test_no_kubeconfig_fails_the_unit_instead_of_pretending(tmp_path: Path) -> None:
    node = Node(tmp_path, gpus=7)
    (tmp_path / "fencer.kubeconfig").unlink()
    run = node.check()
    assert run.returncode == 1 and "no kubeconfig at" in run.stderr
    assert node.kubectl_calls() == []


@pytest.mark.parametrize(
    "smi",
    ["#!/bin/sh\necho 'Failed to initialize NVML: Driver/library version mismatch'\nexit 18\n", "#!/bin/sh\nexec sleep 30\n"],
    ids=["driver-being-upgraded", "hung"],
)
def test_nvidia_smi_not_answering_is_reported_not_fenced(tmp_path: Path, smi: str) -> None:
    """Between a driver package upgrade and its reboot nvidia-smi fails; after XID 79 it may hang: neither fences."""
    node = Node(tmp_path, smi=smi)
    run = node.check()
    assert run.returncode == 0, run.stderr
    assert "nvidia-smi did not answer; not fenced on that alone" in run.stderr
    assert node.kubectl_calls() == []


@pytest.mark.parametrize("content", ["[]", "null", '"x"', '{"checked_until": "soon"}', '{"fenced": true}', "{"])
def test_a_damaged_record_never_disables_the_check(tmp_path: Path, content: str) -> None:
    node = Node(tmp_path, gpus=7)
    node.state.parent.mkdir()
    node.state.write_text(content)
    run = node.check()
    assert run.returncode == 0, run.stderr
    assert node.recorded()["fenced"] is True and "Traceback" not in run.stderr


def _journal(tmp_path: Path, rc: int = 0) -> Path:
    """A fake journalctl that records its arguments and prints nothing."""
    asked = tmp_path / "journalctl.args"
    journalctl = tmp_path / "journalctl"
    journalctl.write_text(f'#!/bin/sh\necho "$@" > {asked}\nexit {rc}\n')
    journalctl.chmod(0o755)
    return asked


def test_journald_is_read_across_reboots_from_the_last_run_on(tmp_path: Path) -> None:
    """`_TRANSPORT=kernel`, not `-k` (which implies -b, this boot only); a cursor, else the last run's time."""
    node = Node(tmp_path)
    node.state.parent.mkdir()
    node.state.write_text(json.dumps({"checked_until": 1795000000}))
    asked = _journal(tmp_path)
    cursor = node.state.with_name("journal.cursor")
    run = node.check(journald=True)
    assert run.returncode == 0, run.stderr
    assert asked.read_text().split() == ["_TRANSPORT=kernel", "-o", "cat", "--no-pager", f"--cursor-file={cursor}", "--since=@1795000000"]
    cursor.write_text("s=abc")
    node.check(journald=True)
    assert asked.read_text().split() == ["_TRANSPORT=kernel", "-o", "cat", "--no-pager", f"--cursor-file={cursor}"]
    assert node.kubectl_calls() == []


def test_a_failed_journal_read_fails_the_unit_and_keeps_its_place(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.state.parent.mkdir()
    node.state.write_text(json.dumps({"checked_until": 1795000000}))
    _journal(tmp_path, rc=1)
    run = node.check(journald=True)
    assert run.returncode == 1 and "cannot read the kernel log" in run.stderr
    assert node.recorded()["checked_until"] == 1795000000


@pytest.mark.parametrize(
    ("config", "says"),
    [("{", "unusable configuration"), (json.dumps({"fatal_xids": [79]}), "KeyError('state_file')")],
)
def test_a_broken_configuration_is_one_line_and_exit_2(tmp_path: Path, config: str, says: str) -> None:
    node = Node(tmp_path)
    node.config.write_text(config)
    run = node.check()
    assert run.returncode == 2
    assert len(run.stderr.splitlines()) == 1 and says in run.stderr and "Traceback" not in run.stderr


def test_the_repair_lifts_only_the_unhealthy_taint(tmp_path: Path) -> None:
    """gpu_node_repair.yml's own "Lift the unhealthy taint" task, run by the real kubernetes.core.k8s_taint against the
    fake API server: the health check's taint goes, the GPU taint and an administrator's stay."""
    repair = yaml.safe_load((ANSIBLE_DIR / "gpu_node_repair.yml").read_text())[0]
    lift = next(t for t in repair["post_tasks"] if t["name"] == "Lift the unhealthy taint")
    play = [{"name": "lift", "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [lift]}]
    playbook = tmp_path / "lift.yml"
    playbook.write_text(yaml.safe_dump(play))
    live = node("dgx-h100-02", 8)
    gpu = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    admin = {"key": "dedicated", "value": "vision", "effect": "NoSchedule"}
    live["spec"]["taints"] = [gpu, {"key": UNHEALTHY_TAINT_KEY, "value": "xid-79", "effect": "NoExecute"}, admin]
    with FakeKubeApi(Cluster(nodes={"dgx-h100-02": live})) as api:
        extra = {"k8s_node_maintenance_node_name": "dgx-h100-02", "k8s_node_maintenance_kubeconfig": str(api.kubeconfig(tmp_path / "kubeconfig"))}
        result = run_playbook(playbook, extra)
        assert result.returncode == 0, " | ".join(failure_messages(result)) or result.stdout[-3000:]
        assert api.snapshot()["nodes"]["dgx-h100-02"]["spec"]["taints"] == [gpu, admin]


def _repair(tmp_path: Path, hosts: list[str]) -> subprocess.CompletedProcess[str]:
    """The real gpu_node_repair.yml over local hosts in gpu_nodes (no fence record exists on this machine)."""
    inventory = tmp_path / "hosts.yml"
    members = {h: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False} for h in hosts}
    inventory.write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": members}}}}))
    cmd = [str(BIN / "ansible-playbook"), "-i", str(inventory), "--limit", ",".join(hosts), str(ANSIBLE_DIR / "gpu_node_repair.yml")]
    return subprocess.run(cmd, capture_output=True, text=True, env=ansible_env(), timeout=300, check=False)


def test_the_repair_refuses_more_than_one_node_per_run(tmp_path: Path) -> None:
    """`--limit gpu_nodes` would otherwise drain and reboot healthy nodes one after another."""
    run = _repair(tmp_path, ["node-a", "node-b"])
    assert run.returncode != 0
    assert any("repairs one fenced node per run" in m and "matches 2 hosts" in m for m in failure_messages(run)), run.stdout[-2000:]


def test_the_repair_refuses_a_node_that_is_not_fenced(tmp_path: Path) -> None:
    run = _repair(tmp_path, ["node-a"])
    assert run.returncode != 0
    messages = failure_messages(run)
    assert any("node-a is not fenced" in m and "gpu_node_repair_force=true" in m for m in messages), run.stdout[-2000:]
    assert not any("Cordon" in t["task"]["name"] for p in json.loads(run.stdout)["plays"] for t in p["tasks"]), "nothing past the guard runs"
