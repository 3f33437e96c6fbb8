"""Exceptions of gj.torch, named as Horovod names them."""

from .._lib import GjError


class HorovodInternalError(GjError):
    """A collective failed inside the library (a peer died, MPI or NCCL reported an error, a
    mismatch detected across ranks). The communicator refuses further work; as in Horovod, the
    job should exit (or, with an elastic launcher, restart)."""

    @classmethod
    def wrap(cls, error):
        e = cls(error.call, error.code, str(error).split(" failed: ", 1)[-1])
        return e


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod's elastic-mode signal; gj has no elastic mode, so it is never raised."""
