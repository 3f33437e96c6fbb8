"""Collective operations on torch tensors, with Horovod's names and keyword arguments.

Every rank must issue the collectives of one process set in the same order (the library runs
them in issue order; there is no name-based negotiation as in Horovod: `name=` is accepted and
ignored). Mismatches raise on every rank instead of hanging:
- a blocking call first agrees on a signature (operation, dtype, shape, op, root, factors) with
  one small allreduce, and raises ValueError on every rank when any rank differs;
- a nonblocking call turns on the library's agreement check (count, dtype, op, root) for its
  request, which then fails on every rank with HorovodInternalError; the rest of the blocking
  signature (shape, factors: what a count cannot tell) travels in a small nonblocking request
  issued just before it, so synchronize() raises ValueError on every rank for a same-size,
  different-shape tensor.
"""

import ctypes
import hashlib
import itertools
import warnings

import torch

from .. import _lib
from .._lib import GjError
from . import _basics
from . import timeline as _timeline
from ._basics import global_process_set
from ._tensor import check_tensor, ptr, require_contiguous, same_device, stream
from .compression import Compression
from .exceptions import HorovodInternalError

# Horovod's ReduceOp values.
Average, Sum, Adasum, Min, Max, Product = 0, 1, 2, 3, 4, 5
_OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max", Product: "Product"}
_GJ_OPS = {Average: _lib.AVG, Sum: _lib.SUM, Min: _lib.MIN, Max: _lib.MAX, Product: _lib.PROD}


def resolve_op(op, average, what):
    """Horovod's op / deprecated average= keyword -> a gj op code."""
    if op is not None and average is not None:
        raise ValueError(f"{what}: pass op= or the deprecated average=, not both (op={op!r}, average={average!r})")
    if average is not None:
        warnings.warn("average= is deprecated; use op=gj.torch.Average or op=gj.torch.Sum",
                      DeprecationWarning, stacklevel=3)
        op = Average if average else Sum
    if op is None:
        op = Average
    if op == Adasum:
        if what.startswith(("allreduce", "grouped_allreduce")):
            return op  # gj/torch/adasum.py
        raise ValueError(f"{what}: op=Adasum combines whole tensors and is supported by allreduce and "
                         "grouped_allreduce only (as Horovod); use op=Average or op=Sum")
    if op not in _GJ_OPS:
        raise ValueError(f"{what}: op={op!r} is not one of {', '.join(_OP_NAMES[o] for o in _GJ_OPS)}")
    return op


# ---- handles ---------------------------------------------------------------------------------
class _Handle:
    __slots__ = ("requests", "finish", "keep", "result", "done")

    def __init__(self, requests, finish, keep):
        self.requests, self.finish, self.keep = requests, finish, keep
        self.result, self.done = None, False


_handles = {}
_next_handle = itertools.count(1)


def _new_handle(requests, finish, keep=()):
    h = next(_next_handle)
    _handles[h] = _Handle(list(requests), finish, keep)
    return h


def _drop_handles():
    _handles.clear()


def _get(handle, what):
    try:
        return _handles[handle]
    except (KeyError, TypeError):
        raise ValueError(f"{what}: handle={handle!r} is not an outstanding gj.torch handle "
                         "(already synchronized, or never returned by an *_async call)") from None


def poll(handle):
    """True when the operation of handle has completed (synchronize will not block)."""
    h = _get(handle, "poll")
    try:
        return all(r.test() for r in h.requests)
    except GjError as e:
        raise HorovodInternalError.wrap(e) from None


def synchronize(handle):
    """Waits for the operation of handle and returns its output (a tensor or a list)."""
    h = _get(handle, "synchronize")
    try:
        for r in h.requests:
            r.wait()
    except GjError as e:
        del _handles[handle]
        raise HorovodInternalError.wrap(e) from None
    except ValueError:
        del _handles[handle]
        raise
    del _handles[handle]
    return h.finish()


# ---- agreement -------------------------------------------------------------------------------
def _digest(fields):
    d = hashlib.blake2b(repr(fields).encode(), digest_size=8).digest()
    return int.from_bytes(d, "little") >> 2  # < 2**62: h and -h are both int64


def agree(comm, what, fields, rows=None):
    """Blocking: every rank of comm passed equal fields, or ValueError on every rank. With rows
    (this rank's count), returns every rank's rows in rank order (allgather's first dims)."""
    comm.set_check(False)
    h = _digest(fields)
    vec = (ctypes.c_int64 * (2 + comm.size))()
    vec[0], vec[1] = h, -h
    vec[2 + comm.rank] = rows if rows is not None else 0
    with _timeline.negotiation():
        _call(comm.allreduce, ctypes.addressof(vec), ctypes.addressof(vec), 2 + comm.size, _lib.INT64, _lib.MAX)
    if vec[0] != h or vec[1] != -h:
        raise ValueError(_disagree(what, comm.rank, fields))
    return [vec[2 + r] for r in range(comm.size)]


