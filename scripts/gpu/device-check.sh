#!/usr/bin/env bash
# scripts/gpu/device-check.sh: the whole GPU check in one command on the bare, offline GPU
# machine (docs/gpu.md, "The device check"): unpack the Debian packages that
# scripts/gpu/download-debs.sh fetched into a private prefix, relocate Open MPI there, find
# NCCL (the pip wheel nvidia-nccl-cu1x, or GJ_NCCL), configure and build the collectives with
# their tests and the GPU benchmark, run them, and write one report file.
#
# Environment (all optional):
#   GJ_DEBS          folder of .debs (default build-gpu-debs)
#   GJ_PREFIX        private prefix to unpack into (default ${TMPDIR:-/tmp}/gj-gpu-prefix; never /)
#   GJ_NCCL          libnccl.so.2, or a folder with include/nccl.h and lib/libnccl.so.2
#                    (default: the wheel: <site>/nvidia/nccl of the python3 on PATH)
#   GJ_BUILD         build folder (default build-gpu)
#   GJ_REPORT        report file (default $OUT/gpu-report.txt when $OUT is set, else $GJ_BUILD/gpu-report.txt)
#   GJ_WITH_AGENT    1: also build the launch agent (needs fmt, spdlog, CLI11); default 0
#   GJ_STEPS         comma list, in this order (default unpack,configure,build,test,bench,torch):
#                    unpack configure build test bench torch; `smoke` (instead of build,test,bench)
#                    builds the library and the C++ example only and runs it on 2 ranks: what
#                    tests/gpu/device_check_here.sh runs on a machine without a GPU
#   GJ_CUDA_ARCHITECTURES  default: the GPU's own (nvidia-smi), else 90
#   GJ_TORCH_DEVICE  the torch step's device (default cuda; the emulated run here: cpu, since the
#                    emulation has no torch CUDA)
#   GJ_TORCH_PYTHON  the python with torch for the torch step (default the python3 on PATH)
#   GJ_DEVICE_EXTRA  a command run last as its own step (e.g. the gj.torch frontend's CUDA tests,
#                    `mpiexec -np 1 python3 -m pytest tests/torch -q`), with this script's
#                    environment (relocated Open MPI, GJ_COLLECTIVES_LIB = the built library)
#   GJ_DEVICE_LABEL  the ctest label of the device tests that must run and pass (default gpu-real:
#                    the tests built against the CUDA runtime; GJ_DEVICE_CHECK_EMULATED=1
#                    tests/gpu/device_check_here.sh sets gpu, the same tests against the
#                    emulation, to run this script end to end on a machine without a GPU)
#   GJ_STEP_TIMEOUT_S  each step's time limit (default 240); the whole fits in the device tool's
#                    9 minutes with the defaults (unpack ~10 s, configure ~20 s, build ~3 min on 16
#                    cores, tests ~1 min, bench ~30 s)
# Every step's log goes to $GJ_LOGS (default $OUT/logs when $OUT is set) as soon as it finishes,
# so a run killed at its time limit still returns what it did. A failing command's output is
# always printed (its last 40 lines) into the report.
# Exit status: 0 when every step passed and the key device tests ran and passed (a skip is not a
# pass: the report then says FAILED).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
debs=${GJ_DEBS:-build-gpu-debs}
prefix=${GJ_PREFIX:-${TMPDIR:-/tmp}/gj-gpu-prefix}
build=${GJ_BUILD:-build-gpu}
steps=,${GJ_STEPS:-unpack,configure,build,test,bench,torch},
if [ -n "${OUT:-}" ]; then report=${GJ_REPORT:-$OUT/gpu-report.txt}; else report=${GJ_REPORT:-$build/gpu-report.txt}; fi
logs=${GJ_LOGS:-${OUT:+$OUT/logs}}
step_timeout=${GJ_STEP_TIMEOUT_S:-240}
device_label=${GJ_DEVICE_LABEL:-gpu-real}
mkdir -p "$(dirname "$report")" "$build" ${logs:+"$logs"}
: >"$report"
say() { echo "$*" | tee -a "$report"; }
die() { say "device-check: FAIL: $*"; exit 1; }
has() { [[ $steps == *,$1,* ]]; }
status=0
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start )) s"; }

case $(readlink -m "$prefix") in /|/usr|/usr/local) die "GJ_PREFIX=$prefix: unpack into a private folder, never over the system" ;; esac

