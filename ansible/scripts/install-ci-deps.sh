#!/usr/bin/env bash
# Install the Debian packages the Ansible checks need, if missing (needs root and the Debian archive).
set -euo pipefail
packages=(podman runc debootstrap packer uidmap slirp4netns fuse-overlayfs openssh-client)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q "install ok installed" || missing+=("${p}")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "install-ci-deps: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
