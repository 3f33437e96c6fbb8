"""DistributedOptimizer for TF1-style optimizers (tf.compat.v1.train.Optimizer), as Horovod's
horovod.tensorflow.DistributedOptimizer: compute_gradients averages across ranks
(gradients.allreduce_gradients); apply_gradients and the rest are the wrapped optimizer's. A
Keras optimizer is handed to gj.tensorflow.keras.DistributedOptimizer, as Horovod does."""

import tensorflow as tf

from . import mpi_ops
from ._basics import global_process_set
from .compression import Compression
from .gradients import allreduce_gradients, scale_factors


class _DistributedOptimizer(tf.compat.v1.train.Optimizer):
    def __init__(self, optimizer, name, use_locking, compression, sparse_as_dense, op, gradient_predivide_factor,
                 process_set):
        self._optimizer = optimizer
        self._gj = dict(op=op, compression=compression, sparse_as_dense=sparse_as_dense,
                        gradient_predivide_factor=gradient_predivide_factor, process_set=process_set)
        super().__init__(name=name or f"Distributed{type(optimizer).__name__}", use_locking=use_locking)

    def compute_gradients(self, *args, **kwargs):
        pairs = self._optimizer.compute_gradients(*args, **kwargs)
        if not pairs:
            return pairs
        grads, variables = zip(*pairs)
        return list(zip(allreduce_gradients(list(grads), **self._gj), variables))

    def apply_gradients(self, *args, **kwargs):
        return self._optimizer.apply_gradients(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def _is_keras_optimizer(optimizer):
    for module in ("keras", "tf_keras"):
        try:
            mod = __import__(module)
            base = mod.optimizers.Optimizer
        except (ImportError, AttributeError):
            continue
        if isinstance(optimizer, base):
            return True
    return type(optimizer).__module__.startswith(("keras", "tf_keras"))


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense='', device_sparse='',
                         compression=Compression.none, sparse_as_dense=False, backward_passes_per_step=1,
                         op=mpi_ops.Average, gradient_predivide_factor=1.0, average_aggregated_gradients=False,
                         num_groups=0, groups=None, process_set=global_process_set):
    """optimizer wrapped so that its gradients are averaged across the process set."""
    if _is_keras_optimizer(optimizer):
        from .keras import DistributedOptimizer as keras_distributed
        return keras_distributed(optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse,
                                 compression=compression, sparse_as_dense=sparse_as_dense,
                                 gradient_predivide_factor=gradient_predivide_factor, op=op,
                                 backward_passes_per_step=backward_passes_per_step,
                                 average_aggregated_gradients=average_aggregated_gradients,
                                 groups=groups, process_set=process_set)
    if not isinstance(optimizer, tf.compat.v1.train.Optimizer):
        raise TypeError(f"DistributedOptimizer: optimizer={optimizer!r:.80} is neither a Keras optimizer nor a "
                        "tf.compat.v1.train.Optimizer")
    if backward_passes_per_step != 1:
        raise ValueError(f"DistributedOptimizer: backward_passes_per_step={backward_passes_per_step!r} is supported "
                         "for Keras optimizers only (gj.tensorflow.keras.DistributedOptimizer); pass 1 here")
    scale_factors(op, gradient_predivide_factor)
    return _DistributedOptimizer(optimizer, name, use_locking, compression, sparse_as_dense, op,
                                 gradient_predivide_factor, process_set)
