"""The process's gj state, one place for it: the world communicator, (cross_rank, cross_size),
the stall watch, and which frontend the user imported (for messages). Every other module of
gj.common reads it from here; only basics.init()/shutdown() write it."""

import contextlib

from . import stall

world = None                     # _core.Comm over MPI_COMM_WORLD once init() ran
cross = (0, 1)                   # (cross_rank, cross_size)
stall_watch = stall.Watch(None, -1)  # replaced at init (HOROVOD_STALL_CHECK_TIME_SECONDS)
frontend = "gj"                  # "gj.torch" / "gj.tensorflow": the package whose init() to name
notes = {}                       # what the frontend says of itself in the timeline's header (gj.tensorflow: its path)


def require_init(what):
    """ValueError (Horovod's type) when init() has not run."""
    if world is None:
        raise ValueError(f"{what}: {frontend} is not initialized; call {frontend}.init() first")


def world_of(what):
    require_init(what)
    return world


@contextlib.contextmanager
def waiting(what):
    """Brackets a wait of this rank for its peers (the stall warning's watch)."""
    token = stall_watch.enter(what)
    try:
        yield
    finally:
        stall_watch.leave(token)
