#!/bin/sh
# The emulator of a build against an arm64 root (aarch64-linux-gnu.cmake with GJ_AARCH64_SYSROOT):
#   aarch64-run.sh ROOT PROGRAM [ARGS...]
# Inside the root (uname -m is aarch64 there: qemu-user through binfmt_misc, or a real Arm
# machine) the program runs as it is; on the build machine, through qemu-aarch64 with the root's
# dynamic loader and libraries. Catch2's test discovery at build time takes the second way, and
# ctest inside the root the first.
root=$1
shift
if [ "$(uname -m)" = aarch64 ]; then
  exec "$@"
fi
for q in qemu-aarch64-static qemu-aarch64; do
  if command -v "$q" >/dev/null 2>&1; then
    exec "$q" -L "$root" "$@"
  fi
done
echo "aarch64-run.sh: cannot run the aarch64 program $1 here: no qemu-aarch64-static or qemu-aarch64" \
     "on PATH (apt-get install qemu-user-static)" >&2
exit 127
