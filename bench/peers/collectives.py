#!/usr/bin/env python3
"""allgather, broadcast and alltoall of float32 CPU tensors at 4 KiB, 1 MiB, 16 MiB: gj.torch
against horovod.torch (MPI or Gloo controller) in the same processes, interleaved rounds.
Size: each rank's input (allgather: the gathered result is ranks x size; broadcast: the
tensor; alltoall: each rank's send buffer, equal splits).

    mpiexec -np 2 python collectives.py [--horovod mpi|gloo|none] [--sizes 4K,1M,16M] [--rounds 7]
"""
import argparse
import sys

import torch

import peers
from allreduce import nbytes
from peers import gj


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--horovod", choices=peers.CONTROLLERS + ("none",), default="mpi")
    p.add_argument("--sizes", default="4K,1M,16M")
    p.add_argument("--ops", default="allgather,broadcast,alltoall")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--iters", type=int, default=0)
    args = p.parse_args()
    sizes = [nbytes(s) for s in args.sizes.split(",")]
    hvd = peers.init(None if args.horovod == "none" else args.horovod)
    rank, size = gj.rank(), gj.size()
    ops = {
        "allgather": lambda lib, x: lib.allgather(x),
        "broadcast": lambda lib, x: lib.broadcast(x, root_rank=0),
        "alltoall": lambda lib, x: lib.alltoall(x),
    }
    chosen = args.ops.split(",")
    unknown = [o for o in chosen if o not in ops]
    if unknown:
        raise SystemExit(f"collectives.py: --ops {args.ops!r}: {unknown} unknown; choose from {','.join(ops)}")
    if rank == 0:
        print(peers.header("allgather / broadcast / alltoall f32", hvd, args.horovod, args.rounds))
        print("| op | size | gj us | horovod us | horovod / gj [95 % CI] |")
        print("|---|---|---|---|---|", flush=True)
    for op in chosen:
        for n in sizes:
            rows = n // 4 // size * size if op == "alltoall" else n // 4
            x = torch.full((rows,), float(rank + 1))
            runners = {"gj": lambda: ops[op](gj, x)}
            if hvd:
                runners["horovod"] = lambda: ops[op](hvd, x)
            outs = {k: peers.run(k, fn) for k, fn in runners.items()}
            if hvd and not torch.equal(outs["gj"], outs["horovod"]):
                raise SystemExit(f"collectives.py: {op} at {n} bytes: gj and horovod results differ")
            t = peers.interleaved(runners, args.rounds, args.iters or peers.iters_for(n))
            if rank == 0:
                med = {k: sorted(v)[len(v) // 2] for k, v in t.items()}
                cmp = peers.fmt_ci(peers.ratio_ci(t, "horovod", "gj")) if hvd else "n/a"
                print(f"| {op} | {peers.size_label(n)} | {peers.fmt_us(med['gj'])} | "
                      f"{peers.fmt_us(med['horovod']) if hvd else 'n/a'} | {cmp} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
