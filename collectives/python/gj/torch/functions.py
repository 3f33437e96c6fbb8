"""Broadcasting model and optimizer state, and Python objects, across ranks."""

import torch

from . import _basics, _objects, mpi_ops
from ._basics import global_process_set


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Copies root_rank's values into params on every rank, in place. params: a state_dict (or
    any mapping name -> tensor; broadcast in sorted name order) or an iterable of (name, tensor)
    such as model.named_parameters() (broadcast in its order, which must match across ranks)."""
    if isinstance(params, dict):
        items = sorted(params.items())
    else:
        items = list(params)
        for i, item in enumerate(items):
            if not (isinstance(item, tuple) and len(item) == 2):
                raise ValueError(f"broadcast_parameters: params[{i}]={item!r:.80} is not a (name, tensor) "
                                 "pair; pass model.state_dict() or model.named_parameters()")
    handles = []
    for name, p in items:
        if p is None:
            continue
        if not isinstance(p, torch.Tensor):
            raise ValueError(f"broadcast_parameters: {name!r} is a {type(p).__name__}, not a tensor")
        target = p.data if isinstance(p, torch.nn.Parameter) else p
        if target.is_contiguous():
            handles.append((None, None, mpi_ops.broadcast_async_(target, root_rank, process_set=process_set)))
        else:
            tmp = target.contiguous()
            handles.append((target, tmp, mpi_ops.broadcast_async_(tmp, root_rank, process_set=process_set)))
    for target, tmp, h in handles:
        mpi_ops.synchronize(h)
        if target is not None:
            target.copy_(tmp)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's obj on every rank: any picklable object, tensors inside it arriving on the
    CPU (the format: gj/torch/_objects.py; torch.load is not involved)."""
    _basics.comm_of(process_set, "broadcast_object")
    root = _basics.rank() == root_rank  # root_rank: a global rank, as in Horovod
    if root:
        payload = torch.frombuffer(bytearray(_objects.encode(obj)), dtype=torch.uint8)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        length = torch.zeros(1, dtype=torch.int64)
    mpi_ops.broadcast_(length, root_rank, name=name, process_set=process_set)
    if not root:
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
    mpi_ops.broadcast_(payload, root_rank, name=name, process_set=process_set)
    return obj if root else _objects.decode(payload.numpy(), "broadcast_object")


def allgather_object(obj, name=None, process_set=global_process_set):
    """[obj of rank 0, obj of rank 1, ...] of the process set on every rank (as broadcast_object
    moves them)."""
    comm = _basics.comm_of(process_set, "allgather_object")
    payload = torch.frombuffer(bytearray(_objects.encode(obj)), dtype=torch.uint8)
    sizes = mpi_ops.allgather(torch.tensor([payload.numel()], dtype=torch.int64), name=name,
                              process_set=process_set)
    data = mpi_ops.allgather(payload, name=name, process_set=process_set)
    raw, out, offset = data.numpy(), [], 0
    for n in sizes.tolist():
        out.append(_objects.decode(raw[offset:offset + n], "allgather_object"))
        offset += n
    assert len(out) == comm.size
    return out



def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=global_process_set):
    """Makes every rank's optimizer state root_rank's: tensor state (momentum buffers, Adam's
    moments, step counts), scalar state and every param-group option (lr, betas, ...), with
    their Python types. Works for every torch.optim optimizer but LBFGS. As Horovod does, an
    optimizer without state yet (no step taken) first takes one step with zero gradients on
    every rank (parameters without a gradient get zeros; model= names the modules whose
    nn.Embedding(sparse=True) parameters get sparse zeros), so that its state exists."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("broadcast_optimizer_state: LBFGS is not supported (its state holds closures "
                         "of the loss); broadcast the model parameters instead")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"broadcast_optimizer_state: optimizer={optimizer!r:.80} is not a torch.optim.Optimizer")
    _basics.comm_of(process_set, "broadcast_optimizer_state")
    if not optimizer.state_dict()["state"]:
        _initialize_state(optimizer, model)
    root = _basics.rank() == root_rank
    state = broadcast_object(optimizer.state_dict() if root else None, root_rank, process_set=process_set)
    error = None
    if not root:
        try:
            optimizer.load_state_dict(state)  # casts state tensors to each parameter's device/dtype
        except (ValueError, KeyError, RuntimeError) as e:
            error = e
    # Every rank raises when one could not take the state (a different model on that rank).
    failed = mpi_ops.allreduce(torch.tensor([1 if error else 0], dtype=torch.int32), op=mpi_ops.Max,
                               process_set=process_set)
    if failed.item():
        raise ValueError(f"broadcast_optimizer_state: rank(s) could not load root_rank={root_rank}'s state "
                         f"(this rank: {error or 'loaded it'}); every rank must build the same model "
                         "and optimizer") from error


def _initialize_state(optimizer, model):
    """One step with zero gradients, local to this rank (a DistributedOptimizer's own step would
    reduce, so its base class's step is taken)."""
    sparse = {id(p) for m in (model.modules() if model is not None else ())
              if isinstance(m, torch.nn.Embedding) and m.sparse for p in m.parameters()}
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)
                if isinstance(optimizer, torch.optim.SparseAdam) or id(p) in sparse:
                    p.grad = p.grad.to_sparse()
    if getattr(optimizer, "_gj_distributed", False):
        super(optimizer.__class__, optimizer).step()
    else:
        optimizer.step()