class _Agreement:
    """A nonblocking agree(): MAX of (h, -h) over the set, completed like a Request; test() and
    wait() raise the agree() ValueError on every rank when any rank's fields differed."""

    __slots__ = ("_req", "_vec", "_h", "_what", "_fields", "_rank")

    def __init__(self, comm, what, fields):
        self._h, self._what, self._fields, self._rank = _digest(fields), what, fields, comm.rank
        self._vec = (ctypes.c_int64 * 2)(self._h, -self._h)
        addr = ctypes.addressof(self._vec)
        self._req = comm.allreduce(addr, addr, 2, _lib.INT64, _lib.MAX, nonblocking=True)

    def test(self):
        if not self._req.test():
            return False
        self._verify()
        return True

    def wait(self):
        self._req.wait()
        self._verify()

    def _verify(self):
        if self._vec[0] != self._h or self._vec[1] != -self._h:
            raise ValueError(_disagree(self._what, self._rank, self._fields))


def _disagree(what, rank, fields):
    return (f"{what}: the ranks of the process set disagree on the call's arguments; this rank (rank "
            f"{rank} of the set) passed {_describe(fields)}. Every rank must issue the same collectives "
            "in the same order with matching tensors.")


def _describe(fields):
    return ", ".join(f"{k}={v}" for k, v in fields)


def _call(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except GjError as e:
        raise HorovodInternalError.wrap(e) from None


def _start(comm, what, fields, run, asynchronous):
    """Issues run(nonblocking) -> Request(s); the requests to complete. A blocking call agrees on
    fields first; a nonblocking one issues the agreement as a request of its own, first (the
    data request's list comes first: waiting for it first keeps its buffers' lifetime simple)."""
    if asynchronous:
        comm.set_check(True)
        with _timeline.negotiation():
            agreement = _call(_Agreement, comm, what, fields)
        token = _timeline.issued()
        reqs = _call(run, True)
        return (reqs if isinstance(reqs, list) else [reqs]) + [agreement] + _timeline.completion(token)
    agree(comm, what, fields)
    token = _timeline.issued()
    _call(run, False)
    _timeline.done(token)
    return []


def _sig(tensor):
    return (("dtype", str(tensor.dtype)), ("shape", tuple(tensor.shape)), ("device", tensor.device.type))


def _comm(process_set, what):
    return _basics.comm_of(process_set, what)


def _factors(prescale_factor, postscale_factor, what):
    try:
        return float(prescale_factor), float(postscale_factor)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: prescale_factor={prescale_factor!r} and postscale_factor="
                        f"{postscale_factor!r} must be numbers") from None


def _reduction_input(tensor, op, average, prescale_factor, postscale_factor, compression, what):
    """The checked arguments of a reducing call on one tensor: (op, pre, post, compressed
    tensor, compression context, whether autograd records the call)."""
    op = resolve_op(op, average, what)
    pre, post = _factors(prescale_factor, postscale_factor, what)
    check_tensor(tensor, what, reduce=True)
    compressed, ctx = compression.compress(tensor)
    return op, pre, post, compressed, ctx, compressed.requires_grad and torch.is_grad_enabled()


# ---- allreduce -------------------------------------------------------------------------------
def _allreduce_async(tensor, output, op, prescale, postscale, process_set, what, asynchronous=True):
    if op == Adasum:
        from . import adasum
        return adasum.adasum_async(tensor, output, prescale, postscale, process_set, what, asynchronous)
    comm = _comm(process_set, what)
    code = check_tensor(tensor, what, reduce=True)
    require_contiguous(tensor, what)
    fields = (("call", "allreduce"),) + _sig(tensor) + (("op", _OP_NAMES[op]), ("prescale", prescale),
                                                       ("postscale", postscale))

    def run(nb):
        return comm.allreduce(ptr(tensor), ptr(output), tensor.numel(), code, _GJ_OPS[op], prescale,
                              postscale, stream(tensor), nonblocking=nb)

    reqs = _start(comm, what, fields, run, asynchronous)
    return _new_handle(reqs, lambda: output, (tensor, output))


