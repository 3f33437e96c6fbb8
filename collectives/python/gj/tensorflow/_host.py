"""The collectives of gj.tensorflow on host (numpy) arrays: blocking, each one agreement record
(gj/common/agreement.py: every rank of the set passed the same signature, or
HorovodInternalError on every rank) and then the library's call on the arrays' memory.

Both ways a tensor reaches here run these functions: eagerly on the tensor's numpy() value, and
inside a graph from the one tf.numpy_function each op adds (mpi_ops.py). ctypes releases the GIL
for each library call, so TensorFlow's other threads run while a rank waits for its peers.
Data that is only moved (allgather, broadcast, alltoall) travels as bytes, so every dtype moves;
reductions take the library's reducible dtypes.
"""

import numpy as np

from .. import _lib
from ..common import control, state
from ..common import timeline as _timeline
from ..common.agreement import Wire, agree, refuse
from ..common.exceptions import translated
from ..common.process_sets import comm_of, registered
from ..common.reduce_ops import OP_NAMES, Adasum, adasum_refused, library_op

# numpy dtype name -> the library's dtype code, for reductions (bfloat16 is ml_dtypes', TF's).
REDUCIBLE = {"float32": _lib.FLOAT32, "float64": _lib.FLOAT64, "float16": _lib.FLOAT16,
             "bfloat16": _lib.BFLOAT16, "int32": _lib.INT32, "int64": _lib.INT64, "uint8": _lib.UINT8}


# Integer dtypes the library does not reduce, reduced in int32 and cast back: the same result
# (two's-complement wrap-around) as reducing in the narrow type, as Horovod does.
WIDENED = {"int8": np.int32, "int16": np.int32, "uint16": np.int32}
REDUCED = sorted(set(REDUCIBLE) | set(WIDENED))


def reduce_code(array, what, argument="tensor"):
    code = REDUCIBLE.get(array.dtype.name)
    if code is None:
        raise TypeError(f"{what}: {argument} has dtype {array.dtype.name}, which gj cannot reduce; use one of "
                        f"{', '.join(REDUCED)}")
    return code


def widened(array):
    """(the array to reduce, the dtype to cast the result back to or None)."""
    # asarray, not ascontiguousarray: that one makes a 0-d array 1-d; and a 0-d tensor's .numpy()
    # is a numpy scalar, which has no buffer of its own until it is an array.
    array = np.asarray(array, order="C")
    wide = WIDENED.get(array.dtype.name)
    if wide is None:
        return array, None
    return array.astype(wide), array.dtype


def narrowed(out, dtype):
    return out if dtype is None else out.astype(dtype)


def gj_op(op, what):
    """Horovod's op (an int) checked -> (op, the library's op or None for Adasum)."""
    return op, (None if op == Adasum else library_op(op, what))


def _ptr(a):
    return a.ctypes.data if a.size else None


def _run(comm, what, fn, *args):
    token = _timeline.issued()
    with state.waiting(what):
        translated(fn, *args)
    _timeline.done(token)


def _sig(a):
    return (("dtype", a.dtype.name), ("shape", tuple(a.shape)))


def allreduce(array, op, pre, post, process_set, what="allreduce"):
    array, back = widened(array)
    return narrowed(_allreduce(array, op, pre, post, process_set, what), back)


def _allreduce(array, op, pre, post, process_set, what):
    comm = comm_of(process_set, what)
    code = reduce_code(array, what)
    op, lib_op = gj_op(op, what)
    out = np.empty_like(array)
    fields = (("call", "allreduce"),) + _sig(array) + (("op", OP_NAMES[op]), ("prescale", pre),
                                                       ("postscale", post))
    if op == Adasum:
        if array.dtype.name not in ("float16", "float32", "float64"):
            raise TypeError(f"{what}: op=Adasum needs a floating-point tensor, got dtype {array.dtype.name}")
        agree(comm, what, fields, wire=Wire(code, layout=[array.size]))
        scaled = array * np.asarray(pre, dtype=array.dtype) if pre != 1.0 else array
        _run(comm, what, comm.adasum, _ptr(scaled), _ptr(out), array.size, code)
        return out * np.asarray(post, dtype=array.dtype) if post != 1.0 else out
    agree(comm, what, fields, wire=Wire(code, lib_op, pre, post, layout=[array.size]))
    _run(comm, what, comm.allreduce, _ptr(array), _ptr(out), array.size, code, lib_op, pre, post)
    return out


def grouped_allreduce(arrays, op, pre, post, process_set, what="grouped_allreduce"):
    """One agreement for the group, then one library call per dtype (in first-appearance order)."""
    comm = comm_of(process_set, what)
    arrays, backs = zip(*[widened(a) for a in arrays]) if arrays else ((), ())
    codes = [reduce_code(a, what, f"tensors[{i}]") for i, a in enumerate(arrays)]
    op, lib_op = gj_op(op, what)
    if op == Adasum:
        return [allreduce(a, op, pre, post, process_set, what) for a in arrays]
    outs = [np.empty_like(a) for a in arrays]
    order = list(dict.fromkeys(codes))
    layout = []
    for c in order:
        idx = [i for i, k in enumerate(codes) if k == c]
        layout += [c, len(idx)] + [arrays[i].size for i in idx]
    fields = (("call", "grouped_allreduce"), ("tensors", tuple(_sig(a) for a in arrays)),
              ("op", OP_NAMES[op]), ("prescale", pre), ("postscale", post))
    agree(comm, what, fields, wire=Wire(0, lib_op, pre, post, layout=layout))
    for c in order:
        idx = [i for i, k in enumerate(codes) if k == c]
        _run(comm, what, comm.grouped_allreduce, [_ptr(arrays[i]) for i in idx], [_ptr(outs[i]) for i in idx],
             [arrays[i].size for i in idx], c, lib_op, pre, post)
    return [narrowed(o, b) for o, b in zip(outs, backs)]


