"""Handles of nonblocking operations (Horovod's poll/synchronize) and the names of the
operations in flight: a handle maps to the library requests of one operation and the function
that returns its result. As in Horovod, a named operation's name is taken while the operation is
in flight: a second operation of that name is refused on its rank. The name is free again once
this rank has seen the first complete: synchronize, a poll that returned True, or a barrier
(which every operation issued before it on every rank has completed).

Why seen, not merely completed: Horovod negotiates every operation in its background cycle, so
a call is still in flight microseconds after it was issued, even when every other rank is
already waiting in it; gj starts it at once, and on such a rank it can complete before the
caller's next line. Freeing the name at completion would make "a second call of that name right
after the first" an error or a second collective depending on timing (Horovod's
test_horovod_broadcast_duplicate_name_error lost step that way on a loaded machine); freeing it
when the caller has seen the completion is the same answer every time.
"""

import itertools

from .._lib import GjError
from . import control as _control, state
from .process_sets import global_process_set
from .exceptions import HorovodInternalError


class _Handle:
    __slots__ = ("requests", "finish", "keep", "name", "seen_complete")

    def __init__(self, requests, finish, keep, name):
        self.requests, self.finish, self.keep, self.name = requests, finish, keep, name
        self.seen_complete = False  # poll returned True, or a barrier came after it completed


_handles = {}
_next_handle = itertools.count(1)
_names_in_flight = {}  # (process set id, name) -> handle


def _claim_name(name, process_set, what):
    """The key under which a named nonblocking operation is in flight (None without a name);
    ValueError when that name is in flight already in the process set."""
    if name is None:
        return None
    key = ((process_set or global_process_set).process_set_id, str(name))
    holder = _names_in_flight.get(key)
    h = _handles.get(holder)
    if h is not None and not h.seen_complete:
        raise ValueError(f"{what}: name={name!r} is the name of an operation still in flight in this "
                         f"process set (handle {holder}: neither synchronized nor polled complete); "
                         "synchronize it first or pick another name")
    return key


def _completed(handle):
    """Whether the operation of handle has ended (a failure ends it too: synchronize reports it)."""
    h = _handles.get(handle)
    return h is None or all(_control.completed(r) for r in h.requests)


def note_barrier():
    """After a barrier: the operations that have completed are seen complete (their names free)."""
    for handle, h in _handles.items():
        if not h.seen_complete and _completed(handle):
            h.seen_complete = True


def _new_handle(requests, finish, keep=(), name=None):
    h = next(_next_handle)
    _handles[h] = _Handle(list(requests), finish, keep, name)
    if name is not None:
        _names_in_flight[name] = h
    return h


def _pop(handle):
    h = _handles.pop(handle)
    if h.name is not None and _names_in_flight.get(h.name) == handle:
        del _names_in_flight[h.name]
    return h


def _drop_handles():
    _handles.clear()
    _names_in_flight.clear()


def _get(handle, what):
    try:
        return _handles[handle]
    except (KeyError, TypeError):
        raise ValueError(f"{what}: handle={handle!r} is not an outstanding gj handle "
                         "(already synchronized, or never returned by an *_async call)") from None


def poll(handle):
    """True when the operation of handle has completed (synchronize will not block)."""
    h = _get(handle, "poll")
    try:
        done = all(r.test() for r in h.requests)
    except GjError as e:
        raise HorovodInternalError.wrap(e) from None
    h.seen_complete = h.seen_complete or done
    return done


def synchronize(handle):
    """Waits for the operation of handle and returns its output (a tensor or a list)."""
    h = _get(handle, "synchronize")
    try:
        with state.waiting(f"synchronize(handle {handle}{'' if h.name is None else f', name {h.name[1]!r}'})"):
            for r in h.requests:
                r.wait()
    except GjError as e:
        _pop(handle)
        raise HorovodInternalError.wrap(e) from None
    _pop(handle)
    return h.finish()
