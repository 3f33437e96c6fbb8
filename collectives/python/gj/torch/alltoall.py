"""alltoall with Horovod's names: every rank sends slices of dimension 0 of its tensor to every
rank of the process set and receives theirs, concatenated in rank order.

The split sizes are exchanged first with one small blocking step (an alltoall of the splits,
after the agreement on dtype, trailing shape and device), so the output's size is known when
the data moves; even alltoall_async waits for every rank of the set to reach the call, as
allgather_async does. The data then moves with the library's gjAllToAllV (MPI_Alltoallv for CPU
tensors, ncclSend/ncclRecv for CUDA tensors).
"""

import ctypes

import torch

from .. import _lib
from . import mpi_ops
from ..common import timeline as _timeline
from ._basics import global_process_set
from ._tensor import check_tensor, ptr, stream


def _splits_list(splits, rows, size, what):
    """Horovod's splits argument -> a list of size non-negative ints summing to at most rows
    (rows past the sum are not sent); None splits rows evenly (rows must divide)."""
    if splits is None:
        if rows % size:
            raise ValueError(f"{what}: splits=None divides dimension 0 evenly, but the tensor has {rows} rows "
                             f"and the process set {size} ranks; pass splits= or a multiple of {size} rows")
        return [rows // size] * size
    if isinstance(splits, torch.Tensor):
        if splits.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"{what}: splits.dtype={splits.dtype}; splits must hold integers (torch.int32)")
        values = [int(v) for v in splits.detach().reshape(-1).cpu().tolist()]
    else:
        try:
            values = [int(v) for v in splits]
        except (TypeError, ValueError):
            raise ValueError(f"{what}: splits={splits!r} is not a sequence of integers") from None
        if any(isinstance(v, float) and v != int(v) for v in splits):
            raise ValueError(f"{what}: splits={splits!r} holds non-integer values")
    if len(values) != size:
        raise ValueError(f"{what}: splits has {len(values)} entries but the process set has {size} ranks; "
                         "pass one entry per rank")
    if any(v < 0 for v in values):
        raise ValueError(f"{what}: splits={values} holds a negative entry")
    if sum(values) > rows:
        raise ValueError(f"{what}: splits={values} sum to {sum(values)}, more than the tensor's {rows} rows "
                         "in dimension 0")
    return values


def _received_splits(comm, sent):
    """Every rank's split for this rank, in rank order (an alltoall of one int64 per pair)."""
    n = comm.size
    send = (ctypes.c_int64 * n)(*sent)
    recv = (ctypes.c_int64 * n)()
    with _timeline.negotiation():
        mpi_ops._call(comm.alltoallv, ctypes.addressof(send), [1] * n, ctypes.addressof(recv), [1] * n, _lib.INT64)
    return list(recv)


def _alltoall_async(tensor, splits, process_set, what, asynchronous=True):
    """Issues the alltoall; returns (handle, splits sent, splits received). The handle's
    result is (output, received_splits tensor)."""
    comm = mpi_ops._comm(process_set, what)
    check_tensor(tensor, what)
    if tensor.dim() == 0:
        raise ValueError(f"{what}: tensor must have at least one dimension to split, got a scalar")
    tensor = tensor.contiguous()
    rows = tensor.shape[0]
    sent = _splits_list(splits, rows, comm.size, what)
    fields = (("call", "alltoall"), ("dtype", str(tensor.dtype)), ("trailing shape", tuple(tensor.shape[1:])),
              ("device", tensor.device.type))
    mpi_ops.agree(comm, what, fields)
    got = _received_splits(comm, sent)
    out = tensor.new_empty((sum(got),) + tuple(tensor.shape[1:]))
    row_bytes = int(torch.Size(tensor.shape[1:]).numel()) * tensor.element_size()
    if isinstance(splits, torch.Tensor):
        received = torch.tensor(got, dtype=splits.dtype, device=splits.device)
    else:
        received = torch.tensor(got, dtype=torch.int32)

    def run(nb):
        return comm.alltoallv(ptr(tensor), [s * row_bytes for s in sent], ptr(out), [g * row_bytes for g in got],
                              _lib.UINT8, stream(tensor), nonblocking=nb)

    token = _timeline.issued()
    req = mpi_ops._call(run, asynchronous)
    if not asynchronous:
        _timeline.done(token)
        token = None
    handle = mpi_ops._new_handle(([req] if req is not None else []) + _timeline.completion(token),
                                 lambda: (out, received), (tensor, out))
    return handle, sent, got


@_timeline.named("alltoall")
def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts the alltoall of tensor; returns a handle whose synchronize() gives (output,
    received_splits). splits: how many rows of dimension 0 go to each rank of the set, in rank
    order (a sequence or an integer tensor); None splits them evenly."""
    return _alltoall_async(tensor, splits, process_set, "alltoall_async")[0]


class HorovodAlltoall(torch.autograd.Function):
    """alltoall with a gradient: the output's gradient sent back along the received splits."""

    @staticmethod
    def forward(ctx, tensor, splits, process_set):
        handle, _, got = _alltoall_async(tensor, splits, process_set, "alltoall", False)
        ctx.args = (process_set, got)
        output, received = mpi_ops.synchronize(handle)
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, _grad_received):
        process_set, got = ctx.args
        grad = _alltoall_now(grad_output.contiguous(), got, process_set)
        return grad, None, None


def _alltoall_now(tensor, splits, process_set):
    handle = _alltoall_async(tensor, splits, process_set, "alltoall", False)[0]
    return mpi_ops.synchronize(handle)[0]


@_timeline.named("alltoall")
def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Scatters the rows of tensor's dimension 0 over the ranks of the set (splits[q] rows to rank
    q, or an even split when splits is None) and returns what every rank sent here, concatenated
    in rank order; with splits given, returns (output, received_splits) as Horovod does. The
    trailing dimensions and the dtype must match on every rank. Differentiable."""
    check_tensor(tensor, "alltoall")
    if tensor.requires_grad and torch.is_grad_enabled():
        output, received = HorovodAlltoall.apply(tensor, splits, process_set)
    else:
        output, received = mpi_ops.synchronize(_alltoall_async(tensor.detach(), splits, process_set,
                                                               "alltoall", False)[0])
    return output if splits is None else (output, received)
