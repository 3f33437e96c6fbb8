"""The cross-rank agreement protocol of gj's collectives (every frontend) (gj has no negotiation by name:
every rank issues a process set's collectives in the same order, and this checks it).

A call's signature (operation, dtype, shape, op, root, factors, blocking or not: `fields`) is
hashed to h < 2^62; one allreduce(MAX) of a fixed-size int64 record over the set carries (h, -h),
which equals (h, -h) on every rank exactly when every rank passed the same signature, so a
mismatch raises HorovodInternalError on every rank, with this rank's values, and leaves the set
usable. The same record tells a rank that called join() (the frontend's join) what to mirror, and every
other rank which ranks have joined:

    [0] h  [1] -h                     the signature's hash
    [2] kind  [3] nonblocking          what the call is (KINDS) and how it was issued
    [4] dtype  [5] op  [6] prescale  [7] postscale  [8] root  [9] device
    [10] layout length, [11, 11 + INLINE) the layout: the element counts of the call's data
         request(s) (Wire.layout); a longer layout travels in a record of its own (_Layout)
    [HEADER + r] rank r's slot: its row count (allgather) or 0; JOINED / JOINING for a rank
         inside join()

A rank fills only its own slot; a joined rank contributes NEUTRAL (INT64_MIN) everywhere else,
so the MAX is the other ranks' record. The record has one size per set and one wire form for
blocking and nonblocking calls alike (one plain allreduce with the library's check off, never
fused: _issue), so a joined rank, which cannot
know which call comes next, waits in the same collective as everyone. A blocking call agrees
before it runs (agree); a nonblocking one issues the agreement as a request of its own
(Agreement) next to the data request, which the library's own per-request check covers (count,
dtype, op, root: what the shape hides).
"""

import ctypes
import hashlib
import struct

from .. import _lib
from . import control as _control, state
from . import timeline as _timeline
from .exceptions import HorovodInternalError, translated

NEUTRAL = -(2 ** 63)  # the identity of MAX over int64: a joined rank's contribution
JOINED, JOINING = -1, -2  # a joined rank's slot: joined earlier / joining with this record
INLINE = 8
H, NEG_H, KIND, NONBLOCKING, DTYPE, OP, PRE, POST, ROOT, DEVICE, LAYOUT_LEN = range(11)
LAYOUT = 11
HEADER = LAYOUT + INLINE

# The kinds of call a record announces (0: none, a record of ranks that all joined).
# (barrier() is not among them: it runs on the control channel, control.py.)
ALLREDUCE, GROUPED, BROADCAST, ALLGATHER, REDUCESCATTER, ALLTOALL, ADASUM, OPTIMIZER_STEP, OTHER = range(1, 10)
KINDS = {"allreduce": ALLREDUCE, "grouped_allreduce": GROUPED, "broadcast": BROADCAST, "allgather": ALLGATHER,
         "reducescatter": REDUCESCATTER, "alltoall": ALLTOALL, "optimizer_step": OPTIMIZER_STEP}
KIND_NAMES = {ALLREDUCE: "allreduce", GROUPED: "grouped_allreduce", BROADCAST: "broadcast", ALLGATHER: "allgather",
              REDUCESCATTER: "reducescatter", ALLTOALL: "alltoall", ADASUM: "allreduce(op=Adasum)",
              OPTIMIZER_STEP: "DistributedOptimizer step", OTHER: "this collective"}
# str(a framework's dtype) -> the library's dtype code: each frontend adds its dtypes (what a
# joined rank needs to mirror an Adasum call from its fields).
DTYPE_CODES = {}
# What runs while some rank is joined (its zeros in every reduction, as in Horovod; barriers too,
# on the control channel).
WITH_JOINED = frozenset((ALLREDUCE, GROUPED, OPTIMIZER_STEP))


