"""gj.tensorflow.keras whichever way a script reaches Keras (issue 57), under mpiexec at 2 ranks. The
ctest runs this file on Keras 2 (TF_USE_LEGACY_KERAS=1: tf.keras is tf_keras) and on Keras 3.

Every import below comes before gj's, as in a user's script: `from tensorflow.keras... import`
registers a module named `tensorflow.keras`, whose name then says Keras 3 whatever tf.keras is, and
`import keras` / `import tf_keras` give objects of a Keras other than tf.keras's. For each pattern:
DistributedOptimizer and fit with BroadcastGlobalVariablesCallback and MetricAverageCallback, each
rank starting from its own weights and training on its own data: the weights end bitwise equal on
the ranks, and so do the loss History records (averaged). Mixing Keras 2 and Keras 3 objects in one
call is a TypeError naming both classes."""

import os

import numpy as np
import pytest
import tensorflow as tf
from tensorflow import keras as from_tensorflow_keras
from tensorflow.keras import layers as from_layers
from tensorflow.keras.models import Sequential as FromSequential
from tensorflow.keras.optimizers import SGD as FromSGD
import keras as keras_package
import tf_keras

import gj.tensorflow as hvd_tf
import gj.tensorflow.keras as hvd

LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
TF_KERAS_VERSION = 2 if LEGACY else 3


class _Namespace:
    def __init__(self, sequential, dense, sgd, callback_base):
        self.sequential, self.dense, self.sgd, self.callback_base = sequential, dense, sgd, callback_base


# pattern -> (its Keras version, how it makes a model, a layer, an optimizer, and its Callback class)
PATTERNS = {
    "tf.keras": (TF_KERAS_VERSION, lambda: _Namespace(tf.keras.Sequential, tf.keras.layers.Dense,
                                                       tf.keras.optimizers.SGD, tf.keras.callbacks.Callback)),
    "from tensorflow.keras... import": (TF_KERAS_VERSION, lambda: _Namespace(
        FromSequential, from_layers.Dense, FromSGD, tf.keras.callbacks.Callback)),
    "from tensorflow import keras": (TF_KERAS_VERSION, lambda: _Namespace(
        from_tensorflow_keras.Sequential, from_tensorflow_keras.layers.Dense, from_tensorflow_keras.optimizers.SGD,
        from_tensorflow_keras.callbacks.Callback)),
    "import tf_keras": (2, lambda: _Namespace(tf_keras.Sequential, tf_keras.layers.Dense, tf_keras.optimizers.SGD,
                                              tf_keras.callbacks.Callback)),
    "import keras": (3, lambda: _Namespace(keras_package.Sequential, keras_package.layers.Dense,
                                           keras_package.optimizers.SGD, keras_package.callbacks.Callback)),
}


@pytest.fixture(scope="module", autouse=True)
def world():
    hvd.init()
    return hvd.rank(), hvd.size()


def same_on_all_ranks(arrays):
    mine = b"".join(np.asarray(a, dtype=np.float64).tobytes() for a in arrays)
    return len(set(hvd_tf.allgather_object(mine))) == 1


def model_of(ns, seed):
    model = ns.sequential([ns.dense(4, activation="tanh", input_shape=(3,)), ns.dense(1)])
    rng = np.random.default_rng(seed)
    model.set_weights([rng.standard_normal(w.shape).astype(np.float32) for w in model.get_weights()])
    return model


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_distributed_fit_with_the_callbacks(pattern):
    version, make = PATTERNS[pattern]
    ns = make()
    model = model_of(ns, seed=hvd.rank())  # each rank its own start: the broadcast must make them one
    assert not same_on_all_ranks(model.get_weights())
    opt = hvd.DistributedOptimizer(ns.sgd(learning_rate=0.1))
    assert isinstance(opt, ns.sgd)
    model.compile(optimizer=opt, loss="mse")
    rng = np.random.default_rng(10 + hvd.rank())  # each rank its own data
    x = rng.standard_normal((8, 3)).astype(np.float32)
    y = rng.standard_normal((8, 1)).astype(np.float32)
    callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0), hvd.callbacks.MetricAverageCallback()]
    history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=callbacks)
    # Each callback became one of the model's Keras (Keras' History, after them, is one too).
    for cb in callbacks:
        assert isinstance(cb, ns.callback_base), (pattern, type(cb).__mro__)
    assert (version == 3) == (type(model).__module__.split(".")[0] == "keras")
    assert same_on_all_ranks(model.get_weights()), pattern
    assert same_on_all_ranks(history.history["loss"]), pattern


def test_mixing_keras_2_and_keras_3_objects_names_both_classes():
    k3_model = model_of(PATTERNS["import keras"][1](), seed=0)
    k2_optimizer = tf_keras.optimizers.SGD(learning_rate=0.1)
    with pytest.raises(TypeError) as e:
        hvd.elastic.KerasState(k3_model, optimizer=k2_optimizer)
    message = str(e.value)
    assert "keras.src.models.sequential.Sequential" in message and "Keras 3" in message
    assert "tf_keras.src.optimizers" in message and "SGD from Keras 2" in message
    with pytest.raises(TypeError, match=r"custom_objects\['Adam'\] is tf_keras\S*Adam from Keras 2.*"
                                        r"custom_objects\['Dense'\] is keras\S*Dense from Keras 3"):
        hvd.load_model("unread.keras", custom_optimizers=[tf_keras.optimizers.Adam],
                       custom_objects={"Dense": keras_package.layers.Dense})


def test_a_non_keras_optimizer_is_refused_by_name():
    with pytest.raises(TypeError, match=r"DistributedOptimizer\(optimizer='object' from builtins\): not a Keras"):
        hvd.DistributedOptimizer(object())
