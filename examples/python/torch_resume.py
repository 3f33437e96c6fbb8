#!/usr/bin/env python3
"""A PyTorch training loop that loses minutes, not the job, to a failure or a preemption:

    gj-mpirun --max-restarts 2 torch_resume.py --checkpoint /ckpt/model.pt

- It goes on from its last checkpoint: every rank reads it at start (gj-mpirun restarts the
  whole job after a rank failure; GJ_RESTART_COUNT says which attempt this is).
- Rank 0 writes a checkpoint every --every steps (model, optimizer with its momentum, step),
  atomically (gj.common.checkpoint.atomic_write: a crash mid-write leaves the previous one whole).
- It stops cleanly when the job is asked to stop (the pod is being deleted, gj-mpirun got
  SIGTERM): gj.torch.stop_requested() turns True on every rank at the same step, rank 0 saves
  that step and every rank leaves; a restarted job goes on from there.

The data are a deterministic function of (step, rank), so a run interrupted and resumed ends with
the same weights, bit for bit, as an uninterrupted one (tests/torch/restart_check.py checks that).
--fail-at/--fail-rank make one rank die with SIGKILL at that step on the first attempt only (a
stand-in for a lost node); --slow-rank sleeps that rank a little each step (ranks then are at
different points of a step when a stop comes).
"""
import argparse
import io
import os
import signal
import sys
import time

import torch

import gj.torch as hvd
from gj.common.checkpoint import atomic_write


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="the checkpoint file (rank 0 writes it, every rank reads it)")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--every", type=int, default=1, help="checkpoint every N steps")
    p.add_argument("--out", help="rank 0 writes the final weights' bytes here")
    p.add_argument("--step-seconds", type=float, default=0.0, help="sleep per step (a longer job)")
    p.add_argument("--fail-at", type=int, default=-1)
    p.add_argument("--fail-rank", type=int, default=1)
    p.add_argument("--slow-rank", type=int, default=-1)
    return p.parse_args()


def batch(step, rank):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(16, 8, generator=g)
    return x, x.sum(dim=1, keepdim=True) * 0.5 + 1.0


def save(path, model, optimizer, step):
    """Rank 0: model, optimizer and the next step, in one atomic write."""
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, buf)
    atomic_write(path, lambda f: f.write(buf.getvalue()))


def main():
    args = parse_args()
    hvd.init()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    start = 0
    if os.path.exists(args.checkpoint):  # every rank reads it (a restarted job goes on from it)
        ckpt = torch.load(args.checkpoint)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        start = ckpt["step"]
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    attempt = os.environ.get("GJ_RESTART_COUNT", "0")
    print(f"rank {hvd.rank()} attempt {attempt} starts at step {start}", flush=True)
    step = start
    while step < args.steps:
        if hvd.stop_requested():
            if hvd.rank() == 0:
                save(args.checkpoint, model, optimizer, step)
            print(f"rank {hvd.rank()} STOP at step {step}", flush=True)
            hvd.shutdown()
            return 0
        if step == args.fail_at and hvd.rank() == args.fail_rank and attempt == "0":
            print(f"rank {hvd.rank()} dies at step {step}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        if hvd.rank() == args.slow_rank:
            time.sleep(0.05)
        x, y = batch(step, hvd.rank())
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        step += 1
        if hvd.rank() == 0 and step % args.every == 0:
            save(args.checkpoint, model, optimizer, step)
        time.sleep(args.step_seconds)
    if hvd.rank() == 0 and args.out:
        weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
        atomic_write(args.out, lambda f: f.write(weights))
    print(f"rank {hvd.rank()} DONE at step {step}", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
