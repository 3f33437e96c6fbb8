"""allgather_async of a host tensor without waiting for the other ranks. Horovod's returns at
once, but the output's size is the sum of every rank's rows, known only when the call's record
(which carries them, gj/common/agreement.py) has completed. So both are queued at the call: the record,
then the library's late allgather (gjIallGatherVLate), whose receive side the progress thread
asks for when the request runs - the record, queued before it, is complete then - and plan()
allocates the output from the record's rows. A disagreeing record (or one with joined ranks,
which a joined rank reads as a blocking call's and so issues nothing) makes every rank's plan
skip the data request, and synchronize raises the record's HorovodInternalError; the set stays
usable.

CUDA tensors keep the blocking record (mpi_ops): their data request is enqueued on the caller's
stream from the calling thread, which a plan on the progress thread could not do.
"""

import itertools

import torch

from .. import _lib
from ..common.agreement import Agreement
from ._tensor import ptr
from ..common.exceptions import HorovodInternalError, translated

_pending = {}  # plan key -> LateAllgather, until its plan has run
_keys = itertools.count(1)


def _run_plan(arg, recvcounts, recvbuff):
    call = _pending.pop(arg, None)
    return 1 if call is None else call.plan(recvcounts, recvbuff)


_PLAN = _lib.PLAN_TYPE(_run_plan)  # lives as long as the module: the library may call it any time


class LateAllgather:
    """One allgather_async of a host tensor: requests() for its handle, result() once complete."""

    def __init__(self, comm, what, fields, tensor):
        self._tensor = tensor
        self._row_bytes = int(torch.Size(tensor.shape[1:]).numel()) * tensor.element_size()
        self.output = None
        self._record = translated(Agreement, comm, what, fields, rows=tensor.shape[0])
        key = next(_keys)
        _pending[key] = self
        comm.set_check(True)
        try:
            self._data = translated(comm.allgatherv_late, ptr(tensor), tensor.shape[0] * self._row_bytes,
                                    _lib.UINT8, _PLAN, key)
        except BaseException:
            _pending.pop(key, None)
            raise

    def requests(self):
        """The record first: its disagreement is the error synchronize reports."""
        return [self._record, self._data]

    def result(self):
        if self.output is None:  # the plan failed here though the record agreed (out of memory)
            raise HorovodInternalError.disagreement(
                "allgather_async", f"this rank could not allocate the output of {sum(self._record.slots())} rows; "
                "the other ranks wait for it")
        return self.output

    def plan(self, recvcounts, recvbuff):
        """On the progress thread (the GIL held): every rank's byte count and the output."""
        try:
            self._record.check_complete()  # queued before this request: complete
            rows = self._record.slots()
            t = self._tensor
            out = t.new_empty((sum(rows),) + tuple(t.shape[1:]))
            for r, n in enumerate(rows):
                recvcounts[r] = n * self._row_bytes
            recvbuff[0] = out.data_ptr() if out.numel() else None
            self.output = out
            return 0
        except BaseException:  # noqa: BLE001 (the record's wait raises it again at synchronize)
            return 1  # skip
