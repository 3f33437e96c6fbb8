#!/usr/bin/env python3
"""The C ABI from Python (ctypes only, no numpy), run under mpiexec: allreduce and an error message.

usage: mpiexec -np N python3 ctypes_allreduce.py /path/to/libgj_collectives.so
"""
import ctypes
import struct
import sys

GJ_SUCCESS, GJ_INVALID_ARGUMENT = 0, 1
GJ_FLOAT32, GJ_BFLOAT16 = 0, 3
GJ_SUM, GJ_AVG = 0, 1

# RTLD_GLOBAL: Open MPI's plugins resolve symbols of libmpi, which this library pulls in.
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
lib.gjGetLastError.restype = ctypes.c_char_p
lib.gjGetErrorString.restype = ctypes.c_char_p
lib.gjAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                            ctypes.c_void_p, ctypes.c_void_p]


def check(rc, comm=None):
    if rc != GJ_SUCCESS:
        raise RuntimeError(f"{lib.gjGetErrorString(rc).decode()}: {lib.gjGetLastError(comm).decode()}")


comm = ctypes.c_void_p()
check(lib.gjCommInitWorld(ctypes.byref(comm)))
rank, size = ctypes.c_int(), ctypes.c_int()
check(lib.gjCommRank(comm, ctypes.byref(rank)), comm)
check(lib.gjCommSize(comm, ctypes.byref(size)), comm)
n = size.value

want = n * (n + 1) / 2
grad = (ctypes.c_float * 1000)(*([n * (rank.value + 1)] * 1000))
check(lib.gjAllReduce(grad, grad, len(grad), GJ_FLOAT32, GJ_AVG, comm, None), comm)
failures = []
bad = [i for i, v in enumerate(grad) if v != want]
if bad:
    failures.append(f"f32 avg: first wrong index {bad[0]}: {grad[bad[0]]}, expected {want}")


def bf16_bits(x):  # exact for small integers: the top half of the f32 bits
    return struct.unpack("<I", struct.pack("<f", x))[0] >> 16


def bf16_value(b):
    return struct.unpack("<f", struct.pack("<I", b << 16))[0]


bits = (ctypes.c_uint16 * 7)(*([bf16_bits(rank.value + 1)] * 7))
out = (ctypes.c_uint16 * 7)()
check(lib.gjAllReduce(bits, out, len(bits), GJ_BFLOAT16, GJ_SUM, comm, None), comm)
if [bf16_value(b) for b in out] != [want] * 7:
    failures.append(f"bf16 sum: {[bf16_value(b) for b in out]}, expected {want}")

rc = lib.gjAllReduce(grad, grad, 5, GJ_FLOAT32, 17, comm, None)
msg = lib.gjGetLastError(comm).decode()
if rc != GJ_INVALID_ARGUMENT or "op=17 is not a gjRedOp_t" not in msg:
    failures.append(f"invalid op: rc={rc} message={msg!r}")

check(lib.gjCommDestroy(comm))
check(lib.gjFinalize())
for f in failures:
    print(f"[rank {rank.value}] FAIL {f}", file=sys.stderr)
sys.exit(1 if failures else 0)
