#!/usr/bin/env bash
# The library and gj.torch on aarch64, on an amd64 machine: an arm64 Debian root (mmdebstrap,
# every program in it run by qemu-user through binfmt_misc), the project built natively inside
# it, and there the host collectives' MPI suites at 2 ranks and the torch tests at 2 ranks
# (docs/packaging.md, "Arm"). Then the arm64 .deb with the library. Needs root,
# scripts/install-deps.sh --stack --cross, and binfmt_misc with qemu-aarch64 registered
# (Debian: binfmt-support, or systemd-binfmt, registers qemu-user-static's entries).
#   scripts/stack/arm64-tests.sh [ROOT=/var/tmp/gj-stack/bookworm-arm64] [SUITE=bookworm]
# Slow: everything in the root runs emulated (hours of CPU for the build on 2 cores). Not in CI.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=${1:-/var/tmp/gj-stack/bookworm-arm64} suite=${2:-bookworm}
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || {
  echo "arm64-tests.sh: qemu-aarch64 is not registered with binfmt_misc (/proc/sys/fs/binfmt_misc/qemu-aarch64);" \
       "apt-get install binfmt-support qemu-user-static, or mount binfmt_misc and run update-binfmts --enable" >&2
  exit 2
}
if [ ! -x "$root/usr/bin/mpiexec" ]; then
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  scripts/stack/make-root.sh "$root" "$suite" arm64
fi
exec scripts/stack/enter.sh "$root" . bash -c '
  set -euo pipefail
  cd /src
  dir=build-arm64-native
  echo "== arm64 root: $(uname -m), $(. /etc/os-release; echo "$PRETTY_NAME")"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DGJ_WITH_CUDA=OFF -DGJ_WITH_NCCL=OFF -DGJ_BUILD_BENCH=OFF
  cmake --build "$dir" -j"$(nproc)" --target gj_coll_mpi_test gj_coll_shm_mpitest gj_coll_arrivals_mpitest gj_python gj-mpirun
  ctest --test-dir "$dir" --output-on-failure --timeout 1200 \
    -R "^(coll\.mpi\.np2(\.noshm)?|shm\.allreduce\.np2|shm\.arrivals\.np2|torch\.(buckets|package|ops\.np2|optimizer\.np2|async\.np2))$"
  cmake --build "$dir" -j"$(nproc)"
  (cd "$dir" && cpack -G DEB)
  ls "$dir"/*_arm64.deb
'
