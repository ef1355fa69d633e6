#!/usr/bin/env bash
# Run the node validation on a real GPU host, locally, with no network and no installed Ansible.
#
#   ansible/scripts/gpu-host-check.sh --build   on a networked machine with the project venv:
#                                               vendors ansible-core (pure Python) into ansible/.gpu-host-deps
#   ansible/scripts/gpu-host-check.sh [OUTDIR]  on the GPU host (copy the repo with ansible/.gpu-host-deps)
#
# On the GPU host it records python/nvidia-smi output, `nvidia-smi -q -x` and the MIG profile and
# placement tables (`nvidia-smi mig -lgip`, `-lgipp`), runs the parser CLI,
# then validate.yml with a local connection twice: strict (the lockfile's driver pin), and with a
# copy of the lockfile whose driver version is the host's (so every other check is exercised).
# Without Python 3.11+ (ansible-core's controller minimum) only the parser CLI runs.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ansible_dir="$(dirname "${here}")"
repo="$(dirname "${ansible_dir}")"
deps="${ansible_dir}/.gpu-host-deps"
parser="${ansible_dir}/roles/gpu_node_validate/library/nvidia_smi_facts.py"

if [[ "${1:-}" == "--build" ]]; then
  venv_python="${GPU_PLATFORM_VENV:-${repo}/.venv}/bin/python"
  rm -rf "${deps}"
  mapfile -t pins < <("${venv_python}" - <<'PY'
import importlib.metadata as m
for dist in ("ansible-core", "jinja2", "markupsafe", "pyyaml", "packaging", "resolvelib"):
    print(f"{dist}=={m.version(dist)}")
PY
)
  # No cryptography (only vault needs it) and no compiled parts needed: PyYAML and MarkupSafe
  # fall back to pure Python when their extensions do not match the host's Python.
  # The project's uv at the version pyproject.toml requires (`make setup` bootstraps it; .venv itself
  # has no pip), else the machine's pip.
  uv_version="$(sed -n 's/^required-version = "==\(.*\)"$/\1/p' "${repo}/pyproject.toml")"
  uv="${repo}/.cache/uv-${uv_version}/bin/uv"
  if [[ -x "${uv}" ]]; then
    "${uv}" pip install --quiet --no-deps --no-compile --python "${venv_python}" --target "${deps}" "${pins[@]}" || exit 1
  else
    python3 -m pip install --quiet --no-deps --no-compile --target "${deps}" "${pins[@]}" || exit 1
  fi
  rm -rf "${deps}/ansible_test" "${deps}/bin"
  du -sh "${deps}"
  exit 0
fi

out="${1:-${OUT:-/tmp/gpu-host-check}}"
mkdir -p "${out}"
python="$(command -v python3)"
log() { echo "== $*" | tee -a "${out}/summary.txt"; }

log "python: $("${python}" --version 2>&1) at ${python}"
nvidia-smi | tee "${out}/nvidia-smi.txt"
nvidia-smi -q -x > "${out}/nvidia-smi-q-x.xml" || { log "nvidia-smi -q -x failed"; exit 1; }
# The MIG profiles and placements the driver offers (listed with MIG disabled too); the catalog's
# layouts are checked against them (tests/foundation/test_catalog.py).
nvidia-smi mig -lgip > "${out}/nvidia-smi-mig-lgip.txt" 2>&1 || log "nvidia-smi mig -lgip: exit code $? (no MIG on this GPU?)"
nvidia-smi mig -lgipp > "${out}/nvidia-smi-mig-lgipp.txt" 2>&1 || log "nvidia-smi mig -lgipp: exit code $?"

driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
product="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
count="$(nvidia-smi -L | grep -c '^GPU ')"
case "${product}" in
  "NVIDIA H200"*) model=H200-141GB ;;
  "NVIDIA H100"*) model=H100-80GB ;;
  "NVIDIA A100-SXM4-80GB" | "NVIDIA A100 80GB PCIe") model=A100-80GB ;;
  "NVIDIA A100"*) model=A100-40GB ;;
  "NVIDIA L40S") model=L40S ;;
  "NVIDIA L4") model=L4 ;;
  "NVIDIA A10G") model=A10G ;;
  "Tesla T4") model=T4 ;;
  *) model="" ;;
