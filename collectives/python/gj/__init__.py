"""gj: Python frontend of the gj collectives library (libgj_collectives).

This module is the numpy layer: a Communicator over all ranks of the MPI job whose methods
reduce, broadcast and gather numpy arrays in place. gj.torch is the Horovod-compatible PyTorch
frontend (docs/torch.md).

    import numpy as np, gj
    with gj.Communicator() as comm:           # initializes MPI if nobody has
        grad = np.ones(10, dtype=np.float32)
        comm.allreduce(grad, op="avg")        # in place
        comm.broadcast(weights, root=0)
        comm.grouped_allreduce([gw, gb], op="avg")   # one fused call for many tensors
        rows = comm.allgather(local_rows)     # first dimension may differ per rank

The library is found as gj/_lib.py says: $GJ_COLLECTIVES_LIB, the path recorded at build or
install time, then the loader's search; gj.library_path is the one loaded.

dtypes: float32, float64, float16, int32, int64, uint8 reduce; int8, int16 and bool move
(broadcast, allgather). numpy has no bfloat16: pass the bits as a uint16 (or int16) array with
dtype="bfloat16". Failures raise GjError carrying the library's result code and detail.
"""

from . import _core, _lib
from ._lib import GjError, library_path

__all__ = ["Communicator", "GjError", "finalize", "library_path", "OPS", "capabilities",
           "cuda_built", "nccl_built"]
__version__ = "0.1.0"

OPS = dict(_lib.OPS)


def capabilities():
    """{'cuda': bool, 'nccl': bool}: what the loaded library was built with."""
    bits = _lib.capabilities()
    return {"cuda": bool(bits & _lib.CAP_CUDA), "nccl": bool(bits & _lib.CAP_NCCL)}


def cuda_built():
    return capabilities()["cuda"]


def nccl_built():
    return capabilities()["nccl"]


def _np():
    import numpy as np
    return np


def _numpy_dtypes():
    np = _np()
    return {np.dtype(np.float32): _lib.FLOAT32, np.dtype(np.float64): _lib.FLOAT64,
            np.dtype(np.float16): _lib.FLOAT16, np.dtype(np.int32): _lib.INT32,
            np.dtype(np.int64): _lib.INT64, np.dtype(np.uint8): _lib.UINT8,
            np.dtype(np.int8): _lib.INT8, np.dtype(np.int16): _lib.INT16, np.dtype(np.bool_): _lib.BOOL}


def _gj_dtype(array, dtype, reduce):
    """The gjDataType_t of a numpy array, honouring an explicit dtype="bfloat16"."""
    np = _np()
    if dtype == "bfloat16":
        if array.dtype.itemsize != 2 or array.dtype.kind not in "iu":
            raise TypeError(f'dtype="bfloat16" needs a uint16/int16 view of the bits, got {array.dtype}')
        return _lib.BFLOAT16
    if dtype is not None and np.dtype(dtype) != array.dtype:
        raise TypeError(f"dtype={dtype!r} does not match the array's dtype {array.dtype}")
    code = _numpy_dtypes().get(array.dtype)
    if code is None or (reduce and code >= _lib.NUM_REDUCIBLE):
        kinds = sorted(str(d) for d, c in _numpy_dtypes().items() if not reduce or c < _lib.NUM_REDUCIBLE)
        raise TypeError(f"array dtype {array.dtype} cannot be {'reduced' if reduce else 'moved'} by gj; "
                        f"use one of {kinds}" + (' or a uint16 array with dtype="bfloat16"' if reduce else ""))
    return code


def _buffer(array, name):
    np = _np()
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
    if not array.flags.c_contiguous or not array.flags.writeable:
        raise ValueError(f"{name} must be C-contiguous and writeable (use np.ascontiguousarray and "
                         f"copy back); flags: c_contiguous={array.flags.c_contiguous}, "
                         f"writeable={array.flags.writeable}")
    return array.ctypes.data


