"""Process sets of gj (Horovod's ProcessSet): subsets of the ranks with collectives of
their own, each a sub-communicator split from the world communicator. Registering and removing
one is collective over all ranks.
"""

from . import state

_registry = {}  # id -> ProcessSet (0 is the global set)


class ProcessSet:
    """A subset of the ranks that runs its own collectives (Horovod's ProcessSet). Created by
    every rank with the same ranks, registered with add_process_set (or init(process_sets=))."""

    def __init__(self, ranks):
        self.ranks = sorted(int(r) for r in ranks)
        if len(set(self.ranks)) != len(self.ranks):
            raise ValueError(f"ProcessSet ranks={list(ranks)} has duplicates")
        self.process_set_id = None
        self._comm = None

    def included(self):
        """True when this process belongs to the set."""
        state.require_init("ProcessSet.included")
        return self._comm is not None

    def rank(self):
        return self._member_comm("rank").rank

    def size(self):
        return len(self.ranks)

    def _member_comm(self, what):
        state.require_init(f"ProcessSet.{what}")
        if self.process_set_id is None:
            raise ValueError(f"process set {self.ranks} is not registered; call add_process_set first")
        if self._comm is None:
            raise ValueError(f"process set {self.ranks}: rank {state.world.rank} is not a member")
        return self._comm

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


global_process_set = ProcessSet([])


def reset(world):
    """At init: the global set is every rank of world; nothing else is registered."""
    global_process_set.ranks = list(range(world.size))
    global_process_set.process_set_id = 0
    global_process_set._comm = world
    _registry.clear()
    _registry[0] = global_process_set


def destroy_all():
    """At shutdown (collective): destroys every set's communicator but the world's."""
    for ps in list(_registry.values()):
        if ps is not global_process_set and ps._comm is not None:
            ps._comm.destroy()
        ps._comm, ps.process_set_id = None, None
    _registry.clear()


def abort_all():
    """After an uncaught exception: aborts every set's communicator, the world's included."""
    for ps in list(_registry.values()):
        if ps._comm is not None:
            ps._comm.abort()


def add_process_set(process_set):
    """Collective over all ranks: registers a ProcessSet (or a list of ranks) and returns it."""
    state.require_init("add_process_set")
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    bad = [r for r in ps.ranks if not 0 <= r < state.world.size]
    if bad or not ps.ranks:
        raise ValueError(f"add_process_set: ranks={ps.ranks} must be a non-empty subset of "
                         f"0..{state.world.size - 1}")
    for other in _registry.values():
        if other.ranks == ps.ranks:
            raise ValueError(f"add_process_set: a process set with ranks={ps.ranks} exists already "
                             f"(id {other.process_set_id})")
    member = state.world.rank in ps.ranks
    ps._comm = state.world.split(0 if member else -1, state.world.rank)
    ps.process_set_id = max(_registry) + 1
    _registry[ps.process_set_id] = ps
    return ps


def remove_process_set(process_set):
    """Collective over the set's ranks (all ranks call it): destroys its communicator."""
    state.require_init("remove_process_set")
    if process_set is global_process_set:
        return False  # as Horovod: the global set stays
    if _registry.get(process_set.process_set_id) is not process_set:
        return False
    del _registry[process_set.process_set_id]
    if process_set._comm is not None:
        process_set._comm.destroy()
    process_set._comm, process_set.process_set_id = None, None
    return True


def registered(process_set, what):
    """process_set (None: the global set) checked to be a registered ProcessSet."""
    state.require_init(what)
    if process_set is None:
        process_set = global_process_set
    if not isinstance(process_set, ProcessSet):
        raise TypeError(f"{what}: process_set={process_set!r} is not a gj ProcessSet")
    if process_set.process_set_id is None or _registry.get(process_set.process_set_id) is not process_set:
        raise ValueError(f"{what}: process_set={process_set!r} is not registered; call add_process_set")
    return process_set


def describe_ranks(ranks):
    """0..3 for a run of ranks, else the list."""
    if ranks and ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return f"{ranks[0]}..{ranks[-1]}"
    return str(list(ranks))


def comm_of(process_set, what):
    """The communicator of process_set for this rank, with errors naming what called."""
    process_set = registered(process_set, what)
    if process_set._comm is None:
        raise ValueError(f"{what}: rank {state.world.rank} is not in process_set={process_set!r}")
    return process_set._comm