class Wire:
    """What a joined rank needs to issue the call's data request(s) itself: the library call's
    dtype, op, factors, root (a rank of the set), device ("cpu"/"cuda") and layout, the flat
    int64 list of its element counts: allreduce [count]; grouped allreduce, per library call (one
    per dtype, in issue order) [dtype, n, count_1 .. count_n]; broadcast [bytes]; reducescatter
    [rows, elements per row]; adasum [count]; a DistributedOptimizer step [its index]."""

    __slots__ = ("dtype", "op", "pre", "post", "root", "device", "layout")

    def __init__(self, dtype=0, op=0, pre=1.0, post=1.0, root=0, device="cpu", layout=()):
        self.dtype, self.op, self.pre, self.post, self.root = dtype, op, pre, post, root
        self.device, self.layout = device, [int(x) for x in layout]


_NO_WIRE = Wire()


def _bits(x):
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


_ONE = _bits(1.0)


def _float(bits):
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def _digest(fields):
    d = hashlib.blake2b(repr(fields).encode(), digest_size=8).digest()
    return int.from_bytes(d, "little") >> 2  # < 2**62: h and -h are both int64


def kind_of(fields):
    f = dict(fields)
    if f.get("op") == "Adasum":
        return ADASUM
    return KINDS.get(f.get("call"), OTHER)


_STRUCTS = {}


def _struct(n):
    st = _STRUCTS.get(n)
    if st is None:
        st = _STRUCTS[n] = struct.Struct(f"<{n}q")
    return st


def _packed(comm, kind, h, nonblocking, wire, slot):
    """The record's bytes (one struct.pack: this runs on every call)."""
    n = comm.size
    if kind is None:  # a rank inside join()
        values = [NEUTRAL] * (HEADER + n)
    else:
        w = wire or _NO_WIRE
        values = [h, -h, kind, 1 if nonblocking else 0, w.dtype, w.op, _ONE if w.pre == 1.0 else _bits(w.pre),
                  _ONE if w.post == 1.0 else _bits(w.post), w.root, 1 if w.device == "cuda" else 0, len(w.layout)]
        if len(w.layout) <= INLINE:
            values += w.layout
        values += [0] * (HEADER - len(values)) + [NEUTRAL] * n
    values[HEADER + comm.rank] = slot
    return _struct(HEADER + n).pack(*values)


def _record(comm, kind, h, nonblocking, wire, slot):
    return (ctypes.c_int64 * (HEADER + comm.size)).from_buffer_copy(_packed(comm, kind, h, nonblocking, wire, slot))


def _issue(comm, vec, n, nonblocking, check):
    """The one wire form of every record: the library's plain allreduce, one collective whether
    blocking or not (a nonblocking one is issued with the fusion threshold at 0, so the library's
    queue neither fuses it nor agrees on fusing first: the blocking call's collective)."""
    comm.set_check(check)
    addr = ctypes.addressof(vec)
    if not nonblocking:
        return comm.allreduce(addr, addr, n, _lib.INT64, _lib.MAX)
    threshold = comm.fusion_threshold
    comm.fusion_threshold = 0
    try:
        return comm.allreduce(addr, addr, n, _lib.INT64, _lib.MAX, nonblocking=True)
    finally:
        comm.fusion_threshold = threshold


class Outcome:
    """A completed record, decoded."""

    __slots__ = ("v", "size")

    def __init__(self, vec, size):
        self.v, self.size = _struct(len(vec)).unpack_from(vec), size

    @property
    def kind(self):
        return 0 if self.v[H] == NEUTRAL else self.v[KIND]

    def joined(self):
        """The set ranks inside join() (slot < 0)."""
        return [r for r, x in enumerate(self.v[HEADER:]) if x < 0]

    def joining(self):
        return [r for r, x in enumerate(self.v[HEADER:]) if x == JOINING]

    def slots(self):
        return list(self.v[HEADER:])

    def agreed(self):
        return self.v[H] != NEUTRAL and self.v[H] == -self.v[NEG_H]

    def nonblocking(self):
        return self.v[NONBLOCKING] == 1

    def layout_len(self):
        return self.v[LAYOUT_LEN]

    def wire(self, layout=None):
        v = self.v
        if layout is None:
            layout = v[LAYOUT:LAYOUT + min(v[LAYOUT_LEN], INLINE)]
        return Wire(v[DTYPE], v[OP], _float(v[PRE]), _float(v[POST]), v[ROOT], "cuda" if v[DEVICE] else "cpu",
                    layout)