def _op(op):
    try:
        return OPS[op]
    except KeyError:
        raise ValueError(f"op={op!r} is not one of {sorted(OPS)}") from None


class Communicator:
    """All ranks of the MPI job (MPI_COMM_WORLD). Collective to create and to close.
    Every rank must call the collectives in the same order with matching arguments."""

    def __init__(self):
        self._open = _core.Comm.world()
        self.rank, self.size = self._open.rank, self._open.size
        self.local_rank, self.local_size = self._open.local_rank, self._open.local_size

    def _comm(self):
        if self._open is None:
            raise ValueError("the communicator is closed")
        return self._open

    def allreduce(self, array, op="sum", dtype=None, prescale=1.0, postscale=1.0):
        """Reduces array across ranks in place and returns it."""
        buf = _buffer(array, "array")
        self._comm().allreduce(buf, buf, array.size, _gj_dtype(array, dtype, True), _op(op),
                               float(prescale), float(postscale))
        return array

    def broadcast(self, array, root=0, dtype=None):
        """Copies root's array into every rank's array, in place; returns it."""
        buf = _buffer(array, "array")
        _gj_dtype(array, dtype, False)
        self._comm().broadcast(buf, array.nbytes, _lib.UINT8, root)
        return array

    def grouped_allreduce(self, arrays, op="sum", dtype=None):
        """Reduces every array (one dtype) in place with one fused call; returns the list."""
        arrays = list(arrays)
        if not arrays:
            return arrays
        kinds = {_gj_dtype(a, dtype, True) for a in arrays}
        if len(kinds) != 1:
            raise TypeError(f"grouped_allreduce needs arrays of one dtype, got {[str(a.dtype) for a in arrays]}")
        bufs = [_buffer(a, f"arrays[{i}]") for i, a in enumerate(arrays)]
        self._comm().grouped_allreduce(bufs, bufs, [a.size for a in arrays], kinds.pop(), _op(op))
        return arrays

    def allgather(self, array):
        """A new array: every rank's array concatenated along axis 0 in rank order. The first
        dimension may differ per rank; the rest of the shape and the dtype must not."""
        np = _np()
        array = np.ascontiguousarray(array)
        _gj_dtype(array, None, False)
        if array.ndim == 0:
            array = array.reshape(1)
        comm = self._comm()
        rows = np.zeros(comm.size, dtype=np.int64)
        rows[comm.rank] = array.shape[0]
        self.allreduce(rows, op="sum")
        row_bytes = array.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))
        out = np.empty((int(rows.sum()),) + array.shape[1:], dtype=array.dtype)
        comm.allgatherv(array.ctypes.data, out.ctypes.data, [int(r) * row_bytes for r in rows], _lib.UINT8)
        return out

    def reducescatter(self, array, op="sum", counts=None):
        """A new array: rank r's slice of the reduction of array (counts[r] elements of the
        flattened array, default an even split with the first ranks taking the remainder)."""
        np = _np()
        array = np.ascontiguousarray(array)
        comm = self._comm()
        if counts is None:
            q, rem = divmod(array.size, comm.size)
            counts = [q + (1 if r < rem else 0) for r in range(comm.size)]
        if len(counts) != comm.size or sum(counts) != array.size:
            raise ValueError(f"counts={list(counts)} must have {comm.size} entries summing to array.size={array.size}")
        out = np.empty(counts[comm.rank], dtype=array.dtype)
        comm.reducescatter(array.ctypes.data, out.ctypes.data, list(counts), _gj_dtype(array, None, True), _op(op))
        return out

    def barrier(self):
        self._comm().barrier()

    @property
    def fusion_threshold(self):
        return self._comm().fusion_threshold

    @fusion_threshold.setter
    def fusion_threshold(self, nbytes):
        self._comm().fusion_threshold = nbytes

    def close(self):
        """Collective: destroys the communicator. Idempotent."""
        if self._open is not None:
            comm, self._open = self._open, None
            comm.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def finalize():
    """Finalizes MPI if the library initialized it and no communicator is alive."""
    _core.finalize()

