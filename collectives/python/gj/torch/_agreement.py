"""The cross-rank agreement protocol of gj.torch's collectives (gj has no negotiation by name:
every rank issues a process set's collectives in the same order, and this checks it).

A call's signature (operation, dtype, shape, op, root, factors: `fields`) is hashed to h < 2^62;
one allreduce(MAX) of (h, -h) over the set equals (h, -h) on every rank exactly when every rank
passed the same signature, so a mismatch raises HorovodInternalError on every rank, with this
rank's values, and leaves the set usable. A blocking call agrees before it runs (agree); a
nonblocking one issues the agreement as a request of its own (Agreement) next to the library's
per-request check (count, dtype, op, root), which catches what the shape hides.
"""

import ctypes
import hashlib

from .. import _lib
from . import _basics
from . import timeline as _timeline
from .exceptions import HorovodInternalError, translated


def _digest(fields):
    d = hashlib.blake2b(repr(fields).encode(), digest_size=8).digest()
    return int.from_bytes(d, "little") >> 2  # < 2**62: h and -h are both int64


def agree(comm, what, fields, rows=None):
    """Blocking: every rank of comm passed equal fields, or HorovodInternalError on every rank. With rows
    (this rank's count), returns every rank's rows in rank order (allgather's first dims)."""
    comm.set_check(False)
    h = _digest(fields)
    vec = (ctypes.c_int64 * (2 + comm.size))()
    vec[0], vec[1] = h, -h
    vec[2 + comm.rank] = rows if rows is not None else 0
    with _basics.waiting(what):
        with _timeline.negotiation():
            translated(comm.allreduce, ctypes.addressof(vec), ctypes.addressof(vec), 2 + comm.size, _lib.INT64,
                       _lib.MAX)
    if vec[0] != h or vec[1] != -h:
        raise HorovodInternalError.disagreement(what, _disagree(what, comm.rank, fields))
    return [vec[2 + r] for r in range(comm.size)]


class Agreement:
    """A nonblocking agree(): MAX of (h, -h) over the set, completed like a Request; test() and
    wait() raise the agree() HorovodInternalError on every rank when any rank's fields differed."""

    __slots__ = ("_req", "_vec", "_h", "_what", "_fields", "_rank")

    def __init__(self, comm, what, fields):
        self._h, self._what, self._fields, self._rank = _digest(fields), what, fields, comm.rank
        self._vec = (ctypes.c_int64 * 2)(self._h, -self._h)
        addr = ctypes.addressof(self._vec)
        self._req = comm.allreduce(addr, addr, 2, _lib.INT64, _lib.MAX, nonblocking=True)

    def test(self):
        if not self._req.test():
            return False
        self._verify()
        return True

    def wait(self):
        self._req.wait()
        self._verify()

    def _verify(self):
        if self._vec[0] != self._h or self._vec[1] != -self._h:
            raise HorovodInternalError.disagreement(self._what, _disagree(self._what, self._rank, self._fields))


def _disagree(what, rank, fields):
    return (f"the ranks of the process set disagree on the call's arguments; this rank (rank "
            f"{rank} of the set) passed {_describe(fields)}. Every rank must issue the same collectives "
            "in the same order with matching tensors.")


def _describe(fields):
    return ", ".join(f"{k}={v}" for k, v in fields)


def start(comm, what, fields, run, asynchronous):
    """Issues run(nonblocking) -> Request(s); the requests to complete. A blocking call agrees on
    fields first; a nonblocking one issues the agreement as a request of its own, first (the
    data request's list comes first: waiting for it first keeps its buffers' lifetime simple)."""
    if asynchronous:
        comm.set_check(True)
        with _timeline.negotiation():
            agreement = translated(Agreement, comm, what, fields)
        token = _timeline.issued()
        reqs = translated(run, True)
        return (reqs if isinstance(reqs, list) else [reqs]) + [agreement] + _timeline.completion(token)
    agree(comm, what, fields)
    token = _timeline.issued()
    translated(run, False)
    _timeline.done(token)
    return []
