# Plugins the golden-image build uses. Packer >= 1.10 bundles no amazon or ansible plugin, so
# `packer init ansible/packer` must install these before `packer build ansible/packer` (the
# directory: Packer reads this file with gpu-node.pkr.hcl). Versions are the lockfile's
# tools.packer-plugin-amazon and tools.packer-plugin-ansible (Packer cannot read YAML here;
# tests/ansible/test_packer.py keeps them equal). A separate file because Debian's Packer 1.6,
# which CI validates gpu-node.pkr.hcl with, predates the required_plugins block.
packer {
  required_version = ">= 1.10.0"
  required_plugins {
    amazon = {
      # source "amazon-ebs" (the plugin registers its builder "ebs" under the plugin name)
      version = "= 1.8.2"
      source  = "github.com/hashicorp/amazon"
    }
    ansible = {
      # provisioner "ansible" (the plugin's default component)
      version = "= 1.1.6"
      source  = "github.com/hashicorp/ansible"
    }
  }
}
