"""The bases of gj's Keras callbacks: each callback is a real callback of the Keras of the model it
is given (Keras 3 or Keras 2), decided from the model's class when Keras hands it the model
(`set_model`, the first thing fit/evaluate/predict do with a callback).

A callback is made before its model exists, so it starts as a callback of tf.keras's Keras (the
common case, where nothing changes later) and, when `set_model` gives it a model of the other
Keras (a script that says `import tf_keras` or `import keras` itself), becomes that Keras'
callback: its class is swapped for the same gj class over the other Keras' base, whose __init__
runs again with the arguments the callback was made with. gj's own attributes survive (the Keras
bases set only their own). Keras checks no callback's class (both CallbackLists call the hooks),
so the swap is invisible to it.

    class MyCallback(KerasCallback):           # gj's classes, in callbacks.py and elastic.py
        def __init__(self, ...):
            super().__init__()                 # the Keras base's __init__ (keyword arguments, if any)
"""

from . import _backend


class _Neutral:
    """Mixin of every gj callback class; `_gj_keras_base` names the Keras callbacks class it extends."""

    _gj_keras_base = "Callback"

    def __new__(cls, *args, **kwargs):
        del args, kwargs
        if "_gj_class" not in cls.__dict__:  # a gj class: made over tf.keras's Keras (copies keep theirs)
            cls = _bound(cls, _backend.keras())
        return object.__new__(cls)

    def __init__(self, **base_kwargs):
        # What the Keras base's __init__ gets, again if set_model moves the callback to the other Keras.
        self._gj_base_kwargs = base_kwargs
        getattr(self._gj_keras.callbacks, self._gj_keras_base).__init__(self, **base_kwargs)

    def set_model(self, model):
        named = [("the model", model)]
        optimizer = getattr(model, "optimizer", None)
        if optimizer is not None:
            named.append(("the model's optimizer", optimizer))
        k = _backend.keras_of("{}.set_model".format(type(self).__name__), named, default=self._gj_keras)
        if k is not self._gj_keras:
            self._gj_rebase(k)
        super().set_model(model)

    def _gj_rebase(self, k):
        """Makes this callback one of Keras package `k`: its class over k's base, whose __init__
        runs with the arguments the callback was made with."""
        self.__class__ = _bound(self._gj_class, k)
        getattr(k.callbacks, self._gj_keras_base).__init__(self, **self._gj_base_kwargs)


_classes = {}


def _bound(cls, k):
    """gj callback class `cls` over Keras package `k`'s base (one class per pair, so isinstance
    with `cls` holds for either Keras); it keeps cls's name and module."""
    cls = cls.__dict__.get("_gj_class", cls)  # a bound class: its gj class
    key = (cls, k.__name__)
    if key not in _classes:
        base = getattr(k.callbacks, cls._gj_keras_base)
        _classes[key] = type(cls.__name__, (cls, base), {
            "__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
            "_gj_class": cls, "_gj_keras": k})
    return _classes[key]


class KerasCallback(_Neutral):
    """A keras.callbacks.Callback of the model's Keras."""


class KerasModelCheckpoint(_Neutral):
    """A keras.callbacks.ModelCheckpoint of the model's Keras."""

    _gj_keras_base = "ModelCheckpoint"

    def _gj_rebase(self, k):
        # The file path the user may have set since (Horovod's estimator sets it after __init__);
        # None (not set yet) stays None past the base's __init__.
        filepath = self.filepath
        if filepath is not None:
            self._gj_base_kwargs["filepath"] = filepath
        super()._gj_rebase(k)
        self.filepath = filepath
