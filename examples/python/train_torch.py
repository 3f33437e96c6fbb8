#!/usr/bin/env python3
"""The PyTorch variant of train.py on gj.torch, the Horovod-compatible frontend: a torch MLP
trained data-parallel with hvd.DistributedOptimizer (gradients averaged during backward).

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
sys.path.insert(0, _HERE)
from train import run, verdict  # noqa: E402  (the numpy example; it also finds the gj package)
import gj.torch as hvd  # noqa: E402


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def identical_on_all_ranks(t):
    """Bitwise: the min and the max over ranks of every element's bits are this rank's."""
    bits = t.view(torch.int32)
    return bool(torch.equal(hvd.allreduce(bits, op=hvd.Min), bits) and
                torch.equal(hvd.allreduce(bits, op=hvd.Max), bits))


def main(steps=200, lr=0.5, samples=512, dim=16, seed=1):
    hvd.init()
    teacher = torch.Generator().manual_seed(seed)
    w_true = torch.randn(dim, generator=teacher)
    shard = torch.Generator().manual_seed(seed * 7919 + 1 + hvd.rank())
    x = torch.randn(samples, dim, generator=shard)
    y = (x @ w_true > 0).float().unsqueeze(1)

    torch.manual_seed(seed * 1000003 + hvd.rank())  # different init on every rank
    model = torch.nn.Sequential(torch.nn.Linear(dim, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    loss_fn = torch.nn.BCEWithLogitsLoss()

    first = last = None
    for step in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        last = hvd.allreduce(loss.detach().double()).item()
        first = last if first is None else first
        if hvd.rank() == 0 and (step % 50 == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {last:.6f}", flush=True)

    identical = identical_on_all_ranks(flat_params(model))
    rank, size = hvd.rank(), hvd.size()
    hvd.shutdown()
    return verdict(rank, size, identical, first, last)


if __name__ == "__main__":
    run(main, "train_torch.py")
