#!/usr/bin/env bash
# yamllint, ansible-lint (production profile, empty skip list), --syntax-check of every playbook
# against every inventory, and `packer validate` of the golden-image template.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ansible_dir="$(dirname "${here}")"
repo="$(dirname "${ansible_dir}")"
venv="${GPU_PLATFORM_VENV:-${repo}/.venv}"
export PATH="${venv}/bin:${PATH}"
cd "${ansible_dir}"

echo "== yamllint"
yamllint -c .yamllint --strict .

echo "== ansible-lint"
ansible-lint --offline

echo "== syntax-check"
for playbook in site.yml validate.yml golden_image.yml driver_upgrade.yml node_taints.yml gpu_node_repair.yml; do
  for inventory in inventories/*/; do
    ansible-playbook --syntax-check -i "${inventory}" "${playbook}" >/dev/null
    echo "ok: ${playbook} with ${inventory}"
  done
done

echo "== packer validate"
if ! command -v packer >/dev/null; then
  echo "packer not found: run ansible/scripts/install-ci-deps.sh" >&2
  exit 1
fi
# An absolute path: packer 1.6 mis-resolves `..` in path.root for relative template paths.
# base_ami_id is required and has no default; a well-formed placeholder, since validate is offline.
packer validate -var base_os=ubuntu2404 -var base_ami_id=ami-0123456789abcdef0 "${ansible_dir}/packer/gpu-node.pkr.hcl"
echo "ok: packer/gpu-node.pkr.hcl"

echo "== role READMEs"
python3 "${here}/role-readme.py" --check
echo "ok: variable tables match the argument specs"
