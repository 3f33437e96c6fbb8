"""The job's stop request, agreed on by every rank (gjStopRequested; docs/agent.md "Restarts and
stops"). gj-mpirun's master asks every rank to stop when its pod (or a worker pod) gets SIGTERM;
each rank's wrapper passes that on at its own moment, so ranks learn of it at different steps.
stop_requested(comm) runs one 8-byte MAX allreduce on the control channel: False on every rank
until some rank has been asked, then True on every rank at the same call, so a training loop
that checks it once per step stops at the same step everywhere and rank 0 can save that step.

Collective: every rank of the set calls it at the same point (not while a rank is inside
join()). Without gj-mpirun's wrapper it is always False.
"""

import ctypes

from .._lib import check, lib
from . import state
from .exceptions import translated
from .process_sets import comm_of

__all__ = ["stop_requested", "StopRequested"]


class StopRequested(Exception):
    """Raised by an elastic State.commit() once the job was asked to stop and the state was
    saved; elastic.run() ends the training function on it and returns None."""


def stop_requested(process_set, what="stop_requested"):
    """True on every rank of process_set once the job was asked to stop (see the module)."""
    comm = comm_of(process_set, what)
    out = ctypes.c_int()
    with state.waiting(what):
        translated(lambda: check(lib.gjStopRequested(comm._live_handle(), ctypes.byref(out)), "gjStopRequested",
                                 comm.handle))
    return bool(out.value)
