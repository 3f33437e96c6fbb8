"""Handles of nonblocking operations (Horovod's poll/synchronize) and the names of the
operations in flight: a handle maps to the library requests of one operation and the function
that returns its result. As in Horovod, a named operation's name is taken until the operation
completes: a second operation of that name while the first runs is refused on its rank, and
the name is free again once the first has completed, synchronized or not.
"""

import itertools

from .._lib import GjError
from . import control as _control, state
from .process_sets import global_process_set
from .exceptions import HorovodInternalError


class _Handle:
    __slots__ = ("requests", "finish", "keep", "name")

    def __init__(self, requests, finish, keep, name):
        self.requests, self.finish, self.keep, self.name = requests, finish, keep, name


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
    if holder is not None and not _completed(holder):
        raise ValueError(f"{what}: name={name!r} is the name of an operation still in flight in this "
                         f"process set (handle {holder}); synchronize it first or pick another name")
    return key


def _completed(handle):
    """Whether the operation of handle has ended (a failure ends it too: synchronize reports it)."""
    h = _handles.get(handle)
    return h is None or all(_control.completed(r) for r in h.requests)


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
        return all(r.test() for r in h.requests)
    except GjError as e:
        raise HorovodInternalError.wrap(e) from None


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
