#!/usr/bin/env bash
# Run every Molecule scenario from nothing on a Debian 12 CI machine (root; only PyPI and the
# Debian archive reachable). Installs the apt packages it needs, builds the test image on the
# first run (the scenario's create step calls build-test-image.sh) and runs `molecule test`.
#
#   ansible/scripts/molecule-test.sh            all scenarios
#   ansible/scripts/molecule-test.sh default    one scenario
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ansible_dir="$(dirname "${here}")"
repo="$(dirname "${ansible_dir}")"
venv="${GPU_PLATFORM_VENV:-${repo}/.venv}"

"${here}/install-ci-deps.sh"

export PATH="${venv}/bin:${PATH}"
export CONTAINERS_CONF="${CONTAINERS_CONF:-${here}/containers.conf}"
export ANSIBLE_FORCE_COLOR="${ANSIBLE_FORCE_COLOR:-0}"

cd "${ansible_dir}"
if [[ $# -gt 0 ]]; then
  for scenario in "$@"; do molecule test --scenario-name "${scenario}"; done
else
  molecule test --all
fi
