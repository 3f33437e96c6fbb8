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
#   GJ_STEPS         comma list, in this order (default unpack,configure,build,test,bench):
#                    unpack configure build test bench; `smoke` (instead of build,test,bench)
#                    builds the library and the C++ example only and runs it on 2 ranks: what
#                    tests/gpu/device_check_here.sh runs on a machine without a GPU
#   GJ_CUDA_ARCHITECTURES  default: the GPU's own (nvidia-smi), else 90
#   GJ_DEVICE_EXTRA  a command run last as its own step (e.g. the gj.torch frontend's CUDA tests,
#                    `mpiexec -np 1 python3 -m pytest tests/torch -q`), with this script's
#                    environment (relocated Open MPI, GJ_COLLECTIVES_LIB = the built library)
# Exit status: 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
debs=${GJ_DEBS:-build-gpu-debs}
prefix=${GJ_PREFIX:-${TMPDIR:-/tmp}/gj-gpu-prefix}
build=${GJ_BUILD:-build-gpu}
steps=,${GJ_STEPS:-unpack,configure,build,test,bench},
if [ -n "${OUT:-}" ]; then report=${GJ_REPORT:-$OUT/gpu-report.txt}; else report=${GJ_REPORT:-$build/gpu-report.txt}; fi
mkdir -p "$(dirname "$report")" "$build"
: >"$report"
say() { echo "$*" | tee -a "$report"; }
die() { say "device-check: FAIL: $*"; exit 1; }
has() { [[ $steps == *,$1,* ]]; }
status=0
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start )) s"; }

case $(readlink -m "$prefix") in /|/usr|/usr/local) die "GJ_PREFIX=$prefix: unpack into a private folder, never over the system" ;; esac

# ---- NCCL first: its version decides what runs ----------------------------------------------
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

# ---- unpack and relocate Open MPI ---------------------------------------------------------
triplet=$(gcc -dumpmachine 2>/dev/null | sed 's/-pc-/-/;s/-unknown-/-/'); triplet=${triplet:-x86_64-linux-gnu}
usr=$prefix/usr
if has unpack; then
  [ -f "$debs/PACKAGES" ] || die "$debs/PACKAGES missing: run scripts/gpu/download-debs.sh on a Debian machine first"
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
  # update-alternatives links (postinst scripts are not run).
  for tool in mpicc mpicxx mpiCC mpic++ mpiexec mpirun; do ln -sf "$tool.openmpi" "$usr/bin/$tool"; done
  say "unpacked $(wc -l <"$debs/PACKAGES") packages into $prefix ($(du -sh "$prefix" | cut -f1)) in $(elapsed)"
fi
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
has unpack && { "$usr/bin/mpicxx" --showme:compile >/dev/null 2>&1 || die "relocated mpicxx does not run"; say "mpicxx: $(mpicxx --showme:compile)"; }

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
    >"$build/configure.log" 2>&1 || { tail -30 "$build/configure.log" | tee -a "$report"; die "configure"; }
  grep -E "^-- gj: " "$build/configure.log" | tee -a "$report"
  say "configured in $(( $(date +%s) - t0 )) s (agent $agent, CUDA architectures $arch)"
fi

run_step() {  # name, command...
  local name=$1 t0; shift; t0=$(date +%s)
  if "$@" >"$build/$name.log" 2>&1; then say "ok   $name ($(( $(date +%s) - t0 )) s)"
  else status=1; say "FAIL $name ($(( $(date +%s) - t0 )) s):"; tail -40 "$build/$name.log" | tee -a "$report"; fi
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
if has test; then
  # Where the library's own search finds NCCL here (nccl_search.h), then the GPU/CUDA tests
  # (skips print their reason), then the host suite on this machine.
  run_step nccl-search "$build/tests/gpu/gj_test_nccl_loader"
  cat "$build/nccl-search.log" >>"$report"
  run_step test-gpu ctest --test-dir "$build" -L 'gpu|cuda' -E 'cuda\.device_check\.here' --output-on-failure --timeout 300
  grep -E "tests passed|Passed|Failed|Skipped|\*\*\*" "$build/test-gpu.log" | tee -a "$report"
  run_step test-host ctest --test-dir "$build" -L collectives --output-on-failure --timeout 300
  grep -E "tests passed|Failed|\*\*\*" "$build/test-host.log" | tee -a "$report"
fi
if has bench; then
  bench=$(find "$build" -name gj_gpu_bench -type f -perm -u+x | head -1)
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || echo 1)
  for np in 1 2; do
    [ "$np" -gt "$ngpu" ] && [ "$multi_rank" = 0 ] && { say "skip bench np=$np: one GPU per rank needed (NCCL < 2.30)"; continue; }
    run_step "bench-np$np" mpiexec -np "$np" "$bench" ${GJ_GPU_BENCH_ARGS:-}
    cat "$build/bench-np$np.log" >>"$report"
  done
fi
if [ -n "${GJ_DEVICE_EXTRA:-}" ]; then
  export GJ_COLLECTIVES_LIB=$build/collectives/libgj_collectives.so
  run_step extra bash -c "$GJ_DEVICE_EXTRA"
  tail -20 "$build/extra.log" >>"$report"
fi
say "device-check: $( [ $status -eq 0 ] && echo ok || echo FAILED ) in $(elapsed); report: $report"
exit $status
