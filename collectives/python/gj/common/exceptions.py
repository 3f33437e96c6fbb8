"""Exceptions of gj's frontends, named as Horovod names them."""

from .._lib import INVALID_USAGE, GjError


class HorovodInternalError(GjError):
    """A collective failed across ranks: the ranks disagree on a call (shapes, dtypes, roots,
    ops), a peer died or stalled, MPI or NCCL reported an error. A RuntimeError, as Horovod's;
    .call names the operation (or the C function), .code is the gjResult_t. After a
    disagreement the process set stays usable; after a failure inside the library its
    communicator refuses further work and, as in Horovod, the job should exit (or restart)."""

    @classmethod
    def wrap(cls, error):
        if isinstance(error, cls):
            return error
        return cls(error.call, error.code, str(error).split(" failed: ", 1)[-1])

    @classmethod
    def disagreement(cls, what, detail):
        return cls(what, INVALID_USAGE, detail)


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod's elastic-mode signal; gj has no elastic mode, so it is never raised."""


def translated(fn, *args, **kwargs):
    """fn(*args, **kwargs), a library failure (GjError) raised as HorovodInternalError."""
    try:
        return fn(*args, **kwargs)
    except GjError as e:
        raise HorovodInternalError.wrap(e) from None
