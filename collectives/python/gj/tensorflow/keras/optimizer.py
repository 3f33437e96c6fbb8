"""DistributedOptimizer for Keras optimizers, Keras 3 and Keras 2 (tf_keras).

Where the averaging happens: Keras 3's train_step calls optimizer.apply_gradients ->
optimizer.apply(grads, variables) directly (Horovod's hooks, get_gradients/_compute_gradients/
_aggregate_gradients, are never called there), so on Keras 3 the wrapper overrides `apply`; on
Keras 2 it overrides `apply_gradients` (minimize() and custom loops both end there). The
gradients of one step go out in ONE grouped allreduce (or one per explicit group), issued in
the order of the variables, so every rank's tf.function issues the same calls in the same order.

The wrapper is a subclass of the optimizer's own class (as Horovod's is) carrying that class's
name and module: model.save writes the optimizer as the original class (a plain Keras loads it),
its variables stay the optimizer's own (saved, loaded, broadcast like any optimizer's), and
load_model wraps a loaded optimizer in place so its restored state is kept.

Mixed precision: under the "mixed_float16" policy Keras wraps a compiled optimizer in a
LossScaleOptimizer unless it is one already, and that one applies the inner optimizer only when
this rank's gradients are finite. An allreduce inside the inner optimizer would then be skipped
by the rank with an overflow and the others would wait forever. So DistributedOptimizer wraps in
a LossScaleOptimizer first (under that policy) and sits outside it: the allreduce runs on every
rank before the finiteness check, and a non-finite gradient on one rank makes the reduced
gradient non-finite on all, so every rank skips the step and lowers its scale together.
"""

import inspect

import tensorflow as tf

from . import _backend
import gj.tensorflow as hvd
from gj.tensorflow.gradient_tape import _source_key as _key
from gj.tensorflow.gradients import allreduce_gradients


class _Settings:
    """What DistributedOptimizer was called with (a plain object: Keras' and TensorFlow's
    attribute tracking leave it alone, so it is neither saved nor broadcast)."""

    def __init__(self, compression, sparse_as_dense, op, gradient_predivide_factor, passes,
                 average_aggregated_gradients, groups, process_set, scale_local_gradients):
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        # Horovod splits the average around the sum: x / f before, * f / size after (op Average only).
        self.predivide = gradient_predivide_factor if op == hvd.Average else 1.0
        self.passes = passes
        self.average_aggregated_gradients = average_aggregated_gradients
        self.groups = groups
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self.local_vars = set()
        # backward_passes_per_step > 1: the local sums and the pass counter, created at the first
        # step (outside any tf.function through init_scope), one per gradient position.
        self.counter = None
        # The gradients _compute_gradients returned already reduced, by id; holding them keeps
        # the ids from being reused until apply_gradients takes them.
        self.reduced = {}
        self.accumulated = None


def _split_even(items, n):
    """Horovod's split_list: n consecutive parts whose lengths differ by at most one."""
    d, r = divmod(len(items), n)
    return [items[i * d + min(i, r):(i + 1) * d + min(i + 1, r)] for i in range(n)]


