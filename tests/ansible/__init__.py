"""Tests of the Ansible half: roles, playbooks, inventories, Molecule-independent checks."""
