"""hvd.elastic for TensorFlow at a fixed size (gj/common/elastic.py says what that means):
State, ObjectState and run with gj.tensorflow's broadcast_object as their default, and
- TensorFlowKerasState(model, optimizer=None, backward_passes_per_step=1, **kwargs): the model's
  and optimizer's variables, saved as copies, restored, and synced from rank 0;
- TensorFlowState(variables=None, session=None, **kwargs): a list of tf.Variables, likewise.
"""

from ..common import elastic as _common
from ..common.elastic import run
from . import _basics, _stop, functions

__all__ = ["run", "State", "ObjectState", "TensorFlowKerasState", "TensorFlowState"]


# Late-bound: the frontend's functions as they are when a state syncs.
State, ObjectState = _common.frontend_states(
    __name__, lambda obj, *a, **k: functions.broadcast_object(obj, *a, **k), lambda: _basics.rank(),
    lambda: _stop.stop_requested())


def _optimizer_variables(optimizer):
    if optimizer is None:
        return []
    v = getattr(optimizer, "variables", [])
    return list(v() if callable(v) else v)


class TensorFlowState(ObjectState):
    """variables (default: none) saved as numpy copies, restored, broadcast from rank 0 at sync."""

    def __init__(self, variables=None, session=None, **kwargs):
        self.variables = list(variables or [])
        self._values = None
        super().__init__(**kwargs)
        self._save_variables()

    def _tracked(self):
        return self.variables

    def _save_variables(self):
        self._values = [v.numpy() for v in self._tracked()]

    def save(self):
        self._save_variables()
        super().save()

    def _snapshot(self):
        return {**super()._snapshot(), "variables": self._values}

    def _load_snapshot(self, snapshot):
        super()._load_snapshot(snapshot)
        self._values = snapshot.get("variables", self._values)

    def restore(self):
        for v, value in zip(self._tracked(), self._values or []):
            v.assign(value)
        super().restore()

    def sync(self):
        tracked = self._tracked()
        if tracked:
            functions.broadcast_variables(tracked, root_rank=0)
        super().sync()
        self._save_variables()


class TensorFlowKerasState(TensorFlowState):
    """model (a Keras model) and optimizer (default model.optimizer): their variables, as
    TensorFlowState's; other keywords as ObjectState's. state.model, state.optimizer, ..."""

    def __init__(self, model, optimizer=None, backward_passes_per_step=1, **kwargs):
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        self.backward_passes_per_step = backward_passes_per_step
        super().__init__(variables=None, **kwargs)

    def _tracked(self):
        return list(self.model.variables) + _optimizer_variables(self.optimizer)
