#!/usr/bin/env bash
# Builds Horovod (the benchmark baseline of docs/benchmarks.md) into the environment "horovod-bench" of
# scripts/pypi/pins.txt and prints its path. Nothing in the product, its tests or CI needs it.
#   bench/horovod/build.sh            -> ${GJ_VENV_ROOT:-/opt/gj-venvs}/horovod-bench
# Cached: a second run with unchanged pins returns at once (make-venv.sh's stamp); the C++ objects go
# through ccache when it is installed. Needs Debian's libtorch-dev (torch's headers: python3-torch's
# include directory holds only links to them), cmake, Open MPI's mpicxx.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ ! -e /usr/include/torch/extension.h ]; then
  echo "bench/horovod/build.sh: /usr/include/torch/extension.h is missing: Horovod compiles against torch's C++ headers; install them: apt-get install libtorch-dev" >&2
  exit 2
fi
for tool in cmake mpicxx; do
  command -v "$tool" >/dev/null || { echo "bench/horovod/build.sh: $tool not found: apt-get install cmake libopenmpi-dev" >&2; exit 2; }
done
# The frameworks and controllers the benchmarks compare; a missing one fails the build instead of
# being left out silently.
export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_MPI=1 HOROVOD_WITH_GLOO=1
export HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1
# A CPU build (the benchmarks use host tensors): no CUDA compiler on the PATH, so Horovod's CMake does
# not enable CUDA because the project's emulated toolkit is installed.
PATH=$(tr ':' '\n' <<<"$PATH" | grep -v '/cuda' | paste -sd: -)
export PATH
# Horovod's setup.py runs make -j8 unless MAKEFLAGS is set.
export MAKEFLAGS=${MAKEFLAGS:--j$(nproc)}
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
exec "$root/scripts/pypi/make-venv.sh" horovod-bench
