"""The INI inventories `ansible-no-version-override` reads are read the way Ansible reads them.

ansible-core 2.19 `plugins/inventory/ini.py` (the `ini` inventory plugin) is run here through
`InventoryManager`, so a version the rule finds is one a play would really see on the host.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader

from gpu_platform_policies.rules.ansible import parse_ini_inventory
from tests.policies.cases_ansible import INI_DRIVER_PIN

INVENTORIES = [
    INI_DRIVER_PIN,
    "[gpu_nodes]\ngpu-01 ansible_host=10.0.0.11 cuda_version='12.8.0'\ngpu-02\n",
    '; comment\n[pool_h100]\ndgx-01 dcgm_version="4.2.3"  # trailing comment\n[pool_h100:vars]\nnvidia_driver_branch = 570\n',
]


@pytest.mark.parametrize("text", INVENTORIES)
def test_parsed_variables_are_the_ones_ansible_gives_the_host(tmp_path: Path, text: str) -> None:
    path = tmp_path / "hosts"
    path.write_text(text)
    inventory = InventoryManager(loader=DataLoader(), sources=[str(path)])
    parsed = parse_ini_inventory(text)
    assert parsed, "the parser found no variables"
    for section, values in parsed.items():
        if section.endswith(":vars"):
            group = inventory.groups[section.removesuffix(":vars")]
            for key, value in values.items():
                assert group.get_vars()[key] == value, (section, key)
        else:
            for host, host_vars in values.items():
                for key, value in host_vars.items():
                    assert inventory.get_host(host).get_vars()[key] == value, (host, key)
