#!/usr/bin/env bash
# pkgconfig.sh PREFIX SOURCE WORK_DIR MPIEXEC...: compiles and links a C program using only
# `pkg-config gj-collectives` from PREFIX, then runs it on 2 ranks.
set -euo pipefail
prefix=$1 src=$2 work=$3
shift 3
# lib/ or Debian's multiarch lib/<triplet>/: wherever the library was installed.
prefix_libdir=$(dirname "$(find "$prefix" -name libgj_collectives.so -print -quit)")
export PKG_CONFIG_PATH="$prefix_libdir/pkgconfig"
cflags=$(pkg-config --cflags gj-collectives)
libs=$(pkg-config --libs gj-collectives)
libdir=$(pkg-config --variable=libdir gj-collectives)
echo "pkg-config: cflags=[$cflags] libs=[$libs] libdir=[$libdir]"
[ "$(readlink -f "$libdir")" = "$(readlink -f "$prefix_libdir")" ] || {
  echo "pkgconfig.sh: FAIL: libdir=$libdir is not the installed $prefix_libdir (pc file not relocatable?)" >&2
  exit 1
}
mkdir -p "$work"
# shellcheck disable=SC2086  # pkg-config output is a list of words
cc -std=c11 -Wall -Wextra -Werror $cflags "$src" -o "$work/pkgconfig_smoke" $libs -Wl,-rpath,"$libdir"
"$@" "$work/pkgconfig_smoke"
