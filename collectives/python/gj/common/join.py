"""join()'s part that is the same for every frontend (Horovod's uneven inputs): the joined rank
waits in the agreement record each of the other ranks' calls sends first (agreement.py) and
takes part in that call through the frontend's `mirror(comm, outcome)`, which issues the same
library call on zero buffers, until the record in which every rank is inside join(). Meanwhile
the other ranks' barriers complete with this rank (control.Presence)."""

from . import agreement
from . import control as _control, state, timeline as _timeline
from .exceptions import translated


def until_all_joined(comm, mirror):
    """Returns the communicator rank that joined last (the highest of those that joined in the
    final round), the same on every rank."""
    presence = _control.Presence(comm)
    try:
        slot = agreement.JOINING
        n = agreement.HEADER + comm.size
        while True:
            vec = agreement._record(comm, None, 0, False, None, slot)
            with state.waiting("join"):
                with _timeline.negotiation():
                    translated(agreement._issue, comm, vec, n, False, False)
            out = agreement.Outcome(vec, comm.size)
            slot = agreement.JOINED
            if out.kind == 0:  # every rank is inside join()
                last = max(out.joining())
                break
            with state.waiting("join"):
                translated(mirror, comm, out)
        presence.wait()
    except BaseException:
        presence.abandon()
        raise
    return last
