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
# What a user waits for when running site.yml against a node is ansible-playbook itself (start-up,
# inventory, the play): Molecule calls it by name, so a wrapper first on PATH times each call.
shim="$(mktemp -d)"
trap 'molecule destroy >/dev/null 2>&1; rm -rf "${shim}"' EXIT
cat >"${shim}/ansible-playbook" <<SHIM
#!/usr/bin/env bash
start=\$(date +%s%N)
"$(command -v ansible-playbook)" "\$@"
rc=\$?
echo \$(( (\$(date +%s%N) - start) / 1000000 )) >"${shim}/last-ms"
exit \$rc
SHIM
chmod +x "${shim}/ansible-playbook"

timed() {  # prints milliseconds of `molecule converge`; leaves ansible-playbook's own in ${shim}/converge-$1-ms
  local start
  start=$(date +%s%N)
  PATH="${shim}:${PATH}" molecule converge >"/tmp/gpu-platform-converge-$1.log" 2>&1 || { tail -40 "/tmp/gpu-platform-converge-$1.log" >&2; exit 1; }
  echo $(( ($(date +%s%N) - start) / 1000000 ))
  mv "${shim}/last-ms" "${shim}/converge-$1-ms"
}
first=$(timed 1)
second=$(timed 2)
changed=$(grep -Eo 'changed=[0-9]+' /tmp/gpu-platform-converge-2.log | tail -1)
seconds() { awk -v ms="$1" 'BEGIN { printf "%.1f", ms / 1000 }'; }
percent() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d%%", 100 * b / a }'; }
# The playbook's tasks alone, from profile_tasks' running total (no ansible-playbook start-up).
playbook_ms() {
  sed 's/\x1b\[[0-9;]*m//g' "/tmp/gpu-platform-converge-$1.log" \
    | grep -Eo '[0-9]+:[0-9]{2}:[0-9]{2}\.[0-9]+ *$' | tail -1 \
    | awk -F: '{ printf "%d", ($1 * 3600 + $2 * 60 + $3) * 1000 }'
}
a1=$(cat "${shim}/converge-1-ms")
a2=$(cat "${shim}/converge-2-ms")
p1=$(playbook_ms 1)
p2=$(playbook_ms 2)
printf '%-34s %9s %9s %7s\n' "" first second ratio
printf '%-34s %9s %9s %7s\n' "molecule converge (wall clock)" "$(seconds "${first}") s" "$(seconds "${second}") s" "$(percent "${first}" "${second}")"
printf '%-34s %9s %9s %7s\n' "ansible-playbook (what a user runs)" "$(seconds "${a1}") s" "$(seconds "${a2}") s" "$(percent "${a1}" "${a2}")"
printf '%-34s %9s %9s %7s\n' "tasks alone (profile_tasks total)" "$(seconds "${p1}") s" "$(seconds "${p2}") s" "$(percent "${p1}" "${p2}")"
# Tasks the second converge ran (ok=; skipped tasks are not counted) and its changes.
printf 'second converge: %s, %s\n' "$(grep -Eo 'ok=[0-9]+' /tmp/gpu-platform-converge-2.log | tail -1)" "${changed}"
if [[ "${changed}" != "changed=0" ]]; then
  echo "second converge was not idempotent (${changed})" >&2
  exit 1
fi
