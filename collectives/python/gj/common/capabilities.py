"""What this gj can do, with Horovod's names, values and types (*_built(), *_enabled())."""

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
    at run time, so this is the version of the libnccl.so.2 the library itself loads (its search:
    $GJ_NCCL_LIBRARY, then the loader's; gjNcclVersion), 0 when it was built without NCCL or none
    loads."""
    return _lib.nccl_version()


def cuda_built():
    return bool(_lib.capabilities() & _lib.CAP_CUDA)


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False
