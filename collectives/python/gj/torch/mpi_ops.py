"""Collective operations on torch tensors, with Horovod's names and keyword arguments.

Every rank must issue the collectives of one process set in the same order (the library runs
them in issue order; there is no name-based negotiation as in Horovod). `name=` names an
operation in flight: a second nonblocking operation with a name already in flight in the same
process set raises ValueError on the rank that issues it, as Horovod does (in flight until this
rank has seen it complete: gj/common/handles.py). Mismatches raise
HorovodInternalError (a RuntimeError) on every rank instead of hanging:
- a blocking call first agrees on a signature (operation, dtype, shape, op, root, factors) with
  one small allreduce, and raises on every rank when any rank differs;
- a nonblocking call turns on the library's agreement check (count, dtype, op, root) for its
  request, which then fails on every rank; the rest of the blocking signature (shape, factors:
  what a count cannot tell) travels in a small nonblocking request issued just before it, so
  synchronize() raises on every rank for a same-size, different-shape tensor.
root_rank is a global rank, also in a process set (Horovod's numbering).
"""

import torch

from .. import _lib
from ..common import control as _control
from . import _basics, _join, _late_allgather, _streams
from ..common import timeline as _timeline
from ..common.agreement import Wire, agree, start as _start
from ._basics import global_process_set
from ..common.handles import (_claim_name, _handles, _new_handle, _pop, note_barrier as _note_barrier,  # noqa: F401
                              poll, synchronize)  # (poll: API)
from ._tensor import check_tensor, ptr, require_contiguous, same_device, signature, stream
from .compression import Compression
from ..common.exceptions import translated as _call
from ..common import reduce_ops as _reduce_ops
from ..common.reduce_ops import OP_NAMES, factors, library_op
from ..common.reduce_ops import Adasum, Average, Max, Min, Product, Sum  # noqa: F401 (Horovod's API)
from . import adasum


def resolve_op(op, average, what):
    """Horovod's op / deprecated average= keyword -> a checked op (Adasum for allreduce only)."""
    op = _reduce_ops.resolve(op, average, what, deprecation_hint="gj.torch")
    if op == Adasum:
        if what.startswith(("allreduce", "grouped_allreduce")):
            return op  # gj/torch/adasum.py
        raise _reduce_ops.adasum_refused(what)
    return op


def _comm(process_set, what):
    return _basics.comm_of(process_set, what)


def _reduction_input(tensor, op, average, prescale_factor, postscale_factor, compression, what):
    """The checked arguments of a reducing call on one tensor: (op, pre, post, compressed
    tensor, compression context, whether autograd records the call)."""
    op = resolve_op(op, average, what)
    pre, post = factors(prescale_factor, postscale_factor, what)
    check_tensor(tensor, what, reduce=True)
    compressed, ctx = compression.compress(tensor)
    return op, pre, post, compressed, ctx, compressed.requires_grad and torch.is_grad_enabled()


# ---- allreduce -------------------------------------------------------------------------------
def _allreduce_async(tensor, output, op, prescale, postscale, process_set, what, asynchronous=True, name=None):
    if op == Adasum:
        return adasum.adasum_async(tensor, output, prescale, postscale, process_set, what, asynchronous)
    comm = _comm(process_set, what)
    key = _claim_name(name, process_set, what)
    code = check_tensor(tensor, what, reduce=True)
    require_contiguous(tensor, what)
    fields = (("call", "allreduce"),) + signature(tensor) + (("op", OP_NAMES[op]), ("prescale", prescale),
                                                       ("postscale", postscale))

    def run(nb):
        return comm.allreduce(ptr(tensor), ptr(output), tensor.numel(), code, library_op(op, what), prescale,
                              postscale, stream(tensor), nonblocking=nb)

    wire = Wire(code, library_op(op, what), prescale, postscale, device=tensor.device.type, layout=[tensor.numel()])
    reqs = _start(comm, what, fields, run, asynchronous, wire)
    _streams.keep_alive([tensor, output], _streams.current(tensor))
    return _new_handle(reqs, lambda: output, (tensor, output), key)


