#!/usr/bin/env python3
"""The PyTorch variant of train.py: a torch MLP whose gradients are averaged through
gj_collectives (CPU tensors share memory with numpy, so the allreduce is in place).

    mpiexec -np 2 ./train_torch.py      # or: gj-mpirun /path/train_torch.py
Exit: 0 ok, 1 weights differ, 3 loss did not fall, 4 library error,
      77 skipped because torch cannot be imported (ctest SKIP_RETURN_CODE).
"""

import os
import sys

EXIT_WEIGHTS_DIFFER, EXIT_LOSS_DID_NOT_FALL, EXIT_LIBRARY_ERROR, EXIT_SKIP = 1, 3, 4, 77

try:
    import torch
except ImportError as e:
    print(f"train_torch.py: SKIP: cannot import torch ({e}); install python3-torch to run this example")
    sys.exit(EXIT_SKIP)

import numpy as np  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
# Next to this script in the source tree; <prefix>/share/gj/python when installed.
sys.path[:0] = [_HERE, os.path.join(_HERE, "..", "..", "python")]
import gj_collectives as gj  # noqa: E402


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def main(steps=200, lr=0.5, samples=512, dim=16, seed=1):
    with gj.Communicator() as comm:
        teacher = torch.Generator().manual_seed(seed)
        w_true = torch.randn(dim, generator=teacher)
        shard = torch.Generator().manual_seed(seed * 7919 + 1 + comm.rank)
        x = torch.randn(samples, dim, generator=shard)
        y = (x @ w_true > 0).float().unsqueeze(1)

        torch.manual_seed(seed * 1000003 + comm.rank)  # different init on every rank
        model = torch.nn.Sequential(torch.nn.Linear(dim, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
        with torch.no_grad():
            for p in model.parameters():
                comm.broadcast(p.numpy(), root=0)  # numpy() shares the tensor's memory
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        loss_fn = torch.nn.BCEWithLogitsLoss()

        first = last = None
        for step in range(steps):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            comm.grouped_allreduce([p.grad.numpy() for p in model.parameters()], op="avg")
            opt.step()
            last = float(comm.allreduce(np.array([loss.item()]), op="avg")[0])
            first = last if first is None else first
            if comm.rank == 0 and (step % 50 == 0 or step == steps - 1):
                print(f"step {step:4d}  loss {last:.6f}", flush=True)

        mine = flat_params(model).numpy().copy()
        lo = comm.allreduce(mine.copy(), op="min")
        hi = comm.allreduce(mine.copy(), op="max")
        bits = mine.view(np.uint32)
        identical = np.array_equal(bits, lo.view(np.uint32)) and np.array_equal(bits, hi.view(np.uint32))
        rank, size = comm.rank, comm.size
    gj.finalize()

    if not identical:
        print(f"rank {rank}: FAIL: weights differ across ranks after training", file=sys.stderr)
        return EXIT_WEIGHTS_DIFFER
    if not last < 0.5 * first:
        print(f"rank {rank}: FAIL: loss {first:.6f} -> {last:.6f} did not fall below half", file=sys.stderr)
        return EXIT_LOSS_DID_NOT_FALL
    if rank == 0:
        print(f"OK: torch weights bitwise identical on all {size} ranks, loss {first:.6f} -> {last:.6f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except gj.GjError as e:
        print(f"train_torch.py: {e}", file=sys.stderr)
        sys.exit(EXIT_LIBRARY_ERROR)
