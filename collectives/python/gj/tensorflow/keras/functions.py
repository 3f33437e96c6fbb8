"""horovod.tensorflow.keras's functions on values: allreduce/allgather/broadcast/reducescatter of
anything tf.constant takes, broadcast_global_variables, load_model."""

import tensorflow as tf

import gj.tensorflow as hvd
from gj.tensorflow.functions import broadcast_global_variables  # noqa: F401 (Horovod's keras name)

from . import _backend
from .optimizer import is_distributed, make_settings, wrap_in_place


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0, op=None,
              compression=None):
    """The reduction of `value` (a tensor-compatible value, the same shape on every rank) over
    all ranks, as a tensor; op Average when neither op nor average says otherwise."""
    if average is not None:
        if op is not None:
            raise ValueError("allreduce(average={!r}, op={!r}): give op only (average is Horovod's "
                             "deprecated spelling of op=Average/Sum)".format(average, op))
        op = hvd.Average if average else hvd.Sum
    return hvd.allreduce(tf.constant(value, name=name), op=hvd.Average if op is None else op,
                         prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                         compression=hvd.Compression.none if compression is None else compression)


def allgather(value, name=None):
    """Every rank's `value` concatenated along the first dimension, in rank order."""
    return hvd.allgather(tf.constant(value, name=name))


def broadcast(value, root_rank, name=None):
    """`value` of rank root_rank, on every rank."""
    return hvd.broadcast(tf.constant(value, name=name), root_rank)


def reducescatter(value, name=None, op=None):
    """This rank's part of the reduction (op Average by default) of `value` over all ranks."""
    return hvd.reducescatter(tf.constant(value, name=name), op=hvd.Average if op is None else op)


def load_model(filepath, custom_optimizers=None, custom_objects=None, compression=None, legacy_opts=False):
    """keras.models.load_model, then the model's optimizer (with the state the file restored)
    made a DistributedOptimizer. A Keras 3 file is a .keras (or .h5) file; Keras 2 also reads
    SavedModel folders. custom_optimizers: optimizer classes the file may name (by class name);
    legacy_opts is accepted for Horovod's signature (the file says which optimizer it holds).
    The file is read by the Keras of the classes given (Keras 2 and 3 ones together: TypeError),
    else by tf.keras's Keras."""
    del legacy_opts
    objects = {cls.__name__: cls for cls in (custom_optimizers or [])}
    objects.update(custom_objects or {})
    # The Keras that reads the file: that of the classes the caller passes, else tf.keras's.
    k = _backend.keras_of("load_model", [("custom_objects[{!r}]".format(n), c) for n, c in sorted(objects.items())],
                          default=None) or _backend.keras()
    model = k.models.load_model(filepath, custom_objects=objects or None)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and not is_distributed(optimizer):
        wrap_in_place(optimizer, make_settings(compression=compression))
    return model
