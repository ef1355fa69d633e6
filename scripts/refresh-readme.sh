#!/usr/bin/env bash
# Regenerate the README's generated tables (config keys, policy rules) from the code.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python - <<'PY'
import re
import subprocess
from pathlib import Path

readme = Path("README.md")
text = readme.read_text()
for marker, module in (("config-reference", "gpu_platform.spec.reference"), ("policy-reference", "gpu_platform_policies.reference")):
    table = subprocess.run([".venv/bin/python", "-m", module], capture_output=True, text=True, check=True).stdout.strip()
    pattern = re.compile(rf"(<!-- {marker}:start -->\n).*?(<!-- {marker}:end -->)", re.S)
    text = pattern.sub(lambda m: m.group(1) + table + "\n" + m.group(2), text)
readme.write_text(text)
PY
