"""Loading libgj_collectives and declaring its C ABI (gj/collectives.h) for ctypes.

The library is found in this order, the first that loads wins:
  1. $GJ_COLLECTIVES_LIB, a path to the .so (an explicit choice is never replaced by another);
  2. the path recorded when this package was built or installed (gj/_config.py);
  3. the dynamic loader's search (LD_LIBRARY_PATH, ldconfig) for libgj_collectives.so.0.
The ImportError names every place tried.
"""

import ctypes
import ctypes.util
import os

from . import _config

LIB_ENV = "GJ_COLLECTIVES_LIB"
SONAME = "libgj_collectives.so.0"

# gjResult_t
SUCCESS, INVALID_ARGUMENT, INVALID_USAGE, UNSUPPORTED = 0, 1, 2, 3
SYSTEM_ERROR, MPI_ERROR, NCCL_ERROR, CUDA_ERROR, TIMEOUT, INTERNAL_ERROR, PEER_LOST = 4, 5, 6, 7, 8, 9, 10
# gjDataType_t
FLOAT32, FLOAT64, FLOAT16, BFLOAT16, INT32, INT64, UINT8, INT8, INT16, BOOL, BYTE = range(11)
NUM_REDUCIBLE = 7
# gjRedOp_t
SUM, AVG, MIN, MAX, PROD = range(5)
OPS = {"sum": SUM, "avg": AVG, "min": MIN, "max": MAX, "prod": PROD}
# gjBuildCapabilities bits
CAP_CUDA, CAP_NCCL = 1, 2


def _candidates():
    env = os.environ.get(LIB_ENV)
    if env:
        yield env, f"${LIB_ENV}"
        return
    recorded = _config.library_path()
    if recorded:
        yield recorded, "recorded at build/install time"
    yield SONAME, "the dynamic loader's search path"
    found = ctypes.util.find_library("gj_collectives")
    if found and found != SONAME:
        yield found, "ldconfig"


def _load():
    tried = []
    for path, origin in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} ({origin}: absent)")
            continue
        try:
            # RTLD_GLOBAL: Open MPI's plugins resolve libmpi's symbols from the global scope.
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path
        except OSError as e:
            tried.append(f"{path} ({origin}: {e})")
    raise ImportError(f"gj: cannot load the collectives library {SONAME}; tried: " + "; ".join(tried)
                      + f". Set {LIB_ENV} to the library's path, or install the gj-mpirun package.")


lib, library_path = _load()