esac
log "host: ${count} x ${product} (pool model ${model:-unknown}), driver ${driver}"
runtime_check=false
command -v nvidia-container-cli >/dev/null && runtime_check=true
log "container runtime check: ${runtime_check} (nvidia-container-cli $(command -v nvidia-container-cli || echo absent))"
# containerd's CDI switch is checked where there is a containerd to ask (crictl info or config dump).
cdi_check=false
{ command -v crictl || command -v containerd; } >/dev/null && cdi_check=true
log "containerd CDI check: ${cdi_check}"

export PYTHONPATH="${deps}${PYTHONPATH:+:${PYTHONPATH}}"
locked_driver="$("${python}" -c "import yaml,sys; print(yaml.safe_load(open(sys.argv[1]))['nvidia_driver']['version'])" \
  "${repo}/infra/gpu_platform/data/versions.yaml" 2>/dev/null || echo unknown)"

log "parser CLI (strict: lockfile driver ${locked_driver})"
"${python}" "${parser}" --xml "${out}/nvidia-smi-q-x.xml" --expect "{\"driver_version\": \"${locked_driver}\", \"gpu_count\": ${count}}" \
  > "${out}/parser-strict.json"
log "parser CLI exit code $?"
"${python}" "${parser}" --xml "${out}/nvidia-smi-q-x.xml" --expect "{\"driver_version\": \"${driver}\", \"gpu_count\": ${count}}" \
  > "${out}/parser-host-driver.json"
log "parser CLI with the host's driver: exit code $?"

if ! "${python}" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  log "python < 3.11: ansible-core cannot run here; parser CLI results only"
  exit 0
fi
if [[ ! -d "${deps}/ansible" || -z "${model}" ]]; then
  log "no vendored ansible-core (${deps}) or unknown GPU model: parser CLI results only"
  exit 0
fi

cat > "${out}/inventory.yml" <<INV
gpu_nodes:
  hosts:
    gpu-host:
      ansible_connection: local
      ansible_python_interpreter: ${python}
      ansible_become: false
INV
playbook() {
  ANSIBLE_CONFIG="${ansible_dir}/ansible.cfg" ANSIBLE_ROLES_PATH="${ansible_dir}/roles" \
    ANSIBLE_LOOKUP_PLUGINS="${ansible_dir}/plugins/lookup" ANSIBLE_HOME="${TMPDIR:-/tmp}/gpu-host-check-ansible-home" ANSIBLE_NOCOLOR=1 \
    ANSIBLE_CACHE_PLUGIN=ansible.builtin.memory \
    "${python}" -c 'import sys; from ansible.cli.playbook import main; sys.argv[0] = "ansible-playbook"; main()' \
    -i "${out}/inventory.yml" "${ansible_dir}/validate.yml" \
    -e "{\"gpu_node_validate_gpu_model\": \"${model}\", \"gpu_node_validate_gpu_count\": ${count}}" \
    -e "{\"gpu_node_validate_check_container_runtime\": ${runtime_check}, \"gpu_node_validate_check_containerd_cdi\": ${cdi_check}}" "$@"
}

log "validate.yml, strict (lockfile driver ${locked_driver})"
playbook -e "gpu_node_validate_report_path=${out}/node-report-strict.json" > "${out}/validate-strict.log" 2>&1
log "validate.yml strict: exit code $?"

"${python}" - "${repo}/infra/gpu_platform/data/versions.yaml" "${out}/versions-host-driver.yaml" "${driver}" <<'PY'
import sys, yaml
data = yaml.safe_load(open(sys.argv[1]))
data["nvidia_driver"]["version"] = sys.argv[3]
yaml.safe_dump(data, open(sys.argv[2], "w"))
PY
log "validate.yml with the host's driver ${driver} as the pin"
GPU_PLATFORM_VERSIONS_FILE="${out}/versions-host-driver.yaml" \
  playbook -e "gpu_node_validate_report_path=${out}/node-report-host-driver.json" > "${out}/validate-host-driver.log" 2>&1
log "validate.yml with the host's driver: exit code $?"
exit 0