@_timeline.named("allreduce")
def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set):
    """Starts reducing tensor across the process set into a new tensor; returns a handle."""
    op = resolve_op(op, average, "allreduce_async")
    pre, post = factors(prescale_factor, postscale_factor, "allreduce_async")
    check_tensor(tensor, "allreduce_async", reduce=True)
    tensor = tensor.contiguous()
    return _allreduce_async(tensor, torch.empty_like(tensor), op, pre, post, process_set, "allreduce_async",
                            name=name)


@_timeline.named("allreduce")
def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=global_process_set):
    """Starts reducing tensor in place; returns a handle."""
    op = resolve_op(op, average, "allreduce_async_")
    pre, post = factors(prescale_factor, postscale_factor, "allreduce_async_")
    return _allreduce_async(tensor, tensor, op, pre, post, process_set, "allreduce_async_", name=name)


def _allreduce_now(tensor, output, op, pre, post, process_set, what, name=None):
    return synchronize(_allreduce_async(tensor, output, op, pre, post, process_set, what, asynchronous=False,
                                        name=name))


class HorovodAllreduce(torch.autograd.Function):
    """allreduce with a gradient: the gradient is the allreduce of the output's gradient."""

    @staticmethod
    def forward(ctx, tensor, op, pre, post, process_set):
        ctx.args = (op, pre, post, process_set)
        tensor = tensor.contiguous()
        return _allreduce_now(tensor, torch.empty_like(tensor), op, pre, post, process_set, "allreduce")

    @staticmethod
    def backward(ctx, grad_output):
        op, pre, post, process_set = ctx.args
        return allreduce(grad_output, op=op, prescale_factor=pre, postscale_factor=post,
                         process_set=process_set), None, None, None, None


@_timeline.named("allreduce")
def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """A new tensor: tensor reduced across the process set (default op Average). Differentiable."""
    op, pre, post, compressed, ctx, differentiable = _reduction_input(
        tensor, op, average, prescale_factor, postscale_factor, compression, "allreduce")
    if differentiable:
        out = HorovodAllreduce.apply(compressed, op, pre, post, process_set)
    else:
        compressed = compressed.detach().contiguous()
        out = _allreduce_now(compressed, torch.empty_like(compressed), op, pre, post, process_set, "allreduce")
    return compression.decompress(out, ctx)


@_timeline.named("allreduce")
def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set):
    """Reduces tensor in place across the process set and returns it."""
    op = resolve_op(op, average, "allreduce_")
    pre, post = factors(prescale_factor, postscale_factor, "allreduce_")
    return _allreduce_now(tensor, tensor, op, pre, post, process_set, "allreduce_", name)


def _grouped_async(tensors, outputs, op, pre, post, process_set, what, asynchronous=True, name=None):
    if op == Adasum:
        return adasum.grouped_adasum_async(list(tensors), list(outputs), pre, post, process_set, what, asynchronous)
    comm = _comm(process_set, what)
    key = _claim_name(name, process_set, what)
    tensors, outputs = list(tensors), list(outputs)
    if not tensors:
        return _new_handle([], lambda: [], name=key)
    codes = [check_tensor(t, what, f"tensors[{i}]", reduce=True) for i, t in enumerate(tensors)]
    for i, t in enumerate(tensors):
        require_contiguous(t, what, f"tensors[{i}]")
    same_device(tensors, what)
    fields = (("call", "grouped_allreduce"), ("op", OP_NAMES[op]), ("prescale", pre), ("postscale", post),
              ("tensors", tuple(signature(t) for t in tensors)))
    by_dtype = {}
    for i, c in enumerate(codes):
        by_dtype.setdefault(c, []).append(i)

    def run(nb):
        return [comm.grouped_allreduce([ptr(tensors[i]) for i in idx], [ptr(outputs[i]) for i in idx],
                                       [tensors[i].numel() for i in idx], c, library_op(op, what), pre, post,
                                       stream(tensors[idx[0]]), nonblocking=nb)
                for c, idx in by_dtype.items()]

    layout = [x for c, idx in by_dtype.items() for x in [c, len(idx)] + [tensors[i].numel() for i in idx]]
    wire = Wire(op=library_op(op, what), pre=pre, post=post, device=tensors[0].device.type, layout=layout)
    reqs = _start(comm, what, fields, run, asynchronous, wire)
    _streams.keep_alive(tensors + outputs, _streams.current(tensors[0]))
    return _new_handle(reqs, lambda: outputs, (tensors, outputs), key)


