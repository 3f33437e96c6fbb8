#!/usr/bin/env bash
# install_prefix.sh BUILD_DIR WORK_DIR: what a user does with a release. Installs the
# build into WORK_DIR/prefix, then configures and builds examples/cpp-train OUT OF TREE against
# that prefix only (find_package(gj) through CMAKE_PREFIX_PATH) into WORK_DIR/cpp-train.
set -euo pipefail
build=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix"
# The library folder: Debian's multiarch lib/<triplet> where the build has one, else lib.
lib=lib
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || true)
[ -n "$triplet" ] && [ -d "$work/prefix/lib/$triplet" ] && lib=lib/$triplet
for f in bin/gj-mpirun $lib/libgj_collectives.so $lib/libgj_collectives.a include/gj/collectives.h \
         include/gj/collectives.hpp $lib/cmake/gj/gjConfig.cmake $lib/cmake/gj/gjConfigVersion.cmake \
         $lib/pkgconfig/gj-collectives.pc lib/python3/dist-packages/gj/__init__.py \
         lib/python3/dist-packages/gj/torch/__init__.py share/gj/examples/python/horovod_seed.py \
         share/gj/examples/python/train.py share/gj/examples/cpp-train/CMakeLists.txt; do
  [ -e "$work/prefix/$f" ] || { echo "install_prefix.sh: FAIL: $work/prefix/$f not installed" >&2; exit 1; }
done
# Loads on any machine: no RUNPATH into this machine's folders, no NEEDED libnccl.
"$(dirname "$0")/check_installed_elf.sh" "$work/prefix"
# The installed Python package loads the installed library by its recorded relative path.
loaded=$(env -u GJ_COLLECTIVES_LIB PYTHONPATH="$work/prefix/lib/python3/dist-packages" \
  /usr/bin/python3 -c 'import gj; print(gj.library_path)')
case "$loaded" in
  "$work/prefix/"*) echo "install_prefix.sh: python package loads $loaded" ;;
  *) echo "install_prefix.sh: FAIL: the installed gj package loaded '$loaded', not the prefix's library" >&2; exit 1 ;;
esac
# The installed copy of the example, so the test also proves the installed sources build.
cmake -S "$work/prefix/share/gj/examples/cpp-train" -B "$work/cpp-train" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release
cmake --build "$work/cpp-train" -j2
echo "install_prefix.sh: ok: $work/prefix, $work/cpp-train/train"
