#!/usr/bin/env bash
# device_check_here.sh SOURCE_DIR WORK_DIR: scripts/gpu/device-check.sh up to the device, on a
# machine without a GPU, as the GPU machine will see it: in a private mount namespace where the
# system's Open MPI is hidden (its files covered, so neither PATH nor the loader finds it), with
# NCCL only in a pip-wheel layout (WORK/site/nvidia/nccl/{include,lib}) made from
# /usr/local/cuda's NCCL. Steps: download the .debs (scripts/gpu/download-debs.sh, unless
# SOURCE/build-gpu-debs exists), unpack and relocate Open MPI into a scratch prefix, configure
# the GPU build against the wheel layout; with GJ_DEVICE_CHECK_FULL=1 also build the library and
# the C++ example and run it on 2 ranks with the relocated Open MPI (minutes: a whole library
# build). With GJ_DEVICE_CHECK_EMULATED=1 the whole check end to end against the emulation
# (docs/gpu.md, "Emulation"): a fake nvidia-smi reporting two H200s, every step but the benchmark
# (the torch step on the CPU),
# and the key device tests taken from the label gpu (the device tests built against the emulated
# runtime and the test NCCL) instead of gpu-real; the report must say ok. Needs root and
# unshare -m; otherwise, or without the Debian mirror, exit 77 (SKIP).
set -euo pipefail
src=$1 work=$2
if [ "${GJ_HERE_INSIDE:-}" != 1 ]; then
  if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
    echo "SKIP: hiding the system MPI needs root and unshare -m"; exit 77
  fi
  rm -rf "$work"; mkdir -p "$work"
  debs=$src/build-gpu-debs
  if [ ! -f "$debs/PACKAGES" ]; then
    debs=$work/debs
    "$src/scripts/gpu/download-debs.sh" "$debs" || { echo "SKIP: apt-get download failed (no Debian mirror?)"; exit 77; }
  fi
  GJ_HERE_INSIDE=1 GJ_DEBS=$debs exec unshare -m "$0" "$@"
fi

mount --make-rprivate /
# Hide the system Open MPI and PMIx: every file of their packages covered by an empty one.
: >"$work/empty"
hidden=0
for pkg in libopenmpi3 openmpi-bin libopenmpi-dev openmpi-common libpmix2 libpmix-dev; do
  dpkg -L "$pkg" 2>/dev/null || true
done | sort -u | while read -r f; do
  [ -f "$f" ] && [ ! -L "$f" ] && mount --bind "$work/empty" "$f" && echo x
done | wc -l >"$work/hidden"
hidden=$(cat "$work/hidden")
# A machine without a system Open MPI (the GPU machine itself) has nothing to hide.
if dpkg-query -W -f='${Status}' libopenmpi3 2>/dev/null | grep -q "install ok installed"; then
  [ "$hidden" -gt 50 ] || { echo "FAIL: hid only $hidden files of the system Open MPI"; exit 1; }
fi
if mpiexec --version >/dev/null 2>&1; then echo "FAIL: the system mpiexec still runs"; exit 1; fi
if /usr/bin/python3 -c 'import ctypes; ctypes.CDLL("libmpi.so.40")' 2>/dev/null; then
  echo "FAIL: the loader still finds the system libmpi.so.40"; exit 1
fi
echo "hidden: $hidden files of the system Open MPI/PMIx (mpiexec and libmpi.so.40 unavailable)"

# NCCL as the pip wheel lays it out, from /usr/local/cuda's copy.
wheel=$work/site/nvidia/nccl
mkdir -p "$wheel/include" "$wheel/lib"
cp /usr/local/cuda/include/nccl*.h "$wheel/include/"
cp -r /usr/local/cuda/include/nccl_device "$wheel/include/" 2>/dev/null || true
cp "$(readlink -f /usr/local/cuda/lib/libnccl.so.2 2>/dev/null || readlink -f /usr/local/cuda/lib64/libnccl.so.2)" "$wheel/lib/libnccl.so.2"

steps=unpack,configure
[ "${GJ_DEVICE_CHECK_FULL:-0}" = 1 ] && steps=unpack,configure,smoke
label=gpu-real
if [ "${GJ_DEVICE_CHECK_EMULATED:-0}" = 1 ]; then
  steps=unpack,configure,build,test,torch label=gpu
  # The emulation has no torch CUDA: the torch step runs gj.torch vs DDP on the CPU (the step's
  # plumbing: the relocated Open MPI, the built package), with the system's torch.
  export GJ_TORCH_DEVICE=cpu GJ_TORCH_PYTHON=${GJ_TORCH_PYTHON:-/usr/bin/python3} GJ_TORCH_STEPS=2
  export GJ_STEP_TIMEOUT_S=${GJ_STEP_TIMEOUT_S:-1800}  # a whole build on a shared 2-core machine
  # nvidia-smi as the GPU machine's answers it (the emulated runtime has 2 devices per rank).
  mkdir -p "$work/fakebin"
  cat >"$work/fakebin/nvidia-smi" <<'SMI'
#!/bin/sh
case "$*" in
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-emulated-0)"; echo "GPU 1: NVIDIA H200 (UUID: GPU-emulated-1)" ;;
  *compute_cap*) echo "9.0"; echo "9.0" ;;
  *) echo "fake nvidia-smi (tests/gpu/device_check_here.sh): $*" ;;
esac
SMI
  chmod +x "$work/fakebin/nvidia-smi"
  export PATH=$work/fakebin:$PATH
fi
t0=$(date +%s)
GJ_STEPS=$steps GJ_DEVICE_LABEL=$label GJ_NCCL=$wheel GJ_PREFIX=$work/prefix GJ_BUILD=$work/build GJ_REPORT=$work/report.txt \
  GJ_CUDA_ARCHITECTURES=90 "$src/scripts/gpu/device-check.sh" || { echo "FAIL: device-check.sh (report above)"; exit 1; }
echo "device-check.sh ($steps) took $(( $(date +%s) - t0 )) s"

fail=0
want() { grep -Eq -- "$1" "$work/report.txt" || { echo "FAIL: report lacks /$1/"; fail=1; }; }
head -1 "$work/report.txt" | grep -Eq '^NCCL 2\.[0-9]+\.[0-9]+ \(' || { echo "FAIL: the report does not start with NCCL's version"; fail=1; }
want "^unpacked [0-9]+ packages into $work/prefix"
want "^mpicxx: .*-I$work/prefix/usr/lib/[^ ]*/openmpi/include"
want "NCCL headers [0-9.]+ \($wheel/include\)"
want "^configured in"
if [ "${GJ_DEVICE_CHECK_FULL:-0}" = 1 ]; then
  want "^ok   train-2-ranks"
  want "OK: weights bitwise identical on all 2 ranks"
  want "libmpi\.so\.40 => $work/prefix/"
fi
if [ "${GJ_DEVICE_CHECK_EMULATED:-0}" = 1 ]; then
  want "^ok   build "
  want "^ok   test-gpu "
  want "^ok   test-host "
  want "^ok   torch-step-np2 "
  want "^\\| resnet50-shapes \\| "
  want "^device-check: ok in"
  if grep -q "key device test" "$work/report.txt"; then echo "FAIL: a key device test did not run and pass"; fail=1; fi
fi
[ $fail -eq 0 ] && echo "device_check_here.sh: ok"
exit $fail
