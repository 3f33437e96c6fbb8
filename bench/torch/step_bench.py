#!/usr/bin/env python3
"""Training-step time of gj.torch's DistributedOptimizer against torch DistributedDataParallel
over gloo, same model, data, batch and ranks, side by side in one run, plus the same loop
without communication (each one's overhead = its step time minus that no-communication step).

Models: the seed's CNN (batch 64 of 1x28x28) and "resnet50-shapes", a model holding ResNet-50's
161 parameter tensors (25,557,032 parameters; bench/gpu/resnet50_shapes.h) whose forward is one
matmul per weight against a fixed input (batch rows), so backward produces every gradient, last
layer first, with compute proportional to the parameter count.

    mpiexec -np 2 python3 step_bench.py [--steps 30] [--warmup 2] [--models cnn,resnet50-shapes]
Rank 0 prints one table row per model; bench/torch/run.sh runs 2 and 4 ranks.
"""

import argparse
import ast
import copy
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import gj.torch as hvd


def seed_net_class():
    """The seed's model, the class `Net` of examples/python/horovod_seed.py itself (that script
    trains when run, so only its class statement is compiled here)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python",
                        "horovod_seed.py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    net = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Net"]
    if len(net) != 1:
        raise RuntimeError(f"{path}: expected one class Net (the seed's model), found {len(net)}")
    scope = {"torch": torch, "nn": nn}
    exec(compile(ast.Module(body=net, type_ignores=[]), path, "exec"), scope)
    return scope["Net"]


def resnet50_shapes():
    shapes = []
    conv = lambda i, o, k: shapes.append((o, i, k, k))  # noqa: E731
    bn = lambda c: shapes.extend([(c,), (c,)])  # noqa: E731
    conv(3, 64, 7)
    bn(64)
    cin = 64
    for blocks, w in zip((3, 4, 6, 3), (64, 128, 256, 512)):
        for b in range(blocks):
            conv(cin, w, 1), bn(w)
            conv(w, w, 3), bn(w)
            conv(w, 4 * w, 1), bn(4 * w)
            if b == 0:
                conv(cin, 4 * w, 1), bn(4 * w)
            cin = 4 * w
    shapes += [(1000, 2048), (1000,)]
    return shapes


class ShapesNet(nn.Module):
    def __init__(self, shapes, rows):
        super().__init__()
        self.weights = nn.ParameterList([nn.Parameter(torch.randn(s) * 0.01) for s in shapes])
        self.rows = rows

    def forward(self, inputs):
        loss = 0
        for w, x in zip(self.weights, inputs):
            y = x @ w.reshape(w.shape[0], -1).t() if w.dim() > 1 else x * w
            loss = loss + y.square().mean()
        return loss


def make(model_name, rank, batch):
    g = torch.Generator().manual_seed(1000 + rank)
    if model_name == "cnn":
        torch.manual_seed(0)
        model = seed_net_class()()
        data = (torch.randn(batch, 1, 28, 28, generator=g), torch.randint(0, 10, (batch,), generator=g))
        loss_fn = nn.CrossEntropyLoss()
        return model, lambda m: loss_fn(m(data[0]), data[1])
    torch.manual_seed(0)
    shapes = resnet50_shapes()
    model = ShapesNet(shapes, batch)
    inputs = [torch.randn(batch, int(torch.Size(s[1:]).numel()), generator=g) if len(s) > 1
              else torch.randn(s, generator=g) for s in shapes]
    return model, lambda m: m(inputs)


def timed(steppers, steps, warmup, baseline="local"):
    """Per mode: the median step time and the median overhead over the baseline, wall and CPU.

    The modes run interleaved, one step each per round, in an order rotating by one every
    round (so neither a change in the machine's load nor the mode run just before favours
    one mode); each step starts after a barrier and the job's step time is the slowest
    rank's. A mode's overhead is the median over rounds of its step time minus the
    baseline's step of the same round: pairing steps that ran seconds apart cancels the drift
    of a shared VM's speed, which moves whole medians by more than the overheads measured.
    CPU time is the process's (every thread: torch, gj's progress thread, gloo's threads)."""
    modes = list(steppers)
    for _ in range(warmup):
        for step in steppers.values():
            step()
    wall = {m: [0.0] * steps for m in modes}
    cpu = {m: [0.0] * steps for m in modes}
    for k in range(steps):
        for m in modes[k % len(modes):] + modes[:k % len(modes)]:
            hvd.barrier()
            t0, c0 = time.perf_counter(), time.process_time()
            steppers[m]()
            wall[m][k] = time.perf_counter() - t0
            cpu[m][k] = time.process_time() - c0
    # Each step's time on the slowest rank, one allreduce for all.
    flat = torch.tensor([v for m in modes for v in wall[m] + cpu[m]], dtype=torch.float64)
    flat = hvd.allreduce(flat, op=hvd.Max).tolist()
    for n, m in enumerate(modes):
        at = 2 * n * steps
        wall[m], cpu[m] = flat[at:at + steps], flat[at + steps:at + 2 * steps]
    out = {}
    for m in modes:
        out[m] = {"wall": statistics.median(wall[m]), "cpu": statistics.median(cpu[m]),
                  "wall_over": statistics.median(a - b for a, b in zip(wall[m], wall[baseline])),
                  "cpu_over": statistics.median(a - b for a, b in zip(cpu[m], cpu[baseline]))}
    return out


