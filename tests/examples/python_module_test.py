#!/usr/bin/env python3
"""Multi-rank test of the gj package's numpy layer (collectives/python/gj) (run under mpiexec, any rank count).

Each rank fills rank+1, so every result is known exactly: sum n(n+1)/2, avg (n+1)/2, min 1,
max n. Exits 0 when every check passes, else 1 after naming each failed check.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.environ["GJ_EXAMPLES_PYTHON_DIR"])
import gj  # noqa: E402  (the gj package, the numpy layer)

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def bf16_bits(values):
    """float32 values exactly representable in bfloat16 -> their uint16 bit patterns."""
    return (np.asarray(values, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def first_bad(got, want):
    bad = np.nonzero(got != want)[0]
    return f"first wrong index {bad[0]}: got {got[bad[0]]!r}, want {want[bad[0]]!r}" if bad.size else ""


with gj.Communicator() as comm:
    n, r = comm.size, comm.rank
    expect(0 <= r < n, f"rank {r} out of [0, {n})")
    expect(0 <= comm.local_rank < comm.local_size, f"local rank {comm.local_rank} of {comm.local_size}")

    expected = {"sum": n * (n + 1) // 2, "min": 1, "max": n, "prod": int(np.prod(np.arange(1, n + 1)))}
    for dtype in (np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8):
        for op, want in expected.items():
            for count in (1, 7, 1000):
                a = np.full(count, r + 1, dtype=dtype)
                got = comm.allreduce(a, op=op)
                expect(got is a, f"allreduce returns its argument ({dtype.__name__})")
                msg = first_bad(a, np.full(count, want, dtype=dtype))
                expect(not msg, f"allreduce {np.dtype(dtype).name} {op} count={count}: {msg}")
    avg = np.full(5, r + 1, dtype=np.float64)
    comm.allreduce(avg, op="avg")
    expect(np.all(avg == (n + 1) / 2), f"allreduce float64 avg: {avg} != {(n + 1) / 2}")

    bits = bf16_bits(np.full(9, r + 1))
    comm.allreduce(bits, op="sum", dtype="bfloat16")
    msg = first_bad(bits, bf16_bits(np.full(9, expected["sum"])))
    expect(not msg, f"allreduce bfloat16 sum: {msg}")

    root = n - 1
    b = np.arange(10, dtype=np.float32) * (r + 1)
    comm.broadcast(b, root=root)
    msg = first_bad(b, np.arange(10, dtype=np.float32) * (root + 1))
    expect(not msg, f"broadcast from root {root}: {msg}")

    group = [np.full(c, (r + 1) * (i + 1), dtype=np.float32) for i, c in enumerate((3, 1, 0, 1025))]
    single = [g.copy() for g in group]
    comm.grouped_allreduce(group, op="sum")
    for i, (g, s) in enumerate(zip(group, single)):
        comm.allreduce(s, op="sum")
        expect(np.array_equal(g.view(np.uint32), s.view(np.uint32)), f"grouped tensor {i} != per-tensor result")
    old = comm.fusion_threshold
    comm.fusion_threshold = 64
    expect(comm.fusion_threshold == 64, f"fusion_threshold set 64, read {comm.fusion_threshold}")
    comm.fusion_threshold = old

    def raises(exc, fn, what, text=""):
        try:
            fn()
        except exc as e:
            expect(text in str(e), f"{what}: message {str(e)!r} lacks {text!r}")
            return e
        failures.append(f"{what}: no {exc.__name__} raised")
        return None

    e = raises(gj.GjError, lambda: comm.broadcast(np.zeros(2, np.float32), root=n), "broadcast root=size",
               "gjBroadcast")
    expect(e is None or e.code == 1, f"broadcast root=size: code {getattr(e, 'code', None)} != gjInvalidArgument(1)")
    raises(ValueError, lambda: comm.allreduce(np.zeros((4, 4), np.float32)[:, 1]), "non-contiguous", "contiguous")
    raises(TypeError, lambda: comm.allreduce(np.zeros(2, np.complex64)), "complex dtype", "complex64")
    raises(TypeError, lambda: comm.allreduce(np.zeros(2, np.float32), dtype="bfloat16"), "bf16 on float32", "bfloat16")
    raises(ValueError, lambda: comm.allreduce(np.zeros(2, np.float32), op="mean"), "bad op", "mean")
    raises(TypeError, lambda: comm.grouped_allreduce([np.zeros(1, np.float32), np.zeros(1, np.float64)]),
           "mixed dtypes", "one dtype")
comm_closed = comm
try:
    comm_closed.allreduce(np.zeros(1, np.float32))
    failures.append("allreduce after close: no error")
except ValueError:
    pass
gj.finalize()

for f in failures:
    print(f"rank {r}: FAIL: {f}", file=sys.stderr)
if not failures and r == 0:
    print(f"python module: all checks passed on {n} ranks (library {gj.library_path})")
sys.exit(1 if failures else 0)