# The C types of the signatures below.
_ptr = ctypes.c_void_p                     # a buffer, a communicator, a stream, a request
_int = ctypes.c_int                        # gjResult_t, a dtype, an op, a rank, a flag
_size = ctypes.c_size_t                    # a count
_double = ctypes.c_double                  # a scale factor
_ptrs = ctypes.POINTER(ctypes.c_void_p)    # an array of buffers, or where a handle is returned
_sizes = ctypes.POINTER(ctypes.c_size_t)   # an array of counts, or where a size is returned
_int_out = ctypes.POINTER(ctypes.c_int)    # where an int is returned
# gjRecvPlan_t: int plan(void* arg, size_t* recvcounts, void** recvbuff)
PLAN_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                             ctypes.POINTER(ctypes.c_void_p))
SIGNATURES = {
    "gjGetErrorString": (ctypes.c_char_p, [_int]),
    "gjGetLastError": (ctypes.c_char_p, [_ptr]),
    "gjCommInitWorld": (_int, [_ptrs]),
    "gjCommDestroy": (_int, [_ptr]),
    "gjCommAbort": (_int, [_ptr]),
    "gjCommRank": (_int, [_ptr, _int_out]),
    "gjCommSize": (_int, [_ptr, _int_out]),
    "gjCommLocalRank": (_int, [_ptr, _int_out]),
    "gjCommLocalSize": (_int, [_ptr, _int_out]),
    "gjCommSetFusionThreshold": (_int, [_ptr, _size]),
    "gjCommGetFusionThreshold": (_int, [_ptr, _sizes]),
    "gjAllReduce": (_int, [_ptr, _ptr, _size, _int, _int, _ptr, _ptr]),
    "gjBroadcast": (_int, [_ptr, _size, _int, _int, _ptr, _ptr]),
    "gjGroupedAllReduce": (_int, [_ptrs, _ptrs, _sizes, _int, _int, _int, _ptr, _ptr]),
    "gjAllReduceScaled": (_int, [_ptr, _ptr, _size, _int, _int, _double, _double, _ptr, _ptr]),
    "gjGroupedAllReduceScaled": (_int, [_ptrs, _ptrs, _sizes, _int, _int, _int, _double, _double, _ptr, _ptr]),
    "gjAllGather": (_int, [_ptr, _ptr, _size, _int, _ptr, _ptr]),
    "gjAllGatherV": (_int, [_ptr, _ptr, _sizes, _int, _ptr, _ptr]),
    "gjReduceScatter": (_int, [_ptr, _ptr, _sizes, _int, _int, _double, _double, _ptr, _ptr]),
    "gjBarrier": (_int, [_ptr]),
    "gjAllToAllV": (_int, [_ptr, _sizes, _ptr, _sizes, _int, _ptr, _ptr]),
    "gjIallToAllV": (_int, [_ptr, _sizes, _ptr, _sizes, _int, _ptr, _ptr, _ptrs]),
    "gjAllReduceAdasum": (_int, [_ptr, _ptr, _size, _int, _ptr]),
    "gjIallReduceAdasum": (_int, [_ptr, _ptr, _size, _int, _ptr, _ptrs]),
    "gjCommSplit": (_int, [_ptr, _int, _int, _ptrs]),
    "gjCommSetCheck": (_int, [_ptr, _int]),
    "gjIallReduce": (_int, [_ptr, _ptr, _size, _int, _int, _double, _double, _ptr, _ptr, _ptrs]),
    "gjIgroupedAllReduce": (_int, [_ptrs, _ptrs, _sizes, _int, _int, _int, _double, _double, _ptr, _ptr, _ptrs]),
    "gjIbroadcast": (_int, [_ptr, _size, _int, _int, _ptr, _ptr, _ptrs]),
    "gjIallGather": (_int, [_ptr, _ptr, _size, _int, _ptr, _ptr, _ptrs]),
    "gjIallGatherV": (_int, [_ptr, _ptr, _sizes, _int, _ptr, _ptr, _ptrs]),
    "gjIreduceScatter": (_int, [_ptr, _ptr, _sizes, _int, _int, _double, _double, _ptr, _ptr, _ptrs]),
    "gjIbarrier": (_int, [_ptr, _ptrs]),
    "gjIcontrolMax": (_int, [_ptr, _size, _ptr, _ptrs]),
    "gjStopRequested": (_int, [_ptr, _int_out]),
    "gjIallGatherVLate": (_int, [_ptr, _size, _int, PLAN_TYPE, _ptr, _ptr, _ptrs]),
    "gjTest": (_int, [_ptr, _int_out]),
    "gjWait": (_int, [_ptr]),
    "gjBuildCapabilities": (_int, []),
    "gjNcclVersion": (_int, [_int_out]),
    "gjCudaDevices": (_int, [_int_out]),
    "gjDataTypeSize": (_size, [_int]),
    "gjFinalize": (_int, []),
}


def _declare(library, path):
    """Gives every function of SIGNATURES its C signature; ImportError naming the first missing
    one. The package ships with its library, so a missing symbol means a stale or foreign .so."""
    for name, (restype, argtypes) in SIGNATURES.items():
        try:
            fn = getattr(library, name)
        except AttributeError:
            raise ImportError(f"gj: the collectives library {path} has no symbol {name}: it is older "
                              f"than this gj package or not libgj_collectives. Rebuild and reinstall gj "
                              f"(cmake --build <build> --target gj_python, or the gj-mpirun package), or "
                              f"point {LIB_ENV} at the library built with this package.") from None
        fn.restype, fn.argtypes = restype, argtypes


_declare(lib, library_path)


class GjError(RuntimeError):
    """A gj library call failed. .call names the C function, .code is its gjResult_t."""

    def __init__(self, call, code, detail):
        super().__init__(f"{call} failed: {detail}")
        self.call = call
        self.code = code


def check(code, call, comm=None):
    """Raises GjError for a nonzero gjResult_t, with the library's error string and detail."""
    if code != SUCCESS:
        what = lib.gjGetErrorString(code).decode(errors="replace")
        detail = lib.gjGetLastError(comm).decode(errors="replace")
        raise GjError(call, code, f"{what}: {detail}" if detail else what)


def capabilities():
    """gjBuildCapabilities() bits (CAP_CUDA, CAP_NCCL)."""
    return lib.gjBuildCapabilities()


def nccl_version():
    """The version code of the NCCL the library loads for device buffers (its own search:
    $GJ_NCCL_LIBRARY first), 0 when none loads or the library was built without NCCL."""
    version = ctypes.c_int(0)
    return version.value if lib.gjNcclVersion(ctypes.byref(version)) == SUCCESS else 0


_device_problem = None


def device_problem():
    """Why this process's library cannot use CUDA device buffers although a driver is installed
    (its own CUDA runtime cannot use the driver: both versions and the fix), "" when it can or
    when there is no driver at all. Asked once (gjCudaDevices), then cached."""
    global _device_problem
    if _device_problem is None:
        count = ctypes.c_int(0)
        if lib.gjCudaDevices(ctypes.byref(count)) == CUDA_ERROR:
            _device_problem = lib.gjGetLastError(None).decode(errors="replace")
        else:
            _device_problem = ""
    return _device_problem
