"""Horovod's elastic API at a fixed size, for every frontend: State (save/restore/sync/commit and
reset callbacks), ObjectState and run(func).

gj-mpirun starts one MPI job of a fixed size; MPI_COMM_WORLD cannot grow or shrink, so no host
is ever added or removed while it runs. What the API still does:
- run(func): func(state, ...) runs after state.sync() (every rank gets rank 0's state, so all
  start alike); when func raises HorovodInternalError (a collective failed: a peer died), the
  state is restored to its last commit() and the error re-raised: the MPI job cannot continue
  with fewer ranks, and the platform ends it (the master pod exits with mpiexec's status; the
  job's restart policy decides whether it starts again, from the user's own checkpoints).
  HostsUpdatedInterrupt raised by func is handled as Horovod does (state reset, sync unless
  skip_sync, func run again); gj itself never raises it.
- State.commit() saves the state (and checks for host updates: there never are);
  restore() goes back to the last save; sync() broadcasts rank 0's state.
- State.persist_to(path, every=N) (gj's own): the committed state also goes to a file, by rank 0
  and atomically (checkpoint.py), every N commits and when the job is asked to stop (stop.py):
  commit() then asks every rank (one small collective per commit), rank 0 writes, and commit()
  raises StopRequested, which run() takes as the end of the training function (it returns
  None). persist_to loads the file when it exists (a restarted job goes on from it; sync() then
  gives every rank rank 0's copy).
A frontend makes its State and ObjectState with frontend_states (its broadcast_object and rank as
their defaults) and adds its framework's states (TorchState, TensorFlowKerasState).
"""

import copy
import functools
import os
import pickle

from .checkpoint import atomic_write
from .exceptions import HorovodInternalError, HostsUpdatedInterrupt
from .stop import StopRequested

__all__ = ["run", "State", "ObjectState"]


class State:
    """Horovod's elastic State: save/restore/sync, commit(), reset callbacks."""

    # The frontend's broadcast_object, rank and stop_requested, used when the caller passes none.
    default_bcast_object = None
    default_rank = None
    default_stop_requested = None

    def __init__(self, bcast_object=None, get_rank=None):
        self._bcast_object = bcast_object or type(self).default_bcast_object
        self._rank = get_rank or type(self).default_rank
        self._reset_callbacks = []
        self._persist_path = None
        self._persist_every = 0
        self._commits = 0

    def register_reset_callbacks(self, callbacks):
        """Functions called (in order) after a reset; at a fixed size only after a
        HostsUpdatedInterrupt the training function raised itself."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        """Horovod's notification hook; gj's world never changes, so nothing calls it."""

    def commit(self):
        """Saves the state: a later restore() comes back here. With persist_to(): also to its
        file every N commits, and when the job was asked to stop, after which it raises
        StopRequested on every rank (the same commit everywhere)."""
        self.save()
        self._commits += 1
        if self._persist_path is not None:
            stop = type(self).default_stop_requested()
            if stop or (self._persist_every and self._commits % self._persist_every == 0):
                self.write_checkpoint()
            if stop:
                raise StopRequested(f"the job was asked to stop; the state of commit {self._commits} is in "
                                    f"{self._persist_path}")
        self.check_host_updates()

    def persist_to(self, path, every=0):
        """Keeps the committed state in the file `path` too (see the module): every `every`
        commits (0: only at a stop request) and at a stop request. Loads path first when it
        exists, so a restarted job (gj-mpirun --max-restarts) goes on from it. Returns whether
        it loaded. Call it on every rank, before run()."""
        if every < 0:
            raise ValueError(f"persist_to: every={every!r} must be 0 (only at a stop) or a positive number of commits")
        self._persist_path = os.fspath(path)
        self._persist_every = int(every)
        if not os.path.exists(self._persist_path):
            return False
        with open(self._persist_path, "rb") as f:
            snapshot = pickle.load(f)
        self._load_snapshot(snapshot)
        self.restore()
        return True

    def write_checkpoint(self):
        """Rank 0 writes the last commit to the persist_to file, atomically; others do nothing."""
        if self._persist_path is None:
            raise ValueError("write_checkpoint: no file; call persist_to(path) first")
        if self._rank() == 0:
            snapshot = self._snapshot()
            atomic_write(self._persist_path, lambda f: pickle.dump(snapshot, f, protocol=pickle.HIGHEST_PROTOCOL))

    def _snapshot(self):
        """What a commit saved, picklable (each state type adds its parts)."""
        return {}

    def _load_snapshot(self, snapshot):
        """Makes snapshot the saved state (restore() then applies it)."""

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt when hosts changed: they cannot under gj-mpirun."""

    def save(self):
        raise NotImplementedError

    def restore(self):
        raise NotImplementedError

    def sync(self):
        raise NotImplementedError

    def reset(self):
        """Called after a reset, before sync(); nothing to rebuild at a fixed size."""


class ObjectState(State):
    """Picklable attributes (the keyword arguments), saved by deep copy and synced from rank 0."""

    def __init__(self, bcast_object=None, get_rank=None, **kwargs):
        super().__init__(bcast_object, get_rank)
        self._saved_state = kwargs
        self._set_attrs()

    def save(self):
        self._saved_state = {k: copy.deepcopy(getattr(self, k)) for k in self._saved_state}

    def _snapshot(self):
        return {**super()._snapshot(), "objects": self._saved_state}

    def _load_snapshot(self, snapshot):
        super()._load_snapshot(snapshot)
        self._saved_state.update(snapshot.get("objects", {}))

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for k, v in self._saved_state.items():
            setattr(self, k, copy.deepcopy(v))


def frontend_states(module, broadcast_object, rank, stop_requested=None):
    """(State, ObjectState) of a frontend (module: its name for them) whose defaults are the
    frontend's broadcast_object(obj, root_rank, ...), rank() and stop_requested()."""
    frontend_state = type("State", (State,), {
        "__doc__": State.__doc__, "__module__": module,
        "default_bcast_object": staticmethod(broadcast_object),
        "default_rank": staticmethod(rank),
        "default_stop_requested": staticmethod(stop_requested or (lambda: False))})
    frontend_object_state = type("ObjectState", (ObjectState, frontend_state),
                                 {"__doc__": ObjectState.__doc__, "__module__": module})
    return frontend_state, frontend_object_state


def run(func):
    """Decorator of an elastic training function func(state, *args, **kwargs): see the module
    docstring for what it does at gj's fixed size."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        skip_sync = False
        while True:
            if not skip_sync:
                state.sync()
            try:
                return func(state, *args, **kwargs)
            except StopRequested:
                return None  # commit() saved the state on the stop request: the job ends here
            except HorovodInternalError:
                state.restore()
                raise
            except HostsUpdatedInterrupt as e:
                skip_sync = getattr(e, "skip_sync", False)
            state.on_reset()

    return wrapper
