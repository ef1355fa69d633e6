#!/usr/bin/env bash
# Regenerate the README's generated tables (config keys, policy rules) and schema/stack.schema.json from the code.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python - <<'PY'
import re
import subprocess
from pathlib import Path

readme = Path("README.md")
text = readme.read_text()
generators = (
    ("config-reference", ["gpu_platform.spec.reference"]),
    ("policy-reference", ["gpu_platform_policies.reference"]),
    ("change-reference", ["gpu_platform_policies.reference", "--change"]),
)
for marker, module in generators:
    table = subprocess.run([".venv/bin/python", "-m", *module], capture_output=True, text=True, check=True).stdout.strip()
    pattern = re.compile(rf"(<!-- {marker}:start -->\n).*?(<!-- {marker}:end -->)", re.S)
    text = pattern.sub(lambda m: m.group(1) + table + "\n" + m.group(2), text)
readme.write_text(text)
PY
# The editors' JSON Schema of stack files comes from the same models as the configuration reference.
.venv/bin/python -m gpu_platform.spec.schema --write
