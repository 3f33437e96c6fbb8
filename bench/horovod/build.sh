#!/usr/bin/env bash
# Builds Horovod (the benchmark baseline of docs/benchmarks.md) into the environment "horovod-bench" of
# scripts/pypi/pins.txt and prints its path. Nothing in the product, its tests or CI needs it.
#   bench/horovod/build.sh            -> ${GJ_VENV_ROOT:-/opt/gj-venvs}/horovod-bench
# Cached: a second run with unchanged pins returns at once (make-venv.sh's stamp); the C++ objects go
# through ccache when it is installed. Needs Debian's libtorch-dev (torch's headers: python3-torch's
# include directory holds only links to them) and pybind11-dev (torch's headers include pybind11),
# cmake, Open MPI's mpicxx. About 35 minutes of compiling on 2 busy cores the first time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
for header in torch/extension.h:libtorch-dev pybind11/pybind11.h:pybind11-dev; do
  if [ ! -e "/usr/include/${header%%:*}" ]; then
    echo "bench/horovod/build.sh: /usr/include/${header%%:*} is missing: Horovod's torch extension compiles against it; install it: apt-get install ${header##*:}" >&2
    exit 2
  fi
done
for tool in cmake mpicxx; do
  command -v "$tool" >/dev/null || { echo "bench/horovod/build.sh: $tool not found: apt-get install cmake libopenmpi-dev" >&2; exit 2; }
done
# The frameworks and controllers the benchmarks compare; a missing one fails the build instead of
# being left out silently.
export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_MPI=1 HOROVOD_WITH_GLOO=1
export HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1
# A CPU build: without HOROVOD_GPU_* Horovod compiles no CUDA sources (its CMake still finds the
# emulated CUDA toolkit's nvcc and NVTX headers, which changes nothing here).
# Horovod's setup.py runs make -j8 unless MAKEFLAGS is set.
export MAKEFLAGS=${MAKEFLAGS:--j$(nproc)}
# pip builds in a fresh /tmp/pip-install-<random> directory each time: ccache matches the objects
# of an earlier build only with paths relative to that directory and without the build directory
# (in -g's debug information) in its hash.
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR=${TMPDIR:-/tmp} CCACHE_NOHASHDIR=1
fi
exec "$root/scripts/pypi/make-venv.sh" horovod-bench
