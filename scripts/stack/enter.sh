#!/usr/bin/env bash
# Runs a command inside a Debian root (made by scripts/stack/make-root.sh) with the repository
# mounted at /src, in private mount and PID namespaces: the root's /proc, /dev, /sys, /tmp and
# /run are its own and nothing stays mounted on the host when the command ends. Needs root.
#   scripts/stack/enter.sh ROOT SRC command [args...]
# Environment passed in (everything else is cleared): CI, GJ_*; CCACHE_DIR when it names a
# folder (mounted at /ccache; the root has ccache).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ROOT SRC command [args...]" >&2; exit 2; }
root=$(realpath "$1") src=$(realpath "$2"); shift 2
[ -x "$root/usr/bin/env" ] || { echo "enter.sh: $root is not a Debian root (no usr/bin/env); make it with scripts/stack/make-root.sh" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "enter.sh: needs root (mount and chroot); run it with sudo" >&2; exit 2; }

pass=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb LANG=C.UTF-8)
while IFS='=' read -r name _; do
  case "$name" in CI|GJ_*) pass+=("$name=${!name}") ;; esac
done < <(env)
ccache=""
if [ -n "${CCACHE_DIR:-}" ] && [ -d "$CCACHE_DIR" ]; then
  ccache=$(realpath "$CCACHE_DIR")
  pass+=(CCACHE_DIR=/ccache CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=1
         CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

exec unshare --mount --pid --fork --propagation private bash -c '
  set -e
  root=$1 src=$2 ccache=$3; shift 3
  # The root a mount point of its own: ip netns exec (the multi-host tests) remounts / rslave.
  mount --bind "$root" "$root"
  mkdir -p "$root/src"
  mount --bind "$src" "$root/src"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  mount -t tmpfs -o size=4g tmpfs "$root/tmp"
  mount -t tmpfs -o mode=0755 tmpfs "$root/run"  # 0755 as on a booted system: the StrictModes of sshd check it
  if [ -n "$ccache" ]; then mkdir -p "$root/ccache"; mount --bind "$ccache" "$root/ccache"; fi
  exec chroot "$root" /usr/bin/env -i "$@"
' _ "$root" "$src" "$ccache" "${pass[@]}" "$@"
