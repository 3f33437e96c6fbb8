#!/usr/bin/env bash
# On a machine with NVIDIA GPUs: configure and build with CUDA and NCCL required (own build
# folder), run the GPU tests, then the GPU benchmark; prints one table. About 2-4 minutes.
#
#   bench/gpu/run.sh                      # everything
#   GJ_GPU_BUILD_DIR=/tmp/b bench/gpu/run.sh
#   GJ_GPU_BENCH_ARGS=--quick bench/gpu/run.sh
#
# Needs what scripts/install-deps.sh installs (CMake, MPI, Catch2, fmt, spdlog) plus the CUDA
# toolkit and NCCL (found in /usr/local/cuda, or set NCCL_ROOT / CMAKE_CUDA_COMPILER).
# Environment: GJ_GPU_BUILD_DIR (default build-gpu), GJ_CUDA_ARCHITECTURES (default: the GPUs'
# own, e.g. 90 on Hopper), GJ_GPU_BENCH_ARGS (extra arguments of gj_gpu_bench), and the
# library's GJ_COLL_* and NCCL_* variables (docs/gpu.md). Exit status: the tests' (non-zero when
# one failed), else the benchmark's.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${GJ_GPU_BUILD_DIR:-build-gpu}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "bench/gpu/run.sh: no NVIDIA GPU visible (nvidia-smi -L failed); run this on a GPU machine" >&2
  exit 1
fi
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
nvidia-smi -L

# Compile only for the GPUs present: a quarter of the build time of the default 80;90 list.
if [[ -z "${GJ_CUDA_ARCHITECTURES:-}" ]]; then
  GJ_CUDA_ARCHITECTURES=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
fi

# The benchmark's own CMake entry builds the whole repository with CUDA and NCCL required, its
# tests, and gj_gpu_bench, whether or not bench/CMakeLists.txt adds bench/gpu.
cmake -S bench/gpu -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="$GJ_CUDA_ARCHITECTURES" -DGJ_BUILD_EXAMPLES=OFF
cmake --build "$build" -j"$(nproc)"

status=0
ctest --test-dir "$build" -L 'gpu|cuda' --output-on-failure --timeout 600 || status=$?

bench=$(find "$build" -name gj_gpu_bench -type f -perm -u+x | head -1)
echo
echo "# mpiexec -np $ngpu gj_gpu_bench ${GJ_GPU_BENCH_ARGS:-}"
mpiexec --allow-run-as-root --oversubscribe -np "$ngpu" "$bench" ${GJ_GPU_BENCH_ARGS:-} || status=$?
exit "$status"
