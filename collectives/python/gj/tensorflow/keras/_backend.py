"""Which Keras an object belongs to, decided from the object: Keras 3 (the `keras` package, TF >=
2.16's tf.keras) or Keras 2 (`tf_keras`, which TF_USE_LEGACY_KERAS=1 makes tf.keras, or `keras`
2.x under TF <= 2.15). The optimizer wrapper and the callbacks build on the classes of the Keras
of the objects they are given, because a Keras 3 model accepts only Keras 3 optimizers and
callbacks, and a Keras 2 model only Keras 2 ones.

Why from the objects and not once from `tf.keras.__name__`: a script's `from tensorflow.keras...
import` registers a module named `tensorflow.keras`, after which that name says nothing, and a
script may use `import tf_keras` or `import keras` whatever tf.keras is. The class of an object
says where it came from whatever the script imported, and through how many names."""

import sys

import numpy as np
import tensorflow as tf

_PACKAGES = ("keras", "tf_keras")


def keras_of_class(cls):
    """The Keras package (module `keras` or `tf_keras`) `cls` comes from: the first class of its
    MRO defined in one (a user's subclass of a Keras class belongs to that Keras), or None."""
    for c in getattr(cls, "__mro__", ()):
        top = str(getattr(c, "__module__", "") or "").split(".")[0]
        if top in _PACKAGES and top in sys.modules:
            return sys.modules[top]
    return None


def describe(k):
    """'Keras 3 (keras 3.15.1)' / 'Keras 2 (tf_keras 2.21.0)'."""
    return "Keras {} ({} {})".format(3 if is_keras3(k) else 2, k.__name__, k.__version__)


def _class_name(cls):
    return "{}.{}".format(cls.__module__, cls.__qualname__)


def keras_of(call, named, default=None):
    """The one Keras of the objects (or classes) in `named`, a list of (argument name, object);
    objects of no Keras (None, tf.Variables, ...) do not count. `default` when none belongs to a
    Keras. Keras 2 and Keras 3 objects together are a TypeError naming both classes."""
    found = None
    for name, obj in named:
        cls = obj if isinstance(obj, type) else type(obj)
        k = keras_of_class(cls)
        if k is None:
            continue
        if found is None:
            found = (name, cls, k)
        elif is_keras3(k) != is_keras3(found[2]):
            first_name, first_cls, first_k = found
            raise TypeError(
                "{}: {} is {} from {} but {} is {} from {}: Keras 2 and Keras 3 objects cannot be used "
                "together; build the model, its optimizer and its variables with one Keras (Keras 2: "
                "tf.keras with TF_USE_LEGACY_KERAS=1 set before TensorFlow's import, or `import tf_keras`; "
                "Keras 3: tf.keras by default, or `import keras`)".format(
                    call, first_name, _class_name(first_cls), describe(first_k), name, _class_name(cls),
                    describe(k)))
    return found[2] if found is not None else default


def keras():
    """The Keras tf.keras stands for, from tf.keras's own Optimizer class (not its module name):
    for what no object decides (load_model without custom classes, a callback before its model)."""
    return keras_of_class(tf.keras.optimizers.Optimizer)


def is_keras3(k=None):
    """Whether Keras package `k` (default: tf.keras's) is Keras 3 or later."""
    k = keras() if k is None else k
    return int(str(k.__version__).split(".")[0]) >= 3


def loss_scale_optimizer_class(k):
    return k.optimizers.LossScaleOptimizer if is_keras3(k) else k.mixed_precision.LossScaleOptimizer


def is_loss_scale_optimizer(optimizer):
    k = keras_of_class(type(optimizer))
    return k is not None and isinstance(optimizer, loss_scale_optimizer_class(k))


def global_policy_name(k):
    return k.mixed_precision.global_policy().name


def to_float(value):
    """A Python float from a learning rate or momentum as an optimizer holds it: a Keras 3
    Variable, a tf.Variable, a tensor, a NumPy or Python number (Keras 3 has no
    keras.backend.get_value)."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    return float(np.asarray(value))


def is_variable(value):
    """A tf.Variable or a Keras 3 Variable (a Keras 3 object exists only once `keras` is imported)."""
    if isinstance(value, tf.Variable):
        return True
    k = sys.modules.get("keras")
    return k is not None and is_keras3(k) and isinstance(value, k.Variable)


def optimizer_variables(optimizer):
    """The optimizer's variables as a list: Keras 3 and the Keras 2 optimizers have the property
    `variables`, Keras 2's legacy optimizers the method `variables()`."""
    v = optimizer.variables
    return list(v() if callable(v) else v)


def tf_variables(variables):
    """The tf.Variables behind `variables`: a Keras 3 Variable holds one as .value (TensorFlow
    backend); tf.Variables pass as they are."""
    out = []
    for v in variables:
        if not isinstance(v, tf.Variable) and isinstance(getattr(v, "value", None), tf.Variable):
            v = v.value
        out.append(v)
    return out
