#!/usr/bin/env python3
"""Horovod's synthetic benchmark (examples/pytorch/pytorch_synthetic_benchmark.py: a ResNet on
random images, SGD, cross-entropy), img/s and step overhead over the same model without
communication: gj.torch's DistributedOptimizer vs horovod.torch's vs torch DDP over gloo, in the
same processes, one step of each per round in a rotating order (bench/torch/step_bench.py's
timed(): overhead = median over rounds of the step minus the same round's no-comm step).

    mpiexec -np 2 python synthetic.py [--horovod mpi|gloo|none] [--models resnet18,resnet50]
                                      [--batches 8,16] [--steps 10] [--image 224]
Rank 0 prints one row per model and batch.
"""
import argparse
import copy
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import peers
from peers import gj
from resnet import MODELS
from step_bench import timed


def steppers(model_name, batch, image, hvd, rank):
    torch.manual_seed(0)
    base = MODELS[model_name]()
    g = torch.Generator().manual_seed(1000 + rank)
    data = torch.randn(batch, 3, image, image, generator=g)
    target = torch.randint(0, 1000, (batch,), generator=g)

    def loop(model, opt):
        def step():
            opt.zero_grad()
            F.cross_entropy(model(data), target).backward()
            opt.step()
        return step

    sgd = lambda m: torch.optim.SGD(m.parameters(), lr=0.01)  # noqa: E731
    local = copy.deepcopy(base)
    out = {"local": loop(local, sgd(local))}
    m = copy.deepcopy(base)
    out["gj"] = loop(m, gj.DistributedOptimizer(sgd(m), named_parameters=m.named_parameters()))
    if hvd:
        m = copy.deepcopy(base)
        out["horovod"] = loop(m, hvd.DistributedOptimizer(sgd(m), named_parameters=m.named_parameters()))
    ddp = nn.parallel.DistributedDataParallel(copy.deepcopy(base))
    out["ddp"] = loop(ddp, sgd(ddp))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--horovod", choices=peers.CONTROLLERS + ("none",), default="mpi")
    p.add_argument("--models", default="resnet18,resnet50")
    p.add_argument("--batches", default="8,16")
    p.add_argument("--steps", type=int, default=10, help="timed rounds (one step of every mode each)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--image", type=int, default=224, help="image side (Horovod's benchmark: 224)")
    p.add_argument("--port", type=int, default=int(os.environ.get("GJ_BENCH_GLOO_PORT", "29541")),
                   help="DDP's gloo rendezvous port on rank 0's host")
    args = p.parse_args()
    models = args.models.split(",")
    bad = [m for m in models if m not in MODELS]
    if bad:
        raise SystemExit(f"synthetic.py: --models {args.models!r}: {bad} unknown; choose from {','.join(MODELS)}")
    batches = [int(b) for b in args.batches.split(",")]
    hvd = peers.init(None if args.horovod == "none" else args.horovod)
    rank, size = gj.rank(), gj.size()
    os.environ.setdefault("USE_LIBUV", "0")  # see step_bench.py
    master = gj.broadcast_object(os.environ.get("GJ_BENCH_MASTER_ADDR", "127.0.0.1"), root_rank=0)
    dist.init_process_group("gloo", init_method=f"tcp://{master}:{args.port}", rank=rank, world_size=size)
    if rank == 0:
        print(peers.header("synthetic benchmark (SGD, cross-entropy, random images "
                           f"{args.image}x{args.image})", hvd, args.horovod, args.steps))
        print("| model | batch | no-comm ms (img/s) | gj ms (img/s) | horovod ms (img/s) | DDP ms (img/s) "
              "| overhead ms gj / horovod / DDP [95 % CI] | gj overhead / horovod's / DDP's |")
        print("|---|---|---|---|---|---|---|---|", flush=True)
    for name in models:
        for batch in batches:
            # Horovod's DistributedOptimizer is made while Horovod runs; then it runs only for its steps.
            modes = peers.run("horovod", lambda: steppers(name, batch, args.image, hvd, rank))
            r = timed(modes, args.steps, args.warmup, before=peers.switch.before)
            if rank == 0:
                cell = lambda m: f"{r[m]['wall'] * 1e3:.0f} ({batch / r[m]['wall']:.1f})" if m in r else "n/a"  # noqa: E731
                over = lambda m: (f"{r[m]['over'][0] * 1e3:.0f} [{r[m]['over'][1] * 1e3:.0f}, "  # noqa: E731
                                  f"{r[m]['over'][2] * 1e3:.0f}]") if m in r else "n/a"
                rel = lambda m: (f"{r['gj']['over'][0] / r[m]['over'][0]:.2f}"  # noqa: E731
                                 if m in r and r[m]['over'][0] > 0 else "n/a")
                print(f"| {name} | {batch} | {cell('local')} | {cell('gj')} | {cell('horovod')} | {cell('ddp')} "
                      f"| {over('gj')} / {over('horovod')} / {over('ddp')} | {rel('horovod')} / {rel('ddp')} |",
                      flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
