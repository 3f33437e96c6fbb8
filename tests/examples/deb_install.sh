#!/usr/bin/env bash
# deb_install.sh DEB_DIR: the real `dpkg -i` of the package built by deb_package.sh, then
# /usr/bin/gj-mpirun --version, then `dpkg --purge`. Changes the system, so it runs only when
# CI=true and as root, and never over a gj-mpirun package that was installed before; otherwise
# it exits 77 (ctest SKIP). Run by hand: CI=true ctest -R examples.deb.install
set -euo pipefail
dir=$1
if [ "${CI:-}" != "true" ] || [ "$(id -u)" -ne 0 ]; then
  echo "deb_install.sh: SKIP: installs into the real system; runs only with CI=true as root"
  exit 77
fi
if dpkg-query -W -f='${Status}' gj-mpirun 2>/dev/null | grep -q "install ok installed"; then
  echo "deb_install.sh: SKIP: a gj-mpirun package is already installed; not replacing it"
  exit 77
fi
shopt -s nullglob
debs=("$dir"/gj-mpirun_*.deb "$dir"/gj-mpirun-dev_*.deb)
[ ${#debs[@]} -gt 0 ] || { echo "deb_install.sh: FAIL: no package in $dir (examples.deb.package runs first)" >&2; exit 1; }
trap 'dpkg --purge gj-mpirun-dev gj-mpirun >/dev/null 2>&1 || true' EXIT
dpkg -i "${debs[@]}"
out=$(/usr/bin/gj-mpirun --version)
echo "installed: $out"
# Read the cache into a variable first: `ldconfig -p | grep -q` under pipefail fails with 141
# when grep exits early and the listing is larger than a pipe buffer (CI machines with many libs).
ld_cache=$(ldconfig -p)
grep -q 'libgj_collectives\.so\.0 ' <<<"$ld_cache" || { echo "deb_install.sh: FAIL: libgj_collectives.so not in the ldconfig cache" >&2; exit 1; }
# The system python3 imports the package from dist-packages, which loads /usr/lib's library.
env -u GJ_COLLECTIVES_LIB -u PYTHONPATH /usr/bin/python3 -c 'import gj; print("python package loads", gj.library_path); assert gj.library_path.startswith("/usr/lib/")' \
  || { echo "deb_install.sh: FAIL: the system python3 cannot import gj (/usr/lib/python3/dist-packages/gj) or it loads another library" >&2; exit 1; }
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  env -u GJ_COLLECTIVES_LIB -u PYTHONPATH /usr/bin/python3 -c 'import gj.torch' \
    || { echo "deb_install.sh: FAIL: the system python3 cannot import gj.torch" >&2; exit 1; }
fi
echo "deb_install.sh: ok"