@_timeline.named("grouped_allreduce")
def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    op = resolve_op(op, average, "grouped_allreduce_async")
    pre, post = factors(prescale_factor, postscale_factor, "grouped_allreduce_async")
    tensors = [t.contiguous() for t in tensors]
    return _grouped_async(tensors, [torch.empty_like(t) for t in tensors], op, pre, post, process_set,
                          "grouped_allreduce_async", name=name)


@_timeline.named("grouped_allreduce")
def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    op = resolve_op(op, average, "grouped_allreduce_async_")
    pre, post = factors(prescale_factor, postscale_factor, "grouped_allreduce_async_")
    tensors = list(tensors)
    return _grouped_async(tensors, tensors, op, pre, post, process_set, "grouped_allreduce_async_", name=name)


@_timeline.named("grouped_allreduce")
def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """New tensors: each of tensors reduced across the process set, fused per dtype."""
    op = resolve_op(op, average, "grouped_allreduce")
    pre, post = factors(prescale_factor, postscale_factor, "grouped_allreduce")
    tensors = list(tensors)
    if any(t.requires_grad for t in tensors) and torch.is_grad_enabled():
        return [allreduce(t, compression=compression, op=op, prescale_factor=pre, postscale_factor=post,
                          process_set=process_set) for t in tensors]
    packed = [compression.compress(t.detach()) for t in tensors]
    ins = [p[0].contiguous() for p in packed]
    outs = synchronize(_grouped_async(ins, [torch.empty_like(t) for t in ins], op, pre, post, process_set,
                                      "grouped_allreduce", asynchronous=False))
    return [compression.decompress(o, p[1]) for o, p in zip(outs, packed)]


@_timeline.named("grouped_allreduce")
def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    op = resolve_op(op, average, "grouped_allreduce_")
    pre, post = factors(prescale_factor, postscale_factor, "grouped_allreduce_")
    tensors = list(tensors)
    return synchronize(_grouped_async(tensors, tensors, op, pre, post, process_set, "grouped_allreduce_",
                                      asynchronous=False))


# ---- broadcast -------------------------------------------------------------------------------
def _set_rank_of_root(root_rank, process_set, what):
    """root_rank (a global rank, as in Horovod) as a rank of process_set's communicator."""
    ranks = (process_set or global_process_set).ranks
    if not isinstance(root_rank, int) or isinstance(root_rank, bool) or root_rank not in ranks:
        raise ValueError(f"{what}: root_rank={root_rank!r} is not a rank of the process set "
                         f"(global ranks {_basics.describe_ranks(ranks)})")
    return ranks.index(root_rank)


def _broadcast_async(tensor, output, root_rank, process_set, what, asynchronous=True, name=None):
    comm = _comm(process_set, what)
    check_tensor(tensor, what)
    root = _set_rank_of_root(root_rank, process_set, what)
    key = _claim_name(name, process_set, what)
    require_contiguous(output, what)
    if output is not tensor and comm.rank == root:
        # Only the root's output needs the input: every other rank's output is written whole by
        # the broadcast, and a copy into it would only fault in and fill 1x the tensor's pages.
        output.copy_(tensor)
    fields = (("call", "broadcast"),) + signature(tensor) + (("root_rank", root_rank),)

    def run(nb):
        return comm.broadcast(ptr(output), output.numel() * output.element_size(), _lib.UINT8, root,
                              stream(output), nonblocking=nb)

    wire = Wire(_lib.UINT8, root=root, device=output.device.type, layout=[output.numel() * output.element_size()])
    reqs = _start(comm, what, fields, run, asynchronous, wire)
    _streams.keep_alive([tensor, output], _streams.current(output))
    return _new_handle(reqs, lambda: output, (tensor, output), key)


