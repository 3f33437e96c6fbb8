#!/usr/bin/env python3
"""Training-step time of gj.torch's DistributedOptimizer against torch DistributedDataParallel
over gloo, same model, data, batch and ranks, side by side in one run, plus the same loop
without communication (each one's overhead = its step time minus that no-communication step,
with a 95 % confidence interval), and the training thread's off-CPU time in a step: the part of
the overhead that communication takes from the rank's core or spends waiting, measured without
the compute's own step-to-step spread (see timed()).

Models: the seed's CNN (batch 64 of 1x28x28) and "resnet50-shapes", a model holding ResNet-50's
161 parameter tensors (25,557,032 parameters; bench/gpu/resnet50_shapes.h) whose forward is one
matmul per weight against a fixed input (batch rows), so backward produces every gradient, last
layer first, with compute proportional to the parameter count.

    mpiexec -np 2 python3 step_bench.py [--steps 30] [--warmup 2] [--models cnn,resnet50-shapes]
                                        [--device cpu|cuda]
Rank 0 prints one table row per model; bench/torch/run.sh runs 2 and 4 ranks. --device cuda
(scripts/gpu/device-check.sh): each rank on GPU local_rank % GPUs, DDP over NCCL instead of
gloo, every timed step ends with torch.cuda.synchronize() (a step is done when its kernels are).
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
from bench_stats import median_ci


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


def make(model_name, rank, batch, device="cpu"):
    g = torch.Generator().manual_seed(1000 + rank)
    if model_name == "cnn":
        torch.manual_seed(0)
        model = seed_net_class()().to(device)
        data = (torch.randn(batch, 1, 28, 28, generator=g).to(device),
                torch.randint(0, 10, (batch,), generator=g).to(device))
        loss_fn = nn.CrossEntropyLoss()
        return model, lambda m: loss_fn(m(data[0]), data[1])
    torch.manual_seed(0)
    shapes = resnet50_shapes()
    model = ShapesNet(shapes, batch).to(device)
    inputs = [(torch.randn(batch, int(torch.Size(s[1:]).numel()), generator=g) if len(s) > 1
               else torch.randn(s, generator=g)).to(device) for s in shapes]
    return model, lambda m: m(inputs)


def timed(steppers, steps, warmup, baseline="local", before=None):
    """Per mode: the median step time, and two overheads over the baseline, each the median
    over rounds of the mode's minus the baseline's value of the same round (with its 95 % CI):
    - "over": step time, the slowest rank's (the definition: step minus no-comm step);
    - "off_over": the training thread's off-CPU time in the step (wall minus its CPU time),
      of the rank that was off the CPU least (the slowest rank: the others also wait for it).

    The modes run interleaved, one step each per round, in an order rotating by one every
    round (so neither a change in the machine's load nor the mode run just before favours
    one mode); each step starts after a barrier. Pairing steps that ran a second apart
    cancels the drift of a shared VM's speed. The step time still carries the compute's own
    step-to-step spread (about 10 % of a step on this VM); the off-CPU time does not: with
    one torch thread per rank it is the time communication took the rank's core (gj's
    progress thread, gloo's threads) or waited for a peer, measured without the compute.
    It misses what communication adds to the training thread's own CPU time (Python hooks,
    cache misses after a switch).
    before(mode), when given, runs before each of the mode's steps, untimed; when it returns
    True the mode takes one more untimed step first (bench/peers: Horovod just started)."""
    modes = list(steppers)
    for _ in range(warmup):
        for m, step in steppers.items():
            if before:
                before(m)
            step()
    wall = {m: [0.0] * steps for m in modes}
    off = {m: [0.0] * steps for m in modes}
    for k in range(steps):
        for m in modes[k % len(modes):] + modes[:k % len(modes)]:
            if before and before(m):
                steppers[m]()
            hvd.barrier()
            t0, c0 = time.perf_counter(), time.thread_time()
            steppers[m]()
            wall[m][k] = time.perf_counter() - t0
            off[m][k] = wall[m][k] - (time.thread_time() - c0)

    def per_step(values, op):  # each step's value on the slowest (Max) or least-off (Min) rank
        flat = hvd.allreduce(torch.tensor([v for m in modes for v in values[m]], dtype=torch.float64), op=op)
        return {m: flat[n * steps:(n + 1) * steps].tolist() for n, m in enumerate(modes)}
    wall, off = per_step(wall, hvd.Max), per_step(off, hvd.Min)
    return {m: {"wall": statistics.median(wall[m]), "off": statistics.median(off[m]),
                "over": median_ci([a - b for a, b in zip(wall[m], wall[baseline])]),
                "off_over": median_ci([a - b for a, b in zip(off[m], off[baseline])])} for m in modes}


def bench(model_name, args):
    rank = hvd.rank()
    device = args.device_name
    base, loss_of = make(model_name, rank, args.batch if model_name == "cnn" else args.rows, device)
    cuda = device != "cpu"
    nparams = sum(p.numel() for p in base.parameters())
    ntensors = len(list(base.parameters()))

    def loop(model, opt):
        def step():
            opt.zero_grad()
            loss_of(model).backward()
            opt.step()
            if cuda:
                torch.cuda.synchronize()
        return step

    local = copy.deepcopy(base)
    gj_model = copy.deepcopy(base)
    gj_opt = hvd.DistributedOptimizer(torch.optim.SGD(gj_model.parameters(), lr=1e-3),
                                      named_parameters=gj_model.named_parameters())
    ddp = nn.parallel.DistributedDataParallel(copy.deepcopy(base), device_ids=[torch.cuda.current_device()] if cuda
                                              else None)
    steppers = {"local": loop(local, torch.optim.SGD(local.parameters(), lr=1e-3)),
                "gj": loop(gj_model, gj_opt),
                "ddp": loop(ddp, torch.optim.SGD(ddp.parameters(), lr=1e-3))}
    return nparams, ntensors, timed(steppers, args.steps, args.warmup)


MODELS = ("cnn", "resnet50-shapes")


def at_least(low):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= {low}")
        return value
    return parse


def model_list(text):
    names = text.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise argparse.ArgumentTypeError(f"{','.join(unknown)!r}: not a model; choose from {','.join(MODELS)}")
    return names


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=at_least(1), default=30, help="timed rounds (one step of every mode each)")
    p.add_argument("--warmup", type=at_least(0), default=2, help="untimed rounds first")
    p.add_argument("--batch", type=at_least(1), default=64, help="cnn batch per rank")
    p.add_argument("--rows", type=at_least(1), default=8, help="resnet50-shapes input rows per rank")
    p.add_argument("--models", type=model_list, default="cnn,resnet50-shapes",
                   help=f"comma-separated, of {','.join(MODELS)}")
    p.add_argument("--port", type=at_least(1), default=int(os.environ.get("GJ_BENCH_GLOO_PORT", "29531")),
                   help="gloo's TCP rendezvous port on 127.0.0.1 (default $GJ_BENCH_GLOO_PORT or 29531)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu: DDP over gloo; cuda: every rank on a GPU, DDP over NCCL")
    args = p.parse_args()
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    args.device_name = "cpu"
    if args.device == "cuda":
        if not torch.cuda.is_available():
            print(f"step_bench.py --device cuda: torch {torch.__version__} sees no CUDA device", file=sys.stderr)
            return 1
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
        args.device_name = f"cuda:{torch.cuda.current_device()}"
    # Debian's python3-torch 2.x is built without libuv, which torch.distributed's TCP store asks
    # for by default since 2.4 (pip's wheels have it); USE_LIBUV=0 picks the store every build has.
    os.environ.setdefault("USE_LIBUV", "0")
    backend = "nccl" if args.device == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{args.port}", rank=rank, world_size=size)
    rows = []
    for name in args.models:
        rows.append((name,) + bench(name, args))
    if rank == 0:
        threads = torch.get_num_threads()
        where = "CPU" if args.device == "cpu" else f"{torch.cuda.get_device_name()} (NCCL {torch.cuda.nccl.version()})"
        print(f"\ngj.torch DistributedOptimizer vs DDP over {backend}, {size} ranks, {where}, torch {torch.__version__}, "
              f"{threads} torch thread(s) on {len(os.sched_getaffinity(0))} CPU(s) per rank for every mode, "
              f"medians of {args.steps} interleaved rounds (step: slowest rank; overhead: median of the "
              f"per-round difference to the no-comm step, [95 % CI]; off-CPU: the training thread's, "
              f"least-off rank), bucket {os.environ.get('GJ_TORCH_BUCKET_BYTES', 'default')} bytes, "
              f"GJ_COLL_PROGRESS_WAIT={os.environ.get('GJ_COLL_PROGRESS_WAIT') or 'auto'}")
        print("| model | params (tensors) | ranks | no-comm ms | gj ms | gj overhead ms [95 % CI] (% of no-comm) "
              f"| DDP-{backend} ms | DDP overhead ms [95 % CI] (% of no-comm) | gj overhead / DDP overhead "
              "| off-CPU ms no-comm / gj / DDP | off-CPU overhead ms gj / DDP (ratio) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        ms = lambda t: f"{t * 1e3:.1f}"  # noqa: E731
        ci = lambda o: f"{ms(o[0])} [{ms(o[1])}, {ms(o[2])}]"  # noqa: E731
        ratio = lambda a, b: f"{a / b:.2f}" if b > 0 else "n/a"  # noqa: E731
        for name, nparams, ntensors, r in rows:
            local, gj, ddp = r["local"], r["gj"], r["ddp"]
            lw, go, do = local["wall"], gj["over"][0], ddp["over"][0]
            if threads == 1 and hvd.local_size() <= (os.cpu_count() or 1):
                gf, df = gj["off_over"][0], ddp["off_over"][0]
                offs = (f"{ms(local['off'])} / {ms(gj['off'])} / {ms(ddp['off'])} | "
                        f"{ci(gj['off_over'])} / {ci(ddp['off_over'])} ({ratio(gf, df)})")
            else:  # other threads compute too, or ranks share cores: off-CPU time is not communication
                offs = "n/a | n/a"
            print(f"| {name} | {nparams / 1e6:.2f} M ({ntensors}) | {size} | {ms(lw)} | {ms(gj['wall'])} | "
                  f"{ci(gj['over'])} ({100 * go / lw:.0f} %) | {ms(ddp['wall'])} | {ci(ddp['over'])} "
                  f"({100 * do / lw:.0f} %) | {ratio(go, do)} | {offs} |", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
