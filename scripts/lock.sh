#!/usr/bin/env bash
# Re-resolve requirements.in into requirements.txt (every package pinned) in a throwaway venv,
# and checkov into requirements-checkov.txt. Review the diff, then `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

"${python}" -m venv "${tmp}/main"
"${tmp}/main/bin/pip" install --quiet --upgrade pip
"${tmp}/main/bin/pip" install --quiet -r requirements.in
{
  echo "# Every Python dependency, pinned (runtime, tests and linters). Regenerate with: make lock"
  "${tmp}/main/bin/pip" freeze --exclude-editable
} > requirements.txt

"${python}" -m venv "${tmp}/checkov"
"${tmp}/checkov/bin/pip" install --quiet --upgrade pip
"${tmp}/checkov/bin/pip" install --quiet checkov
{
  echo "# checkov runs in its own virtualenv (.venv-checkov): its pins conflict with the main .venv. Every package pinned."
  "${tmp}/checkov/bin/pip" freeze --exclude-editable
} > requirements-checkov.txt
git diff --stat requirements.txt requirements-checkov.txt
