#!/usr/bin/env bash
# gj-mpirun for aarch64 (arm64), as CI checks it on an amd64 machine:
#   1. cross-built, fully static (cmake/toolchains/aarch64-linux-gnu.cmake, GJ_BUILD_LIBRARY=OFF);
#   2. its unit tests (agent.unit.*) run under qemu-user;
#   3. the dry-run differential: --help, --version and the plans (--dry-run, --json) of a master,
#      a GPU master and a worker, printed by the aarch64 binary under qemu, must equal the amd64
#      binary's byte for byte;
#   4. the Debian package, named and marked arm64.
#   scripts/ci/arm64-agent.sh [AMD64_GJ_MPIRUN=build/agent/gj-mpirun]
# Needs scripts/install-deps.sh --cross. Environment: GJ_ARM64_BUILD_DIR (default build-arm64),
# GJ_JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/../.."
amd64=${1:-build/agent/gj-mpirun}
build=${GJ_ARM64_BUILD_DIR:-build-arm64}
jobs=${GJ_JOBS:-$(nproc)}
die() { echo "ARM64 AGENT FAILED: $*" >&2; exit 1; }
qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64) \
  || die "qemu-aarch64 not found; run scripts/install-deps.sh --cross"
command -v aarch64-linux-gnu-g++ >/dev/null || die "aarch64-linux-gnu-g++ not found; run scripts/install-deps.sh --cross"
[ -x "$amd64" ] || die "$amd64 is not an executable amd64 gj-mpirun; build it first (scripts/test.sh) or pass its path"

echo "== arm64 agent: cross configure and build ($build)"
mkdir -p "$build"
cmake -S . -B "$build" --toolchain cmake/toolchains/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DGJ_BUILD_LIBRARY=OFF -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON \
  >"$build/configure.log" 2>&1 \
  || { tail -n 30 "$build/configure.log"; die "configure (log $build/configure.log)"; }
cmake --build "$build" -j"$jobs" --target gj-mpirun gj_agent_unit_tests >"$build/build.log" 2>&1 \
  || { grep -E -A6 'error' "$build/build.log" | head -n 40; die "build (log $build/build.log)"; }
arm64="$build/agent/gj-mpirun"
kind=$(file -b "$arm64")
echo "   $arm64: $kind"
case "$kind" in *"ARM aarch64"*"statically linked"*|*"ARM aarch64"*"static-pie linked"*) ;;
  *) die "$arm64 is not a static aarch64 executable: $kind" ;; esac

# Under qemu: the agent's unit tests (agent.unit.*, pure planning). The side-effect tests
# (sys.*) run natively in the amd64 stages; under qemu-user they are left out, the supervisor's
# subreaper tests by name (supervise mode calls prctl(PR_SET_CHILD_SUBREAPER), which qemu 7.2
# refuses with EINVAL whatever the code does), and the rest as timing-sensitive: sockets,
# sshd and child processes under emulation miss their deadlines on a loaded 2-core machine.
subreaper='supervis|exec failures: 127|exec mode: the process becomes|forwarded SIGTERM|default signal dispositions'
echo "== arm64 agent: unit tests under qemu"
ctest --test-dir "$build" -N -R "^sys\..*($subreaper)" | sed -n 's/^ *Test *#[0-9]*: /   skipped under qemu (subreaper): /p'
ctest --test-dir "$build" --output-on-failure --timeout 120 -R '^agent\.unit\.' \
  || die "unit tests under qemu (ctest's list above)"
[ "$(ctest --test-dir "$build" -N -R '^agent\.unit\.' | sed -n 's/^Total Tests: //p')" -gt 0 ] \
  || die "no agent.unit.* tests in $build (Catch2 discovery under qemu failed?)"

echo "== arm64 agent: dry-run differential against $amd64"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'print("hello")\n' >"$work/train.py"
base=(GJ_TRAINING_VC_JOB_NAME=job GJ_TRAINING_POD_NAME=job-master-0 GJ_TRAINING_MASTER_REPLICAS=1
      GJ_TRAINING_WORKER_REPLICAS=2 "MPI_HOST=job-worker-0.job,job-worker-1.job" GJ_NO_WAIT=1 GJ_NO_SSHD=1
      "GJ_STATE_DIR=$work/state" PATH=/usr/bin:/bin
      MASTER_PORT=29500)  # else a free port the kernel picks, different in each run
