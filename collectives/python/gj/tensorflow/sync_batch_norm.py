"""SyncBatchNormalization (Horovod's): batch normalization whose batch statistics are those of
the whole batch across the process set, on Keras 3 (tf.keras = keras) and Keras 2 (tf_keras,
TF_USE_LEGACY_KERAS=1). In training, each rank's sum, sum of squares and count over the
reduced axes travel in one grouped Sum allreduce (differentiable: its gradient is the Sum
allreduce of the output's gradient)."""

import tensorflow as tf

from . import mpi_ops
from ._basics import global_process_set


def _global_moments(x, axes, keepdims, process_set):
    x32 = tf.cast(x, tf.float32) if x.dtype in (tf.float16, tf.bfloat16) else x
    local_sum = tf.reduce_sum(x32, axis=axes, keepdims=True)
    local_sq = tf.reduce_sum(tf.square(x32), axis=axes, keepdims=True)
    count = tf.cast(tf.reduce_prod(tf.gather(tf.shape(x32), axes)), x32.dtype)
    total, total_sq, n = mpi_ops.grouped_allreduce([local_sum, local_sq, tf.reshape(count, [1])],
                                                   op=mpi_ops.Sum, process_set=process_set)
    mean = total / n[0]
    var = tf.maximum(total_sq / n[0] - tf.square(mean), 0.0)
    if not keepdims:
        mean, var = tf.squeeze(mean, axes), tf.squeeze(var, axes)
    return tf.cast(mean, x.dtype), tf.cast(var, x.dtype)


class SyncBatchNormalization(tf.keras.layers.BatchNormalization):
    """tf.keras.layers.BatchNormalization over the process set's whole batch."""

    def __init__(self, *args, process_set=global_process_set, **kwargs):
        if kwargs.pop("fused", None):
            raise ValueError("SyncBatchNormalization does not support fused=True (as Horovod)")
        super().__init__(*args, **kwargs)
        self._gj_process_set = process_set

    if hasattr(tf.keras.layers.BatchNormalization, "_calculate_mean_and_var"):
        # Keras 2 (tf_keras)
        def _calculate_mean_and_var(self, inputs, reduction_axes, keep_dims, mask=None):
            if mask is not None or self._gj_process_set.size() == 1:
                return super()._calculate_mean_and_var(inputs, reduction_axes, keep_dims, mask=mask)
            return _global_moments(inputs, list(reduction_axes), keep_dims, self._gj_process_set)
    else:
        # Keras 3
        def _moments(self, inputs, mask):
            if mask is not None or self._gj_process_set.size() == 1:
                return super()._moments(inputs, mask)
            return _global_moments(inputs, list(self._reduction_axes), False, self._gj_process_set)
