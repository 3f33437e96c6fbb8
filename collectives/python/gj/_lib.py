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
# gjDataType_t
FLOAT32, FLOAT64, FLOAT16, BFLOAT16, INT32, INT64, UINT8, INT8, INT16, BOOL, BYTE = range(11)
NUM_REDUCIBLE = 7
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8",
               "int8", "int16", "bool", "byte")
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

_p = ctypes.c_void_p
_i = ctypes.c_int
_sz = ctypes.c_size_t
_d = ctypes.c_double
_pp = ctypes.POINTER(ctypes.c_void_p)
_psz = ctypes.POINTER(ctypes.c_size_t)
_pi = ctypes.POINTER(ctypes.c_int)
SIGNATURES = {
    "gjGetErrorString": (ctypes.c_char_p, [_i]),
    "gjGetLastError": (ctypes.c_char_p, [_p]),
    "gjCommInitWorld": (_i, [_pp]),
    "gjCommDestroy": (_i, [_p]),
    "gjCommAbort": (_i, [_p]),
    "gjCommRank": (_i, [_p, _pi]),
    "gjCommSize": (_i, [_p, _pi]),
    "gjCommLocalRank": (_i, [_p, _pi]),
    "gjCommLocalSize": (_i, [_p, _pi]),
    "gjCommBackend": (_i, [_p, _i, _pi]),
    "gjCommSetFusionThreshold": (_i, [_p, _sz]),
    "gjCommGetFusionThreshold": (_i, [_p, _psz]),
    "gjAllReduce": (_i, [_p, _p, _sz, _i, _i, _p, _p]),
    "gjBroadcast": (_i, [_p, _sz, _i, _i, _p, _p]),
    "gjGroupedAllReduce": (_i, [_pp, _pp, _psz, _i, _i, _i, _p, _p]),
    "gjAllReduceScaled": (_i, [_p, _p, _sz, _i, _i, _d, _d, _p, _p]),
    "gjGroupedAllReduceScaled": (_i, [_pp, _pp, _psz, _i, _i, _i, _d, _d, _p, _p]),
    "gjAllGather": (_i, [_p, _p, _sz, _i, _p, _p]),
    "gjAllGatherV": (_i, [_p, _p, _psz, _i, _p, _p]),
    "gjReduceScatter": (_i, [_p, _p, _psz, _i, _i, _d, _d, _p, _p]),
    "gjBarrier": (_i, [_p]),
    "gjAllToAllV": (_i, [_p, _psz, _p, _psz, _i, _p, _p]),
    "gjIallToAllV": (_i, [_p, _psz, _p, _psz, _i, _p, _p, _pp]),
    "gjAllReduceAdasum": (_i, [_p, _p, _sz, _i, _p]),
    "gjIallReduceAdasum": (_i, [_p, _p, _sz, _i, _p, _pp]),
    "gjCommSplit": (_i, [_p, _i, _i, _pp]),
    "gjCommSetCheck": (_i, [_p, _i]),
    "gjIallReduce": (_i, [_p, _p, _sz, _i, _i, _d, _d, _p, _p, _pp]),
    "gjIgroupedAllReduce": (_i, [_pp, _pp, _psz, _i, _i, _i, _d, _d, _p, _p, _pp]),
    "gjIbroadcast": (_i, [_p, _sz, _i, _i, _p, _p, _pp]),
    "gjIallGather": (_i, [_p, _p, _sz, _i, _p, _p, _pp]),
    "gjIallGatherV": (_i, [_p, _p, _psz, _i, _p, _p, _pp]),
    "gjIreduceScatter": (_i, [_p, _p, _psz, _i, _i, _d, _d, _p, _p, _pp]),
    "gjIbarrier": (_i, [_p, _pp]),
    "gjTest": (_i, [_p, _pi]),
    "gjWait": (_i, [_p]),
    "gjBuildCapabilities": (_i, []),
    "gjDataTypeSize": (_sz, [_i]),
    "gjFinalize": (_i, []),
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