cpu=(GJ_TRAINING_ROLE=master GJ_TRAINING_MASTER_CPU_LIMIT=4 GJ_TRAINING_MASTER_GPU_LIMIT=0
     GJ_TRAINING_WORKER_CPU_LIMIT=4 GJ_TRAINING_WORKER_GPU_LIMIT=0)
gpu=(GJ_TRAINING_ROLE=master GJ_TRAINING_MASTER_CPU_LIMIT=8 GJ_TRAINING_MASTER_GPU_LIMIT=2
     GJ_TRAINING_WORKER_CPU_LIMIT=8 GJ_TRAINING_WORKER_GPU_LIMIT=2)
worker=(GJ_TRAINING_ROLE=worker GJ_TRAINING_POD_NAME=job-worker-0 GJ_TRAINING_MASTER_CPU_LIMIT=4
        GJ_TRAINING_MASTER_GPU_LIMIT=0 GJ_TRAINING_WORKER_CPU_LIMIT=4 GJ_TRAINING_WORKER_GPU_LIMIT=0)
amd64_exe=$(realpath "$amd64") arm64_exe=$(realpath "$arm64")
compared=0
compare() {  # $1 case name; then env assignments, "--", gj-mpirun arguments
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  # Both run from the same path: the plan names gj-mpirun's own path (--rank-exec).
  cp "$amd64_exe" "$work/gj-mpirun"
  (cd "$work" && env -i "${envs[@]}" ./gj-mpirun "$@") >"$work/$name.amd64" 2>&1 && rc1=0 || rc1=$?
  cp "$arm64_exe" "$work/gj-mpirun"
  (cd "$work" && env -i "${envs[@]}" "$qemu" ./gj-mpirun "$@") >"$work/$name.arm64" 2>&1 && rc2=0 || rc2=$?
  if [ "$rc1" != "$rc2" ] || ! cmp -s "$work/$name.amd64" "$work/$name.arm64"; then
    diff -u "$work/$name.amd64" "$work/$name.arm64" | head -n 40 >&2 || true
    die "dry-run differential: $name differs (exit $rc1 on amd64, $rc2 on arm64)"
  fi
  compared=$((compared + 1))
}
for flavour in openmpi mpich; do
  compare "cpu-$flavour-text" "${base[@]}" "${cpu[@]}" -- --dry-run --mpi "$flavour" train.py --lr 0.1
  compare "cpu-$flavour-json" "${base[@]}" "${cpu[@]}" -- --dry-run --json --mpi "$flavour" train.py --lr 0.1
  compare "gpu-$flavour-json" "${base[@]}" "${gpu[@]}" -- --dry-run --json --mpi "$flavour" train.py
done
compare worker-text "${base[@]}" "${worker[@]}" -- --dry-run
compare worker-json "${base[@]}" "${worker[@]}" -- --dry-run --json
compare help "${base[@]}" -- --help
compare version "${base[@]}" -- --version
compare bad-env "${base[@]}" "${cpu[@]}" GJ_TRAINING_WORKER_CPU_LIMIT=two -- --dry-run train.py
echo "   $compared cases, byte for byte equal (output and exit status)"

echo "== arm64 agent: Debian package"
(cd "$build" && cpack -G DEB >cpack.log 2>&1) || { tail -n 20 "$build/cpack.log"; die "cpack (log $build/cpack.log)"; }
deb=$(ls "$build"/*_arm64.deb 2>/dev/null | head -1)
[ -n "$deb" ] || die "cpack made no *_arm64.deb in $build: $(ls "$build"/*.deb 2>/dev/null)"
[ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ] || die "$deb: Architecture is $(dpkg-deb -f "$deb" Architecture), not arm64"
dpkg-deb -c "$deb" >"$build/deb-contents.txt"
grep -q '\./usr/bin/gj-mpirun$' "$build/deb-contents.txt" || die "$deb has no /usr/bin/gj-mpirun"
echo "   $deb: $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version) $(dpkg-deb -f "$deb" Architecture)"
echo "== arm64 agent: OK"
