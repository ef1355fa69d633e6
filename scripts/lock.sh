#!/usr/bin/env bash
# Re-resolve every Python dependency with uv (the one command for it: `make lock`):
#   requirements.in          -> pyproject.toml's `dev` group -> uv.lock (every package, with hashes)
#                            -> requirements.txt (the same pins and hashes, for plain pip)
#   requirements-checkov.in  -> requirements-checkov.txt (checkov's own virtualenv, with hashes)
# Usage: scripts/lock.sh [UV]   (UV: the uv binary, at tool.uv.required-version; `make lock` passes its own)
# uv arguments for both resolutions go in LOCK_ARGS (unset: --upgrade, re-resolve everything to the newest
# allowed; LOCK_ARGS="" keeps current pins and only adds what requirements*.in newly ask for).
set -euo pipefail
cd "$(dirname "$0")/.."
uv="${1:-uv}"
python="${PYTHON:-python3}"
read -r -a lock_args <<< "${LOCK_ARGS---upgrade}"
export UV_PYTHON_DOWNLOADS=never

# requirements.in (one requirement a line, comments allowed) becomes the `dev` group, plus uv itself.
"${python}" - <<'PY'
import re
import tomllib
from pathlib import Path

pyproject = Path("pyproject.toml")
text = pyproject.read_text()
uv_pin = tomllib.loads(text)["tool"]["uv"]["required-version"]
reqs = [line.split("#", 1)[0].strip() for line in Path("requirements.in").read_text().splitlines()]
reqs = [r for r in reqs if r] + [f"uv{uv_pin}"]
block = "dev = [\n" + "".join(f'  "{r}",\n' for r in reqs) + "]\n"
new, count = re.subn(r"(# requirements\.in:start\n).*?(# requirements\.in:end\n)", lambda m: m.group(1) + block + m.group(2), text, flags=re.S)
if count != 1:
    raise SystemExit("lock.sh: pyproject.toml lacks the '# requirements.in:start/end' markers around the dev group")
pyproject.write_text(new)
PY

"${uv}" lock "${lock_args[@]}"
{
  echo "# Every Python dependency of .venv, pinned with hashes: generated from uv.lock by \`make lock\`; do not edit."
  echo "# Without uv: python3 -m venv .venv && .venv/bin/pip install --require-hashes -r requirements.txt && .venv/bin/pip install --no-deps -e ."
  "${uv}" export --frozen --all-groups --no-emit-project --format requirements-txt --no-header
} > requirements.txt

"${uv}" pip compile --quiet "${lock_args[@]}" --generate-hashes --python "${python}" --no-header \
  --output-file requirements-checkov.txt requirements-checkov.in
sed -i '1i # checkov, pinned with hashes: generated from requirements-checkov.in by `make lock`; do not edit.' requirements-checkov.txt
git diff --stat -- pyproject.toml uv.lock requirements.txt requirements-checkov.txt
