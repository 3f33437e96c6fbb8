#!/usr/bin/env bash
# nccl_loader_order.sh LOADER GOOD OLD PARTIAL: the NCCL search order (collectives/src/nccl/
# nccl_search.h) proven with fake libnccl.so.2 files (fake_nccl.c: GOOD reports 2.28.9, OLD
# 2.13.0, PARTIAL lacks ncclAllGather) placed in each location in turn; LOADER prints which one
# the search took. The locations behind the loader's own search (site folders, CUDA toolkit)
# need the real NCCL out of the way: that part runs in a private mount namespace with
# /usr/local/cuda masked (root and unshare needed; otherwise it is skipped, exit 77, and under
# CI=true that is a failure).
set -euo pipefail
loader=$1 good=$2 old=$3 partial=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

place() { mkdir -p "$(dirname "$2")"; cp "$1" "$2"; }
# A clean environment: only what each case sets.
search() { env -i PATH=/usr/bin:/bin HOME="$work/home" "$@" "$loader" 2>&1 || true; }
expect() {  # case, extended regex, output
  if grep -Eq -- "$2" <<<"$3"; then echo "ok   $1: $3"; else echo "FAIL $1: want /$2/, got: $3"; fail=1; fi
}
refuse() {  # case, extended regex that must not match, output
  if grep -Eq -- "$2" <<<"$3"; then echo "FAIL $1: /$2/ must not appear in: $3"; fail=1; fi
}
v=' version 2\.28\.9$'

outside() {
  place "$good" "$work/explicit/libnccl.so.2"
  out=$(search GJ_NCCL_LIBRARY="$work/explicit/libnccl.so.2")
  expect "1 GJ_NCCL_LIBRARY" "^loaded: $work/explicit/libnccl.so.2$v" "$out"

  out=$(search GJ_NCCL_LIBRARY="$work/none/libnccl.so.2")
  expect "1 GJ_NCCL_LIBRARY missing: error names it and the fix" \
    "^failed: no usable NCCL .*tried GJ_NCCL_LIBRARY $work/none/libnccl.so.2: .*Fix: point GJ_NCCL_LIBRARY" "$out"
  refuse "1 GJ_NCCL_LIBRARY is the only place tried" "loader's search|CUDA toolkit" "$out"

  place "$old" "$work/old/libnccl.so.2"
  out=$(search GJ_NCCL_LIBRARY="$work/old/libnccl.so.2")
  expect "1 GJ_NCCL_LIBRARY too old" "version 2\.13\.0 is older than 2\.14\.0" "$out"

  place "$good" "$work/ld/libnccl.so.2"
  out=$(search LD_LIBRARY_PATH="$work/ld" PYTHONPATH="$work/pp")
  expect "2 loader's search (LD_LIBRARY_PATH) before site folders" "^loaded: libnccl\.so\.2 \($work/ld/libnccl\.so\.2\)$v" "$out"

  # A library the loader finds that is too old, or lacks a symbol, is skipped for the next place.
  place "$good" "$work/pp/nvidia/nccl/lib/libnccl.so.2"
  out=$(search LD_LIBRARY_PATH="$work/old" PYTHONPATH="$work/pp")
  expect "2 too old -> next place" "^loaded: $work/pp/nvidia/nccl/lib/libnccl\.so\.2$v" "$out"
  place "$partial" "$work/partial/libnccl.so.2"
  out=$(search LD_LIBRARY_PATH="$work/partial" PYTHONPATH="$work/pp" GJ_NCCL_LIBRARY="$work/partial/libnccl.so.2")
  expect "2 lacking a symbol is named" "loaded but lacks ncclAllGather" "$out"
}

inside() {
  # Private mounts: nothing here is seen outside this namespace.
  mount --make-rprivate /
  for d in /usr/local/cuda /usr/local/cuda-*; do
    [ -d "$d" ] && mount -t tmpfs gj-masked "$(readlink -f "$d")"
  done
  out=$(search)
  expect "0 nothing anywhere: every place and the fix, one line" \
    "^failed: no usable NCCL \(libnccl\.so\.2 >= 2\.14\.0\) found; tried the loader's search .*CUDA toolkit /usr/local/cuda/lib64/libnccl\.so\.2: .*Fix: pip install nvidia-nccl-cu13" "$out"
  [ "$(wc -l <<<"$out")" -eq 1 ] || { echo "FAIL 0: the message is not one line"; fail=1; }

  place "$good" "$work/pp/nvidia/nccl/lib/libnccl.so.2"
  place "$good" "$work/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
  mkdir -p "$work/venv/lib/python3.12/site-packages/torch"
  out=$(search PYTHONPATH="$work/pp" VIRTUAL_ENV="$work/venv")
  expect "3 PYTHONPATH before VIRTUAL_ENV" "^loaded: $work/pp/nvidia/nccl/lib/libnccl\.so\.2$v" "$out"
  out=$(search VIRTUAL_ENV="$work/venv")
  expect "3 VIRTUAL_ENV's site-packages (torch's wheel layout)" \
    "^loaded: $work/venv/lib/python3\.12/site-packages/nvidia/nccl/lib/libnccl\.so\.2$v" "$out"
  place "$good" "$work/env2/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2"
  mkdir -p "$work/env2/bin"
  out=$(env -i PATH="$work/env2/bin:/usr/bin:/bin" HOME="$work/home" "$loader" 2>&1 || true)
  expect "3 an environment whose bin/ is on PATH" \
    "^loaded: $work/env2/lib/python3\.11/site-packages/nvidia/nccl/lib/libnccl\.so\.2$v" "$out"

  place "$good" "$work/cuda/lib64/libnccl.so.2"
  out=$(search CUDA_HOME="$work/cuda")
  expect "4 CUDA_HOME/lib64" "^loaded: $work/cuda/lib64/libnccl\.so\.2$v" "$out"
  place "$good" "$(readlink -f /usr/local/cuda)/lib64/libnccl.so.2"
  out=$(search)
  expect "4 /usr/local/cuda/lib64" "^loaded: /usr/local/cuda/lib64/libnccl\.so\.2( \(.*\))?$v" "$out"
  out=$(search PYTHONPATH="$work/pp")
  expect "3 before 4: site folder before the CUDA toolkit" "^loaded: $work/pp/nvidia/nccl/lib/libnccl\.so\.2$v" "$out"
}

if [ "${GJ_LOADER_INSIDE:-}" = 1 ]; then
  inside
  exit $fail
fi
outside
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
  GJ_LOADER_INSIDE=1 unshare -m "$0" "$@" || fail=1
else
  echo "SKIP: the site-folder and CUDA-toolkit cases need root and unshare -m (a private mount namespace)"
  [ $fail -eq 0 ] || exit 1
  [ "${CI:-}" = true ] && { echo "FAIL: under CI=true this part may not skip"; exit 1; }
  exit 77
fi
[ $fail -eq 0 ] && echo "nccl_loader_order.sh: ok"
exit $fail
