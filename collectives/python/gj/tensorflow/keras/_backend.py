"""Which Keras `tf.keras` is, decided once: Keras 3 (the `keras` package, TF >= 2.16's default) or
Keras 2 (`tf_keras`, chosen by TF_USE_LEGACY_KERAS=1 before TensorFlow is imported). The
optimizer wrapper and the callbacks build on the classes of that one, because a Keras 3 model
accepts only Keras 3 callbacks and optimizers, and a Keras 2 model only Keras 2 ones."""

import functools

import numpy as np
import tensorflow as tf


@functools.lru_cache(maxsize=None)
def keras():
    """The Keras package tf.keras stands for: `keras` (3, or 2 before TF 2.16) or `tf_keras`."""
    if tf.keras.__name__.startswith("tf_keras"):
        import tf_keras as k
    else:
        import keras as k
    return k


@functools.lru_cache(maxsize=None)
def is_keras3():
    return int(str(keras().__version__).split(".")[0]) >= 3


def loss_scale_optimizer_class():
    k = keras()
    return k.optimizers.LossScaleOptimizer if is_keras3() else k.mixed_precision.LossScaleOptimizer


def is_loss_scale_optimizer(optimizer):
    return isinstance(optimizer, loss_scale_optimizer_class())


def global_policy_name():
    return keras().mixed_precision.global_policy().name


def to_float(value):
    """A Python float from a learning rate or momentum as an optimizer holds it: a Keras 3
    Variable, a tf.Variable, a tensor, a NumPy or Python number (Keras 3 has no
    keras.backend.get_value)."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    return float(np.asarray(value))


def is_variable(value):
    return isinstance(value, tf.Variable) or (is_keras3() and isinstance(value, keras().Variable))


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
