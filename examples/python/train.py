#!/usr/bin/env python3
"""Data-parallel logistic regression in numpy over gj collectives.

Every rank draws its own shard of synthetic data and its own random initial weights; rank 0's
weights are broadcast, the gradients (weights and bias) are averaged with one grouped allreduce
per step, and every rank applies the same SGD update. At the end it checks that every rank
holds bitwise identical weights and that the loss fell below half its initial value.

    mpiexec -np 2 ./train.py            # or as the script of gj-mpirun: gj-mpirun /path/train.py
Exit: 0 ok, 1 weights differ across ranks, 2 usage, 3 loss did not fall, 4 library error.
"""

import argparse
import hashlib
import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
# The gj package: wherever python3 finds it (dist-packages, PYTHONPATH), else the source tree's
# collectives/python, else <prefix>/lib/python3/dist-packages of the prefix this example is
# installed in (<prefix>/share/gj/examples/python).
sys.path += [os.path.join(_HERE, "..", "..", "collectives", "python"),
             os.path.join(_HERE, "..", "..", "..", "..", "lib", "python3", "dist-packages")]
import gj  # noqa: E402

EXIT_WEIGHTS_DIFFER, EXIT_LOSS_DID_NOT_FALL, EXIT_LIBRARY_ERROR = 1, 3, 4


def make_shard(seed, rank, n, dim):
    teacher = np.random.default_rng(seed).standard_normal(dim)  # same on every rank
    x = np.random.default_rng([seed, 1 + rank]).standard_normal((n, dim)).astype(np.float32)
    y = (x @ teacher > 0).astype(np.float32)
    return x, y


def loss_and_grads(w, b, x, y):
    z = x @ w + b[0]
    loss = float(np.mean(np.logaddexp(0.0, z) - y * z))  # stable BCE with logits
    d = (1.0 / (1.0 + np.exp(-z)) - y) / len(y)
    return loss, (x.T @ d).astype(np.float32), np.array([d.sum()], dtype=np.float32)


def bit_hash(*arrays):
    h = hashlib.blake2b(digest_size=8)
    for a in arrays:
        h.update(a.tobytes())
    return np.frombuffer(h.digest(), dtype=np.int64).copy()


def identical_on_all_ranks(comm, *arrays):
    lo, hi = bit_hash(*arrays), bit_hash(*arrays)
    same = comm.allreduce(lo, op="min")[0] == comm.allreduce(hi, op="max")[0]
    mins = comm.grouped_allreduce([a.copy() for a in arrays], op="min")
    maxs = comm.grouped_allreduce([a.copy() for a in arrays], op="max")
    for a, l, h in zip(arrays, mins, maxs):
        bits = a.view(np.uint32)
        if not (np.array_equal(bits, l.view(np.uint32)) and np.array_equal(bits, h.view(np.uint32))):
            i = int(np.argmax((bits != l.view(np.uint32)) | (bits != h.view(np.uint32))))
            print(f"rank {comm.rank}: element {i} = {a[i]!r}, min over ranks {l[i]!r}, max {h[i]!r}",
                  file=sys.stderr)
            return False
    return bool(same)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--samples", type=int, default=512, help="per rank")
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-broadcast", action="store_true", help="skip the initial broadcast (the check then fails)")
    args = p.parse_args()

    with gj.Communicator() as comm:
        x, y = make_shard(args.seed, comm.rank, args.samples, args.dim)
        init = np.random.default_rng([args.seed, 1000 + comm.rank])  # different on every rank
        w = (0.5 * init.standard_normal(args.dim)).astype(np.float32)
        b = np.zeros(1, dtype=np.float32)
        if not args.no_broadcast:
            comm.broadcast(w, root=0)
            comm.broadcast(b, root=0)

        first = last = None
        for step in range(args.steps):
            loss, gw, gb = loss_and_grads(w, b, x, y)
            comm.grouped_allreduce([gw, gb], op="avg")
            w -= np.float32(args.lr) * gw
            b -= np.float32(args.lr) * gb
            last = float(comm.allreduce(np.array([loss]), op="avg")[0])
            first = last if first is None else first
            if comm.rank == 0 and (step % 50 == 0 or step == args.steps - 1):
                print(f"step {step:4d}  loss {last:.6f}", flush=True)

        identical = identical_on_all_ranks(comm, w, b)
        rank, size = comm.rank, comm.size
    gj.finalize()
    return verdict(rank, size, identical, first, last)


def verdict(rank, size, identical, first, last):
    """The exit code of a run: weights identical everywhere, loss below half its first value."""
    if not identical:
        print(f"rank {rank}: FAIL: weights differ across ranks after training", file=sys.stderr)
        return EXIT_WEIGHTS_DIFFER
    if not last < 0.5 * first:
        print(f"rank {rank}: FAIL: loss {first:.6f} -> {last:.6f} did not fall below half; try more --steps",
              file=sys.stderr)
        return EXIT_LOSS_DID_NOT_FALL
    if rank == 0:
        print(f"OK: weights bitwise identical on all {size} ranks, loss {first:.6f} -> {last:.6f}")
    return 0


def run(main_fn, name):
    """Exits with main_fn()'s code, or EXIT_LIBRARY_ERROR naming the failed library call."""
    try:
        sys.exit(main_fn())
    except gj.GjError as e:
        print(f"{name}: {e}", file=sys.stderr)
        sys.exit(EXIT_LIBRARY_ERROR)


if __name__ == "__main__":
    run(main, "train.py")
