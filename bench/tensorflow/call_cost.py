#!/usr/bin/env python3
"""The per-call cost of gj.tensorflow's way into the graph (docs/tensorflow.md, "Design"): the
time of one small allreduce (default 1 float32) through the library's C ABI alone (gj.common's
agreement + call on a numpy array: _host.allreduce), through gj.tensorflow eagerly, and inside a
tf.function, on the compiled ops and on the numpy_function fallback (forced in the same
process), against TensorFlow's own floor: a tf.function of one elementwise op on the same
tensor. At every rank count mpiexec gives. Prints one table on rank 0 (median microseconds per
call over --calls calls, --repeats times) and the ratio of the allreduce's tf.function to the
floor (issue 53's goal: at most 1.25 at 2 ranks).

    mpiexec -np 2 /opt/gj-venvs/tf/bin/python bench/tensorflow/call_cost.py
"""

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf

import gj.tensorflow as hvd
from gj.tensorflow import _host, _ops


def timed(fn, calls, repeats):
    fn()  # warm-up (and the trace, for tf.function)
    out = []
    for _ in range(repeats):
        hvd.barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--elements", type=int, default=1)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    hvd.init()
    x = tf.ones([a.elements])
    arr = np.ones(a.elements, dtype=np.float32)

    def functions():
        @tf.function
        def one(t):
            return hvd.allreduce(t, op=hvd.Sum)

        @tf.function
        def ten(t):
            return [hvd.allreduce(t + i, op=hvd.Sum) for i in range(10)]
        one(x), ten(x)  # traced on the path in force now
        return one, ten

    @tf.function
    def floor(t):
        return t * 2.0

    path = _ops.path()
    one, ten = functions()
    loaded = dict(_ops._loaded)
    _ops._loaded.update(module=None, why="forced by the benchmark")
    one_fallback, ten_fallback = functions()
    _ops._loaded.clear()
    _ops._loaded.update(loaded)

    rows = [
        ("tf.function, 1 elementwise op (TF's floor)", timed(lambda: floor(x), a.calls, a.repeats)),
        ("library + agreement (numpy)", timed(lambda: _host.allreduce(arr, hvd.Sum, 1.0, 1.0, None), a.calls,
                                              a.repeats)),
        ("gj.tensorflow eager", timed(lambda: hvd.allreduce(x, op=hvd.Sum), a.calls, a.repeats)),
        (f"gj.tensorflow tf.function, 1 op ({path})", timed(lambda: one(x), a.calls, a.repeats)),
        (f"gj.tensorflow tf.function, 10 ops ({path}, per op)",
         timed(lambda: ten(x), max(a.calls // 10, 1), a.repeats) / 10),
        ("gj.tensorflow tf.function, 1 op (numpy_function)", timed(lambda: one_fallback(x), a.calls, a.repeats)),
        ("gj.tensorflow tf.function, 10 ops (numpy_function, per op)",
         timed(lambda: ten_fallback(x), max(a.calls // 10, 1), a.repeats) / 10),
    ]
    if hvd.rank() == 0:
        print(f"ranks={hvd.size()} elements={a.elements} (median us per allreduce)")
        for name, us in rows:
            print(f"  {name:60s} {us:9.1f}")
        print(f"  ratio tf.function allreduce ({path}) / TF's floor: {rows[3][1] / rows[0][1]:.2f} (goal <= 1.25)")
        print(f"  ratio tf.function allreduce (numpy_function) / TF's floor: {rows[5][1] / rows[0][1]:.2f}")


if __name__ == "__main__":
    main()
