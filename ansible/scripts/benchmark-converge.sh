#!/usr/bin/env bash
# Time the first and the second (idempotent) converge of the full node role set in the
# Molecule container. The second run should take well under a third of the first.
#   --cold   empty the apt download cache first, so the first converge downloads the driver
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ansible_dir="$(dirname "${here}")"
repo="$(dirname "${ansible_dir}")"
export PATH="${GPU_PLATFORM_VENV:-${repo}/.venv}/bin:${PATH}"
export CONTAINERS_CONF="${CONTAINERS_CONF:-${here}/containers.conf}"
cache="${GPU_PLATFORM_APT_CACHE:-/var/cache/gpu-platform-molecule/apt}"
cd "${ansible_dir}"

if [[ "${1:-}" == "--cold" ]]; then
  find "${cache}" -maxdepth 1 -name '*.deb' -delete 2>/dev/null || true
fi

molecule destroy >/dev/null 2>&1
molecule create >/dev/null 2>&1
# What a node brings before the roles (containerd); not part of either converge.
molecule prepare >/dev/null 2>&1
trap 'molecule destroy >/dev/null 2>&1' EXIT

timed() {  # prints milliseconds
  local start
  start=$(date +%s%N)
  molecule converge >"/tmp/gpu-platform-converge-$1.log" 2>&1 || { tail -40 "/tmp/gpu-platform-converge-$1.log" >&2; exit 1; }
  echo $(( ($(date +%s%N) - start) / 1000000 ))
}
first=$(timed 1)
second=$(timed 2)
changed=$(grep -Eo 'changed=[0-9]+' /tmp/gpu-platform-converge-2.log | tail -1)
printf 'first converge:  %d.%01d s\n' $((first / 1000)) $((first % 1000 / 100))
printf 'second converge: %d.%01d s (%s)\n' $((second / 1000)) $((second % 1000 / 100)) "${changed}"
printf 'second/first:    %d%%\n' $((100 * second / first))
# The playbook alone, from profile_tasks' running total: the figures above also hold Molecule's own
# start-up (scenario checks, inventory, ansible-playbook start), a fixed few seconds per converge.
playbook_s() {
  sed 's/\x1b\[[0-9;]*m//g' "/tmp/gpu-platform-converge-$1.log" \
    | grep -Eo '[0-9]+:[0-9]{2}:[0-9]{2}\.[0-9]+ *$' | tail -1 \
    | awk -F: '{ printf "%.1f", $1 * 3600 + $2 * 60 + $3 }'
}
p1=$(playbook_s 1)
p2=$(playbook_s 2)
printf 'playbook alone:  %s s vs %s s, %s%%\n' "${p1}" "${p2}" "$(awk -v a="${p1}" -v b="${p2}" 'BEGIN { printf "%d", 100 * b / a }')"
# Tasks the second converge ran (ok=; skipped tasks are not counted).
printf 'second converge tasks run: %s\n' "$(grep -Eo 'ok=[0-9]+' /tmp/gpu-platform-converge-2.log | tail -1)"
if [[ "${changed}" != "changed=0" ]]; then
  echo "second converge was not idempotent (${changed})" >&2
  exit 1
fi