def bench(model_name, args):
    rank = hvd.rank()
    base, loss_of = make(model_name, rank, args.batch if model_name == "cnn" else args.rows)
    nparams = sum(p.numel() for p in base.parameters())
    ntensors = len(list(base.parameters()))

    def loop(model, opt):
        def step():
            opt.zero_grad()
            loss_of(model).backward()
            opt.step()
        return step

    local = copy.deepcopy(base)
    gj_model = copy.deepcopy(base)
    gj_opt = hvd.DistributedOptimizer(torch.optim.SGD(gj_model.parameters(), lr=1e-3),
                                      named_parameters=gj_model.named_parameters())
    ddp = nn.parallel.DistributedDataParallel(copy.deepcopy(base))
    steppers = {"local": loop(local, torch.optim.SGD(local.parameters(), lr=1e-3)),
                "gj": loop(gj_model, gj_opt),
                "ddp": loop(ddp, torch.optim.SGD(ddp.parameters(), lr=1e-3))}
    return nparams, ntensors, timed(steppers, args.steps, args.warmup)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=30, help="timed rounds (one step of every mode each)")
    p.add_argument("--warmup", type=int, default=2, help="untimed rounds first")
    p.add_argument("--batch", type=int, default=64, help="cnn batch per rank")
    p.add_argument("--rows", type=int, default=8, help="resnet50-shapes input rows per rank")
    p.add_argument("--models", default="cnn,resnet50-shapes")
    p.add_argument("--port", type=int, default=int(os.environ.get("GJ_BENCH_GLOO_PORT", "29531")))
    args = p.parse_args()
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=size)
    rows = []
    for name in args.models.split(","):
        rows.append((name,) + bench(name, args))
    if rank == 0:
        print(f"\ngj.torch DistributedOptimizer vs DDP over gloo, {size} ranks, CPU, torch {torch.__version__}, "
              f"{torch.get_num_threads()} torch thread(s) on {len(os.sched_getaffinity(0))} CPU(s) per rank for every mode, "
              f"medians of {args.steps} interleaved rounds (slowest rank; overhead: median of the "
              f"per-round difference to the no-comm step), "
              f"bucket {os.environ.get('GJ_TORCH_BUCKET_BYTES', 'default')} bytes, "
              f"GJ_COLL_PROGRESS_WAIT={os.environ.get('GJ_COLL_PROGRESS_WAIT') or 'auto'}")
        print("| model | params (tensors) | ranks | no-comm ms | gj ms | gj overhead ms (% of no-comm) "
              "| DDP-gloo ms | DDP overhead ms (% of no-comm) | gj overhead / DDP overhead "
              "| CPU ms no-comm / gj / DDP | CPU overhead gj / DDP |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for name, nparams, ntensors, r in rows:
            local, gj, ddp = r["local"], r["gj"], r["ddp"]
            lw, go, do = local["wall"], gj["wall_over"], ddp["wall_over"]
            ratio = f"{go / do:.2f}" if do > 0 else "n/a"
            cratio = f"{gj['cpu_over'] / ddp['cpu_over']:.2f}" if ddp["cpu_over"] > 0 else "n/a"
            print(f"| {name} | {nparams / 1e6:.2f} M ({ntensors}) | {size} | {lw * 1e3:.1f} | "
                  f"{gj['wall'] * 1e3:.1f} | {go * 1e3:.1f} ({100 * go / lw:.0f} %) | {ddp['wall'] * 1e3:.1f} | "
                  f"{do * 1e3:.1f} ({100 * do / lw:.0f} %) | {ratio} | {local['cpu'] * 1e3:.0f} / "
                  f"{gj['cpu'] * 1e3:.0f} / {ddp['cpu'] * 1e3:.0f} | {cratio} |", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
