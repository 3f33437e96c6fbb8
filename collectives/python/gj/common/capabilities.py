"""What this gj can do, with Horovod's names, values and types (*_built(), *_enabled())."""

import ctypes
import os

from .. import _lib


def mpi_built():
    return True


def mpi_enabled():
    return True


def mpi_threads_supported():
    return True


def gloo_built():
    return False


def gloo_enabled():
    return False


def nccl_built():
    """As Horovod: the NCCL version code (e.g. 22805 for 2.28.5), 0 without NCCL. gj loads NCCL
    at run time, so this is the version of the libnccl.so.2 it would load ($GJ_NCCL_LIBRARY, or
    the loader's search), 0 when the library was built without NCCL or none loads."""
    if not _lib.capabilities() & _lib.CAP_NCCL:
        return 0
    return _nccl_version()


def _nccl_version():
    try:
        nccl = ctypes.CDLL(os.environ.get("GJ_NCCL_LIBRARY") or "libnccl.so.2")
        version = ctypes.c_int(0)
        if nccl.ncclGetVersion(ctypes.byref(version)) != 0:
            return 0
        return version.value
    except (OSError, AttributeError):
        return 0


def cuda_built():
    return bool(_lib.capabilities() & _lib.CAP_CUDA)


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False
