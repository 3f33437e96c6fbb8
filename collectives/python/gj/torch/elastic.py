"""hvd.elastic at a fixed size (gj/common/elastic.py says what that means): the neutral State,
ObjectState and run with gj.torch's broadcast_object as their default, and the torch parts:
- TorchState(model, optimizer, **kwargs): the model's and optimizer's state_dict and every other
  keyword, saved as copies, restored, and synced with broadcast_parameters /
  broadcast_optimizer_state / broadcast_object.
- ElasticSampler: every rank's share of a dataset, with the indices already processed in this
  epoch skipped after a restore (record_batch / record_indices), synced as their union.
"""

import copy
import math
import random

import torch

from ..common import elastic as _common
from ..common.elastic import run
from . import _basics, _stop, functions

__all__ = ["run", "State", "ObjectState", "TorchState", "ElasticSampler"]


# Late-bound: the frontend's functions as they are when a state syncs.
State, ObjectState = _common.frontend_states(
    __name__, lambda obj, *a, **k: functions.broadcast_object(obj, *a, **k), lambda: _basics.rank(),
    lambda: _stop.stop_requested())


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

    def _snapshot(self):
        return {**super()._snapshot(), "model": self._model_saved, "optimizer": self._optimizer_saved,
                "samplers": self._sampler_saved}

    def _load_snapshot(self, snapshot):
        super()._load_snapshot(snapshot)
        self._model_saved = snapshot.get("model", self._model_saved)
        self._optimizer_saved = snapshot.get("optimizer", self._optimizer_saved)
        self._sampler_saved.update(snapshot.get("samplers", {}))

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
