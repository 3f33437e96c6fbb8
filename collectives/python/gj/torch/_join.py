"""join(): Horovod's uneven inputs. A rank out of data calls join(); until every rank has, it
takes part in every collective the other ranks issue on the global process set, contributing
zeros to each reduction (Average still divides by the set's size, as Horovod).

gj matches collectives by issue order, so a joined rank issues the very library calls the others
issue: it waits in the agreement record every gj.torch call sends first (gj/common/agreement.py), which
says what the call is, and issues the same data request(s) - same kind, dtype, counts, op,
factors, root, blocking or not, library check on or off - with zero buffers, then waits for the
next record. Barriers are not in that order: a joined rank takes part in them on the control
channel (_control.Presence). A call it cannot take part in (allgather, broadcast, alltoall,
reducescatter, Adasum, as Horovod refuses them with joined ranks) raises HorovodInternalError on the other
ranks: a blocking one before anything is issued, a nonblocking one at synchronize(), the joined
rank issuing its data request too so nobody waits for ever. The joined ranks stay joined.

A DistributedOptimizer step sends no per-bucket records (the buckets are planned at
construction): each step announces itself with one record (kind OPTIMIZER_STEP, the optimizer's
index among the global set's optimizers, in creation order, the same on every rank), and a
joined rank runs its own copy of the optimizer's synchronize() without gradients: the same
buckets, flag exchange and late buckets as every rank, its zeros in each.

The record every rank contributes to the round in which all ranks are inside join() tells the
last rank to join: the highest rank that entered join() in that round (Horovod's coordinator
also takes the highest among simultaneous joins); join() returns it on every rank.
"""

import ctypes
import weakref

import torch

from .. import _lib
from ..common import agreement
from ..common.join import until_all_joined
from ..common import timeline as _timeline
from . import _basics
from ..common.exceptions import HorovodInternalError, translated

_optimizers = []      # weakrefs to the global set's DistributedOptimizers, in creation order
_mirroring = False    # this rank runs a step for a joined rank: no announcement of its own


# ---- DistributedOptimizer steps -------------------------------------------------------------
# DistributedOptimizer calls these: register_optimizer at the end of its construction,
# announce_step before a step's first request (_issue, synchronize), finish_step after
# synchronize.
def register_optimizer(opt):
    """Called at the end of DistributedOptimizer's construction (collective over its set)."""
    opt._gj_join_step = None
    opt._gj_join_index = None
    opt._gj_join_template = None
    ps = getattr(opt, "process_set", None)
    if getattr(opt, "_comm", None) is None or ps is None or ps.process_set_id != 0:
        return  # join is over the global process set only
    opt._gj_join_index = len(_optimizers)
    _optimizers.append(weakref.ref(opt))


def announce_step(opt):
    """Before the first request of a step: the step's record (nonblocking), once per step."""
    idx = getattr(opt, "_gj_join_index", None)
    if idx is None or _mirroring or opt._gj_join_step is not None:
        return
    template = opt._gj_join_template
    if template is None:
        template = opt._gj_join_template = agreement.Template(
            opt._comm, (("call", "optimizer_step"), ("optimizer", idx)), agreement.Wire(layout=[idx]),
            agreement.OPTIMIZER_STEP)
    with _timeline.negotiation():
        opt._gj_join_step = translated(agreement.Agreement, opt._comm, "DistributedOptimizer.step", None, template=template)


def finish_step(opt, failing=False):
    """After the step's requests: completes its record (raises when the ranks step different
    optimizers, unless the step failed already)."""
    step, opt._gj_join_step = getattr(opt, "_gj_join_step", None), None
    if step is None:
        return
    try:
        step.wait()
    except Exception:
        if not failing:
            raise


def _step_for_joined(index):
    ref = _optimizers[index] if 0 <= index < len(_optimizers) else None
    opt = ref() if ref is not None else None
    if opt is None:
        raise HorovodInternalError.disagreement(
            "join", f"the other ranks step DistributedOptimizer #{index} (in creation order), which this rank "
            "does not have (any more); keep every rank's optimizer alive until join() returns")
    _run_own_step(opt)


def _run_own_step(opt):
    global _mirroring
    _mirroring = True
    try:
        opt.synchronize()
    finally:
        _mirroring = False
        opt._synchronized = False  # a step() after join() need not skip_synchronize()


# ---- the joined rank ------------------------------------------------------------------------
def _device_of(wire, device):
    if wire.device != "cuda":
        return torch.device("cpu")
    return torch.device("cuda", device if device is not None and device >= 0 else torch.cuda.current_device())