@_timeline.named("broadcast")
def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_async(tensor, torch.empty_like(tensor, memory_format=torch.contiguous_format),
                            root_rank, process_set, "broadcast_async", name=name)


@_timeline.named("broadcast")
def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_async(tensor, tensor, root_rank, process_set, "broadcast_async_", name=name)


class HorovodBroadcast(torch.autograd.Function):
    """broadcast with Horovod's gradient: the average of the output's gradients over the set
    on the root rank, zeros elsewhere."""

    @staticmethod
    def forward(ctx, tensor, root_rank, process_set, name):
        ctx.args = (root_rank, process_set)
        out = torch.empty_like(tensor, memory_format=torch.contiguous_format)
        return synchronize(_broadcast_async(tensor, out, root_rank, process_set, "broadcast", False, name))

    @staticmethod
    def backward(ctx, grad_output):
        root_rank, process_set = ctx.args
        grad = allreduce(grad_output, op=Average, process_set=process_set)
        if _basics.rank() != root_rank:
            grad = grad * 0
        return grad, None, None, None


@_timeline.named("broadcast")
def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """A new tensor holding root_rank's tensor (root_rank: a global rank). Differentiable."""
    check_tensor(tensor, "broadcast")
    if tensor.requires_grad and torch.is_grad_enabled():
        return HorovodBroadcast.apply(tensor, root_rank, process_set, name)
    out = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return synchronize(_broadcast_async(tensor.detach(), out, root_rank, process_set, "broadcast", False, name))


@_timeline.named("broadcast")
def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """Copies root_rank's tensor into tensor on every rank; returns it."""
    return synchronize(_broadcast_async(tensor, tensor, root_rank, process_set, "broadcast_", False, name))


# ---- allgather -------------------------------------------------------------------------------
def _allgather_async(tensor, process_set, what, asynchronous=True, name=None):
    comm = _comm(process_set, what)
    check_tensor(tensor, what)
    key = _claim_name(name, process_set, what)
    tensor = tensor.contiguous()
    if tensor.dim() == 0:
        tensor = tensor.reshape(1)
    fields = (("call", "allgather"), ("dtype", str(tensor.dtype)), ("trailing shape", tuple(tensor.shape[1:])),
              ("device", tensor.device.type))
    if asynchronous and not tensor.is_cuda:
        token = _timeline.issued()
        call = _late_allgather.LateAllgather(comm, what, fields, tensor)
        return _new_handle(call.requests() + _timeline.completion(token), call.result, (tensor, call),
                           key), None
    rows = agree(comm, what, fields, rows=tensor.shape[0])
    out = tensor.new_empty((sum(rows),) + tuple(tensor.shape[1:]))
    row_bytes = int(torch.Size(tensor.shape[1:]).numel()) * tensor.element_size()
    counts = [r * row_bytes for r in rows]

    def run(nb):
        return comm.allgatherv(ptr(tensor), ptr(out), counts, _lib.UINT8, stream(tensor), nonblocking=nb)

    token = _timeline.issued()
    req = _call(run, asynchronous)
    if not asynchronous:
        _timeline.done(token)
        token = None
    _streams.keep_alive([tensor, out], _streams.current(tensor))
    return _new_handle(([req] if req is not None else []) + _timeline.completion(token), lambda: out,
                       (tensor, out), key), rows


