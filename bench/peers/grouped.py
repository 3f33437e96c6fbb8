#!/usr/bin/env python3
"""ResNet-50's 161 gradient tensors (25,557,032 float32 parameters), allreduce sum: gj.torch's one
grouped call against Horovod's fusion (161 allreduce_async calls, then synchronize: what its
DistributedOptimizer does) and Horovod's own grouped_allreduce, in the same processes,
interleaved rounds.

    mpiexec -np 2 python grouped.py [--horovod mpi|gloo|none] [--rounds 7] [--scale 1]
--scale k divides every tensor's element count by k (smoke runs).
"""
import argparse
import sys

import torch

import peers
from peers import gj
from step_bench import resnet50_shapes


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--horovod", choices=peers.CONTROLLERS + ("none",), default="mpi")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--iters", type=int, default=1)
    p.add_argument("--scale", type=int, default=1)
    args = p.parse_args()
    hvd = peers.init(None if args.horovod == "none" else args.horovod)
    rank = gj.rank()
    counts = [max(1, torch.Size(s).numel() // args.scale) for s in resnet50_shapes()]
    grads = [torch.full((c,), float(rank + 1)) for c in counts]
    runners = {"gj grouped": lambda: gj.grouped_allreduce(grads, op=gj.Sum)}
    if hvd:
        def fused():
            handles = [hvd.allreduce_async(g, op=hvd.Sum, name=f"grad.{i}") for i, g in enumerate(grads)]
            return [hvd.synchronize(h) for h in handles]
        runners["horovod fused"] = fused
        runners["horovod grouped"] = lambda: hvd.grouped_allreduce(grads, op=hvd.Sum)
    want = float(sum(range(1, gj.size() + 1)))
    for name, fn in runners.items():
        if any(not bool((out == want).all()) for out in peers.run(name, fn)):
            raise SystemExit(f"grouped.py: {name} gave a wrong sum")
    t = peers.interleaved(runners, args.rounds, args.iters)
    if rank == 0:
        print(peers.header(f"ResNet-50 gradients ({len(counts)} tensors, {sum(counts)} f32), allreduce sum",
                           hvd, args.horovod, args.rounds))
        print("| call | ms | time / gj grouped [95 % CI] |")
        print("|---|---|---|")
        for name, v in t.items():
            med = sorted(v)[len(v) // 2]
            print(f"| {name} | {med * 1e3:.2f} | {peers.fmt_ci(peers.ratio_ci(t, name, 'gj grouped'))} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