# A step's log, kept where it survives a kill at the time limit.
keep_log() { [ -n "$logs" ] && [ -f "$1" ] && cp -f "$1" "$logs/" 2>/dev/null; true; }
# command, description: runs it bounded by the step timeout; on failure prints its output, then dies.
must() {
  local what=$1; shift
  local out; out=$(timeout "$step_timeout" "$@" 2>&1) || { say "$out" | tail -40; die "$what: $*"; }
  printf '%s\n' "$out"
}

# ---- glibc first: Debian 12's Open MPI, PMIx, hwloc, libfabric and libudev need GLIBC_2.34 ----
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -n "$glibc" ] && [ "$(printf '%s\n2.34\n' "$glibc" | sort -V | head -1)" != 2.34 ]; then
  die "glibc $glibc on $(uname -srm) is older than 2.34, which Debian 12's Open MPI, PMIx, hwloc, libfabric and libudev need (Ubuntu 20.04 and RHEL 8 ship 2.31 and 2.28): run the check on a machine with glibc >= 2.34 (Ubuntu 22.04+, RHEL 9+, Debian 12+), or install an Open MPI built for this one and set GJ_STEPS=configure,build,test,bench"
fi

# ---- NCCL next: its version decides what runs -------------------------------------------------
python=$(command -v python3 || true)
nccl_dir="" nccl_lib=""
if [ -n "${GJ_NCCL:-}" ]; then
  if [ -f "$GJ_NCCL" ]; then nccl_lib=$GJ_NCCL; nccl_dir=$(dirname "$(dirname "$GJ_NCCL")")
  else nccl_dir=$GJ_NCCL; nccl_lib=$GJ_NCCL/lib/libnccl.so.2; fi
elif [ -n "$python" ]; then
  # The wheel's layout: <site>/nvidia/nccl/{include/nccl.h, lib/libnccl.so.2}.
  nccl_dir=$("$python" - <<'PY' 2>/dev/null
import os, site, sys
for d in list(sys.path) + site.getsitepackages():
    p = os.path.join(d, "nvidia", "nccl")
    if os.path.isfile(os.path.join(p, "lib", "libnccl.so.2")):
        print(p); break
PY
)
  [ -n "$nccl_dir" ] && nccl_lib=$nccl_dir/lib/libnccl.so.2
fi
[ -n "$nccl_lib" ] && [ -f "$nccl_lib" ] || die "no libnccl.so.2 (pip wheel nvidia-nccl-cu13 under $python's site-packages, or GJ_NCCL=...)"
header_version=unknown
if [ -f "$nccl_dir/include/nccl.h" ]; then
  header_version=$(sed -nE 's/^#define NCCL_(MAJOR|MINOR|PATCH) +([0-9]+).*/\2/p' "$nccl_dir/include/nccl.h" | paste -sd.)
fi
# The library's own answer (ncclGetVersion needs no GPU).
lib_code=$("${python:-false}" -c 'import ctypes,sys; l=ctypes.CDLL(sys.argv[1]); v=ctypes.c_int(); l.ncclGetVersion(ctypes.byref(v)); print(v.value)' "$nccl_lib" 2>/dev/null || echo 0)
lib_version=$(( lib_code / 10000 )).$(( lib_code % 10000 / 100 )).$(( lib_code % 100 ))
say "NCCL $lib_version ($nccl_lib; headers $header_version in $nccl_dir/include)"
# The library and the tests use this one NCCL, not whatever the loader's search finds first.
export GJ_NCCL_LIBRARY=$nccl_lib
multi_rank=0
if [ "$lib_code" -ge 23000 ]; then
  multi_rank=1
  export NCCL_MULTI_RANK_GPU_ENABLE=1  # NCCL >= 2.30: the 2- and 4-rank tests share the one GPU
  say "NCCL >= 2.30: NCCL_MULTI_RANK_GPU_ENABLE=1, multi-rank tests run on one GPU"
else
  say "NCCL < 2.30: multi-rank tests need one GPU per rank (they skip on one GPU)"
fi
gpus=$(nvidia-smi -L 2>/dev/null | head -4 | paste -sd';' || true)
say "date $(date -u +%FT%TZ); host $(uname -srm); ${gpus:-no GPU visible (nvidia-smi -L)}"
say "nvcc: $( (command -v nvcc || echo /usr/local/cuda/bin/nvcc) | xargs -I{} sh -c '{} --version 2>/dev/null | tail -2 | paste -sd" "' )"

