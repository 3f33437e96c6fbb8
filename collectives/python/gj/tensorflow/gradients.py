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
                        gradient_predivide_factor=1.0, process_set=global_process_set, name=None, local=(),
                        scale_local_gradients=True, groups=None):
    """grads (a list; entries may be None or tf.IndexedSlices) reduced across the process set:
    a list of the same length and order. On a rank outside the process set they come back
    unchanged (Horovod's: the set's ranks average among themselves, the others keep theirs).
    local: positions whose gradients stay this rank's (divided by the set's size when
    scale_local_gradients); groups: None (every dense gradient in one grouped call) or a function
    from the dense positions to the lists of positions reduced together, one grouped call each."""
    grads = list(grads)
    ps = mpi_ops._ps(process_set, "allreduce_gradients")
    if not ps.included():
        return grads
    pre, post = scale_factors(op, gradient_predivide_factor)
    local = set(local)
    reduced_at = [i for i, g in enumerate(grads) if g is not None and i not in local]
    if sparse_as_dense:
        for i in reduced_at:
            if isinstance(grads[i], tf.IndexedSlices):
                grads[i] = tf.convert_to_tensor(grads[i])
    dense = [i for i in reduced_at if not isinstance(grads[i], tf.IndexedSlices)]
    out = list(grads)
    for group in ([dense] if groups is None else groups(dense)) if dense else []:
        reduced = mpi_ops.grouped_allreduce([grads[i] for i in group], op=op, compression=compression,
                                            prescale_factor=pre, postscale_factor=post, process_set=ps,
                                            name=name)
        for i, g in zip(group, reduced):
            out[i] = g
    for i in reduced_at:
        if isinstance(grads[i], tf.IndexedSlices):
            out[i] = mpi_ops.allreduce(grads[i], op=op, compression=compression, prescale_factor=pre,
                                       postscale_factor=post, process_set=ps)
    if scale_local_gradients and local:
        n = float(ps.size())
        for i in local:
            g = out[i]
            if isinstance(g, tf.IndexedSlices):
                out[i] = tf.IndexedSlices(g.values / n, g.indices, g.dense_shape)
            elif g is not None:
                out[i] = g / n
    return out
