"""barrier() and a joined rank's part in it, on the library's control channel (gjIcontrolMax):
small MAX allreduces ordered among themselves, not with the set's collectives. So, as in
Horovod, a barrier does not wait for a nonblocking call only some ranks have issued: a rank may
enter it with an allreduce_async its peers issue only after the barrier. What it does wait for
is what Horovod's does: this rank's nonblocking calls that every rank of the set issued before
it (Horovod runs those before the barrier, every rank having asked for them).

Each control record has one int64 slot per rank of the set; a rank fills its own and leaves
NEUTRAL elsewhere, so the MAX is every rank's slot: for a rank inside barrier() the number of
nonblocking calls it has issued on the set (note_call), JOINED for one inside join(). The
smallest count is how many every rank issued; the barrier waits for those of its own. A rank
inside join() keeps one record posted (Presence) from the moment it joins, so the other ranks'
barriers complete with it; the record in which every slot is JOINED is the one every rank
posts on joining, so it marks the end of join() on the channel (the same record on every rank)
and nothing stays posted after it."""

import collections
import ctypes
import threading
import weakref

from .._lib import GjError
from . import state
from .exceptions import translated

NEUTRAL = -(2 ** 63)
JOINED = -1
KEPT = 64  # calls remembered before completed ones are forgotten


class _Calls:
    """A communicator's nonblocking calls (any frontend): how many, and for call k the library request
    issued last before it (the queue runs in issue order, so its completion is that of every
    earlier call). Completed entries are dropped."""

    __slots__ = ("count", "marks")

    def __init__(self):
        self.count = 0
        self.marks = collections.deque()  # (k, Request or None)


_calls = weakref.WeakKeyDictionary()


def _calls_of(comm):
    calls = _calls.get(comm)
    if calls is None:
        calls = _calls[comm] = _Calls()
    return calls


def completed(req):
    """Whether a request (library Request or agreement record) has ended; a failure ends it too,
    left for its owner's synchronize to report."""
    if req is None:
        return True
    try:
        return req.test()
    except GjError:
        return True


def note_call(comm):
    """Before the record of each nonblocking call on comm (_agreement.Agreement)."""
    calls = _calls_of(comm)
    calls.marks.append((calls.count, comm.last_request))
    calls.count += 1
    if len(calls.marks) > KEPT:
        while calls.marks and completed(calls.marks[0][1]):
            calls.marks.popleft()


def _wait_for_first(comm, n):
    """Waits until this rank's first n nonblocking calls on comm have completed (their failures
    are left to their owners' synchronize)."""
    calls = _calls_of(comm)
    if n >= calls.count:
        req = comm.last_request
    else:
        req = next((r for k, r in calls.marks if k == n), None)
    if req is not None:
        try:
            req.wait()
        except GjError:
            pass


def _record(comm, slot):
    vec = (ctypes.c_int64 * comm.size)(*([NEUTRAL] * comm.size))
    vec[comm.rank] = slot
    return vec


def barrier(comm):
    """Blocks until every rank of comm is in barrier() or join(), then until this rank's
    nonblocking calls that every rank issued before it have completed; HorovodInternalError
    when some rank does not come within GJ_COLL_TIMEOUT_MS (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS)."""
    vec = _record(comm, _calls_of(comm).count)
    with state.waiting("barrier"):
        translated(lambda: comm.control_max(ctypes.addressof(vec), comm.size).wait())
        counts = [x for x in vec if x >= 0]
        if counts:
            _wait_for_first(comm, min(counts))


class Presence:
    """A joined rank's standing control record: a thread polls it (MPI progresses it only while
    somebody polls), reposts it after each barrier it completes, and ends at the record in which
    every rank is joined. wait() returns then, or raises what the polling raised."""

    POLL_SECONDS = 0.0005  # a barrier with a joined rank waits up to this for it

    def __init__(self, comm):
        self._comm = comm
        self._error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gj join: barrier presence", daemon=True)
        self._thread.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                vec = _record(self._comm, JOINED)
                req = translated(self._comm.control_max, ctypes.addressof(vec), self._comm.size)
                while not translated(req.test):
                    if self._stop.wait(self.POLL_SECONDS):
                        return  # join() failed: the request stays posted, as a failed collective does
                if all(x == JOINED for x in vec):
                    return
        except Exception as e:  # noqa: BLE001 (handed to the joining thread)
            self._error = e

    def wait(self):
        self._thread.join()
        if self._error is not None:
            raise self._error

    def abandon(self):
        self._stop.set()