class _Reducer:
    """The cross-rank part shared by the Keras 3 and Keras 2 wrappers."""

    def _gj_reduce(self, grads, variables):
        s = self._gj
        grads = list(grads)
        refs = [_key(v) for v in variables] if variables is not None else [None] * len(grads)
        local = [i for i, ref in enumerate(refs) if ref is not None and ref in s.local_vars]
        return allreduce_gradients(grads, op=s.op, compression=s.compression, sparse_as_dense=s.sparse_as_dense,
                                   gradient_predivide_factor=s.predivide, process_set=s.process_set, local=local,
                                   scale_local_gradients=s.scale_local_gradients,
                                   groups=lambda dense: self._gj_groups(dense, variables))

    def _gj_groups(self, dense, variables):
        groups = self._gj.groups
        if not dense:
            return []
        if groups is None:
            return [dense]
        if isinstance(groups, int):
            return [g for g in _split_even(dense, groups) if g]
        if variables is None:
            raise ValueError("DistributedOptimizer(groups=<lists of variables>) needs the variables with "
                             "the gradients: call apply_gradients(zip(grads, vars))")
        position = {_key(variables[i]): i for i in dense}
        out = []
        for group in groups:
            members = [position.pop(_key(v)) for v in group if _key(v) in position]
            if members:
                out.append(sorted(members))
        out.extend([i] for i in sorted(position.values()))
        return out

    @property
    def _agg_helper(self):
        """Horovod's name for the backward-pass aggregation state (scripts and Horovod's tests
        read its `counter`: passes since the last reduction); None when backward_passes_per_step
        is 1, as in Horovod."""
        return None if self._gj.passes == 1 else self._gj

    def register_local_var(self, var):
        """Horovod's: the gradient of `var` stays local (not reduced; divided by the process
        set's size when scale_local_gradients)."""
        self._gj.local_vars.add(_key(var))

    # ---- backward_passes_per_step > 1 ----------------------------------------------------
    def _gj_accumulate(self, grads):
        """Adds this pass's gradients to the local sums; returns (sums as tensors, is the
        N-th pass). Sparse gradients need sparse_as_dense here, as in Horovod."""
        s = self._gj
        for g in grads:
            if isinstance(g, tf.IndexedSlices) and not s.sparse_as_dense:
                raise ValueError("DistributedOptimizer(backward_passes_per_step={}) got a sparse gradient "
                                 "(tf.IndexedSlices): pass sparse_as_dense=True".format(s.passes))
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        if s.accumulated is None:
            with tf.init_scope():
                s.counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="gj_backward_passes")
                s.accumulated = [None if g is None else
                                 tf.Variable(tf.zeros(g.shape, g.dtype), trainable=False, name="gj_accumulated")
                                 for g in grads]
        if len(s.accumulated) != len(grads):
            raise ValueError("DistributedOptimizer: {} gradients this pass, {} at the first one: "
                             "backward_passes_per_step > 1 needs the same variables every pass"
                             .format(len(grads), len(s.accumulated)))
        sums = []
        for a, g in zip(s.accumulated, grads):
            sums.append(None if g is None or a is None else a.assign_add(g).read_value())
        s.counter.assign_add(1)
        return sums, tf.equal(s.counter, s.passes)

    def _gj_reduce_accumulated(self, sums, variables):
        s = self._gj
        reduced = self._gj_reduce(sums, variables)
        if s.average_aggregated_gradients:
            reduced = [None if g is None else g / s.passes for g in reduced]
        s.counter.assign(0)
        for a in s.accumulated:
            if a is not None:
                a.assign(tf.zeros_like(a))
        return reduced

    def _gj_skip_pass(self):
        # Horovod counts every backward pass as an optimizer iteration.
        self.iterations.assign_add(1)


class _Keras3(_Reducer):
    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        variables = list(trainable_variables) if trainable_variables is not None else None
        if len(grads) == 0:
            return super().apply(grads, trainable_variables)
        if self._gj.passes == 1:
            return super().apply(self._gj_reduce(grads, variables), variables)
        if not self.built and variables is not None:
            self.build(variables)
            self.built = True
        sums, last = self._gj_accumulate(grads)

        def reduce_and_apply():
            super(_Keras3, self).apply(self._gj_reduce_accumulated(sums, variables), variables)
            return tf.constant(True)

        def skip():
            self._gj_skip_pass()
            return tf.constant(False)

        tf.cond(last, reduce_and_apply, skip)


class _Keras2(_Reducer):
    def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
        """Horovod's private hook, which scripts written for Keras 2 call before apply_gradients:
        the gradients of `loss`, reduced across ranks when backward_passes_per_step is 1 (the
        apply_gradients that gets them does not reduce them again); with more passes this
        pass's local gradients, which apply_gradients accumulates and reduces on the last pass."""
        base = super()
        if hasattr(base, "_compute_gradients"):  # tf_keras.optimizers.legacy
            pairs = base._compute_gradients(loss, var_list, grad_loss=grad_loss, tape=tape)
        elif grad_loss is not None:
            raise ValueError("DistributedOptimizer._compute_gradients: grad_loss={!r} needs a legacy Keras 2 "
                             "optimizer (tf.keras.optimizers.legacy.*); {} takes none"
                             .format(grad_loss, type(self).__name__))
        else:
            pairs = base.compute_gradients(loss, var_list, tape=tape)
        pairs = list(pairs)
        if self._gj.passes != 1:
            return pairs
        variables = [v for _, v in pairs]
        reduced = self._gj_reduce([g for g, _ in pairs], variables)
        self._gj.reduced = {id(g): g for g in reduced if g is not None}
        return list(zip(reduced, variables))

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        pairs = list(grads_and_vars)
        grads = [g for g, _ in pairs]
        variables = [v for _, v in pairs]
        reduced, self._gj.reduced = self._gj.reduced, {}
        if reduced and all(id(g) in reduced for g in grads if g is not None):
            return super().apply_gradients(pairs, *args, **kwargs)  # _compute_gradients reduced them
        if self._gj.passes == 1:
            return super().apply_gradients(list(zip(self._gj_reduce(grads, variables), variables)), *args, **kwargs)
        sums, last = self._gj_accumulate(grads)

        def reduce_and_apply():
            super(_Keras2, self).apply_gradients(
                list(zip(self._gj_reduce_accumulated(sums, variables), variables)), *args, **kwargs)
            return tf.constant(True)

        def skip():
            self._gj_skip_pass()
            return tf.constant(False)

        tf.cond(last, reduce_and_apply, skip)
        return self.iterations


