#!/usr/bin/env bash
# CI's current-stack stage (.ci/run, docs/testing.md) by hand: a Debian 13 (trixie) root with the current stack, made from
# Debian's packages when it does not exist yet, and scripts/stack/current-tests.sh run inside
# it on this checkout. Needs root (mmdebstrap, mount, chroot).
#   scripts/stack/test-current.sh [ROOT=/var/tmp/gj-stack/trixie]
# A ROOT that exists is reused as it is (delete it to get the mirror's current packages).
# The environment of current-tests.sh (GJ_CURRENT_*) passes through.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=${1:-/var/tmp/gj-stack/trixie}
if [ ! -x "$root/usr/bin/mpiexec.mpich" ]; then
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  echo "== current stack: making $root (scripts/stack/make-root.sh)"
  scripts/stack/make-root.sh "$root" trixie
fi
exec scripts/stack/enter.sh "$root" . /src/scripts/stack/current-tests.sh
