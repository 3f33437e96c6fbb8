"""Process state of gj.torch: init/shutdown, ranks and sizes, process sets.

init() creates one gj communicator over MPI_COMM_WORLD (gjCommInitWorld initializes MPI when
nobody has); every process set owns a sub-communicator split from it. At interpreter exit an
initialized gj.torch shuts down (collective, like Horovod's atexit hook); after an uncaught
exception it aborts instead, so the other ranks are killed by mpiexec rather than left waiting.
"""

import atexit
import ctypes
import sys

from .. import _core, _lib

_world = None          # _core.Comm over MPI_COMM_WORLD
_cross = (0, 1)        # (cross_rank, cross_size)
_process_sets = {}     # id -> ProcessSet (0 is the global set)
_failed = False        # an uncaught exception: abort rather than a collective shutdown


class ProcessSet:
    """A subset of the ranks that runs its own collectives (Horovod's ProcessSet). Created by
    every rank with the same ranks, registered with add_process_set (or init(process_sets=))."""

    def __init__(self, ranks):
        self.ranks = sorted(int(r) for r in ranks)
        if len(set(self.ranks)) != len(self.ranks):
            raise ValueError(f"ProcessSet ranks={list(ranks)} has duplicates")
        self.process_set_id = None
        self._comm = None

    def _valid(self):
        return self.process_set_id is not None

    def included(self):
        """True when this process belongs to the set."""
        _require_init("ProcessSet.included")
        return self._comm is not None

    def rank(self):
        return self._member_comm("rank").rank

    def size(self):
        return len(self.ranks)

    def _member_comm(self, what):
        _require_init(f"ProcessSet.{what}")
        if self.process_set_id is None:
            raise ValueError(f"process set {self.ranks} is not registered; call add_process_set first")
        if self._comm is None:
            raise ValueError(f"process set {self.ranks}: rank {_world.rank} is not a member")
        return self._comm

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


global_process_set = ProcessSet([])


def _require_init(what):
    if _world is None:
        raise ValueError(f"{what}: gj.torch is not initialized; call gj.torch.init() first")


def init(comm=None, process_sets=None):
    """Initializes gj.torch (idempotent). comm: None (all ranks) or a list of ranks is not
    supported other than None; process_sets: ProcessSets to register now (collective)."""
    global _world, _cross
    if comm is not None:
        raise ValueError(f"init(comm={comm!r}): gj.torch runs over all MPI ranks; "
                         "use process sets for subsets")
    if _world is not None:
        return
    _world = _core.Comm.world()
    global_process_set.ranks = list(range(_world.size))
    global_process_set.process_set_id = 0
    global_process_set._comm = _world
    _process_sets.clear()
    _process_sets[0] = global_process_set
    _cross = _cross_rank_size(_world)
    for ps in process_sets or []:
        add_process_set(ps)
    from . import timeline
    timeline.start_from_environment()


def _cross_rank_size(world):
    """Rank among, and count of, the ranks with this rank's local_rank (one per node)."""
    locals_ = (ctypes.c_int32 * world.size)()
    mine = ctypes.c_int32(world.local_rank)
    world.allgatherv(ctypes.addressof(mine), ctypes.addressof(locals_), [1] * world.size, _lib.INT32)
    peers = [r for r in range(world.size) if locals_[r] == world.local_rank]
    return peers.index(world.rank), len(peers)


def shutdown():
    """Collective: destroys every communicator and finalizes MPI (if gj initialized it)."""
    global _world
    if _world is None:
        return
    from . import mpi_ops, timeline
    timeline.stop_timeline()
    mpi_ops._drop_handles()
    for ps in list(_process_sets.values()):
        if ps is not global_process_set and ps._comm is not None:
            ps._comm.destroy()
        ps._comm, ps.process_set_id = None, None
    _process_sets.clear()
    world, _world = _world, None
    world.destroy()
    _core.finalize()


def _at_exit():
    if _world is None:
        return
    if _failed:
        for ps in list(_process_sets.values()):
            if ps._comm is not None:
                ps._comm.abort()
        return
    try:
        shutdown()
    except Exception as e:  # noqa: BLE001  (nothing to raise to at exit)
        print(f"gj.torch: shutdown at exit failed: {e}", file=sys.stderr)


_previous_excepthook = sys.excepthook


def _excepthook(kind, value, tb):
    global _failed
    _failed = True
    _previous_excepthook(kind, value, tb)


sys.excepthook = _excepthook
atexit.register(_at_exit)


def is_initialized():
    return _world is not None


def _w(what):
    _require_init(what)
    return _world


def rank():
    return _w("rank").rank


def size():
    return _w("size").size


def local_rank():
    return _w("local_rank").local_rank


def local_size():
    return _w("local_size").local_size


def cross_rank():
    _require_init("cross_rank")
    return _cross[0]


def cross_size():
    _require_init("cross_size")
    return _cross[1]


def is_homogeneous():
    """True when every node runs the same number of ranks."""
    _require_init("is_homogeneous")
    return _world.size == _world.local_size * _cross[1]


def add_process_set(process_set):
    """Collective over all ranks: registers a ProcessSet (or a list of ranks) and returns it."""
    _require_init("add_process_set")
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    bad = [r for r in ps.ranks if not 0 <= r < _world.size]
    if bad or not ps.ranks:
        raise ValueError(f"add_process_set: ranks={ps.ranks} must be a non-empty subset of "
                         f"0..{_world.size - 1}")
    for other in _process_sets.values():
        if other.ranks == ps.ranks:
            raise ValueError(f"add_process_set: a process set with ranks={ps.ranks} exists already "
                             f"(id {other.process_set_id})")
    member = _world.rank in ps.ranks
    ps._comm = _world.split(0 if member else -1, _world.rank)
    ps.process_set_id = max(_process_sets) + 1
    _process_sets[ps.process_set_id] = ps
    return ps


def remove_process_set(process_set):
    """Collective over the set's ranks (all ranks call it): destroys its communicator."""
    _require_init("remove_process_set")
    if process_set is global_process_set:
        raise ValueError("remove_process_set: the global process set cannot be removed")
    if _process_sets.get(process_set.process_set_id) is not process_set:
        return False
    del _process_sets[process_set.process_set_id]
    if process_set._comm is not None:
        process_set._comm.destroy()
    process_set._comm, process_set.process_set_id = None, None
    return True


def comm_of(process_set, what):
    """The communicator of process_set for this rank, with errors naming what called."""
    _require_init(what)
    if process_set is None:
        process_set = global_process_set
    if not isinstance(process_set, ProcessSet):
        raise TypeError(f"{what}: process_set={process_set!r} is not a gj.torch ProcessSet")
    if process_set.process_set_id is None:
        raise ValueError(f"{what}: process_set={process_set!r} is not registered; call add_process_set")
    if process_set._comm is None:
        raise ValueError(f"{what}: rank {_world.rank} is not in process_set={process_set!r}")
    return process_set._comm


# Capability queries, as Horovod names them.
def mpi_built():
    return True


def mpi_enabled():
    return True


def mpi_threads_supported():
    return True


def gloo_built():
    return False


def gloo_enabled():
    return False


def nccl_built():
    return bool(_lib.capabilities() & _lib.CAP_NCCL)


def cuda_built():
    return bool(_lib.capabilities() & _lib.CAP_CUDA)


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False
