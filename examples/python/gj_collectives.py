"""gj collectives from Python: allreduce and broadcast numpy arrays in place.

A thin ctypes layer over the C ABI of libgj_collectives (gj/collectives.h); it needs only
python3 and numpy. Host (numpy) buffers go through the library's MPI backend.

    import numpy as np, gj_collectives as gj
    with gj.Communicator() as comm:           # initializes MPI if nobody has
        grad = np.ones(10, dtype=np.float32)
        comm.allreduce(grad, op="avg")        # in place
        comm.broadcast(weights, root=0)
        comm.grouped_allreduce([gw, gb], op="avg")   # one fused call for many tensors

The library is found, in this order: $GJ_COLLECTIVES_LIB (a path to the .so), next to this
file, the install prefix this file lives under (<prefix>/share/gj/python -> <prefix>/lib...),
then the dynamic loader's search path (LD_LIBRARY_PATH, ldconfig).

dtypes: float32, float64, float16, int32, int64, uint8 map directly. numpy has no bfloat16:
pass the bits as a uint16 (or int16) array together with dtype="bfloat16".
Failures raise GjError carrying the library's result code and its last-error text.
"""

import ctypes
import ctypes.util
import os

import numpy as np

__all__ = ["Communicator", "GjError", "finalize", "library_path", "OPS"]

# gjDataType_t values (gj/collectives.h).
_FLOAT32, _FLOAT64, _FLOAT16, _BFLOAT16, _INT32, _INT64, _UINT8 = range(7)
_NUMPY_DTYPES = {
    np.dtype(np.float32): _FLOAT32,
    np.dtype(np.float64): _FLOAT64,
    np.dtype(np.float16): _FLOAT16,
    np.dtype(np.int32): _INT32,
    np.dtype(np.int64): _INT64,
    np.dtype(np.uint8): _UINT8,
}
# gjRedOp_t values.
OPS = {"sum": 0, "avg": 1, "min": 2, "max": 3, "prod": 4}
_LIB_NAME = "libgj_collectives.so"


class GjError(RuntimeError):
    """A gj call failed; .code is the gjResult_t, the message the library's detail."""

    def __init__(self, call, code, detail):
        super().__init__(f"{call} failed: {detail}")
        self.call = call
        self.code = code


def _candidates():
    env = os.environ.get("GJ_COLLECTIVES_LIB")
    if env:
        yield env
        return  # an explicit choice is never silently replaced by another library
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, _LIB_NAME)
    prefix = os.path.normpath(os.path.join(here, "..", "..", ".."))  # <prefix>/share/gj/python
    for libdir in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
        yield os.path.join(prefix, libdir, _LIB_NAME)
    yield ctypes.util.find_library("gj_collectives") or _LIB_NAME


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (absent)")
            continue
        try:
            # RTLD_GLOBAL: Open MPI's plugins resolve libmpi's symbols from the global scope.
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError(
        "gj_collectives: cannot load " + _LIB_NAME + "; tried: " + "; ".join(tried)
        + ". Set GJ_COLLECTIVES_LIB to the library's path.")


_lib, library_path = _load()

_c_int_p = ctypes.POINTER(ctypes.c_int)
_SIGNATURES = {
    "gjGetErrorString": (ctypes.c_char_p, [ctypes.c_int]),
    "gjGetLastError": (ctypes.c_char_p, [ctypes.c_void_p]),
    "gjCommInitWorld": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "gjCommDestroy": (ctypes.c_int, [ctypes.c_void_p]),
    "gjCommRank": (ctypes.c_int, [ctypes.c_void_p, _c_int_p]),
    "gjCommSize": (ctypes.c_int, [ctypes.c_void_p, _c_int_p]),
    "gjCommLocalRank": (ctypes.c_int, [ctypes.c_void_p, _c_int_p]),
    "gjCommLocalSize": (ctypes.c_int, [ctypes.c_void_p, _c_int_p]),
    "gjCommSetFusionThreshold": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t]),
    "gjCommGetFusionThreshold": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    "gjAllReduce": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                   ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]),
    "gjBroadcast": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_void_p, ctypes.c_void_p]),
    "gjGroupedAllReduce": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p),
                                          ctypes.POINTER(ctypes.c_size_t), ctypes.c_int, ctypes.c_int,
                                          ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]),
    "gjFinalize": (ctypes.c_int, []),
}
for _name, (_restype, _argtypes) in _SIGNATURES.items():
    getattr(_lib, _name).restype = _restype
    getattr(_lib, _name).argtypes = _argtypes


def _check(code, call, comm=None):
    if code != 0:
        what = _lib.gjGetErrorString(code).decode(errors="replace")
        detail = _lib.gjGetLastError(comm).decode(errors="replace")
        raise GjError(call, code, f"{what}: {detail}" if detail else what)


