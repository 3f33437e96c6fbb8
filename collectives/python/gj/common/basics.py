"""init/shutdown, ranks and sizes: the process state's one writer (state.py holds it).

init() maps Horovod's environment variables onto gj's (horovod_env.py, stall.py), then creates
one gj communicator over MPI_COMM_WORLD (gjCommInitWorld initializes MPI when nobody has);
process sets (process_sets.py) split theirs from it; the exit hooks (exit_hooks.py) are
installed here, at init(), not when a frontend is imported. A frontend calls init(frontend=its
name) so messages name the package the user imported.
"""

import ctypes

from .. import _core, _lib
from . import exit_hooks, handles, horovod_env, stacks, stall, state, timeline
from . import process_sets as _process_sets
from .process_sets import add_process_set, describe_ranks


def init(comm=None, process_sets=None, frontend="gj"):
    """Initializes gj (idempotent). comm: None (all ranks) or a list of ranks is not
    supported other than None; process_sets: ProcessSets to register now (collective), or
    "dynamic" (Horovod's word for none now, add_process_set later: gj's sets always are).
    Horovod's HOROVOD_* variables are honoured where gj has the setting; rank 0 names the
    set ones it does not honour in one line on stderr (docs/torch.md)."""
    state.frontend = frontend
    if comm is not None:
        raise ValueError(f"init(comm={comm!r}): {frontend} runs over all MPI ranks; "
                         "use process sets for subsets")
    if state.world is not None:
        return
    stacks.install()  # before the first collective: a rank stuck in its own code can be shown
    if isinstance(process_sets, str):
        if process_sets.lower() != "dynamic":
            raise ValueError(f"init(process_sets={process_sets!r}): pass a list of ProcessSets or \"dynamic\"")
        process_sets = None
    # Before the library reads its GJ_COLL_* settings. A refused setting on one rank is
    # refused on every rank (after the communicator exists to tell them), so none waits.
    try:
        unhonoured = horovod_env.apply()
        check_seconds = stall.apply()
        refused = None
    except ValueError as e:
        unhonoured, check_seconds, refused = [], None, e
    world = _core.Comm.world()
    _refuse_on_every_rank(world, refused)
    state.world = world
    exit_hooks.install(is_initialized, shutdown, _process_sets.abort_all)
    horovod_env.report(unhonoured, world.rank, frontend=frontend)
    state.stall_watch = stall.Watch(check_seconds, world.rank, frontend=frontend)
    _process_sets.reset(world)
    state.cross = _cross_rank_size(world)
    for ps in process_sets or []:
        add_process_set(ps)
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
    if state.world is None:
        return
    timeline.stop_timeline()
    handles._drop_handles()
    _process_sets.destroy_all()
    world, state.world = state.world, None
    world.destroy()
    _core.finalize()


def is_initialized():
    return state.world is not None


def rank():
    return state.world_of("rank").rank


def size():
    return state.world_of("size").size


def local_rank():
    return state.world_of("local_rank").local_rank


def local_size():
    return state.world_of("local_size").local_size


def cross_rank():
    state.require_init("cross_rank")
    return state.cross[0]


def cross_size():
    state.require_init("cross_size")
    return state.cross[1]


def is_homogeneous():
    """True when every node runs the same number of ranks."""
    state.require_init("is_homogeneous")
    return state.world.size == state.world.local_size * state.cross[1]