@_timeline.named("allreduce")
def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set):
    """Starts reducing tensor across the process set into a new tensor; returns a handle."""
    op = resolve_op(op, average, "allreduce_async")
    pre, post = _factors(prescale_factor, postscale_factor, "allreduce_async")
    check_tensor(tensor, "allreduce_async", reduce=True)
    tensor = tensor.contiguous()
    return _allreduce_async(tensor, torch.empty_like(tensor), op, pre, post, process_set, "allreduce_async")


@_timeline.named("allreduce")
def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=global_process_set):
    """Starts reducing tensor in place; returns a handle."""
    op = resolve_op(op, average, "allreduce_async_")
    pre, post = _factors(prescale_factor, postscale_factor, "allreduce_async_")
    return _allreduce_async(tensor, tensor, op, pre, post, process_set, "allreduce_async_")


def _allreduce_now(tensor, output, op, pre, post, process_set, what):
    return synchronize(_allreduce_async(tensor, output, op, pre, post, process_set, what, asynchronous=False))


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
    pre, post = _factors(prescale_factor, postscale_factor, "allreduce_")
    return _allreduce_now(tensor, tensor, op, pre, post, process_set, "allreduce_")


def _grouped_async(tensors, outputs, op, pre, post, process_set, what, asynchronous=True):
    if op == Adasum:
        from . import adasum
        return adasum.grouped_adasum_async(list(tensors), list(outputs), pre, post, process_set, what, asynchronous)
    comm = _comm(process_set, what)
    tensors, outputs = list(tensors), list(outputs)
    if not tensors:
        return _new_handle([], lambda: [])
    codes = [check_tensor(t, what, f"tensors[{i}]", reduce=True) for i, t in enumerate(tensors)]
    for i, t in enumerate(tensors):
        require_contiguous(t, what, f"tensors[{i}]")
    same_device(tensors, what)
    fields = (("call", "grouped_allreduce"), ("op", _OP_NAMES[op]), ("prescale", pre), ("postscale", post),
              ("tensors", tuple(_sig(t) for t in tensors)))
    by_dtype = {}
    for i, c in enumerate(codes):
        by_dtype.setdefault(c, []).append(i)

    def run(nb):
        return [comm.grouped_allreduce([ptr(tensors[i]) for i in idx], [ptr(outputs[i]) for i in idx],
                                       [tensors[i].numel() for i in idx], c, _GJ_OPS[op], pre, post,
                                       stream(tensors[idx[0]]), nonblocking=nb)
                for c, idx in by_dtype.items()]

    reqs = _start(comm, what, fields, run, asynchronous)
    return _new_handle(reqs, lambda: outputs, (tensors, outputs))


@_timeline.named("grouped_allreduce")
def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    op = resolve_op(op, average, "grouped_allreduce_async")
    pre, post = _factors(prescale_factor, postscale_factor, "grouped_allreduce_async")
    tensors = [t.contiguous() for t in tensors]
    return _grouped_async(tensors, [torch.empty_like(t) for t in tensors], op, pre, post, process_set,
                          "grouped_allreduce_async")


@_timeline.named("grouped_allreduce")
def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    op = resolve_op(op, average, "grouped_allreduce_async_")
    pre, post = _factors(prescale_factor, postscale_factor, "grouped_allreduce_async_")
    tensors = list(tensors)
    return _grouped_async(tensors, tensors, op, pre, post, process_set, "grouped_allreduce_async_")


@_timeline.named("grouped_allreduce")
def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """New tensors: each of tensors reduced across the process set, fused per dtype."""
    op = resolve_op(op, average, "grouped_allreduce")
    pre, post = _factors(prescale_factor, postscale_factor, "grouped_allreduce")
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
    pre, post = _factors(prescale_factor, postscale_factor, "grouped_allreduce_")
    tensors = list(tensors)
    return synchronize(_grouped_async(tensors, tensors, op, pre, post, process_set, "grouped_allreduce_",
                                      asynchronous=False))


# ---- broadcast -------------------------------------------------------------------------------
def _check_root(root_rank, comm, what):
    if not isinstance(root_rank, int) or isinstance(root_rank, bool) or not 0 <= root_rank < comm.size:
        raise ValueError(f"{what}: root_rank={root_rank!r} is not a rank of the process set (0..{comm.size - 1})")


def _broadcast_async(tensor, output, root_rank, process_set, what, asynchronous=True):
    comm = _comm(process_set, what)
    check_tensor(tensor, what)
    _check_root(root_rank, comm, what)
    require_contiguous(output, what)
    if output is not tensor:
        output.copy_(tensor)
    fields = (("call", "broadcast"),) + _sig(tensor) + (("root_rank", root_rank),)

    def run(nb):
        return comm.broadcast(ptr(output), output.numel() * output.element_size(), _lib.UINT8, root_rank,
                              stream(output), nonblocking=nb)

    reqs = _start(comm, what, fields, run, asynchronous)
    return _new_handle(reqs, lambda: output, (tensor, output))


