#!/usr/bin/env python3
"""gj.torch on CUDA tensors (run under mpiexec, one GPU per rank by local rank): device pointers
and torch's current stream go to the library's NCCL backend, results are exact, async handles
are stream-ordered, DistributedOptimizer trains a CUDA model identically on every rank.
Exit 77 (skip) without a GPU, without CUDA torch or with a library built without NCCL."""

import sys

import torch

import gj.torch as hvd

SKIP = 77


def main():
    if not torch.cuda.is_available():
        print("cuda_test.py: SKIP: no CUDA device (or torch without CUDA)")
        return SKIP
    hvd.init()
    if not hvd.nccl_built():
        print("cuda_test.py: SKIP: the library was built without NCCL (-DGJ_WITH_NCCL=ON)")
        return SKIP
    r, n = hvd.rank(), hvd.size()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    dev = torch.device("cuda", torch.cuda.current_device())
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64):
        t = torch.full((1 << 16,), r + 1, dtype=dtype, device=dev)
        out = hvd.allreduce(t, op=hvd.Sum)
        expect(out.is_cuda and torch.equal(out.cpu(), torch.full((1 << 16,), n * (n + 1) // 2, dtype=dtype)),
               f"allreduce {dtype}")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # the op is ordered on the current (side) stream
        x = torch.full((1000,), float(r + 1), device=dev)
        h = hvd.allreduce_async_(x, op=hvd.Sum)
        y = hvd.synchronize(h) * 2
    side.synchronize()
    expect(torch.equal(y.cpu(), torch.full((1000,), float(n * (n + 1)))), "async allreduce on a side stream")
    b = hvd.broadcast(torch.full((3, 3), float(r), device=dev), root_rank=n - 1)
    expect(torch.equal(b.cpu(), torch.full((3, 3), float(n - 1))), "broadcast")
    g = hvd.allgather(torch.full((r + 1, 2), r, device=dev))
    expect(g.shape == (n * (n + 1) // 2, 2), "allgather shape")
    rs = hvd.reducescatter(torch.ones(n, 4, device=dev), op=hvd.Sum)
    expect(torch.equal(rs.cpu(), torch.full((1, 4), float(n))), "reducescatter")

    torch.manual_seed(r)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(dev)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    for _ in range(5):
        opt.zero_grad()
        model(torch.randn(32, 8, device=dev)).pow(2).mean().backward()
        opt.step()
    w = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    expect(torch.equal(hvd.broadcast(w, 0), w), "DistributedOptimizer weights identical")
    for f in failures:
        print(f"rank {r}: FAIL: {f}", file=sys.stderr)
    if not failures and r == 0:
        print(f"OK: gj.torch CUDA checks on {n} ranks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
