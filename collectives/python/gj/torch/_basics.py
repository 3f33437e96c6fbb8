"""Process state of gj.torch: init/shutdown, ranks and sizes, the stall watch.

init() maps Horovod's environment variables onto gj's (_horovod_env.py, _stall.py), then creates
one gj communicator over MPI_COMM_WORLD (gjCommInitWorld initializes MPI when nobody has);
process sets (_process_sets.py) split theirs from it. What happens at exit is _exit_hooks.py,
the capability queries _capabilities.py; the names of both, and the process sets', are
re-exported here for the modules that import them from _basics.
"""

import contextlib
import ctypes

from .. import _core, _lib
from . import _horovod_env, _process_sets, _stall
from ._process_sets import (ProcessSet, add_process_set, comm_of, describe_ranks,  # noqa: F401
                            global_process_set, registered, remove_process_set)

_world = None          # _core.Comm over MPI_COMM_WORLD
_cross = (0, 1)        # (cross_rank, cross_size)
stall_watch = _stall.Watch(None, -1)  # replaced at init (HOROVOD_STALL_CHECK_TIME_SECONDS)


def require_init(what):
    if _world is None:
        raise ValueError(f"{what}: gj.torch is not initialized; call gj.torch.init() first")


_require_init = require_init


def init(comm=None, process_sets=None):
    """Initializes gj.torch (idempotent). comm: None (all ranks) or a list of ranks is not
    supported other than None; process_sets: ProcessSets to register now (collective), or
    "dynamic" (Horovod's word for none now, add_process_set later: gj's sets always are).
    Horovod's HOROVOD_* variables are honoured where gj has the setting; rank 0 names the
    set ones it does not honour in one line on stderr (docs/torch.md)."""
    global _world, _cross, stall_watch
    if comm is not None:
        raise ValueError(f"init(comm={comm!r}): gj.torch runs over all MPI ranks; "
                         "use process sets for subsets")
    if _world is not None:
        return
    if isinstance(process_sets, str):
        if process_sets.lower() != "dynamic":
            raise ValueError(f"init(process_sets={process_sets!r}): pass a list of ProcessSets or \"dynamic\"")
        process_sets = None
    # Before the library reads its GJ_COLL_* settings. A refused setting on one rank is
    # refused on every rank (after the communicator exists to tell them), so none waits.
    try:
        unhonoured = _horovod_env.apply()
        check_seconds = _stall.apply()
        refused = None
    except ValueError as e:
        unhonoured, check_seconds, refused = [], None, e
    world = _core.Comm.world()
    _refuse_on_every_rank(world, refused)
    _world = world
    _horovod_env.report(unhonoured, _world.rank)
    stall_watch = _stall.Watch(check_seconds, _world.rank)
    _process_sets.reset(_world)
    _cross = _cross_rank_size(_world)
    for ps in process_sets or []:
        add_process_set(ps)
    from . import timeline
    timeline.start_from_environment()


def _refuse_on_every_rank(world, refused):
    """Raises refused here, and a ValueError naming the refusing ranks on the others, when
    any rank's settings were refused; the communicator is destroyed first."""
    flags = (ctypes.c_int32 * world.size)()
    mine = ctypes.c_int32(1 if refused is not None else 0)
    world.allgatherv(ctypes.addressof(mine), ctypes.addressof(flags), [1] * world.size, _lib.INT32)
    ranks = [r for r in range(world.size) if flags[r]]
    if not ranks:
        return
    world.destroy()
    if refused is not None:
        raise refused
    raise ValueError(f"init: the HOROVOD_*/GJ_* settings of rank(s) {describe_ranks(ranks)} were refused "
                     "(their own error names the variable); every rank refuses to start")


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
    from . import _handles, timeline
    timeline.stop_timeline()
    _handles._drop_handles()
    _process_sets.destroy_all()
    world, _world = _world, None
    world.destroy()
    _core.finalize()


@contextlib.contextmanager
def waiting(what):
    """Brackets a wait of this rank for its peers (the stall warning's watch)."""
    token = stall_watch.enter(what)
    try:
        yield
    finally:
        stall_watch.leave(token)


def is_initialized():
    return _world is not None


def _world_of(what):
    _require_init(what)
    return _world


def rank():
    return _world_of("rank").rank


def size():
    return _world_of("size").size


def local_rank():
    return _world_of("local_rank").local_rank


def local_size():
    return _world_of("local_size").local_size


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


from ._capabilities import (ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled,  # noqa: E402,F401
                            mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rocm_built)
from . import _exit_hooks  # noqa: E402,F401  (installs the exit hook)