@_timeline.named("broadcast")
def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_async(tensor, torch.empty_like(tensor, memory_format=torch.contiguous_format),
                            root_rank, process_set, "broadcast_async")


@_timeline.named("broadcast")
def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_async(tensor, tensor, root_rank, process_set, "broadcast_async_")


class HorovodBroadcast(torch.autograd.Function):
    """broadcast with a gradient: the sum of the output's gradients, on the root rank only."""

    @staticmethod
    def forward(ctx, tensor, root_rank, process_set):
        ctx.args = (root_rank, process_set)
        out = torch.empty_like(tensor, memory_format=torch.contiguous_format)
        return synchronize(_broadcast_async(tensor, out, root_rank, process_set, "broadcast", False))

    @staticmethod
    def backward(ctx, grad_output):
        root_rank, process_set = ctx.args
        grad = allreduce(grad_output, op=Sum, process_set=process_set)
        if _comm(process_set, "broadcast").rank != root_rank:
            grad = grad * 0
        return grad, None, None


@_timeline.named("broadcast")
def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """A new tensor holding root_rank's tensor. Differentiable."""
    check_tensor(tensor, "broadcast")
    if tensor.requires_grad and torch.is_grad_enabled():
        return HorovodBroadcast.apply(tensor, root_rank, process_set)
    out = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return synchronize(_broadcast_async(tensor.detach(), out, root_rank, process_set, "broadcast", False))


@_timeline.named("broadcast")
def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """Copies root_rank's tensor into tensor on every rank; returns it."""
    return synchronize(_broadcast_async(tensor, tensor, root_rank, process_set, "broadcast_", False))


# ---- allgather -------------------------------------------------------------------------------
def _allgather_async(tensor, process_set, what, asynchronous=True):
    comm = _comm(process_set, what)
    check_tensor(tensor, what)
    tensor = tensor.contiguous()
    if tensor.dim() == 0:
        tensor = tensor.reshape(1)
    fields = (("call", "allgather"), ("dtype", str(tensor.dtype)), ("trailing shape", tuple(tensor.shape[1:])),
              ("device", tensor.device.type))
    rows = agree(comm, what, fields, rows=tensor.shape[0])
    out = tensor.new_empty((sum(rows),) + tuple(tensor.shape[1:]))
    row_bytes = tensor[0:1].numel() * tensor.element_size() if tensor.shape[0] else \
        int(torch.Size(tensor.shape[1:]).numel()) * tensor.element_size()
    counts = [r * row_bytes for r in rows]

    def run(nb):
        return comm.allgatherv(ptr(tensor), ptr(out), counts, _lib.UINT8, stream(tensor), nonblocking=nb)

    token = _timeline.issued()
    req = _call(run, asynchronous)
    if not asynchronous:
        _timeline.done(token)
        token = None
    return _new_handle(([req] if req is not None else []) + _timeline.completion(token), lambda: out,
                       (tensor, out)), rows


@_timeline.named("allgather")
def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts concatenating every rank's tensor along dimension 0; returns a handle."""
    return _allgather_async(tensor, process_set, "allgather_async")[0]


class HorovodAllgather(torch.autograd.Function):
    """allgather with a gradient: this rank's slice of the sum of the output's gradients."""

    @staticmethod
    def forward(ctx, tensor, process_set):
        handle, rows = _allgather_async(tensor, process_set, "allgather", False)
        ctx.args = (process_set, rows, _comm(process_set, "allgather").rank)
        return synchronize(handle)

    @staticmethod
    def backward(ctx, grad_output):
        process_set, rows, r = ctx.args
        grad = allreduce(grad_output, op=Sum, process_set=process_set)
        return grad.narrow(0, sum(rows[:r]), rows[r]), None


@_timeline.named("allgather")
def allgather(tensor, name=None, process_set=global_process_set):
    """A new tensor: every rank's tensor concatenated along dimension 0 in rank order (the
    first dimension may differ per rank, the rest of the shape and the dtype may not)."""
    check_tensor(tensor, "allgather")
    if tensor.requires_grad and torch.is_grad_enabled():
        return HorovodAllgather.apply(tensor, process_set)
    return synchronize(_allgather_async(tensor.detach(), process_set, "allgather", False)[0])


@_timeline.named("allgather")
def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    handles = [allgather_async(t, process_set=process_set) for t in tensors]
    reqs = [r for h in handles for r in _handles[h].requests]
    finishers = [_handles.pop(h) for h in handles]
    return _new_handle(reqs, lambda: [f.finish() for f in finishers], finishers)