# ---- glibc before anything is unpacked: Debian 12's libevent needs 2.36 ------------------------
say "glibc ${glibc:-unknown} ($(uname -m))"
glibc_old=0
if [ -n "$glibc" ] && [ "$(printf '%s\n2.36\n' "$glibc" | sort -V | head -1)" != 2.36 ]; then
  glibc_old=1
  say "glibc $glibc < 2.36 (Debian 12's libevent needs 2.36): the compat libraries in $debs/compat (same sonames, built for glibc 2.31) replace them"
fi

# ---- unpack and relocate Open MPI ---------------------------------------------------------
usr=$prefix/usr
if has unpack; then
  [ -f "$debs/PACKAGES" ] || die "$debs/PACKAGES missing: run scripts/gpu/download-debs.sh on a Debian machine first"
  # The packages' architecture must be this machine's.
  recorded=$(cat "$debs/ARCH" 2>/dev/null || echo unknown)
  case "$recorded:$(uname -m)" in
    amd64:x86_64|arm64:aarch64|ppc64el:ppc64le) ;;
    *) die "$debs holds $recorded packages (download-debs.sh recorded $debs/ARCH) but this machine is $(uname -m)" ;;
  esac
  rm -rf "$prefix"; mkdir -p "$prefix"
  while read -r deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$debs/$deb" "$prefix" || die "dpkg-deb -x $deb"
    else  # no dpkg: a .deb is an ar archive holding data.tar.*
      member=$(ar t "$debs/$deb" | grep '^data\.tar') || die "ar t $deb"
      ar p "$debs/$deb" "$member" | tar -x --auto-compress -C "$prefix" -f - 2>/dev/null ||
        ar p "$debs/$deb" "$member" | tar -x -I "$(case $member in *.zst) echo zstd -d;; *.xz) echo xz -d;; *) echo gzip -d;; esac)" -C "$prefix" -f - ||
        die "unpacking $deb without dpkg"
    fi
  done <"$debs/PACKAGES"
  if [ "$glibc_old" = 1 ]; then
    ls "$debs"/compat/*.deb >/dev/null 2>&1 || die "glibc $glibc < 2.36 and no $debs/compat/*.deb (download-debs.sh fetches them)"
    for deb in "$debs"/compat/*.deb; do dpkg-deb -x "$deb" "$prefix" || die "dpkg-deb -x $deb"; done
    say "compat: $(ls "$debs"/compat/*.deb | xargs -n1 basename | paste -sd' ') over Debian 12's"
  fi
  # update-alternatives links (postinst scripts are not run).
  for tool in mpicc mpicxx mpiCC mpic++ mpiexec mpirun; do ln -sf "$tool.openmpi" "$usr/bin/$tool"; done
  say "unpacked $(wc -l <"$debs/PACKAGES") packages into $prefix ($(du -sh "$prefix" | cut -f1)) in $(elapsed)"
fi
# The library triplet as the unpacked tree has it (not the build machine's gcc -dumpmachine).
triplet=$(cd "$usr/lib" 2>/dev/null && ls -d ./*-linux-gnu* 2>/dev/null | head -1 | sed 's|^\./||')
triplet=${triplet:-$(uname -m)-linux-gnu}
# Open MPI finds its own files through OPAL_PREFIX and friends (configured for /usr, /etc).
export OPAL_PREFIX=$usr
export OPAL_LIBDIR=$usr/lib/$triplet/openmpi/lib
export OPAL_INCLUDEDIR=$usr/lib/$triplet/openmpi/include
export OPAL_DATADIR=$usr/share/openmpi OPAL_PKGDATADIR=$usr/share/openmpi
export OPAL_SYSCONFDIR=$prefix/etc/openmpi
export PMIX_INSTALL_PREFIX=$usr PMIX_MCA_mca_base_component_path=$usr/lib/$triplet/pmix2/lib/pmix
export PATH=$usr/bin:$PATH
export LD_LIBRARY_PATH=$usr/lib/$triplet:$usr/lib/$triplet/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# One node, no InfiniBand stack to probe: shared memory and TCP only.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_osc=^ucx OMPI_MCA_plm_rsh_agent=false
# Containers' seccomp profiles refuse the CMA/ptrace single copy of the shared-memory transport.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
if has unpack; then
  must "the relocated mpicxx does not run (its loader error above)" "$usr/bin/mpicxx" --showme:compile >/dev/null
  say "mpicxx: $(mpicxx --showme:compile)"
  must "the relocated mpiexec does not run (above)" "$usr/bin/mpiexec" --version >/dev/null
fi

# ---- configure -----------------------------------------------------------------------------
if has configure; then
  arch=${GJ_CUDA_ARCHITECTURES:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
  arch=${arch:-90}
  agent=OFF; [ "${GJ_WITH_AGENT:-0}" = 1 ] && agent=ON
  t0=$(date +%s)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGJ_WITH_CUDA=ON -DGJ_WITH_NCCL=ON \
    -DNCCL_ROOT="$nccl_dir" -DCMAKE_CUDA_ARCHITECTURES="$arch" -DGJ_BUILD_AGENT=$agent \
    -DCMAKE_PREFIX_PATH="$usr" -DMPI_C_COMPILER="$usr/bin/mpicc" -DMPI_CXX_COMPILER="$usr/bin/mpicxx" \
    -DMPIEXEC_EXECUTABLE="$usr/bin/mpiexec" -DPython3_EXECUTABLE="${python:-/usr/bin/python3}" \
    >"$build/configure.log" 2>&1 || { keep_log "$build/configure.log"; tail -30 "$build/configure.log" | tee -a "$report"; die "configure"; }
  keep_log "$build/configure.log"
  grep -E "^-- gj: " "$build/configure.log" | tee -a "$report"
  say "configured in $(( $(date +%s) - t0 )) s (agent $agent, CUDA architectures $arch)"
fi

run_step() {  # name, command...: bounded by the step timeout, its log kept at once
  local name=$1 t0 rc=0; shift; t0=$(date +%s)
  timeout "$step_timeout" "$@" >"$build/$name.log" 2>&1 || rc=$?
  keep_log "$build/$name.log"
  if [ $rc -eq 0 ]; then say "ok   $name ($(( $(date +%s) - t0 )) s)"
  else
    status=1
    [ $rc -eq 124 ] && say "FAIL $name: over its ${step_timeout} s (GJ_STEP_TIMEOUT_S)"
    say "FAIL $name ($(( $(date +%s) - t0 )) s):"; tail -40 "$build/$name.log" | tee -a "$report"
  fi
}

if has smoke; then
  run_step build-smoke cmake --build "$build" -j"$(nproc)" --target gj_collectives train
  run_step train-2-ranks mpiexec -np 2 "$build/examples/cpp-train/train"
  grep -h "OK: weights" "$build/train-2-ranks.log" | tee -a "$report"
  ldd "$build/collectives/libgj_collectives.so" | grep -E "libmpi" | tee -a "$report"
fi
if has build; then
  run_step build cmake --build "$build" -j"$(nproc)"
fi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
ngpu=${ngpu:-0}
if has test; then
  # Where the library's own search finds NCCL here (nccl_search.h), then the GPU/CUDA tests
  # (skips print their reason), then the host suite on this machine.
  run_step nccl-search "$build/tests/gpu/gj_test_nccl_loader"
  cat "$build/nccl-search.log" >>"$report"
  # The device tests: no np4 run unless there are 4 GPUs (never 4 ranks on one GPU).
  exclude='cuda\.device_check\.|cuda\.masked_cuda'
  [ "$ngpu" -lt 4 ] && exclude="$exclude|\.np4\$"
  # By name: the cuda.* tests (no device needed) carry the labels gpu;unit / gpu;process, so a
  # label selection of gpu-real would leave them out.
  run_step test-gpu ctest --test-dir "$build" -R "^($device_label|cuda)\." -E "$exclude" --output-on-failure --timeout 120
  grep -E "tests passed|Passed|Failed|Skipped|\*\*\*" "$build/test-gpu.log" | tee -a "$report"
  # A skip is not a pass: these must have run and passed.
  keys="kernels nccl_ops.np1 nccl_capture.np1 nccl_allreduce.np1 nccl_requests.np1 nccl_binding_shared.np2"
  # Two ranks need two GPUs, or one shared where NCCL >= 2.30 allows it.
  { [ "$ngpu" -ge 2 ] || [ "$multi_rank" = 1 ]; } && keys="$keys nccl_async.np2"
  for key in $keys; do
    grep -Eq "Test +#[0-9]+: $device_label\.${key//./\\.} \.+ +Passed" "$build/test-gpu.log" ||
      { status=1; say "FAIL key device test $device_label.$key did not run and pass"; }
  done
  # The answers the emulation could only assume (tests/gpu/device_facts_main.cpp): contexts,
  # the last error after "not ready", growth after an unsynchronized use, abort beside a busy stream.
  run_step probes ctest --test-dir "$build" -R "^${device_label}\.device_facts\.np1\$" -V --timeout 60
  grep -E "probe [a-z_]+: " "$build/probes.log" | sed 's/^[0-9]*: //' | tee -a "$report"
  # The launcher's GPU pre-flight probe against the real driver (with GJ_WITH_AGENT=1): NVML
  # opened at run time by the static gj-mpirun (docs/agent.md "Pre-flight checks"); its facts are
  # the answer: source nvml, one line per GPU with its UUID, PCI id and ECC count.
  if [ -x "$build/agent/gj-mpirun" ]; then
    run_step preflight-facts "$build/agent/gj-mpirun" --preflight-facts
    sed 's/^/preflight: /' "$build/preflight-facts.log" | tee -a "$report"
  fi
  # The host suite is not what this check is for: the host backend only (GJ_COLL_BACKEND=mpi),
  # without coll.package (an install + pkg-config round trip this prefix does not provide).
  run_step test-host env GJ_COLL_BACKEND=mpi ctest --test-dir "$build" -L collectives -E '^coll\.package' \
    --output-on-failure --timeout 120
  grep -E "tests passed|Failed|\*\*\*" "$build/test-host.log" | tee -a "$report"
fi
# Rank counts: 1, 2 and every local GPU (8 on an 8-GPU node), one GPU per rank; more ranks than
# GPUs only where NCCL >= 2.30 lets them share one (then 2 on one GPU).
rank_counts() {
  local n
  for n in $(printf '%s\n' 1 2 "$ngpu" | sort -nu); do
    [ "$n" -ge 1 ] || continue
    if [ "$n" -gt "$ngpu" ] && [ "$multi_rank" = 0 ]; then
      echo "skip np=$n: one GPU per rank needed (NCCL < 2.30)" | tee -a "$report" >&2; continue
    fi
    echo "$n"
  done
}
if has bench; then
  # gj vs raw NCCL on the same buffers: the `allreduce nccl` / `allreduce gj` rows, busbw as
  # nccl-tests computes it (algbw x 2(n-1)/n), and the fusion kernels.
  bench=$(find "$build" -name gj_gpu_bench -type f -perm -u+x | head -1)
  for np in $(rank_counts); do
    run_step "bench-np$np" mpiexec -np "$np" "$bench" ${GJ_GPU_BENCH_ARGS:-}
    cat "$build/bench-np$np.log" >>"$report"
  done
fi
if has torch; then
  # gj.torch on CUDA tensors every time: its CUDA test (exact results, stream order, the
  # optimizer; a skip is a failure on a GPU), then the training step against DDP over NCCL.
  torch_python=${GJ_TORCH_PYTHON:-${python:-python3}}
  torch_device=${GJ_TORCH_DEVICE:-cuda}
  export PYTHONPATH=$root/bench/torch:$build/collectives/python${PYTHONPATH:+:$PYTHONPATH}
  export GJ_COLLECTIVES_LIB=$build/collectives/libgj_collectives.so
  say "torch: $("$torch_python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "devices", torch.cuda.device_count())' 2>&1 | tail -1)"
  tnp=$(rank_counts | tail -1)
  if [ "$torch_device" = cuda ]; then
    run_step torch-cuda-test mpiexec -np "$tnp" "$torch_python" "$root/tests/torch/cuda_test.py"
    tail -5 "$build/torch-cuda-test.log" >>"$report"
  fi
  run_step "torch-step-np$tnp" mpiexec -np "$tnp" "$torch_python" "$root/bench/torch/step_bench.py" \
    --device "$torch_device" --steps "${GJ_TORCH_STEPS:-10}" --warmup 2 --models resnet50-shapes,cnn --port 29577
  grep -E "^(gj\.torch|\|)" "$build/torch-step-np$tnp.log" >>"$report"
fi
if [ -n "${GJ_DEVICE_EXTRA:-}" ]; then
  export GJ_COLLECTIVES_LIB=$build/collectives/libgj_collectives.so
  run_step extra bash -c "$GJ_DEVICE_EXTRA"
  tail -20 "$build/extra.log" >>"$report"
fi
say "device-check: $( [ $status -eq 0 ] && echo ok || echo FAILED ) in $(elapsed); report: $report"
exit $status
