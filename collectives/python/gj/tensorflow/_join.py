"""join() of gj.tensorflow: Horovod's uneven inputs. Until every rank has called join(), a
joined rank takes part in the allreduces and grouped allreduces the other ranks issue on the
global process set, contributing zeros (Average still divides by the set's size, as Horovod),
and in their barriers (gj.common.control.Presence). It waits in the agreement record each call
sends first (gj/common/agreement.py), which says what the call is and its layout, and issues the
same library call on zero host buffers. gj.tensorflow's calls are blocking, so a call a joined
rank cannot take part in (allgather, broadcast, alltoall, reducescatter, Adasum) raises
HorovodInternalError on the other ranks before anything is issued. Returns the last rank to
join (the highest of those that joined in the final round), the same on every rank."""

import numpy as np

from ..common import agreement
from ..common.join import until_all_joined
from ..common.process_sets import comm_of, global_process_set
from ._host import REDUCIBLE

_NUMPY = {code: np.dtype(name) if name != "bfloat16" else None for name, code in REDUCIBLE.items()}


def _zeros(n, code):
    dtype = _NUMPY.get(code)
    if dtype is None:  # bfloat16: its bits as uint16 (zeros are zeros)
        dtype = np.dtype(np.uint16)
    return np.zeros(max(int(n), 1), dtype=dtype)


def _mirror(comm, out):
    kind = out.kind
    if not out.agreed() or kind not in (agreement.ALLREDUCE, agreement.GROUPED):
        return  # the other ranks raise before issuing anything (blocking calls only here)
    layout = None
    if out.layout_len() > agreement.INLINE:
        vec, _ = agreement.layout_record(comm, out.layout_len(), False)
        layout = list(vec)
    w = out.wire(layout)
    comm.set_check(False)
    if kind == agreement.ALLREDUCE:
        n = w.layout[0]
        z = _zeros(n, w.dtype)
        ptr = z.ctypes.data if n else None
        comm.allreduce(ptr, ptr, n, w.dtype, w.op, w.pre, w.post)
        return
    i = 0
    while i + 1 < len(w.layout):
        code, k = w.layout[i], w.layout[i + 1]
        counts = w.layout[i + 2:i + 2 + k]
        i += 2 + k
        z = [_zeros(c, code) for c in counts]
        ptrs = [a.ctypes.data if c else None for a, c in zip(z, counts)]
        comm.grouped_allreduce(ptrs, ptrs, counts, code, w.op, w.pre, w.post)


def join():
    """Blocks until every rank has called join(); returns the last rank to join (an int eagerly,
    an int32 tensor inside a graph, run when the op runs)."""
    import tensorflow as tf
    if tf.executing_eagerly():
        return _join()
    comm_of(global_process_set, "join")
    from .mpi_ops import _in_order
    return _in_order(lambda: tf.numpy_function(lambda: np.int32(_join()), [], tf.int32, stateful=True,
                                               name="GjJoin"))


def _join():
    comm = comm_of(global_process_set, "join")
    return global_process_set.ranks[until_all_joined(comm, _mirror)]
