"""Averaging a list of gradients across ranks, the one helper DistributedGradientTape, the
TF1-style DistributedOptimizer and gj.tensorflow.keras's DistributedOptimizer share: every dense
gradient in ONE grouped allreduce (one agreement, one graph op), so a step issues the same
collectives in the same order on every rank, inside tf.function too. IndexedSlices are
allgathered (values and indices) unless sparse_as_dense; None stays None."""

import tensorflow as tf

from . import mpi_ops
from ._basics import global_process_set
from .compression import Compression


def scale_factors(op, gradient_predivide_factor):
    """(prescale, postscale) of Horovod's gradient_predivide_factor: 1/f before the sum and f
    after it (the Average itself divides by the size)."""
    if gradient_predivide_factor != 1.0:
        if op != mpi_ops.Average:
            raise ValueError(f"gradient_predivide_factor={gradient_predivide_factor!r} needs op=Average (as Horovod)")
        return 1.0 / gradient_predivide_factor, gradient_predivide_factor
    return 1.0, 1.0


def allreduce_gradients(grads, op=mpi_ops.Average, compression=Compression.none, sparse_as_dense=False,
                        gradient_predivide_factor=1.0, process_set=global_process_set, name=None):
    """grads (a list; entries may be None or tf.IndexedSlices) reduced across the process set:
    a list of the same length and order. On a rank outside the process set they come back
    unchanged (Horovod's: the set's ranks average among themselves, the others keep theirs)."""
    grads = list(grads)
    if not mpi_ops._ps(process_set, "allreduce_gradients").included():
        return grads
    pre, post = scale_factors(op, gradient_predivide_factor)
    if sparse_as_dense:
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
    dense = [i for i, g in enumerate(grads) if g is not None and not isinstance(g, tf.IndexedSlices)]
    out = list(grads)
    if dense:
        reduced = mpi_ops.grouped_allreduce([grads[i] for i in dense], op=op, compression=compression,
                                            prescale_factor=pre, postscale_factor=post, process_set=process_set,
                                            name=name)
        for i, g in zip(dense, reduced):
            out[i] = g
    for i, g in enumerate(grads):
        if isinstance(g, tf.IndexedSlices):
            out[i] = mpi_ops.allreduce(g, op=op, compression=compression, process_set=process_set)
    return out
