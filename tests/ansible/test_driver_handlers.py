"""A driver change reboots the node before any userspace restart, whatever order the tasks notified in.

Ansible runs notified handlers in the order the handlers section lists them, not in notification
order (ansible-core lib/ansible/executor/play_iterator.py and plugins/strategy/__init__.py:
`_do_handler_run` walks `iterator.handlers` in definition order). install-*.yml notify the
persistence daemon restart before the reboot; the role's handlers file must still reboot first.
"""

from __future__ import annotations

import json

from tests.ansible.helpers import HERE, run_playbook


def handler_order() -> list[str]:
    result = run_playbook(HERE / "playbooks" / "driver_handlers.yml", {}, "--check")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    tasks = [t["task"]["name"] for play in json.loads(result.stdout)["plays"] for t in play["tasks"]]
    return [name for name in tasks if name in {"Reboot the node for the NVIDIA driver", "Restart the NVIDIA persistence daemon"}]


def test_reboot_runs_before_the_persistence_daemon_restart():
    assert handler_order() == ["Reboot the node for the NVIDIA driver", "Restart the NVIDIA persistence daemon"]


def test_install_tasks_notify_the_restart_first_so_only_the_handler_order_protects_the_node():
    for name in ("install-debian.yml", "install-ubuntu.yml", "install-rhel.yml"):
        text = (HERE.parents[1] / "ansible" / "roles" / "nvidia_driver" / "tasks" / name).read_text()
        assert text.index("- Restart the NVIDIA persistence daemon") < text.index("- Reboot the node for the NVIDIA driver"), name
