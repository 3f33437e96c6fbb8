#!/usr/bin/env bash
# masked_cuda.sh LIB MPIEXEC HOST_SUITE TRAIN PYTHON PY_ALLREDUCE: a machine without CUDA and
# NCCL, as a CPU-only training image is. In a private mount namespace /usr/local/cuda (every
# /usr/local/cuda*) is covered by an empty tmpfs, then: no libnccl.so.2 can be loaded, the
# library loads from Python (ctypes) and answers, and with 2 ranks the Python ctypes allreduce
# (PY_ALLREDUCE), the C++ training example (TRAIN) and the host suite (HOST_SUITE) pass. Needs root and unshare -m; otherwise exit 77
# (ctest SKIP), and under CI=true that is a failure.
set -euo pipefail
lib=$1 mpiexec=$2 suite=$3 train=$4 python=$5 py_allreduce=$6

if [ "${GJ_MASKED_INSIDE:-}" != 1 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null || ! unshare -m true 2>/dev/null; then
    echo "SKIP: masking /usr/local/cuda needs root and unshare -m (a private mount namespace)"
    [ "${CI:-}" = true ] && { echo "FAIL: under CI=true this test may not skip"; exit 1; }
    exit 77
  fi
  GJ_MASKED_INSIDE=1 exec unshare -m "$0" "$@"
fi

mount --make-rprivate /
for d in /usr/local/cuda /usr/local/cuda-*; do
  [ -d "$d" ] && mount -t tmpfs gj-masked "$(readlink -f "$d")"
done
if "$python" -c 'import ctypes; ctypes.CDLL("libnccl.so.2")' 2>/dev/null; then
  echo "FAIL: libnccl.so.2 still loads with /usr/local/cuda masked; this test proves nothing here" >&2
  exit 1
fi
echo "masked: /usr/local/cuda is empty, libnccl.so.2 cannot be loaded"

"$python" - "$lib" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.gjDataTypeSize.restype = ctypes.c_size_t
lib.gjGetErrorString.restype = ctypes.c_char_p
assert lib.gjDataTypeSize(3) == 2, "gjDataTypeSize(gjBfloat16)"
print("ctypes.CDLL loads", sys.argv[1], "->", lib.gjGetErrorString(3).decode())
PY

run=("$mpiexec" --allow-run-as-root --oversubscribe -np 2)
fail=0
step() {  # name, command...: runs it, prints its last lines, records a failure
  local name=$1 out; shift
  if out=$("$@" 2>&1); then
    echo "ok   $name: $(tail -1 <<<"$out")"
  else
    echo "$out" | tail -20
    echo "FAIL $name (with /usr/local/cuda masked)"
    fail=1
  fi
}
step "Python ctypes allreduce, 2 ranks" "${run[@]}" "$python" "$py_allreduce" "$lib"
step "C++ training example, 2 ranks" env GJ_COLL_LOG_LEVEL=info "${run[@]}" "$train"
step "host suite, 2 ranks" "${run[@]}" "$suite"
[ $fail -eq 0 ] && echo "masked_cuda.sh: ok"
exit $fail