def _rows_and_row_bytes(array, what):
    if array.ndim == 0:
        raise ValueError(f"{what}: tensor is a scalar (shape ()); it needs a first dimension to concatenate on "
                         "(reshape it to [1])")
    return array.shape[0], array.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))


def allgather(array, process_set, what="allgather"):
    comm = comm_of(process_set, what)
    array = np.asarray(array, order="C")
    rows, row_bytes = _rows_and_row_bytes(array, what)
    fields = (("call", "allgather"), ("dtype", array.dtype.name), ("row_shape", tuple(array.shape[1:])))
    every = agree(comm, what, fields, rows=rows)
    out = np.empty((int(sum(every)),) + array.shape[1:], dtype=array.dtype)
    _run(comm, what, comm.allgatherv, _ptr(array), _ptr(out), [int(r) * row_bytes for r in every], _lib.UINT8)
    return out


def set_root(process_set, root_rank, what):
    """root_rank (a global rank, as in Horovod) -> its rank in the set."""
    ps = registered(process_set, what)
    try:
        return ps.ranks.index(int(root_rank))
    except ValueError:
        raise ValueError(f"{what}: root_rank={root_rank!r} is not a rank of process set {ps.ranks}") from None


def broadcast(array, root_rank, process_set, what="broadcast"):
    comm = comm_of(process_set, what)
    root = set_root(process_set, root_rank, what)
    # Only the root's buffer needs the input; the others are written whole by the broadcast.
    out = np.array(array, copy=True, order="C") if comm.rank == root else np.empty_like(array, order="C")
    fields = (("call", "broadcast"),) + _sig(out) + (("root", int(root_rank)),)
    agree(comm, what, fields, wire=Wire(_lib.UINT8, root=root, layout=[out.nbytes]))
    _run(comm, what, comm.broadcast, _ptr(out), out.nbytes, _lib.UINT8, root)
    return out


def alltoall(array, splits, process_set, what="alltoall"):
    """(output, received splits): rows splits[r] of array to rank r of the set."""
    comm = comm_of(process_set, what)
    array = np.asarray(array, order="C")
    rows, row_bytes = _rows_and_row_bytes(array, what)
    n = comm.size
    if splits is None or np.size(splits) == 0:
        if rows % n:
            refuse(comm, what, "alltoall", ValueError(
                f"{what}: tensor's first dimension {rows} does not divide among the {n} ranks of the set; pass "
                "splits="))
        splits = [rows // n] * n
    splits = [int(s) for s in np.asarray(splits).reshape(-1)]
    if len(splits) != n or any(s < 0 for s in splits) or sum(splits) != rows:
        refuse(comm, what, "alltoall", ValueError(
            f"{what}: splits={splits} must have {n} non-negative entries summing to the first dimension {rows}"))
    fields = (("call", "alltoall"), ("dtype", array.dtype.name), ("row_shape", tuple(array.shape[1:])))
    agree(comm, what, fields)
    sent = np.asarray(splits, dtype=np.int64)
    got = np.empty(n, dtype=np.int64)
    _run(comm, what, comm.alltoallv, _ptr(sent), [1] * n, _ptr(got), [1] * n, _lib.INT64)
    out = np.empty((int(got.sum()),) + array.shape[1:], dtype=array.dtype)
    _run(comm, what, comm.alltoallv, _ptr(array), [s * row_bytes for s in splits], _ptr(out),
         [int(g) * row_bytes for g in got], _lib.UINT8)
    return out, got.astype(np.int32)


def scatter_rows(rows, n):
    """Horovod's split of rows over n ranks: the first rows % n ranks one more."""
    q, rem = divmod(rows, n)
    return [q + (1 if r < rem else 0) for r in range(n)]


def reducescatter(array, op, pre, post, process_set, what="reducescatter"):
    return grouped_reducescatter([array], op, pre, post, process_set, what)[0]


def grouped_reducescatter(arrays, op, pre, post, process_set, what="grouped_reducescatter"):
    comm = comm_of(process_set, what)
    arrays, backs = zip(*[widened(a) for a in arrays]) if arrays else ((), ())
    codes = [reduce_code(a, what, f"tensors[{i}]") for i, a in enumerate(arrays)]
    op, lib_op = gj_op(op, what)
    if op == Adasum:
        raise adasum_refused(what)
    for a in arrays:
        _rows_and_row_bytes(a, what)
    fields = (("call", "reducescatter"), ("tensors", tuple(_sig(a) for a in arrays)), ("op", OP_NAMES[op]),
              ("prescale", pre), ("postscale", post))
    agree(comm, what, fields)
    outs = []
    for a, code in zip(arrays, codes):
        row = int(np.prod(a.shape[1:], dtype=np.int64))
        shares = scatter_rows(a.shape[0], comm.size)
        out = np.empty((shares[comm.rank],) + a.shape[1:], dtype=a.dtype)
        _run(comm, what, comm.reducescatter, _ptr(a), _ptr(out), [s * row for s in shares], code, lib_op, pre, post)
        outs.append(out)
    return [narrowed(o, b) for o, b in zip(outs, backs)]


def barrier(process_set, what="barrier"):
    control.barrier(comm_of(process_set, what))
