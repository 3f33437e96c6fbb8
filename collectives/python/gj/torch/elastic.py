"""hvd.elastic at a fixed size: Horovod's elastic API, so elastic training scripts run unchanged.

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
- TorchState(model, optimizer, **kwargs) and ObjectState(**kwargs): the model's and optimizer's
  state_dict and every other keyword, saved as copies, restored, and synced with
  broadcast_parameters / broadcast_optimizer_state / broadcast_object.
- ElasticSampler: every rank's share of a dataset, with the indices already processed in this
  epoch skipped after a restore (record_batch / record_indices), synced as their union.
"""

import copy
import functools
import math
import random

import torch

from . import _basics, functions
from .exceptions import HorovodInternalError, HostsUpdatedInterrupt

__all__ = ["run", "State", "ObjectState", "TorchState", "ElasticSampler"]


class State:
    """Horovod's elastic State: save/restore/sync, commit(), reset callbacks."""

    def __init__(self, bcast_object=None, get_rank=None):
        self._bcast_object = bcast_object or functions.broadcast_object
        self._rank = get_rank or _basics.rank
        self._reset_callbacks = []

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
        """Saves the state: a later restore() comes back here."""
        self.save()
        self.check_host_updates()

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

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for k, v in self._saved_state.items():
            setattr(self, k, copy.deepcopy(v))


class TorchState(ObjectState):
    """model and optimizer (their state_dict, copied at save; broadcast from rank 0 at sync),
    an ElasticSampler among the keywords (its processed indices), and any other keyword
    values (as ObjectState). Attributes are reachable as state.model, state.optimizer, ..."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        self.model = model
        self.optimizer = optimizer
        self._samplers = {k: v for k, v in kwargs.items() if isinstance(v, ElasticSampler)}
        for k, v in self._samplers.items():
            setattr(self, k, v)
        others = {k: v for k, v in kwargs.items() if k not in self._samplers}
        self._model_saved = None
        self._optimizer_saved = None
        self._sampler_saved = {}
        super().__init__(**others)
        self._save_torch()

    def _save_torch(self):
        if self.model is not None:
            self._model_saved = copy.deepcopy(self.model.state_dict())
        if self.optimizer is not None:
            self._optimizer_saved = copy.deepcopy(self.optimizer.state_dict())
        self._sampler_saved = {k: s.state_dict() for k, s in self._samplers.items()}

    def save(self):
        self._save_torch()
        super().save()

    def restore(self):
        if self.model is not None and self._model_saved is not None:
            self.model.load_state_dict(self._model_saved)
        if self.optimizer is not None and self._optimizer_saved is not None:
            self.optimizer.load_state_dict(self._optimizer_saved)
        for k, s in self._samplers.items():
            s.load_state_dict(self._sampler_saved[k])
        super().restore()

    def sync(self):
        if self.model is not None:
            functions.broadcast_parameters(self.model.state_dict(), root_rank=0)
        if self.optimizer is not None:
            functions.broadcast_optimizer_state(self.optimizer, root_rank=0)
        for s in self._samplers.values():
            s.sync()
        super().sync()
        self._save_torch()


class ElasticSampler(torch.utils.data.Sampler):
    """This rank's share of dataset's indices for the epoch (shuffled with seed + epoch when
    shuffle), minus the indices recorded as processed since the epoch began (record_batch /
    record_indices), so a restored state resumes mid-epoch. Shares are Horovod's: the remaining
    indices padded to a multiple of the size, rank r taking every size-th from r."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices = set()
        self.reset()

    def set_epoch(self, epoch):
        """A new epoch: nothing processed yet."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Marks the batch_idx-th batch of this rank's share as processed."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices):
        self.processed_indices.update(int(i) for i in indices)

    def get_indices(self, batch_idx, batch_size):
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self):
        return {"epoch": self.epoch, "processed_indices": sorted(self.processed_indices)}

    def load_state_dict(self, state):
        self.epoch = state["epoch"]
        self.processed_indices = set(state["processed_indices"])
        self.reset()

    def sync(self):
        """Every rank's processed indices, united (each rank recorded only its own share)."""
        everyone = functions.allgather_object(sorted(self.processed_indices))
        self.processed_indices = set(i for part in everyone for i in part)
        self.reset()

    def reset(self):
        rank, size = (_basics.rank(), _basics.size()) if _basics.is_initialized() else (0, 1)
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        remaining = [i for i in order if i not in self.processed_indices]
        self.num_samples = int(math.ceil(len(remaining) / size)) if remaining else 0
        total = self.num_samples * size
        padded = remaining + remaining[:total - len(remaining)]
        self.indices = padded[rank:total:size]

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return self.num_samples


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
            except HorovodInternalError:
                state.restore()
                raise
            except HostsUpdatedInterrupt as e:
                skip_sync = getattr(e, "skip_sync", False)
            state.on_reset()

    return wrapper
