"""The GjStatus op (collectives/python/tf_status_op): a graph's gj op ends in it so that a
collective's failure reaches Session.run / a tf.function's caller as the TensorFlow error class
Horovod raises (FailedPreconditionError, InvalidArgumentError). TensorFlow reports a
numpy_function callback's exception by its Python type, and for gj's errors that is
UnknownError. The op is built against the installed TensorFlow with the library (next to this
file, or $GJ_TF_STATUS_OP); without it gj.tensorflow works the same except for those classes, and
each such error says so (missing())."""

import os

import tensorflow as tf

ENV = "GJ_TF_STATUS_OP"
_FILE = "_gj_tf_status.so"
_loaded = {}


def path():
    return os.environ.get(ENV) or os.path.join(os.path.dirname(os.path.abspath(__file__)), _FILE)


def module():
    """The loaded op module, or None (missing() says why)."""
    if "module" not in _loaded:
        where = path()
        if not os.path.exists(where):
            _loaded["module"], _loaded["why"] = None, f"{where} does not exist"
        else:
            try:
                _loaded["module"], _loaded["why"] = tf.load_op_library(where), None
            except (tf.errors.NotFoundError, OSError) as e:  # built against another TensorFlow
                _loaded["module"], _loaded["why"] = None, f"{where} does not load into TensorFlow {tf.__version__}: {e}"
    return _loaded["module"]


def missing():
    """The note a graph error carries when the op is missing (UnknownError instead of Horovod's class)."""
    module()
    return (f" [gj.tensorflow's GjStatus op is not available ({_loaded['why']}), so TensorFlow reports this "
            "graph error as UnknownError rather than Horovod's class: build gj with the TensorFlow "
            "environment (cmake -DGJ_TF_PYTHON=<its python>; docs/tensorflow.md) or set GJ_TF_STATUS_OP to the built "
            f"{_FILE}]")
