#!/usr/bin/env bash
# Builds a Debian root with the current stack from Debian's packages (mmdebstrap), for the
# current-stack CI stage (scripts/stack/test-current.sh) and for reproducing it by hand.
#   scripts/stack/make-root.sh ROOT [SUITE=trixie] [ARCH=host's]
# The root gets everything the project needs to build and test (the list below, the same
# roles as scripts/install-deps.sh's, minus the sanitizer toolchain, plus ccache). Downloaded
# .debs are kept in GJ_STACK_CACHE (default /var/cache/gj-stack/<suite>-<arch>) and reused:
# a CI that keeps that folder between runs downloads nothing twice. A foreign ARCH (arm64 on an
# amd64 host) needs qemu-user-static and binfmt-support. Needs root.
# Environment: GJ_DEBIAN_ARCHIVE (default: the archive this machine's apt uses,
# scripts/apt/debian-archive.sh), GJ_STACK_CACHE.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 ROOT [SUITE=trixie] [ARCH]" >&2; exit 2; }
root=$1 suite=${2:-trixie} arch=${3:-$(dpkg --print-architecture)}
mirror=$("$(dirname "$0")/../apt/debian-archive.sh")
cache=${GJ_STACK_CACHE:-/var/cache/gj-stack/$suite-$arch}
[ "$(id -u)" -eq 0 ] || { echo "make-root.sh: needs root (mmdebstrap in root mode); run it with sudo" >&2; exit 2; }
command -v mmdebstrap >/dev/null || { echo "make-root.sh: mmdebstrap not found; apt-get install mmdebstrap" >&2; exit 2; }
if [ -e "$root" ] && [ -n "$(ls -A "$root" 2>/dev/null)" ]; then
  echo "make-root.sh: $root exists and is not empty; remove it first" >&2; exit 2
fi

packages=(
  build-essential cmake pkg-config file ccache
  libcli11-dev libfmt-dev libspdlog-dev catch2
  libopenmpi-dev openmpi-bin mpich libmpich-dev
  openssh-server openssh-client iproute2 util-linux procps
  python3 python3-numpy python3-yaml python3-mpi4py python3-pytest python3-torch
)
mkdir -p "$cache"
# The cache goes in before apt downloads and comes back out, new .debs included, before the
# root's apt cache is emptied (download/empty skipped, then cleaned by the last hook).
mmdebstrap --variant=apt --arch="$arch" --include="$(IFS=,; echo "${packages[*]}")" \
  --aptopt='Acquire::Retries "3"' \
  --skip=download/empty \
  --setup-hook='mkdir -p "$1"/var/cache/apt/archives' \
  --setup-hook="sync-in $cache /var/cache/apt/archives/" \
  --customize-hook="sync-out /var/cache/apt/archives $cache" \
  --customize-hook='chroot "$1" apt-get clean' \
  "$suite" "$root" "$mirror"