@_timeline.named("allgather")
def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts concatenating every rank's tensor along dimension 0; returns a handle."""
    return _allgather_async(tensor, process_set, "allgather_async", name=name)[0]


def _gathered_grad(grad, rows, process_set):
    """Horovod's allgather gradient: this rank's rows of the set's average of grad."""
    grad = allreduce(grad.contiguous(), op=Average, process_set=process_set)
    r = _comm(process_set, "allgather").rank
    return grad.narrow(0, sum(rows[:r]), rows[r])


class HorovodAllgather(torch.autograd.Function):
    """allgather with Horovod's gradient: this rank's slice of the average (over the set) of
    the output's gradients."""

    @staticmethod
    def forward(ctx, tensor, process_set, name):
        handle, rows = _allgather_async(tensor, process_set, "allgather", False, name)
        ctx.args = (process_set, rows, tensor.dim() == 0)
        return synchronize(handle)

    @staticmethod
    def backward(ctx, grad_output):
        process_set, rows, scalar = ctx.args
        grad = _gathered_grad(grad_output, rows, process_set)
        return (grad.reshape(()) if scalar else grad), None, None


@_timeline.named("allgather")
def allgather(tensor, name=None, process_set=global_process_set):
    """A new tensor: every rank's tensor concatenated along dimension 0 in rank order (the
    first dimension may differ per rank, the rest of the shape and the dtype may not).
    Differentiable."""
    check_tensor(tensor, "allgather")
    if tensor.requires_grad and torch.is_grad_enabled():
        return HorovodAllgather.apply(tensor, process_set, name)
    return synchronize(_allgather_async(tensor.detach(), process_set, "allgather", False, name)[0])


def _group_handles(handles, name, process_set, what):
    """One handle over several (their requests, their results as a list)."""
    key = _claim_name(name, process_set, what)
    reqs = [r for h in handles for r in _handles[h].requests]
    finishers = [_pop(h) for h in handles]
    return _new_handle(reqs, lambda: [f.finish() for f in finishers], finishers, key)


@_timeline.named("allgather")
def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Starts allgather of each of tensors; one handle whose result is the list."""
    _claim_name(name, process_set, "grouped_allgather_async")
    handles = [allgather_async(t, process_set=process_set) for t in tensors]
    return _group_handles(handles, name, process_set, "grouped_allgather_async")


class HorovodGroupedAllgather(torch.autograd.Function):
    """grouped_allgather with Horovod's gradient: each input's slice of the average of its
    output's gradient."""

    @staticmethod
    def forward(ctx, process_set, name, *tensors):
        handle = grouped_allgather_async([t.detach() for t in tensors], name, process_set)
        ctx.args = (process_set, [t.shape[0] if t.dim() else 1 for t in tensors])
        return tuple(synchronize(handle))

    @staticmethod
    def backward(ctx, *grads):
        process_set, mine = ctx.args
        rows = agree_rows(process_set, mine)
        return (None, None) + tuple(_gathered_grad(g, rs, process_set) for g, rs in zip(grads, rows))


def agree_rows(process_set, mine):
    """For each of this rank's row counts mine[k], every rank's count for k (rank order)."""
    comm = _comm(process_set, "grouped_allgather")
    t = torch.zeros((comm.size, len(mine)), dtype=torch.int64)
    t[comm.rank] = torch.tensor(mine, dtype=torch.int64)
    t = allreduce(t, op=Sum, process_set=process_set)
    return [t[:, k].tolist() for k in range(len(mine))]


@_timeline.named("allgather")
def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """allgather of each of tensors (a list). Differentiable."""
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        check_tensor(t, "grouped_allgather", f"tensors[{i}]")
    if any(t.requires_grad for t in tensors) and torch.is_grad_enabled():
        return list(HorovodGroupedAllgather.apply(process_set, name, *tensors))
    return synchronize(grouped_allgather_async(tensors, name, process_set))


