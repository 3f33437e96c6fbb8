"""gj.tensorflow.keras: the horovod.tensorflow.keras surface on Keras 3 and Keras 2 (tf_keras with
TF_USE_LEGACY_KERAS=1 set before TensorFlow is imported). docs/tensorflow.md, "Keras".

    import gj.tensorflow.keras as hvd
    hvd.init()
    opt = hvd.DistributedOptimizer(keras.optimizers.Adam(0.001 * hvd.size()))
    model.compile(optimizer=opt, loss=...)
    model.fit(..., callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                              hvd.callbacks.MetricAverageCallback()])
"""

from gj.tensorflow import (  # noqa: F401  the process-level names, as horovod.tensorflow.keras has them
    Adasum, Average, Compression, Max, Min, Product, ProcessSet, Sum, add_process_set, global_process_set,
    init, is_initialized, local_rank, local_size, rank, remove_process_set, shutdown, size)

from . import callbacks, elastic  # noqa: F401
from .functions import allgather, allreduce, broadcast, broadcast_global_variables, load_model, reducescatter
from .optimizer import create_distributed_optimizer


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="", compression=None,
                         sparse_as_dense=False, gradient_predivide_factor=1.0, op=None,
                         backward_passes_per_step=1, average_aggregated_gradients=False, num_groups=0,
                         groups=None, process_set=None, scale_local_gradients=True):
    """A new optimizer of `optimizer`'s class (from its config) whose step first averages the
    gradients over the ranks (op Average; Sum allowed) in one grouped allreduce, as Horovod's
    keras DistributedOptimizer does. device_dense/device_sparse are accepted and unused (gj
    places the reduction itself). backward_passes_per_step > 1 sums that many passes locally and
    reduces and applies on the last (divided by the count when average_aggregated_gradients).
    groups: an integer (that many grouped calls) or lists of variables reduced together.
    compression defaults to Compression.none, process_set to the global one."""
    del device_dense, device_sparse
    if num_groups != 0 and groups is None:
        groups = num_groups
    return create_distributed_optimizer(
        optimizer, name=name, compression=compression, sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor, op=op,
        backward_passes_per_step=backward_passes_per_step,
        average_aggregated_gradients=average_aggregated_gradients, groups=groups, process_set=process_set,
        scale_local_gradients=scale_local_gradients)


def PartialDistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="", compression=None,
                                sparse_as_dense=False, gradient_predivide_factor=1.0, op=None,
                                backward_passes_per_step=1, average_aggregated_gradients=False, groups=None,
                                process_set=None, local_layers=None, scale_local_gradients=True):
    """DistributedOptimizer whose gradients of local_layers' variables (a layer or a list of
    layers) stay local, as Horovod's (register_local_var for each)."""
    opt = DistributedOptimizer(optimizer, name=name, compression=compression, sparse_as_dense=sparse_as_dense,
                               gradient_predivide_factor=gradient_predivide_factor, op=op,
                               backward_passes_per_step=backward_passes_per_step,
                               average_aggregated_gradients=average_aggregated_gradients, groups=groups,
                               process_set=process_set, scale_local_gradients=scale_local_gradients)
    if local_layers is not None:
        layers = local_layers if isinstance(local_layers, (list, tuple)) else [local_layers]
        for layer in layers:
            for var in layer.trainable_weights:
                opt.register_local_var(var)
    return opt