@_timeline.named("allgather")
def grouped_allgather(tensors, name=None, process_set=global_process_set):
    return [allgather(t, process_set=process_set) for t in tensors]


# ---- reducescatter ---------------------------------------------------------------------------
def _split_rows(n, size):
    q, rem = divmod(n, size)
    return [q + (1 if r < rem else 0) for r in range(size)]


def _reducescatter_async(tensor, op, pre, post, process_set, what, asynchronous=True):
    comm = _comm(process_set, what)
    code = check_tensor(tensor, what, reduce=True)
    tensor = tensor.contiguous()
    if tensor.dim() == 0:
        raise ValueError(f"{what}: tensor must have at least one dimension to scatter along, got a scalar")
    rows = _split_rows(tensor.shape[0], comm.size)
    row = int(torch.Size(tensor.shape[1:]).numel())
    out = tensor.new_empty((rows[comm.rank],) + tuple(tensor.shape[1:]))
    fields = (("call", "reducescatter"),) + _sig(tensor) + (("op", _OP_NAMES[op]), ("prescale", pre),
                                                           ("postscale", post))

    def run(nb):
        return comm.reducescatter(ptr(tensor), ptr(out), [r * row for r in rows], code, _GJ_OPS[op], pre,
                                  post, stream(tensor), nonblocking=nb)

    reqs = _start(comm, what, fields, run, asynchronous)
    return _new_handle(reqs, lambda: out, (tensor, out))


@_timeline.named("reducescatter")
def reducescatter_async(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=global_process_set):
    op = resolve_op(op, None, "reducescatter_async")
    pre, post = _factors(prescale_factor, postscale_factor, "reducescatter_async")
    return _reducescatter_async(tensor, op, pre, post, process_set, "reducescatter_async")


class HorovodReducescatter(torch.autograd.Function):
    """reducescatter with a gradient: the allgather of the output's gradients (divided by the
    set's size for Average)."""

    @staticmethod
    def forward(ctx, tensor, op, pre, post, process_set):
        ctx.args = (op, process_set)
        return synchronize(_reducescatter_async(tensor, op, pre, post, process_set, "reducescatter", False))

    @staticmethod
    def backward(ctx, grad_output):
        op, process_set = ctx.args
        grad = allgather(grad_output, process_set=process_set)
        if op == Average:
            grad = grad / _comm(process_set, "reducescatter").size
        return grad, None, None, None, None


@_timeline.named("reducescatter")
def reducescatter(tensor, name=None, compression=Compression.none, op=Average, prescale_factor=1.0,
                  postscale_factor=1.0, process_set=global_process_set):
    """This rank's rows of the reduction of tensor: dimension 0 split evenly over the ranks of the
    set, the first ranks taking one more row each when it does not divide. Differentiable."""
    op, pre, post, compressed, ctx, differentiable = _reduction_input(
        tensor, op, None, prescale_factor, postscale_factor, compression, "reducescatter")
    if differentiable:
        out = HorovodReducescatter.apply(compressed, op, pre, post, process_set)
    else:
        out = synchronize(_reducescatter_async(compressed.detach(), op, pre, post, process_set,
                                               "reducescatter", False))
    return compression.decompress(out, ctx)


@_timeline.named("reducescatter")
def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average, prescale_factor=1.0,
                          postscale_factor=1.0, process_set=global_process_set):
    return [reducescatter(t, compression=compression, op=op, prescale_factor=prescale_factor,
                          postscale_factor=postscale_factor, process_set=process_set) for t in tensors]


@_timeline.named("reducescatter")
def grouped_reducescatter_async(tensors, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                                process_set=global_process_set):
    handles = [reducescatter_async(t, op=op, prescale_factor=prescale_factor,
                                   postscale_factor=postscale_factor, process_set=process_set)
               for t in tensors]
    reqs = [r for h in handles for r in _handles[h].requests]
    finishers = [_handles.pop(h) for h in handles]
    return _new_handle(reqs, lambda: [f.finish() for f in finishers], finishers)


# ---- barrier, join ---------------------------------------------------------------------------
def barrier(process_set=global_process_set):
    """Returns when every rank of the set has reached it (after its earlier collectives)."""
    comm = _comm(process_set, "barrier")
    comm.set_check(False)
    _call(comm.barrier)


def join(device=-1):
    raise NotImplementedError("join: gj has no join (uneven inputs) support; give every rank the same "
                              "number of steps (e.g. DistributedSampler(drop_last=True))")