# ---- sparse ----------------------------------------------------------------------------------
def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Starts reducing a sparse COO tensor as Horovod does: every rank's indices and values are
    allgathered (the result holds every rank's entries, duplicates summed when coalesced), values
    divided by the set's size for Average. Returns a function that waits and returns the sparse
    result (Horovod's handle for this call)."""
    if not isinstance(tensor, torch.Tensor) or not tensor.is_sparse:
        raise TypeError(f"sparse_allreduce_async: tensor must be a sparse COO torch.Tensor, got "
                        f"{type(tensor).__name__ if not isinstance(tensor, torch.Tensor) else tensor.layout}")
    op = resolve_op(op, None, "sparse_allreduce_async")
    if op not in (Average, Sum):
        raise ValueError(f"sparse_allreduce_async: op={OP_NAMES[op]} is not Average or Sum")
    size = _comm(process_set, "sparse_allreduce_async").size
    # allgather concatenates along dimension 0: indices travel as (nnz, ndim).
    indices = allgather_async(tensor._indices().t().contiguous(), name=None if name is None else f"{name}.indices",
                              process_set=process_set)
    values = allgather_async(tensor._values(), name=None if name is None else f"{name}.values",
                             process_set=process_set)

    def wait():
        gathered_values = synchronize(values)
        gathered_indices = synchronize(indices).t()
        if op == Average:
            gathered_values = gathered_values / size
        return torch.sparse_coo_tensor(gathered_indices, gathered_values, tensor.size())

    return wait


# ---- reducescatter ---------------------------------------------------------------------------
def _split_rows(n, size):
    q, rem = divmod(n, size)
    return [q + (1 if r < rem else 0) for r in range(size)]


def _reducescatter_async(tensor, op, pre, post, process_set, what, asynchronous=True, name=None):
    comm = _comm(process_set, what)
    code = check_tensor(tensor, what, reduce=True)
    key = _claim_name(name, process_set, what)
    tensor = tensor.contiguous()
    if tensor.dim() == 0:
        raise ValueError(f"{what}: tensor must have at least one dimension to scatter along, got a scalar")
    rows = _split_rows(tensor.shape[0], comm.size)
    row = int(torch.Size(tensor.shape[1:]).numel())
    out = tensor.new_empty((rows[comm.rank],) + tuple(tensor.shape[1:]))
    fields = (("call", "reducescatter"),) + signature(tensor) + (("op", OP_NAMES[op]), ("prescale", pre),
                                                           ("postscale", post))

    def run(nb):
        return comm.reducescatter(ptr(tensor), ptr(out), [r * row for r in rows], code, library_op(op, what), pre,
                                  post, stream(tensor), nonblocking=nb)

    wire = Wire(code, library_op(op, what), pre, post, device=tensor.device.type, layout=[tensor.shape[0], row])
    reqs = _start(comm, what, fields, run, asynchronous, wire)
    _streams.keep_alive([tensor, out], _streams.current(tensor))
    return _new_handle(reqs, lambda: out, (tensor, out), key)


@_timeline.named("reducescatter")
def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set, prescale_factor=1.0,
                        postscale_factor=1.0):
    op = resolve_op(op, None, "reducescatter_async")
    pre, post = factors(prescale_factor, postscale_factor, "reducescatter_async")
    return _reducescatter_async(tensor, op, pre, post, process_set, "reducescatter_async", name=name)


def _scattered_grad(grad, op, pre, post, process_set):
    """Horovod's reducescatter gradient: the allgather of grad, times the set's size for Sum
    and times the factors."""
    if op == Sum:
        grad = grad * _comm(process_set, "reducescatter").size
    if pre != 1.0:
        grad = grad * pre
    if post != 1.0:
        grad = grad * post
    return allgather(grad.contiguous(), process_set=process_set)


class HorovodReducescatter(torch.autograd.Function):
    """reducescatter with Horovod's gradient (_scattered_grad)."""

    @staticmethod
    def forward(ctx, tensor, op, pre, post, process_set, name):
        ctx.args = (op, pre, post, process_set)
        return synchronize(_reducescatter_async(tensor, op, pre, post, process_set, "reducescatter", False, name))

    @staticmethod
    def backward(ctx, grad_output):
        return (_scattered_grad(grad_output, *ctx.args),) + (None,) * 5


@_timeline.named("reducescatter")
def reducescatter(tensor, name=None, compression=Compression.none, op=Average, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """This rank's rows of the reduction of tensor: dimension 0 split evenly over the ranks of the
    set, the first ranks taking one more row each when it does not divide. Differentiable."""
    op, pre, post, compressed, ctx, differentiable = _reduction_input(
        tensor, op, None, prescale_factor, postscale_factor, compression, "reducescatter")
    if differentiable:
        out = HorovodReducescatter.apply(compressed, op, pre, post, process_set, name)
    else:
        out = synchronize(_reducescatter_async(compressed.detach(), op, pre, post, process_set,
                                               "reducescatter", False, name))
    return compression.decompress(out, ctx)


@_timeline.named("reducescatter")
def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    """Starts reducescatter of each of tensors; one handle whose result is the list."""
    _claim_name(name, process_set, "grouped_reducescatter_async")
    handles = [reducescatter_async(t, op=op, prescale_factor=prescale_factor,
                                   postscale_factor=postscale_factor, process_set=process_set)
               for t in tensors]
    return _group_handles(handles, name, process_set, "grouped_reducescatter_async")


class HorovodGroupedReducescatter(torch.autograd.Function):
    """grouped_reducescatter with Horovod's gradient (_scattered_grad of each)."""

    @staticmethod
    def forward(ctx, op, pre, post, process_set, name, *tensors):
        ctx.args = (op, pre, post, process_set)
        return tuple(synchronize(grouped_reducescatter_async([t.detach() for t in tensors], name, op, process_set,
                                                             pre, post)))

    @staticmethod
    def backward(ctx, *grads):
        return (None,) * 5 + tuple(_scattered_grad(g, *ctx.args) for g in grads)


@_timeline.named("reducescatter")
def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """reducescatter of each of tensors (a list). Differentiable."""
    tensors = list(tensors)
    op = resolve_op(op, None, "grouped_reducescatter")
    pre, post = factors(prescale_factor, postscale_factor, "grouped_reducescatter")
    packed = [compression.compress(t) for t in tensors]
    wires = [w for w, _ in packed]
    for i, w in enumerate(wires):
        check_tensor(w, "grouped_reducescatter", f"tensors[{i}]", reduce=True)
    if any(w.requires_grad for w in wires) and torch.is_grad_enabled():
        outs = list(HorovodGroupedReducescatter.apply(op, pre, post, process_set, name, *wires))
    else:
        outs = synchronize(grouped_reducescatter_async([w.detach() for w in wires], name, op, process_set, pre,
                                                       post))
    return [compression.decompress(o, c) for o, (_, c) in zip(outs, packed)]


# ---- barrier, join ---------------------------------------------------------------------------
def barrier(process_set=global_process_set):
    """Returns when every rank of the set has reached it and this rank's nonblocking calls that
    every rank issued before it have completed; as Horovod's, it does not wait for a call only
    some ranks issued (gj/common/control.py). A rank inside join() takes part."""
    _control.barrier(_comm(process_set, "barrier"))
    _note_barrier()  # what completed before it is seen complete: its names are free


def join(device=-1):
    """Horovod's uneven inputs: this rank has no more data. Until every rank has called join(),
    it takes part in the global process set's allreduces (grouped ones and DistributedOptimizer
    steps included) with zeros - Average still divides by the set's size - and in its barriers;
    allgather, broadcast, alltoall, reducescatter and Adasum raise HorovodInternalError on the
    other ranks meanwhile. Returns the last rank to join, the same on every rank. device: where
    the zero tensors of CUDA collectives go (-1: the current device)."""
    return _join.join(device)