def _stream(dev):
    if dev.type != "cuda":
        return None
    return ctypes.c_void_p(torch.cuda.current_stream(dev).cuda_stream)


def _zeros(n, code, dev):
    from ._tensor import DTYPES
    dtype = next(d for d, c in DTYPES.items() if c == code)
    return torch.zeros(max(int(n), 1), dtype=dtype, device=dev)


def _addr(t, n, offset=0):
    return t.data_ptr() + offset * t.element_size() if n else None


def _grouped_calls(layout):
    """[(dtype, [counts])] of a grouped allreduce's layout."""
    calls, i = [], 0
    while i + 1 < len(layout):
        code, n = layout[i], layout[i + 1]
        calls.append((code, layout[i + 2:i + 2 + n]))
        i += 2 + n
    return calls


def _mirror(comm, out, device):
    """Issues, with zeros, the data request(s) of the call whose record `out` is."""
    kind, nb = out.kind, out.nonblocking()
    if (not out.agreed() or kind not in agreement.WITH_JOINED) and not nb:
        return  # the other ranks raise before issuing anything
    if kind == agreement.OPTIMIZER_STEP:
        return _step_for_joined(out.wire().layout[0])
    layout = None
    if out.layout_len() > agreement.INLINE:
        vec, _ = agreement.layout_record(comm, out.layout_len(), False)
        layout = list(vec)
    w = out.wire(layout)
    dev = _device_of(w, device)
    stream = _stream(dev)
    comm.set_check(nb)
    keep, reqs = [], []

    def issued(req):
        if req is not None:
            reqs.append(req)

    if kind == agreement.ALLREDUCE or kind == agreement.ADASUM:
        n = w.layout[0]
        z = _zeros(n, w.dtype, dev if kind == agreement.ALLREDUCE else torch.device("cpu"))
        keep.append(z)
        if kind == agreement.ALLREDUCE:
            issued(comm.allreduce(_addr(z, n), _addr(z, n), n, w.dtype, w.op, w.pre, w.post, stream, nonblocking=nb))
        else:
            issued(comm.adasum(_addr(z, n), _addr(z, n), n, w.dtype, nonblocking=nb))
    elif kind == agreement.GROUPED:
        for code, counts in _grouped_calls(w.layout):
            z = _zeros(sum(counts), code, dev)
            keep.append(z)
            offsets = [sum(counts[:i]) for i in range(len(counts))]
            ptrs = [_addr(z, c, o) for c, o in zip(counts, offsets)]
            issued(comm.grouped_allreduce(ptrs, ptrs, counts, code, w.op, w.pre, w.post, stream, nonblocking=nb))
    elif kind == agreement.BROADCAST:
        n = w.layout[0]
        z = _zeros(n, _lib.UINT8, dev)
        keep.append(z)
        issued(comm.broadcast(_addr(z, n), n, _lib.UINT8, w.root, stream, nonblocking=nb))
    elif kind == agreement.REDUCESCATTER:
        rows, row = w.layout[0], w.layout[1]
        q, rem = divmod(rows, comm.size)
        counts = [(q + (1 if r < rem else 0)) * row for r in range(comm.size)]
        send, recv = _zeros(sum(counts), w.dtype, dev), _zeros(counts[comm.rank], w.dtype, dev)
        keep += [send, recv]
        issued(comm.reducescatter(_addr(send, sum(counts)), _addr(recv, counts[comm.rank]), counts, w.dtype, w.op,
                                  w.pre, w.post, stream, nonblocking=nb))
    else:
        raise HorovodInternalError.disagreement(
            "join", f"the other ranks issued a nonblocking {agreement.KIND_NAMES.get(kind, 'collective')} that a joined "
            "rank cannot take part in")
    for r in reqs:
        r.wait()
    if dev.type == "cuda":
        torch.cuda.current_stream(dev).synchronize()  # the zero buffers outlive their use
    del keep


def join(device=-1):
    """Blocks until every rank has called join(), taking part meanwhile in the global process
    set's collectives with zeros; returns the last rank to join (the same on every rank)."""
    if not isinstance(device, int) or isinstance(device, bool):
        raise TypeError(f"join: device={device!r} must be an int (a CUDA device index, or -1 for the CPU)")
    comm = _basics.comm_of(_basics.global_process_set, "join")
    # A step this rank began (backward ran, step() not yet) ends with its own gradients.
    for ref in list(_optimizers):
        opt = ref()
        if opt is not None and opt._gj_join_step is not None:
            _run_own_step(opt)
    return _basics.global_process_set.ranks[until_all_joined(comm, lambda c, out: _mirror(c, out, device))]
