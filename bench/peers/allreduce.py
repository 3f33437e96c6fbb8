#!/usr/bin/env python3
"""allreduce (sum, float32 CPU tensors, out of place), 4 B - 64 MiB: gj.torch against horovod.torch
(its MPI or Gloo controller) in the same processes, interleaved rounds.

    mpiexec -np 2 python allreduce.py [--horovod mpi|gloo|none] [--minbytes 4] [--maxbytes 64M] [--rounds 7]
Rank 0 prints one row per size: median per-call time of each, and horovod time / gj time per
round (median [95 % CI]; > 1: gj faster). bench/peers/run.sh runs the documented tables.
"""
import argparse
import sys

import torch

import peers
from peers import gj


def nbytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    value = int(text[:-1]) * units[text[-1].upper()] if text[-1:].upper() in units else int(text)
    if value < 4 or value % 4:
        raise argparse.ArgumentTypeError(f"{text!r}: a size of float32 elements, >= 4 bytes (K/M/G suffixes)")
    return value


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--horovod", choices=peers.CONTROLLERS + ("none",), default="mpi")
    p.add_argument("--minbytes", type=nbytes, default=4)
    p.add_argument("--maxbytes", type=nbytes, default=64 << 20)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--iters", type=int, default=0, help="calls per batch (0: about 4 MiB moved, 1-20)")
    args = p.parse_args()
    hvd = peers.init(None if args.horovod == "none" else args.horovod)
    rank, size = gj.rank(), gj.size()
    if rank == 0:
        print(peers.header("allreduce sum f32, out of place", hvd, args.horovod, args.rounds))
        print("| size | gj us | horovod us | horovod / gj [95 % CI] |")
        print("|---|---|---|---|", flush=True)
    n = args.minbytes
    while n <= args.maxbytes:
        x = torch.arange(n // 4, dtype=torch.float32).remainder_(13).add_(rank + 1)
        runners = {"gj": lambda: gj.allreduce(x, op=gj.Sum)}
        if hvd:
            runners["horovod"] = lambda: hvd.allreduce(x, op=hvd.Sum)
        want = torch.arange(n // 4, dtype=torch.float32).remainder_(13) * size + size * (size + 1) / 2
        for name, fn in runners.items():
            if not torch.equal(peers.run(name, fn), want):
                raise SystemExit(f"allreduce.py: {name} gave a wrong sum at {n} bytes")
        t = peers.interleaved(runners, args.rounds, args.iters or peers.iters_for(n))
        med = {k: sorted(v)[len(v) // 2] for k, v in t.items()}
        if rank == 0:
            cmp = peers.fmt_ci(peers.ratio_ci(t, "horovod", "gj")) if hvd else "n/a"
            print(f"| {peers.size_label(n)} | {peers.fmt_us(med['gj'])} | "
                  f"{peers.fmt_us(med['horovod']) if hvd else 'n/a'} | {cmp} |", flush=True)
        n *= 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
