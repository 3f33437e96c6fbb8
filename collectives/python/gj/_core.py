"""The communicator and request objects over raw buffers: pointers, element counts, gj dtype
codes. Both frontends (numpy in gj, torch in gj.torch) describe their arrays this way.
Every call maps to one function of gj/collectives.h (_lib checked at import that all exist).
"""

import ctypes

from . import _lib
from ._lib import GjError, check, lib

def _pointer_array(values):
    return (ctypes.c_void_p * len(values))(*values)


def _size_array(values):
    return (ctypes.c_size_t * len(values))(*values)


class Request:
    """One nonblocking operation. test() -> bool, wait(); both raise GjError for a failed one.
    A completed request stays completed (the library's handle is freed at completion)."""

    __slots__ = ("_handle", "_comm", "_call", "_error")

    def __init__(self, handle, comm, call):
        self._handle = handle  # None: completed already (blocking, or after test/wait)
        self._comm = comm
        self._call = call
        self._error = None

    def test(self):
        if self._handle is None:
            self._raise_stored()
            return True
        done = ctypes.c_int()
        code = lib.gjTest(self._handle, ctypes.byref(done))
        if code != _lib.SUCCESS or done.value:
            self._handle = None
            self._store(code)
            self._raise_stored()
            return True
        return False

    def wait(self):
        if self._handle is not None:
            handle, self._handle = self._handle, None
            self._store(lib.gjWait(handle))
        self._raise_stored()

    def _store(self, code):
        if code != _lib.SUCCESS:
            try:
                check(code, self._call, self._comm)
            except GjError as e:
                self._error = e

    def _raise_stored(self):
        if self._error is not None:
            raise self._error


