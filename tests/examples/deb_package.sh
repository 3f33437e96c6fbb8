#!/usr/bin/env bash
# deb_package.sh BUILD_DIR WORK_DIR VERSION: builds the Debian package(s) with CPack (gj-mpirun,
# and gj-mpirun-dev when the install rules are split into components), checks the control
# fields and contents, unpacks them into WORK_DIR/root with `dpkg -x` (never touching the
# system) and runs the unpacked /usr/bin/gj-mpirun --version.
set -euo pipefail
build=$1 work=$2 version=$3
rm -rf "$work"
mkdir -p "$work"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work" >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"; exit 1; }
shopt -s nullglob
debs=("$work"/gj-mpirun_*.deb)
[ ${#debs[@]} -eq 1 ] || { echo "deb_package.sh: FAIL: want one gj-mpirun_*.deb in $work, got: ${debs[*]:-none}" >&2; exit 1; }
deb=${debs[0]}
dev=("$work"/gj-mpirun-dev_*.deb)
for d in "$deb" "${dev[@]}"; do dpkg-deb --info "$d"; done

fail=0
field() { dpkg-deb --field "$deb" "$1"; }
expect_field() {  # name, extended regex
  local v; v=$(field "$1")
  if ! grep -Eq -- "$2" <<<"$v"; then echo "deb_package.sh: FAIL: $1: \"$v\" does not match /$2/" >&2; fail=1; fi
}
expect_field Package '^gj-mpirun$'
expect_field Version "^${version//./\\.}$"
expect_field Architecture "^$(dpkg --print-architecture)$"
expect_field Maintainer '^.+ <[^>]+@[^>]+>$'
expect_field Section '^[a-z]+$'
expect_field Description '^.{10,}'
# Library deps computed by dpkg-shlibdeps, and the programs gj-mpirun execs.
for dep in libc6 libopenmpi3 libstdc\\+\\+6 openmpi-bin openssh-client; do
  expect_field Depends "(^|, )${dep}( |,|$)"
done
expect_field Recommends '(^|, )openssh-server( |,|$)'
# NCCL is opened at run time when a device buffer comes: suggested, never required.
expect_field Suggests '(^|, )libnccl2( |,|$)'
if grep -Eq 'nccl|cuda' <<<"$(field Depends)"; then
  echo "deb_package.sh: FAIL: Depends \"$(field Depends)\" names NCCL/CUDA (a CPU-only machine must be able to install it)" >&2; fail=1
fi

if [ ${#dev[@]} -gt 0 ]; then
  dev_depends=$(dpkg-deb --field "${dev[0]}" Depends)
  grep -Fq "gj-mpirun (= $version)" <<<"$dev_depends" || {
    echo "deb_package.sh: FAIL: gj-mpirun-dev Depends \"$dev_depends\" lacks gj-mpirun (= $version)" >&2; fail=1; }
fi
for d in "$deb" "${dev[@]}"; do dpkg-deb -x "$d" "$work/root"; done
contents=$(cd "$work/root" && find . \( -type f -o -type l \) | sort)
# Debian's multiarch library folder.
libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for f in ./usr/bin/gj-mpirun .$libdir/libgj_collectives.so .$libdir/libgj_collectives.a \
         ./usr/include/gj/collectives.h .$libdir/cmake/gj/gjConfig.cmake \
         .$libdir/pkgconfig/gj-collectives.pc ./usr/lib/python3/dist-packages/gj/__init__.py \
         ./usr/lib/python3/dist-packages/gj/torch/optimizer.py; do
  grep -qx -- "$f" <<<"$contents" || { echo "deb_package.sh: FAIL: $f not in the package" >&2; fail=1; }
done
"$(dirname "$0")/check_installed_elf.sh" "$work/root" || fail=1
out=$("$work/root/usr/bin/gj-mpirun" --version)
echo "unpacked: $out"
grep -q -- "$version" <<<"$out" || { echo "deb_package.sh: FAIL: --version printed \"$out\", want $version" >&2; fail=1; }
# The pkg-config file must lead to where the package puts the library: $libdir, or (when the
# file is relocatable through ${pcfiledir}) the unpacked copy.
pc_libdir=$(PKG_CONFIG_PATH="$work/root$libdir/pkgconfig" pkg-config --variable=libdir gj-collectives)
case $(readlink -m "$pc_libdir") in
  "$libdir"|"$(readlink -m "$work/root$libdir")") echo "pkg-config libdir: $pc_libdir" ;;
  *) echo "deb_package.sh: FAIL: gj-collectives.pc in the package has libdir=$pc_libdir, not $libdir" >&2; fail=1 ;;
esac
[ $fail -eq 0 ] && echo "deb_package.sh: ok: $deb ${dev[*]}"
exit $fail
