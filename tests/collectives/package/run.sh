#!/usr/bin/env bash
# Installs the collectives component of a build tree into a scratch prefix, then builds and
# runs consumers through the CMake package (find_package(gj)) and through pkg-config.
# usage: run.sh <build-dir> <mpiexec>
set -euo pipefail
build=$1
mpiexec=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --component collectives --prefix "$prefix" >/dev/null
# lib/ or Debian's multiarch lib/<triplet>/ (the build's CMAKE_INSTALL_LIBDIR).
lib=$(cd "$prefix" && dirname "$(find . -name libgj_collectives.so -print -quit)")
lib=${lib#./}
for f in include/gj/collectives.h include/gj/collectives.hpp $lib/cmake/gj/gjConfig.cmake \
         $lib/cmake/gj/gjConfigVersion.cmake $lib/pkgconfig/gj-collectives.pc $lib/libgj_collectives.a; do
  [[ -e $prefix/$f ]] || { echo "not installed: $f (under lib or lib64?)"; ls -R "$prefix"; exit 1; }
done

run() { "$mpiexec" --allow-run-as-root --oversubscribe -np 2 "$@"; }

# CMake package.
cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/cmake" -j2 >/dev/null
LD_LIBRARY_PATH=$prefix/$lib run "$work/cmake/consumer_c"
run "$work/cmake/consumer_cpp_static"

# pkg-config, shared library.
export PKG_CONFIG_PATH=$prefix/$lib/pkgconfig
cc -o "$work/pc_consumer" "$here/consumer.c" $(pkg-config --cflags --libs gj-collectives)
LD_LIBRARY_PATH=$prefix/$lib run "$work/pc_consumer"
echo "package OK: find_package(gj) shared + static, pkg-config"