class Comm:
    """A gj communicator (gjComm_t). Collective to create, split and destroy."""

    def __init__(self, handle):
        self.handle = handle
        self.rank = self._query(lib.gjCommRank, "gjCommRank")
        self.size = self._query(lib.gjCommSize, "gjCommSize")
        self.local_rank = self._query(lib.gjCommLocalRank, "gjCommLocalRank")
        self.local_size = self._query(lib.gjCommLocalSize, "gjCommLocalSize")
        self._check_on = None  # the library's initial scope (GJ_COLL_CHECK; grouped calls checked)
        self.last_request = None  # the Request of the latest nonblocking collective (the queue is FIFO)

    @classmethod
    def world(cls):
        handle = ctypes.c_void_p()
        check(lib.gjCommInitWorld(ctypes.byref(handle)), "gjCommInitWorld")
        return cls(handle)

    def _query(self, fn, call):
        out = ctypes.c_int()
        check(fn(self.handle, ctypes.byref(out)), call, self.handle)
        return out.value

    def _live_handle(self):
        if self.handle is None:
            raise ValueError("the communicator is closed")
        return self.handle

    def _run(self, call, *args):
        check(getattr(lib, call)(*args), call, self.handle)

    def _start(self, call, *args):
        self.last_request = self._issue(call, *args)
        return self.last_request

    def _issue(self, call, *args, name=None):
        req = ctypes.c_void_p()
        check(getattr(lib, call)(*args, ctypes.byref(req)), call, self.handle)
        return Request(req, self.handle, name or call.replace("gjI", "gj", 1))

    # ---- settings ------------------------------------------------------------------------
    def set_check(self, enabled):
        """Turns the library's cross-rank agreement check on or off for every later call, the
        grouped allreduce's own check included (every rank at the same point of its call
        sequence)."""
        if bool(enabled) != self._check_on:
            self._run("gjCommSetCheck", self._live_handle(), 1 if enabled else 0)
            self._check_on = bool(enabled)

    @property
    def fusion_threshold(self):
        out = ctypes.c_size_t()
        check(lib.gjCommGetFusionThreshold(self._live_handle(), ctypes.byref(out)), "gjCommGetFusionThreshold",
              self.handle)
        return out.value

    @fusion_threshold.setter
    def fusion_threshold(self, nbytes):
        self._run("gjCommSetFusionThreshold", self._live_handle(), nbytes)

    # ---- collectives: nonblocking=True returns a Request, otherwise None --------------------
    def allreduce(self, send, recv, count, dtype, op, prescale=1.0, postscale=1.0, stream=None,
                  nonblocking=False):
        if nonblocking:
            return self._start("gjIallReduce", send, recv, count, dtype, op, prescale, postscale,
                               self._live_handle(), stream)
        if prescale == 1.0 and postscale == 1.0:
            self._run("gjAllReduce", send, recv, count, dtype, op, self._live_handle(), stream)
        else:
            self._run("gjAllReduceScaled", send, recv, count, dtype, op, prescale, postscale,
                      self._live_handle(), stream)

    def grouped_allreduce(self, sends, recvs, counts, dtype, op, prescale=1.0, postscale=1.0,
                          stream=None, nonblocking=False):
        n = len(counts)
        send_ptrs, recv_ptrs, c_counts = _pointer_array(sends), _pointer_array(recvs), _size_array(counts)
        if nonblocking:
            return self._start("gjIgroupedAllReduce", send_ptrs, recv_ptrs, c_counts, n, dtype, op, prescale,
                               postscale, self._live_handle(), stream)
        if prescale == 1.0 and postscale == 1.0:
            self._run("gjGroupedAllReduce", send_ptrs, recv_ptrs, c_counts, n, dtype, op, self._live_handle(),
                      stream)
        else:
            self._run("gjGroupedAllReduceScaled", send_ptrs, recv_ptrs, c_counts, n, dtype, op, prescale,
                      postscale, self._live_handle(), stream)

    def broadcast(self, buf, count, dtype, root, stream=None, nonblocking=False):
        if nonblocking:
            return self._start("gjIbroadcast", buf, count, dtype, root, self._live_handle(), stream)
        self._run("gjBroadcast", buf, count, dtype, root, self._live_handle(), stream)

    def allgatherv(self, send, recv, counts, dtype, stream=None, nonblocking=False):
        """counts[r] elements from rank r, concatenated in rank order into recv."""
        c_counts = _size_array(counts)
        if nonblocking:
            return self._start("gjIallGatherV", send, recv, c_counts, dtype, self._live_handle(), stream)
        self._run("gjAllGatherV", send, recv, c_counts, dtype, self._live_handle(), stream)

    def reducescatter(self, send, recv, counts, dtype, op, prescale=1.0, postscale=1.0, stream=None,
                      nonblocking=False):
        c_counts = _size_array(counts)
        if nonblocking:
            return self._start("gjIreduceScatter", send, recv, c_counts, dtype, op, prescale, postscale,
                               self._live_handle(), stream)
        self._run("gjReduceScatter", send, recv, c_counts, dtype, op, prescale, postscale, self._live_handle(),
                  stream)

    def alltoallv(self, send, sendcounts, recv, recvcounts, dtype, stream=None, nonblocking=False):
        """sendcounts[q] elements of send to rank q; recvcounts[q] from rank q into recv."""
        s, r = _size_array(sendcounts), _size_array(recvcounts)
        if nonblocking:
            return self._start("gjIallToAllV", send, s, recv, r, dtype, self._live_handle(), stream)
        self._run("gjAllToAllV", send, s, recv, r, dtype, self._live_handle(), stream)

    def adasum(self, send, recv, count, dtype, nonblocking=False):
        """recv = the Adasum of every rank's send (host memory; f32, f64, f16, bf16)."""
        if nonblocking:
            return self._start("gjIallReduceAdasum", send, recv, count, dtype, self._live_handle())
        self._run("gjAllReduceAdasum", send, recv, count, dtype, self._live_handle())

    def barrier(self, nonblocking=False):
        if nonblocking:
            return self._start("gjIbarrier", self._live_handle())
        self._run("gjBarrier", self._live_handle())

    def control_max(self, values, count):
        """The control channel (gjIcontrolMax): a Request for the MAX allreduce of `count` int64
        at address `values`, ordered with this communicator's other control calls only; the
        result is in `values` once test() or wait() reports completion."""
        return self._issue("gjIcontrolMax", values, count, self._live_handle(), name="gjIcontrolMax")

    def allgatherv_late(self, send, count, dtype, plan, arg):
        """gjIallGatherVLate: a Request; plan is a gjRecvPlan_t (PLAN_TYPE) the progress thread calls."""
        return self._start("gjIallGatherVLate", send, count, dtype, plan, arg, self._live_handle())

    def split(self, color, key):
        """Collective over this communicator: a new Comm of the ranks with the same color >= 0,
        ordered by key; None where color < 0."""
        out = ctypes.c_void_p()
        self._run("gjCommSplit", self._live_handle(), color, key, ctypes.byref(out))
        return Comm(out) if out.value else None

    def destroy(self):
        if self.handle is not None:
            handle, self.handle = self.handle, None
            check(lib.gjCommDestroy(handle), "gjCommDestroy")

    def abort(self):
        if self.handle is not None:
            handle, self.handle = self.handle, None
            lib.gjCommAbort(handle)


def finalize():
    check(lib.gjFinalize(), "gjFinalize")