def _gj_dtype(array, dtype):
    """The gjDataType_t for a numpy array, honouring an explicit dtype="bfloat16"."""
    if dtype is None:
        try:
            return _NUMPY_DTYPES[array.dtype]
        except KeyError:
            raise TypeError(f"array dtype {array.dtype} has no gj equivalent; use one of "
                            f"{sorted(str(d) for d in _NUMPY_DTYPES)} or a uint16 array with "
                            f'dtype="bfloat16"') from None
    if dtype == "bfloat16":
        if array.dtype.itemsize != 2 or array.dtype.kind not in "iu":
            raise TypeError(f'dtype="bfloat16" needs a uint16/int16 view of the bits, got {array.dtype}')
        return _BFLOAT16
    if np.dtype(dtype) != array.dtype:
        raise TypeError(f"dtype={dtype!r} does not match the array's dtype {array.dtype}")
    return _gj_dtype(array, None)


def _buffer(array, name):
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(array).__name__}")
    if not array.flags.c_contiguous or not array.flags.writeable:
        raise ValueError(f"{name} must be C-contiguous and writeable (use np.ascontiguousarray and "
                         f"copy back); flags: {array.flags.c_contiguous=}, {array.flags.writeable=}")
    return ctypes.c_void_p(array.ctypes.data)


def _op(op):
    try:
        return OPS[op]
    except KeyError:
        raise ValueError(f"op={op!r} is not one of {sorted(OPS)}") from None


class Communicator:
    """All ranks of the MPI job (MPI_COMM_WORLD). Collective to create and to close."""

    def __init__(self):
        handle = ctypes.c_void_p()
        _check(_lib.gjCommInitWorld(ctypes.byref(handle)), "gjCommInitWorld")
        self._comm = handle
        self.rank = self._query(_lib.gjCommRank, "gjCommRank")
        self.size = self._query(_lib.gjCommSize, "gjCommSize")
        self.local_rank = self._query(_lib.gjCommLocalRank, "gjCommLocalRank")
        self.local_size = self._query(_lib.gjCommLocalSize, "gjCommLocalSize")

    def _query(self, fn, call):
        out = ctypes.c_int()
        _check(fn(self._handle(), ctypes.byref(out)), call, self._comm)
        return out.value

    def _handle(self):
        if self._comm is None:
            raise ValueError("the communicator is closed")
        return self._comm

    def allreduce(self, array, op="sum", dtype=None):
        """Reduces array across ranks in place and returns it."""
        buf = _buffer(array, "array")
        _check(_lib.gjAllReduce(buf, buf, array.size, _gj_dtype(array, dtype), _op(op),
                                self._handle(), None), "gjAllReduce", self._comm)
        return array

    def broadcast(self, array, root=0, dtype=None):
        """Copies root's array into every rank's array, in place; returns it."""
        buf = _buffer(array, "array")
        _check(_lib.gjBroadcast(buf, array.size, _gj_dtype(array, dtype), root, self._handle(), None),
               "gjBroadcast", self._comm)
        return array

    def grouped_allreduce(self, arrays, op="sum", dtype=None):
        """Reduces every array (one dtype) in place with one fused call; returns the list."""
        arrays = list(arrays)
        if not arrays:
            return arrays
        kinds = {_gj_dtype(a, dtype) for a in arrays}
        if len(kinds) != 1:
            raise TypeError(f"grouped_allreduce needs arrays of one dtype, got {[str(a.dtype) for a in arrays]}")
        n = len(arrays)
        bufs = (ctypes.c_void_p * n)(*[_buffer(a, f"arrays[{i}]").value for i, a in enumerate(arrays)])
        counts = (ctypes.c_size_t * n)(*[a.size for a in arrays])
        _check(_lib.gjGroupedAllReduce(bufs, bufs, counts, n, kinds.pop(), _op(op), self._handle(), None),
               "gjGroupedAllReduce", self._comm)
        return arrays

    @property
    def fusion_threshold(self):
        out = ctypes.c_size_t()
        _check(_lib.gjCommGetFusionThreshold(self._handle(), ctypes.byref(out)),
               "gjCommGetFusionThreshold", self._comm)
        return out.value

    @fusion_threshold.setter
    def fusion_threshold(self, nbytes):
        _check(_lib.gjCommSetFusionThreshold(self._handle(), nbytes), "gjCommSetFusionThreshold", self._comm)

    def close(self):
        """Collective: destroys the communicator. Idempotent."""
        if self._comm is not None:
            handle, self._comm = self._comm, None
            _check(_lib.gjCommDestroy(handle), "gjCommDestroy")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def finalize():
    """Finalizes MPI if the library initialized it and no communicator is alive."""
    _check(_lib.gjFinalize(), "gjFinalize")
