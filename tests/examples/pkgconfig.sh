#!/usr/bin/env bash
# pkgconfig.sh PREFIX SOURCE WORK_DIR MPIEXEC...: compiles and links a C program using only
# `pkg-config gj-collectives` from PREFIX, then runs it on 2 ranks.
set -euo pipefail
prefix=$1 src=$2 work=$3
shift 3
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cflags=$(pkg-config --cflags gj-collectives)
libs=$(pkg-config --libs gj-collectives)
libdir=$(pkg-config --variable=libdir gj-collectives)
echo "pkg-config: cflags=[$cflags] libs=[$libs] libdir=[$libdir]"
[ "$(readlink -f "$libdir")" = "$(readlink -f "$prefix/lib")" ] || {
  echo "pkgconfig.sh: FAIL: libdir=$libdir is not the installed $prefix/lib (pc file not relocatable?)" >&2
  exit 1
}
mkdir -p "$work"
# shellcheck disable=SC2086  # pkg-config output is a list of words
cc -std=c11 -Wall -Wextra -Werror $cflags "$src" -o "$work/pkgconfig_smoke" $libs -Wl,-rpath,"$libdir"
"$@" "$work/pkgconfig_smoke"
