#!/usr/bin/env bash
# Time a first `make demo` and `make test` as a new user gets them: a fresh clone of this repository's
# HEAD, with uv's cache in an empty temporary folder and pip's cache off, so every package is
# downloaded again. Prints one line per figure (benchmarks/results.yaml and docs/benchmarks.md quote them).
# Usage: scripts/measure-setup.sh [TEST_TARGET]
#   TEST_TARGET (default `test`) is the make target timed after the demo; `test-python` times the
#   suite without lint and Molecule (on machines that must not run podman); `none` stops after the demo.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:-test}"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

export UV_CACHE_DIR="${work}/uv-cache" PIP_NO_CACHE_DIR=1
git clone --quiet "${repo}" "${work}/clone"
# CI lays shared/ (reference data some tests read) beside the clone; do the same when this checkout has one.
for shared in "${repo}/../shared" "${repo}/../../shared"; do
  if [ -d "${shared}" ]; then ln -s "$(cd "${shared}" && pwd)" "${work}/shared"; break; fi
done
cd "${work}/clone"

seconds() { local start=$1; echo "$(( $(date +%s%N) - start ))" | awk '{printf "%.1f", $1 / 1e9}'; }

start=$(date +%s%N)
make --no-print-directory setup >"${work}/setup.log" 2>&1
setup_s=$(seconds "${start}")
start=$(date +%s%N)
make --no-print-directory demo >"${work}/demo.log" 2>&1
demo_s=$(seconds "${start}")
echo "commit $(git rev-parse --short HEAD), $(nproc) cores, uv cache and pip cache empty"
echo "make demo, set-up (uv bootstrap + uv sync of .venv, $(du -sm .venv | cut -f1) MiB): ${setup_s} s"
echo "make demo, the demo itself (plan + capacity of dev): ${demo_s} s"
[ "${target}" = none ] && exit 0
start=$(date +%s%N)
status=0
make --no-print-directory "${target}" >"${work}/test.log" 2>&1 || status=$?
test_s=$(seconds "${start}")
echo "make ${target} after the demo (system packages already present, .venv-checkov from scratch): ${test_s} s, exit ${status}"
tail -n 3 "${work}/test.log" | sed 's/^/  | /'
exit "${status}"