def layout_record(comm, layout, nonblocking):
    """The record of a layout longer than INLINE (a joined rank passes layout=None, and the
    length from the main record): a request, or None when blocking. Checked by the library, so
    ranks whose layouts differ in length fail rather than mismatch."""
    n = len(layout) if not isinstance(layout, int) else layout
    vec = (ctypes.c_int64 * n)()
    for i in range(n):
        vec[i] = NEUTRAL if isinstance(layout, int) else layout[i]
    with _timeline.negotiation():
        req = translated(_issue, comm, vec, n, nonblocking, True)
    return vec, req


def _refusal(what, kind, joined):
    return (f"{KIND_NAMES.get(kind, 'this collective')} is not supported while rank(s) "
            f"{', '.join(map(str, joined))} of the set have called join() (as in Horovod: with joined "
            "ranks only allreduce, grouped allreduce, barrier and DistributedOptimizer steps run, the joined "
            "ranks contributing zeros); issue it before join(), or after every rank has joined")


def _check(outcome, h, what, fields, rank, kind):
    if outcome.v[H] != h or outcome.v[NEG_H] != -h:
        raise HorovodInternalError.disagreement(what, _disagree(what, rank, fields))
    joined = outcome.joined()
    if joined and kind not in WITH_JOINED:
        raise HorovodInternalError.disagreement(what, _refusal(what, kind, joined))


def _signed(fields, nonblocking):
    return tuple(fields) + (("nonblocking", bool(nonblocking)),)


def refuse(comm, what, call, error):
    """Raise error (this rank's own arguments are invalid) after entering the agreement with a
    record no valid call makes: the ranks whose arguments are valid then raise the disagreement
    instead of waiting for this rank, and when every rank's arguments are invalid each raises its
    own error."""
    try:
        agree(comm, what, (("call", call), ("invalid arguments", True)))
    except HorovodInternalError:
        pass
    raise error


def agree(comm, what, fields, rows=None, wire=None, kind=None):
    """Blocking: every rank of comm passed equal fields, or HorovodInternalError on every rank. With rows
    (this rank's count), returns every rank's rows in rank order (allgather's first dims). With
    ranks inside join(), a call they cannot take part in raises here, on every other rank."""
    kind = kind_of(fields) if kind is None else kind
    signed = _signed(fields, False)
    h = _digest(signed)
    vec = _record(comm, kind, h, False, wire, rows if rows is not None else 0)
    n = HEADER + comm.size
    with state.waiting(what):
        with _timeline.negotiation():
            translated(_issue, comm, vec, n, False, False)
    outcome = Outcome(vec, comm.size)
    _check(outcome, h, what, signed, comm.rank, kind)
    if outcome.joined() and wire is not None and len(wire.layout) > INLINE:
        with state.waiting(what):
            layout_record(comm, wire.layout, False)
        comm.set_check(False)
    return outcome.slots()


class Template:
    """A nonblocking record's constant part: kind, signed fields, hash and bytes."""

    __slots__ = ("kind", "fields", "digest", "packed")

    def __init__(self, comm, fields, wire=None, kind=None, data_after_record=False):
        """data_after_record: the call issues its data request only once this record completed
        and agreed (_late_allgather.py), which a joined rank must treat as a blocking call's."""
        self.kind = kind_of(fields) if kind is None else kind
        self.fields = _signed(fields, True)
        self.digest = _digest(self.fields)
        self.packed = _packed(comm, self.kind, self.digest, not data_after_record, wire, 0)