class CallableList(list):
    """Horovod's shim: the optimizer's variables as a list that `opt.variables()` also returns
    (Keras 3 and Keras 2's current optimizers made `variables` a property)."""

    def __call__(self):
        return self


def _variables_property(base):
    prop = inspect.getattr_static(base, "variables", None)
    if not isinstance(prop, property):
        return {}
    return {"variables": property(lambda self: CallableList(prop.fget(self)))}


_classes = {}


def distributed_class(base):
    """The wrapper class of a Keras optimizer class (one per class, so isinstance works)."""
    if is_distributed(base):
        return base
    if base not in _classes:
        # The base's own Keras decides, whatever tf.keras is (a script may import either).
        mixin = _Keras3 if _backend.is_keras3(_backend.keras_of_class(base)) else _Keras2
        # The original's name and module: files written by model.save name the plain class.
        _classes[base] = type(base.__name__, (mixin, base),
                              {"__module__": base.__module__, "__qualname__": base.__qualname__,
                               "_gj_distributed": True, **_variables_property(base)})
    return _classes[base]


def is_distributed(obj_or_class):
    return getattr(obj_or_class, "_gj_distributed", False)


def make_settings(compression=None, sparse_as_dense=False, gradient_predivide_factor=1.0, op=None,
                  backward_passes_per_step=1, average_aggregated_gradients=False, groups=None,
                  process_set=None, scale_local_gradients=True):
    op = hvd.Average if op is None else op
    if op != hvd.Average and op != hvd.Sum:
        raise ValueError("DistributedOptimizer(op={!r}): op must be Average or Sum, as in Horovod".format(op))
    if gradient_predivide_factor <= 0:
        raise ValueError("DistributedOptimizer(gradient_predivide_factor={!r}): must be > 0"
                         .format(gradient_predivide_factor))
    if gradient_predivide_factor != 1.0 and op != hvd.Average:
        raise ValueError("DistributedOptimizer(gradient_predivide_factor={!r}) needs op=Average, got op={!r}"
                         .format(gradient_predivide_factor, op))
    if not isinstance(backward_passes_per_step, int) or backward_passes_per_step < 1:
        raise ValueError("DistributedOptimizer(backward_passes_per_step={!r}): must be an integer >= 1"
                         .format(backward_passes_per_step))
    if groups is not None and not (isinstance(groups, list) or (isinstance(groups, int) and groups > 0)):
        raise ValueError("DistributedOptimizer(groups={!r}): a positive integer or a list of lists of "
                         "tf.Variable".format(groups))
    return _Settings(hvd.Compression.none if compression is None else compression, sparse_as_dense, op,
                     float(gradient_predivide_factor), backward_passes_per_step, average_aggregated_gradients,
                     groups, hvd.global_process_set if process_set is None else process_set,
                     scale_local_gradients)


def wrap_in_place(optimizer, settings):
    """Makes `optimizer` (built or not, with its variables and state) a DistributedOptimizer."""
    optimizer.__class__ = distributed_class(type(optimizer))
    optimizer._gj = settings
    return optimizer


def _check_optimizer(optimizer):
    """The Keras of `optimizer` (and of the one a LossScaleOptimizer wraps), from their classes."""
    named = [("optimizer", optimizer)]
    inner = getattr(optimizer, "inner_optimizer", None)
    if inner is not None:
        named.append(("optimizer.inner_optimizer", inner))
    k = _backend.keras_of("DistributedOptimizer", named)
    bases = [] if k is None else [k.optimizers.Optimizer]
    legacy = getattr(k.optimizers, "legacy", None) if k is not None else None
    if legacy is not None and not _backend.is_keras3(k):
        bases.append(legacy.Optimizer)
    if not bases or not isinstance(optimizer, tuple(bases)):
        raise TypeError(
            "DistributedOptimizer(optimizer={!r} from {}): not a Keras optimizer (an instance of a class of "
            "keras.optimizers or tf_keras.optimizers, as tf.keras.optimizers.Adam(...) makes)".format(
                type(optimizer).__name__, type(optimizer).__module__))
    return k


def create_distributed_optimizer(optimizer, name=None, **kwargs):
    """A new DistributedOptimizer from `optimizer`'s config (Horovod's way: the argument is left
    as it is), wrapped in a LossScaleOptimizer first under the mixed_float16 policy."""
    k = _check_optimizer(optimizer)
    if is_distributed(optimizer):
        raise ValueError("DistributedOptimizer(optimizer={!r}): already a DistributedOptimizer; wrap the "
                         "plain optimizer once".format(type(optimizer).__name__))
    settings = make_settings(**kwargs)
    if _backend.global_policy_name(k) == "mixed_float16" and not _backend.is_loss_scale_optimizer(optimizer):
        optimizer = _backend.loss_scale_optimizer_class(k)(optimizer)
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    new = distributed_class(type(optimizer)).from_config(config)
    new._gj = settings
    return new
