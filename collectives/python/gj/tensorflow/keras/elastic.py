"""horovod.tensorflow.keras.elastic at gj's fixed size: KerasState over gj.tensorflow.elastic's
TensorFlowKerasState, and the three Keras callbacks that keep a state current during fit."""

from ..elastic import TensorFlowKerasState, run  # noqa: F401  run is Horovod's name here too
from . import _backend
from ._callback_base import KerasCallback as _Callback  # a callback of the model's Keras


class KerasState(TensorFlowKerasState):
    """The model's (and optimizer's) variables plus any keyword properties, committed, restored
    and synced as one state (Horovod's KerasState)."""

    def __init__(self, model, optimizer=None, **kwargs):
        _backend.keras_of("KerasState", [("model", model), ("optimizer", optimizer)])  # not mixed
        super().__init__(model, optimizer=optimizer, **kwargs)


class CommitStateCallback(_Callback):
    """Commits `state` every batches_per_commit batches and at each epoch's end."""

    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_train_begin(self, logs=None):
        self.batches_remaining = self.batches_per_commit

    def on_batch_end(self, batch, logs=None):
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.state.commit()
            self.batches_remaining = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.state.commit()


class UpdateBatchStateCallback(_Callback):
    """state.batch follows the batch (0 at each epoch's end); with fit's `steps`, the first epoch
    after a restore runs only the batches left."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.steps_per_epoch = None

    def on_train_begin(self, logs=None):
        self.steps_per_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.params.get("steps"):
            if self.steps_per_epoch is None:
                self.steps_per_epoch = self.params.get("steps")
            self.params["steps"] = self.steps_per_epoch - self.state.batch

    def on_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(_Callback):
    """state.epoch = the epoch fit started from + the epochs completed."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.initial_epoch = self.state.epoch

    def on_train_begin(self, logs=None):
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        self.state.epoch = self.initial_epoch + epoch + 1
