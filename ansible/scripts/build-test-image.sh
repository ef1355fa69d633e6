#!/usr/bin/env bash
# Build (once) the Debian 12 image the Molecule scenarios converge, from a debootstrapped root
# filesystem: no registry is reachable in CI, only the Debian archive.
#
# The image is tagged with a hash of this script, so editing the package list or the apt sources
# rebuilds it and an unchanged script reuses the cached image.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-${here}/containers.conf}"
mirror="${GPU_PLATFORM_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security_mirror="${GPU_PLATFORM_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
image="${GPU_PLATFORM_TEST_IMAGE:-localhost/gpu-platform/debian-bookworm:test}"
tag="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"

if podman image exists "${image}" \
  && [[ "$(podman image inspect --format '{{ index .Labels "gpu-platform.script-hash" }}' "${image}")" == "${tag}" ]]; then
  echo "build-test-image: ${image} is current (${tag})"
  exit 0
fi

workdir="$(mktemp -d /var/tmp/gpu-platform-rootfs.XXXXXX)"
trap 'rm -rf "${workdir}"' EXIT
rootfs="${workdir}/rootfs"

# systemd-sysv gives /sbin/init so the container boots systemd like a node; python3 for Ansible;
# gnupg and ca-certificates for the repository steps the roles run.
debootstrap --variant=minbase \
  --include=python3,python3-apt,systemd,systemd-sysv,dbus,ca-certificates,gnupg,kmod,procps,openssh-server \
  bookworm "${rootfs}" "${mirror}"

# The driver lives in non-free; nvidia-persistenced in contrib. Both the bookworm and the
# bookworm-security builds must be visible so the pin to the older one is a real choice.
cat > "${rootfs}/etc/apt/sources.list" <<SOURCES
deb ${mirror} bookworm main contrib non-free non-free-firmware
deb ${mirror} bookworm-updates main contrib non-free non-free-firmware
deb ${security_mirror} bookworm-security main contrib non-free non-free-firmware
SOURCES
# Ansible reaches the container over SSH with pipelining, as it reaches real nodes: one round
# trip per task instead of the four to five `podman exec` calls of the podman connection.
# The container shares the host's network, so sshd listens on loopback only, on its own port.
mkdir -p "${rootfs}/etc/ssh/sshd_config.d"
cat > "${rootfs}/etc/ssh/sshd_config.d/molecule.conf" <<SSHD
Port ${GPU_PLATFORM_TEST_SSH_PORT:-2222}
ListenAddress 127.0.0.1
PermitRootLogin prohibit-password
PasswordAuthentication no
UseDNS no
SSHD
# A container has no console to start gettys on, and no hardware clock.
rm -f "${rootfs}/etc/systemd/system/getty.target.wants/"* || true
chroot "${rootfs}" apt-get clean
rm -rf "${rootfs}/var/lib/apt/lists/"*
# An empty list directory with a fresh mtime would look like a fresh cache to cache_valid_time.
touch -d @0 "${rootfs}/var/lib/apt/lists"

tar -C "${rootfs}" -c . | podman import \
  --change 'CMD ["/sbin/init"]' \
  --change "LABEL gpu-platform.script-hash=${tag}" \
  - "${image}"
echo "build-test-image: built ${image} (${tag})"
