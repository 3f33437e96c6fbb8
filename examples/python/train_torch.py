#!/usr/bin/env python3
"""The PyTorch variant of train.py: a torch MLP whose gradients are averaged through
gj_collectives (CPU tensors share memory with numpy, so the allreduce is in place).

    mpiexec -np 2 ./train_torch.py      # or: gj-mpirun /path/train_torch.py
Exit: 0 ok, 1 weights differ, 3 loss did not fall, 4 library error,
      77 skipped because torch cannot be imported (ctest SKIP_RETURN_CODE).
"""

import os
import sys

EXIT_SKIP = 77

try:
    import torch
except ImportError as e:
    print(f"train_torch.py: SKIP: cannot import torch ({e}); install python3-torch to run this example")
    sys.exit(EXIT_SKIP)

_HERE = os.path.dirname(os.path.abspath(__file__))
# Next to this script in the source tree; <prefix>/share/gj/python when installed.
sys.path[:0] = [_HERE, os.path.join(_HERE, "..", "..", "python")]
import gj_collectives as gj  # noqa: E402
import numpy as np  # noqa: E402
from train import identical_on_all_ranks, run, verdict  # noqa: E402  (the numpy example)


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

        identical = identical_on_all_ranks(comm, flat_params(model).numpy())
        rank, size = comm.rank, comm.size
    gj.finalize()
    return verdict(rank, size, identical, first, last)


if __name__ == "__main__":
    run(main, "train_torch.py")
