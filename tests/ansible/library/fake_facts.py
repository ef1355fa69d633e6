#!/usr/bin/python
"""Test-only module: return the given facts as host facts (stands in for a host of another OS)."""

from ansible.module_utils.basic import AnsibleModule


def main() -> None:
    """Return `facts` as ansible_facts."""
    module = AnsibleModule(argument_spec={"facts": {"type": "dict", "required": True}}, supports_check_mode=True)
    module.exit_json(changed=False, ansible_facts=module.params["facts"])


if __name__ == "__main__":
    main()
