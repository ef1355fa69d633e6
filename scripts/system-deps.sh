#!/usr/bin/env bash
# Debian packages the full test suite needs, installed only when missing (needs root; CI is root):
# promtool (Debian's prometheus) for the alert rules, jq (what `gh --jq` runs) for the pull-request comment script, and the Ansible side's podman, runc,
# debootstrap, packer and friends (ansible/scripts/install-ci-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v promtool >/dev/null || need+=(prometheus)
command -v jq >/dev/null || need+=(jq)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "system-deps: missing ${need[*]}; run 'sudo scripts/system-deps.sh'" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  echo "system-deps: installed ${need[*]}"
fi
if [ "$(id -u)" -eq 0 ]; then
  ansible/scripts/install-ci-deps.sh
fi