class Agreement:
    """A nonblocking agree(): the record as a request (with the layout's own record when the
    layout is long), completed like a Request; test() and wait() raise the agree()
    HorovodInternalError on every rank when any rank's fields differed."""

    __slots__ = ("_reqs", "_vec", "_layout", "_digest", "_what", "_fields", "_rank", "_size", "_kind", "_checked",
                 "_error")

    def __init__(self, comm, what, fields, wire=None, kind=None, template=None, rows=None):
        """template: a Template of these arguments (a call made every step); rows: this rank's
        slot (allgather's first dimension, read back with slots())."""
        if template is None:
            template = Template(comm, fields, wire, kind, data_after_record=rows is not None)
        self._kind, self._fields, self._digest = template.kind, template.fields, template.digest
        self._what, self._rank, self._size = what, comm.rank, comm.size
        self._vec = (ctypes.c_int64 * (HEADER + comm.size)).from_buffer_copy(template.packed)
        if rows is not None:
            self._vec[HEADER + comm.rank] = rows
        _control.note_call(comm)
        self._reqs = [_issue(comm, self._vec, HEADER + comm.size, True, False)]
        self._layout = None
        if wire is not None and len(wire.layout) > INLINE:
            self._layout, req = layout_record(comm, wire.layout, True)
            self._reqs.append(req)
        self._checked = False
        self._error = None

    def test(self):
        if not all(r.test() for r in self._reqs):
            return False
        self._verify()
        return True

    def wait(self):
        for r in self._reqs:
            r.wait()
        self._verify()

    def slots(self):
        """Every rank's slot, once complete."""
        return Outcome(self._vec, self._size).slots()

    def check_complete(self):
        """For a record known complete (a later request of its queue is running): raises its
        HorovodInternalError, touching no request (safe beside another thread's test/wait)."""
        _check(Outcome(self._vec, self._size), self._digest, self._what, self._fields, self._rank, self._kind)

    def _verify(self):
        """Checks the completed record once; a disagreement is raised by every later test/wait too."""
        if not self._checked:
            self._checked = True
            try:
                _check(Outcome(self._vec, self._size), self._digest, self._what, self._fields, self._rank, self._kind)
            except HorovodInternalError as e:
                self._error = e
        if self._error is not None:
            raise self._error


def _disagree(what, rank, fields):
    return (f"the ranks of the process set disagree on the call's arguments; this rank (rank "
            f"{rank} of the set) passed {_describe(fields)}. Every rank must issue the same collectives "
            "in the same order with matching tensors.")


def _describe(fields):
    return ", ".join(f"{k}={v}" for k, v in fields)


def _adasum_wire(fields):
    """adasum.py's call (the fields of _tensor.signature): its host data request's dtype and count."""
    f = dict(fields)
    dtype = DTYPE_CODES.get(f.get("dtype"), 0)
    count = 1
    for s in f.get("shape", ()):
        count *= s
    return Wire(dtype=dtype, layout=[count])


def start(comm, what, fields, run, asynchronous, wire=None):
    """Issues run(nonblocking) -> Request(s); the requests to complete. A blocking call agrees on
    fields first; a nonblocking one issues the agreement as a request of its own, first (the
    data request's list comes first: waiting for it first keeps its buffers' lifetime simple).
    wire: what a joined rank needs to issue the data request too (Wire)."""
    kind = kind_of(fields)
    if wire is None and kind == ADASUM:
        wire = _adasum_wire(fields)
    if asynchronous:
        with _timeline.negotiation():
            agreement = translated(Agreement, comm, what, fields, wire, kind)
        comm.set_check(True)
        token = _timeline.issued()
        reqs = translated(run, True)
        return (reqs if isinstance(reqs, list) else [reqs]) + [agreement] + _timeline.completion(token)
    agree(comm, what, fields, wire=wire, kind=kind)
    token = _timeline.issued()
    translated(run, False)
    _timeline.done(token)
    return []
