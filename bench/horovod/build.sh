#!/usr/bin/env bash
# Builds Horovod (the benchmark baseline of docs/benchmarks.md) into an environment of
# scripts/pypi/pins.txt and prints its path. Nothing in the product, its tests or CI needs it.
#   bench/horovod/build.sh [torch]      -> ${GJ_VENV_ROOT:-/opt/gj-venvs}/horovod-bench
#                                          (Debian's PyTorch 1.13; MPI and Gloo controllers)
#   bench/horovod/build.sh tensorflow   -> ${GJ_VENV_ROOT:-/opt/gj-venvs}/horovod-tf-bench
#                                          (the pinned TensorFlow; MPI controller)
# Cached: a second run with unchanged pins returns at once (make-venv.sh's stamp); the C++ objects go
# through ccache when it is installed. Needs cmake and Open MPI's mpicxx; the torch build also
# Debian's libtorch-dev (torch's headers: python3-torch's include directory holds only links to them)
# and pybind11-dev (torch's headers include pybind11). The torch build took about 35 minutes of
# compiling on 2 busy cores the first time, the TensorFlow one about 2 minutes on 2 quiet cores
# (with ccache).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
framework=${1:-torch}
for tool in cmake mpicxx; do
  command -v "$tool" >/dev/null || { echo "bench/horovod/build.sh: $tool not found: apt-get install cmake libopenmpi-dev" >&2; exit 2; }
done
# The frameworks and controllers the benchmarks compare; a missing one fails the build instead of
# being left out silently.
export HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_MXNET=1
case "$framework" in
  torch)
    for header in torch/extension.h:libtorch-dev pybind11/pybind11.h:pybind11-dev; do
      if [ ! -e "/usr/include/${header%%:*}" ]; then
        echo "bench/horovod/build.sh: /usr/include/${header%%:*} is missing: Horovod's torch extension compiles against it; install it: apt-get install ${header##*:}" >&2
        exit 2
      fi
    done
    env_name=horovod-bench
    export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_TENSORFLOW=1
    ;;
  tensorflow)
    env_name=horovod-tf-bench
    export HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITHOUT_GLOO=1 HOROVOD_WITHOUT_PYTORCH=1
    # Horovod 0.28.1's xla_mpi_ops.cc (its XLA ops, GPU code only: the body is under HAVE_GPU) still
    # includes XLA's headers by their paths before TensorFlow 2.16 moved XLA out of its tree
    # (tensorflow/compiler/xla/...), and those headers include highwayhash's and farmhash's, which
    # TensorFlow's pip package keeps under include/external/, a directory Horovod's CMake does not
    # add. Without the flags below the build stops at "highwayhash/arch_specific.h: No such file or
    # directory", then "farmhash.h", then "tensorflow/compiler/xla/client/xla_builder.h".
    # xla_paths/ holds one forwarding header per old path Horovod includes, to where TensorFlow 2.21
    # has it (beside the environments, at a fixed path: ccache then matches a rebuild's objects).
    # The environment's path is fixed before make-venv.sh creates it.
    py=$(/usr/bin/python3 -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')
    tf_include="${GJ_VENV_ROOT:-/opt/gj-venvs}/$env_name/lib/$py/site-packages/tensorflow/include"
    xla_paths="${GJ_VENV_ROOT:-/opt/gj-venvs}/.horovod-tf-xla-paths"
    for old_new in client/xla_builder.h:hlo/builder/xla_builder.h \
                   service/custom_call_target_registry.h:service/custom_call_target_registry.h \
                   service/hlo.pb.h:service/hlo.pb.h shape.h:shape.h xla_data.pb.h:xla_data.pb.h; do
      mkdir -p "$(dirname "$xla_paths/tensorflow/compiler/xla/${old_new%%:*}")"
      echo "#include \"xla/${old_new#*:}\"" >"$xla_paths/tensorflow/compiler/xla/${old_new%%:*}"
    done
    export CXXFLAGS="${CXXFLAGS:-} -I$tf_include/external/highwayhash -I$tf_include/external/farmhash_archive/src -I$xla_paths"
    ;;
  *) echo "bench/horovod/build.sh: unknown framework '$framework'; choose torch or tensorflow" >&2; exit 2 ;;
esac
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
"$root/scripts/pypi/make-venv.sh" "$env_name"
