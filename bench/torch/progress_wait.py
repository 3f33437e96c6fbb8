#!/usr/bin/env python3
"""What a nonblocking request costs its rank while a peer is late: rank 0 issues a grouped
allreduce of --mib MiB and computes for --ms milliseconds; the other ranks compute first and
issue it after. Prints, for rank 0, the CPU time of every thread but the main one (gj's
progress thread: its waiting and its share of the reduction) per round, median of --rounds.
Run it once per GJ_COLL_PROGRESS_WAIT value (the setting is read at init):

    for w in spin sleep; do GJ_COLL_PROGRESS_WAIT=$w PYTHONPATH=build/collectives/python \\
      mpiexec --allow-run-as-root -x GJ_COLL_PROGRESS_WAIT -np 2 python3 bench/torch/progress_wait.py; done
"""

import argparse
import os
import statistics
import sys
import time

import torch

import gj.torch as hvd


def compute(ms, a):
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        a @ a


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mib", type=float, default=4.0)
    p.add_argument("--ms", type=float, default=100.0)
    p.add_argument("--rounds", type=int, default=6)
    args = p.parse_args()
    hvd.init()
    a = torch.randn(256, 256)
    t = torch.ones(int(args.mib * (1 << 20)) // 4)
    other_cpu = []
    for _ in range(args.rounds):
        hvd.barrier()
        p0, c0 = time.process_time(), time.thread_time()
        if hvd.rank() == 0:
            h = hvd.grouped_allreduce_async_([t], op=hvd.Sum)
            compute(args.ms, a)
        else:
            compute(args.ms, a)
            h = hvd.grouped_allreduce_async_([t], op=hvd.Sum)
        hvd.synchronize(h)
        other_cpu.append((time.process_time() - p0) - (time.thread_time() - c0))
    if hvd.rank() == 0:
        print(f"GJ_COLL_PROGRESS_WAIT={os.environ.get('GJ_COLL_PROGRESS_WAIT', 'auto')} ranks={hvd.size()} "
              f"request={args.mib:g} MiB peer late by {args.ms:g} ms: rank 0's other threads used "
              f"{statistics.median(other_cpu) * 1e3:.1f} ms CPU per round (median of {args.rounds}; "
              f"all: {', '.join(f'{c * 1e3:.1f}' for c in other_cpu)})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
