"""DistributedGradientTape and PartialDistributedGradientTape (Horovod's): a tape whose
gradient() averages the gradients across ranks (gradients.allreduce_gradients), except those of
sources registered as local (register_local_source), which are divided by the set's size when
scale_local_gradients (Horovod's default)."""

import tensorflow as tf

from . import mpi_ops
from ._basics import global_process_set
from .compression import Compression
from .gradients import allreduce_gradients


def _source_key(source):
    """A hashable identity of a gradient source: a tf.Variable's ref(), a Keras 3 Variable's (which
    has no ref()) through the tf.Variable it holds, so either spelling of one variable matches."""
    if hasattr(source, "ref"):
        return source.ref()
    inner = getattr(source, "value", None)
    if hasattr(inner, "ref"):
        return inner.ref()
    return id(source)


class _DistributedMixin:
    def register_local_source(self, source):
        """source (a tf.Variable or Keras Variable) keeps its local gradient: no allreduce."""
        self._gj_local.add(_source_key(source))

    def get_local_and_global_gradients(self, target, sources, output_gradients=None):
        """gradient()'s results split as Horovod's: ([(local source, its gradient)], [(other
        source, its reduced gradient)])."""
        grads = tf.nest.flatten(self.gradient(target, sources, output_gradients))
        local, shared = [], []
        for source, grad in zip(tf.nest.flatten(sources), grads):
            (local if _source_key(source) in self._gj_local else shared).append((source, grad))
        return local, shared

    def gradient(self, target, sources, output_gradients=None, use_generic_names=False, **kwargs):
        grads = super().gradient(target, sources, output_gradients, **kwargs)
        flat_sources = tf.nest.flatten(sources)
        flat = list(tf.nest.flatten(grads))  # None and IndexedSlices stay leaves
        cfg = self._gj_config
        local = [i for i, s in enumerate(flat_sources) if _source_key(s) in self._gj_local]
        out = allreduce_gradients(flat, op=cfg["op"], compression=cfg["compression"],
                                  sparse_as_dense=cfg["sparse_as_dense"],
                                  gradient_predivide_factor=cfg["gradient_predivide_factor"],
                                  process_set=cfg["process_set"], local=local,
                                  scale_local_gradients=cfg["scale_local_gradients"])
        return tf.nest.pack_sequence_as(grads, out)


def DistributedGradientTape(gradtape, device_dense='', device_sparse='', compression=Compression.none,
                            sparse_as_dense=False, op=mpi_ops.Average, gradient_predivide_factor=1.0,
                            num_groups=0, groups=None, process_set=global_process_set, scale_local_gradients=True):
    """gradtape (a tf.GradientTape, used or not yet) as a tape whose gradient() averages across the
    process set. num_groups/groups are accepted: gj reduces every gradient in one grouped call."""
    if not isinstance(gradtape, tf.GradientTape):
        raise TypeError(f"DistributedGradientTape: gradtape={gradtape!r:.80} is not a tf.GradientTape")
    if op == mpi_ops.Adasum and gradient_predivide_factor != 1.0:
        raise ValueError("DistributedGradientTape: gradient_predivide_factor needs op=Average")
    cls = type(gradtape.__class__.__name__, (_DistributedMixin, gradtape.__class__), {})
    tape = cls.__new__(cls)
    tape.__dict__.update(gradtape.__dict__)
    tape._gj_local = set()
    tape._gj_config = dict(op=op, compression=compression, sparse_as_dense=sparse_as_dense,
                           gradient_predivide_factor=gradient_predivide_factor, process_set=process_set,
                           scale_local_gradients=scale_local_gradients)
    return tape


def PartialDistributedGradientTape(gradtape, device_dense='', device_sparse='', compression=Compression.none,
                                   sparse_as_dense=False, op=mpi_ops.Average, gradient_predivide_factor=1.0,
                                   num_groups=0, groups=None, process_set=global_process_set, local_layers=None,
                                   scale_local_gradients=True):
    """DistributedGradientTape whose local_layers' (a Keras layer or a list) trainable weights keep
    their local gradients."""
    if local_layers is None:
        local_layers = []
    elif not isinstance(local_layers, (list, tuple)):
        local_layers = [local_layers]
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression, sparse_as_dense, op,
                                   gradient_predivide_factor, num_groups, groups, process_set,
                                   scale_local_gradients)
    for layer in local_layers:
        if not hasattr(layer, "trainable_weights"):
            raise ValueError(f"PartialDistributedGradientTape: local_layers has {layer!r:.80}, not a Keras layer")
        for var in layer.trainable_weights:
            tape.register_local_source(var)
    return tape
