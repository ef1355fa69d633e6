#!/usr/bin/env bash
# Debian packages the test suite needs. Installs only what is missing; needs root (CI is root).
set -euo pipefail
need=()
command -v promtool >/dev/null || need+=(prometheus)
if [ "${#need[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "system-deps: missing ${need[*]}; run 'sudo scripts/system-deps.sh' (or apt-get install them)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "system-deps: installed ${need[*]}"
