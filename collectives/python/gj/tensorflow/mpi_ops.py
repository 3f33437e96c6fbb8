"""gj.tensorflow's collectives on tf.Tensors, eagerly and inside tf.function, with Horovod's
gradients (allreduce, grouped_allreduce, allgather, grouped_allgather, broadcast, alltoall,
reducescatter, grouped_reducescatter).

How a collective enters the graph (docs/tensorflow.md, "Design"): one op per call (per group
for the grouped ones), stateful, so tf.function's automatic control dependencies keep every
rank's collectives in the order the Python code made them, which gj's agreement needs. On the
"ops" path (_ops.path()) that op is a compiled AsyncOpKernel (collectives/python/tf_ops) that
runs the agreement and the library's calls on the tensors' own memory on the set's completion
thread; eagerly TensorFlow runs the same kernel. On the "numpy_function" fallback (the compiled ops absent)
it is one tf.numpy_function whose Python body is _host.py's blocking collective, and eagerly
that body runs on the tensor's numpy() value. Either way errors reach the caller as Horovod's
classes (HorovodInternalError, TypeError, ValueError eagerly; FailedPrecondition and
InvalidArgument in graphs). XLA has no kernel for either: under jit_compile=True each op refuses
with an error that says how to turn it off.
"""

import itertools
import re
import struct

import numpy as np
import tensorflow as tf

from .. import _lib
from ..common import timeline as _timeline
from ..common.exceptions import HorovodInternalError
from . import _basics, _host, _ops
from .exceptions import TensorFlowHorovodInternalError, TensorFlowInvalidArgumentError, translated
from ._basics import global_process_set
from .compression import Compression
from ..common.reduce_ops import Adasum, Average, Max, Min, Product, Sum  # noqa: F401 (Horovod's API)
from ..common.reduce_ops import OP_NAMES, adasum_refused, factors as _factors, library_op, resolve as _resolve

_names = itertools.count()


def _in_xla_context():
    try:
        from tensorflow.python.ops import control_flow_util
        graph = tf.compat.v1.get_default_graph()
        return control_flow_util.GraphOrParentsInXlaContext(graph)
    except (ImportError, AttributeError):
        return False


def _refuse_xla(what):
    if _in_xla_context():
        raise ValueError(
            f"{what}: gj.tensorflow's collectives cannot run inside an XLA-compiled function "
            "(jit_compile=True): XLA has no kernel for them (they wait for the other ranks). Turn XLA off for "
            "the function that calls them: tf.function(jit_compile=False), or model.compile(..., jit_compile=False) in Keras")


def as_tensor(value, what, argument="tensor"):
    """value as a tf.Tensor (a tf.Variable reads its value); TypeError naming the argument when
    TensorFlow cannot make one of it."""
    if isinstance(value, tf.Tensor):
        return value
    try:
        return tf.convert_to_tensor(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: {argument}={value!r:.80} (a {type(value).__name__}) is not a tensor and "
                        f"TensorFlow cannot make one of it: {e}") from None


def check_dtype(t, what, reduce, argument="tensor"):
    """TypeError naming the argument and dtype when gj cannot take t's dtype."""
    name = t.dtype.name
    if reduce and name not in _host.REDUCED:
        raise TypeError(f"{what}: {argument} has dtype {name}, which gj cannot reduce; use one of "
                        f"{', '.join(_host.REDUCED)}")
    if not reduce and (t.dtype == tf.string or t.dtype == tf.variant or t.dtype == tf.resource):
        raise TypeError(f"{what}: {argument} has dtype {name}, which gj cannot move (numeric and bool tensors only)")


def on_host(operation, name, body, *arrays):
    """body(*arrays) now, on numpy arrays: the timeline's name for it, gj's errors as TensorFlow's."""
    with _timeline.naming(operation, name):
        return translated(body, *arrays)


def _call(what, operation, name, body, inputs, touts, compiled=None):
    """The collective's outputs (a list of tensors): on the "ops" path compiled(*inputs, name=)
    (the compiled op; None: this call has none), else body(*numpy arrays) ->
    list of numpy arrays, run eagerly or as one numpy_function."""
    if compiled is not None and _ops.module() is not None:
        return _compiled(what, operation, compiled, inputs)

    def named_body(*arrays):
        return on_host(operation, name, body, *arrays)

    if tf.executing_eagerly():
        outs = named_body(*[t.numpy() for t in inputs])
        return [tf.convert_to_tensor(o, dtype=d) for o, d in zip(outs, touts)]
    _refuse_xla(what)
    _basics.require_init(what)
    op_name = f"Gj{operation.title().replace('_', '')}_{next(_names)}"
    status = _ops.module()
    if status is None:
        def noted_body(*arrays):
            try:
                return named_body(*arrays)
            except HorovodInternalError as e:
                raise TensorFlowHorovodInternalError.of(e).noted(_ops.missing()) from None
        return _in_order(lambda: tf.numpy_function(noted_body, list(inputs), list(touts), stateful=True,
                                                   name=op_name))

    def status_body(*arrays):
        """The outputs and (0, b""), or empty outputs and the error's TensorFlow code and message."""
        try:
            return list(named_body(*arrays)) + [np.int32(0), b""]
        except HorovodInternalError as e:
            code, message = tf.errors.FAILED_PRECONDITION, str(e)
        except ValueError as e:
            code, message = tf.errors.INVALID_ARGUMENT, str(e)
        return [np.zeros(0, dtype=t.as_numpy_dtype) for t in touts] + [np.int32(code), message.encode()]

    def make():
        outs = tf.numpy_function(status_body, list(inputs), list(touts) + [tf.int32, tf.string], stateful=True,
                                 name=op_name)
        return status.gj_status(outs[-2], outs[-1], outs[:-2], name=f"{op_name}_status")
    return _in_order(make)


_EAGER_SUFFIX = re.compile(r"\s*\[Op:Gj\w+\].*$", re.S)


def _compiled(what, operation, compiled, inputs):
    """The compiled op made eagerly (its errors as gj.tensorflow's eager classes) or in the graph,
    in issue order."""
    if _ops.cpu_only():
        with tf.device("/device:CPU:0"):
            return _compiled_here(what, operation, compiled, inputs)
    return _compiled_here(what, operation, compiled, inputs)


def _compiled_here(what, operation, compiled, inputs):
    if tf.executing_eagerly():
        try:
            return list(compiled(*inputs, name=None))
        except tf.errors.FailedPreconditionError as e:
            message = _EAGER_SUFFIX.sub("", e.message)
            raise TensorFlowHorovodInternalError.of(HorovodInternalError(what, _lib.INVALID_USAGE, "")).reworded(
                message) from None
        except tf.errors.InvalidArgumentError as e:
            raise TensorFlowInvalidArgumentError(_EAGER_SUFFIX.sub("", e.message)) from None
    _refuse_xla(what)
    _basics.require_init(what)
    op_name = f"Gj{operation.title().replace('_', '')}_{next(_names)}"
    return _in_order(lambda: list(compiled(*inputs, name=op_name)))


def _bits(x):
    """A factor as its float64 bits (the ops' attribute: TensorFlow's float attributes are 32-bit)."""
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


def _widen(x):
    """(x in a dtype the library reduces, the dtype to cast back to or None): int8/int16/uint16
    are reduced in int32, the same wrap-around (_host.WIDENED)."""
    if x.dtype.name in _host.WIDENED:
        return tf.cast(x, tf.int32), x.dtype
    return x, None


def _narrow(y, back):
    return y if back is None else tf.cast(y, back)


def _reduce_signature(call, xs, op, pre, post):
    return (f"call={call}, dtypes=({', '.join(x.dtype.name for x in xs)}), op={OP_NAMES[op]}, "
            f"prescale={pre!r}, postscale={post!r}")


def _in_order(make):
    """make() -> the op's outputs, issued after the graph's previous gj op. tf.function's
    automatic control dependencies order stateful ops already; a TF1 graph (tf.compat.v1,
    Session.run) has none, and its executor may start independent ops in any order, so each
    gj op there depends on the one made before it: creation order, the same on every rank."""
    graph = tf.compat.v1.get_default_graph()
    if getattr(graph, "_gj_automatic_order", None) is None:
        from tensorflow.python.framework.func_graph import FuncGraph
        graph._gj_automatic_order = isinstance(graph, FuncGraph)
    if graph._gj_automatic_order:
        return make()
    last = getattr(graph, "_gj_last_op", None)
    with tf.control_dependencies([last] if last is not None else []):
        outs = make()
    first = outs[0] if isinstance(outs, (list, tuple)) else outs
    graph._gj_last_op = first.op
    return outs


def _ps(process_set, what):
    return _basics.registered(process_set, what)


# ---- allreduce -------------------------------------------------------------------------------
def _allreduce(tensor, op=Sum, prescale_factor=1.0, postscale_factor=1.0, name=None,
               process_set=global_process_set, what="allreduce"):
    """The raw differentiable allreduce (no compression, no IndexedSlices): Horovod's _allreduce."""
    pre, post = _factors(prescale_factor, postscale_factor, what)
    check_dtype(tensor, what, reduce=True)

    @tf.custom_gradient
    def op_(x):
        y = _call(what, "allreduce", name, lambda a: [_host.allreduce(a, op, pre, post, process_set, what)],
                  [x], [x.dtype], _adasum_op(pre, post, process_set, what) if op == Adasum else
                  _allreduce_op(op, pre, post, process_set, what))[0]
        y.set_shape(x.shape)

        def grad(dy):
            return _allreduce(dy, op, pre, post, None, process_set, what)
        return y, grad
    return op_(tensor)


def _adasum_op(pre, post, process_set, what):
    """op=Adasum's compiled form: one GjAdasum per tensor (each its own agreement, as
    _host.grouped_allreduce), the factors applied around it in the tensor's dtype as _host does."""
    def make(*xs, name):
        out = []
        for x in xs:
            if x.dtype.name not in ("float16", "float32", "float64"):
                raise TypeError(f"{what}: op=Adasum needs a floating-point tensor, got dtype {x.dtype.name}")
            if pre != 1.0:
                x = x * tf.constant(pre, x.dtype)
            y = _ops.module().gj_adasum(x, process_set_id=_ops.bind(process_set, what), what=what, name=name,
                                        signature=f"call=allreduce, dtype={x.dtype.name}, op=Adasum")
            out.append(y * tf.constant(post, y.dtype) if post != 1.0 else y)
        return out
    return make


def _allreduce_op(op, pre, post, process_set, what):
    def make(x, name):
        x, back = _widen(x)
        y = _ops.module().gj_allreduce(x, reduce_op=library_op(op, what), prescale=_bits(pre), postscale=_bits(post),
                                       process_set_id=_ops.bind(process_set, what), what=what, name=name,
                                       signature=_reduce_signature("allreduce", [x], op, pre, post))
        return [_narrow(y, back)]
    return make


def allreduce(tensor, average=None, device_dense='', device_sparse='', compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, name=None, process_set=global_process_set,
              ignore_name_scope=False):
    """tensor reduced over the process set (default op Average); an IndexedSlices is allgathered
    (values and indices), as Horovod does. Differentiable."""
    what = "allreduce"
    op = _resolve(op, average, what)
    _ps(process_set, what)
    if isinstance(tensor, tf.IndexedSlices):
        if op == Adasum:
            raise NotImplementedError("allreduce: op=Adasum does not support tf.IndexedSlices (as Horovod); pass "
                                      "sparse_as_dense=True to DistributedOptimizer")
        if op not in (Sum, Average):
            raise NotImplementedError("allreduce: only Sum and Average support tf.IndexedSlices (as Horovod)")
        if prescale_factor != 1.0 or postscale_factor != 1.0:
            raise NotImplementedError("allreduce: pre/postscale_factor are not supported with tf.IndexedSlices")
        values = allgather(tensor.values, process_set=process_set)
        indices = allgather(tensor.indices, process_set=process_set)
        if op == Average:
            values = values / tf.cast(process_set.size(), values.dtype)
        return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    tensor = as_tensor(tensor, what)
    compressed, ctx = compression.compress(tensor)
    out = _allreduce(compressed, op, prescale_factor, postscale_factor, name, process_set, what)
    return compression.decompress(out, ctx)


def _grouped_allreduce(tensors, op, pre, post, name, process_set, what="grouped_allreduce"):
    for i, t in enumerate(tensors):
        check_dtype(t, what, reduce=True, argument=f"tensors[{i}]")

    @tf.custom_gradient
    def op_(*xs):
        ys = _call(what, "grouped_allreduce", name,
                   lambda *arrays: _host.grouped_allreduce(arrays, op, pre, post, process_set, what),
                   xs, [x.dtype for x in xs], _adasum_op(pre, post, process_set, what) if op == Adasum else
                   _grouped_op("gj_grouped_allreduce", "grouped_allreduce", op, pre, post, process_set, what))
        for x, y in zip(xs, ys):
            y.set_shape(x.shape)

        def grad(*dys):
            return _grouped_allreduce(list(dys), op, pre, post, None, process_set, what)
        return ys, grad
    return list(op_(*tensors))


def _grouped_op(kernel, call, op, pre, post, process_set, what):
    """The compiled grouped allreduce / reducescatter of a list (one op, one agreement)."""
    def make(*xs, name):
        wide = [_widen(x) for x in xs]
        ys = getattr(_ops.module(), kernel)(
            [w for w, _ in wide], reduce_op=library_op(op, what), prescale=_bits(pre), postscale=_bits(post),
            process_set_id=_ops.bind(process_set, what), what=what, name=name,
            signature=_reduce_signature(call, [w for w, _ in wide], op, pre, post))
        return [_narrow(y, back) for y, (_, back) in zip(ys, wide)]
    return make


def grouped_allreduce(tensors, average=None, device_dense='', device_sparse='', compression=Compression.none,
                      op=None, prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set,
                      ignore_name_scope=False, name=None):
    """allreduce of every tensor of the list in one agreement and one library call per dtype (one
    graph op). Differentiable."""
    what = "grouped_allreduce"
    op = _resolve(op, average, what)
    pre, post = _factors(prescale_factor, postscale_factor, what)
    _ps(process_set, what)
    tensors = list(tensors)
    if not tensors:
        return []
    if any(isinstance(t, tf.IndexedSlices) for t in tensors):
        return [allreduce(t, op=op, compression=compression, prescale_factor=pre, postscale_factor=post,
                          process_set=process_set) for t in tensors]
    tensors = [as_tensor(t, what, f"tensors[{i}]") for i, t in enumerate(tensors)]
    packed = [compression.compress(t) for t in tensors]
    outs = _grouped_allreduce([c for c, _ in packed], op, pre, post, name, process_set, what)
    return [compression.decompress(o, ctx) for o, (_, ctx) in zip(outs, packed)]


# ---- allgather -------------------------------------------------------------------------------
def _row_counts(x, process_set, what):
    """Every rank's first dimension of x (a graph-friendly int32 vector)."""
    d = tf.reshape(tf.shape(x)[0], [1])
    return tf.reshape(allgather(d, process_set=process_set, name=None), [process_set.size()])


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Every rank's tensor concatenated along dimension 0 in rank order (the first dimension may
    differ per rank). Differentiable: the gradient is the Average allreduce of the output's
    gradient, this rank's rows of it (Horovod's)."""
    what = "allgather"
    _ps(process_set, what)
    tensor = as_tensor(tensor, what)
    check_dtype(tensor, what, reduce=False)
    if tensor.shape.rank == 0:
        raise ValueError(f"{what}: tensor is a scalar (shape ()); it needs a first dimension to concatenate on "
                         "(reshape it to [1])")

    def gather(x):
        y = _call(what, "allgather", name, lambda a: [_host.allgather(a, process_set, what)], [x], [x.dtype],
                  lambda x, name: [_ops.module().gj_allgather(
                      x, process_set_id=_ops.bind(process_set, what), what=what, name=name,
                      signature=f"call=allgather, dtype={x.dtype.name}")])[0]
        y.set_shape(tf.TensorShape([None]).concatenate(x.shape[1:]))
        return y

    if not tensor.dtype.is_floating:
        return gather(tensor)

    @tf.custom_gradient
    def op_(x):
        y = gather(x)

        def grad(dy):
            dy = _allreduce(dy, Average, process_set=process_set, what=what)
            rows = _row_counts(x, process_set, what)
            return tf.split(dy, rows, axis=0)[process_set.rank()]
        return y, grad
    return op_(tensor)


def grouped_allgather(tensors, name=None, ignore_name_scope=False, process_set=global_process_set):
    """allgather of each tensor of the list. Differentiable."""
    return [allgather(t, name=name, process_set=process_set) for t in tensors]


# ---- broadcast -------------------------------------------------------------------------------
def broadcast(tensor, root_rank, name=None, ignore_name_scope=False, process_set=global_process_set):
    """root_rank's tensor (root_rank: a global rank) on every rank of the set. Differentiable:
    the gradient is the Average allreduce of the output's gradient on root_rank, zeros elsewhere."""
    what = "broadcast"
    _ps(process_set, what)
    tensor = as_tensor(tensor, what)
    check_dtype(tensor, what, reduce=False)
    _host.set_root(process_set, root_rank, what)

    def bcast(x):
        y = _call(what, "broadcast", name, lambda a: [_host.broadcast(a, root_rank, process_set, what)],
                  [x], [x.dtype], lambda x, name: [_ops.module().gj_broadcast(
                      x, root=_host.set_root(process_set, root_rank, what), what=what, name=name,
                      process_set_id=_ops.bind(process_set, what),
                      signature=f"call=broadcast, dtype={x.dtype.name}, root={int(root_rank)}")])[0]
        y.set_shape(x.shape)
        return y

    if not tensor.dtype.is_floating:
        return bcast(tensor)

    @tf.custom_gradient
    def op_(x):
        y = bcast(x)

        def grad(dy):
            g = _allreduce(dy, Average, process_set=process_set, what=what)
            return g if _basics.rank() == root_rank else g * 0
        return y, grad
    return op_(tensor)


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Assigns root_rank's values to variables (a list of tf.Variables) in place; returns their
    values. One broadcast per variable, issued in list order."""
    variables = list(variables)
    for i, v in enumerate(variables):
        if not callable(getattr(v, "assign", None)):
            raise TypeError(f"broadcast_: variables[{i}] is a {type(v).__name__}, not a variable (tf.Variable or "
                            "keras.Variable)")
    return [v.assign(broadcast(v, root_rank, name=name, process_set=process_set)) for v in variables]


# ---- alltoall --------------------------------------------------------------------------------
def alltoall(tensor, splits=None, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Rows splits[r] of tensor to rank r of the set (default: an even split of dimension 0);
    returns the rows received, concatenated in rank order, and, when splits was given, the
    received splits. Differentiable: the gradient is the alltoall of the output's gradient
    with the received splits."""
    what = "alltoall"
    _ps(process_set, what)
    tensor = as_tensor(tensor, what)
    check_dtype(tensor, what, reduce=False)
    given = splits is not None
    splits_t = tf.cast(as_tensor(splits, what, "splits"), tf.int32) if given else tf.zeros([0], tf.int32)

    def exchange(x, s):
        y, got = _call(what, "alltoall", name, lambda a, b: list(_host.alltoall(a, b, process_set, what)),
                       [x, s], [x.dtype, tf.int32], lambda x, s, name: list(_ops.module().gj_alltoall(
                           x, s, process_set_id=_ops.bind(process_set, what), what=what, name=name,
                           signature=f"call=alltoall, dtype={x.dtype.name}")))
        y.set_shape(tf.TensorShape([None]).concatenate(x.shape[1:]))
        got.set_shape([process_set.size()])
        return y, got

    if not tensor.dtype.is_floating:
        y, got = exchange(tensor, splits_t)
        return (y, got) if given else y

    @tf.custom_gradient
    def op_(x):
        y, got = exchange(x, splits_t)

        def grad(dy, _dgot=None):
            return alltoall(dy, splits=got, process_set=process_set)[0]
        return (y, got), grad
    y, got = op_(tensor)
    return (y, got) if given else y


# ---- reducescatter ---------------------------------------------------------------------------
def _scatter_grad(dy, op, pre, post, process_set):
    """Horovod's reducescatter gradient: the allgather of dy (times the set's size for Sum, and
    the factors)."""
    if op == Sum:
        dy = dy * tf.cast(process_set.size(), dy.dtype)
    if pre != 1.0:
        dy = dy * tf.cast(pre, dy.dtype)
    if post != 1.0:
        dy = dy * tf.cast(post, dy.dtype)
    return allgather(dy, process_set=process_set)


def _grouped_reducescatter(tensors, op, pre, post, name, process_set, what):
    for i, t in enumerate(tensors):
        check_dtype(t, what, reduce=True, argument=f"tensors[{i}]")
        if t.shape.rank == 0:
            raise ValueError(f"{what}: tensors[{i}] is a scalar (shape ()); it needs a first dimension to scatter")

    @tf.custom_gradient
    def op_(*xs):
        ys = _call(what, "reducescatter", name,
                   lambda *arrays: _host.grouped_reducescatter(arrays, op, pre, post, process_set, what),
                   xs, [x.dtype for x in xs],
                   _grouped_op("gj_reducescatter", "reducescatter", op, pre, post, process_set, what))
        for x, y in zip(xs, ys):
            y.set_shape(tf.TensorShape([None]).concatenate(x.shape[1:]))

        def grad(*dys):
            return [_scatter_grad(dy, op, pre, post, process_set) for dy in dys]
        return ys, grad
    return list(op_(*tensors))


def reducescatter(tensor, device_dense='', compression=Compression.none, op=Average, name=None,
                  process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """This rank's rows of the reduction of tensor: dimension 0 split over the set's ranks, the
    first ranks taking one more row when it does not divide (Horovod's). Differentiable."""
    return grouped_reducescatter([tensor], device_dense, compression, op, process_set, ignore_name_scope,
                                 prescale_factor, postscale_factor, name=name, what="reducescatter")[0]


def grouped_reducescatter(tensors, device_dense='', compression=Compression.none, op=Average,
                          process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                          postscale_factor=1.0, name=None, what="grouped_reducescatter"):
    """reducescatter of every tensor of the list in one graph op. Differentiable."""
    op = _resolve(op, None, what)
    if op == Adasum:
        raise TensorFlowHorovodInternalError.of(adasum_refused(what))
    pre, post = _factors(prescale_factor, postscale_factor, what)
    _ps(process_set, what)
    tensors = [as_tensor(t, what, f"tensors[{i}]") for i, t in enumerate(tensors)]
    if not tensors:
        return []
    packed = [compression.compress(t) for t in tensors]
    outs = _grouped_reducescatter([c for c, _ in packed], op, pre, post, name, process_set, what)
    return [compression.decompress(o, ctx) for o, (_, ctx) in zip(outs, packed)]


# ---- barrier, ranks as ops -------------------------------------------------------------------
def barrier(process_set=global_process_set):
    """Blocks until every rank of the set is in barrier() (or join())."""
    what = "barrier"
    _ps(process_set, what)
    if tf.executing_eagerly():
        translated(_host.barrier, process_set, what)
        return None
    _refuse_xla(what)

    def body():
        translated(_host.barrier, process_set, what)
        return np.int32(0)
    return _in_order(lambda: tf.numpy_function(body, [], tf.int32, stateful=True, name=f"GjBarrier_{next(_names)}"))


def _value_op(fn, what):
    """An int32 tensor of fn(), evaluated when the op runs (Horovod's *_op)."""
    if tf.executing_eagerly():
        return tf.constant(fn(), dtype=tf.int32)
    return tf.numpy_function(lambda: np.int32(fn()), [], tf.int32, stateful=True, name=what)


def _set_of(process_set_id, what):
    _basics.require_init(what)
    from ..common.process_sets import _registry
    ps = _registry.get(process_set_id)
    if ps is None:
        raise ValueError(f"{what}: process_set_id={process_set_id!r} is not a registered process set")
    return ps


def size_op(process_set_id=0, name=None):
    """The size of the process set (default all ranks) as an int32 tensor."""
    _set_of(process_set_id, "size_op")
    return _value_op(lambda: _set_of(process_set_id, "size_op").size(), name or "GjSize")


def rank_op(name=None):
    _basics.require_init("rank_op")
    return _value_op(_basics.rank, name or "GjRank")


def local_rank_op(name=None):
    _basics.require_init("local_rank_op")
    return _value_op(_basics.local_rank, name or "GjLocalRank")


def local_size_op(name=None):
    _basics.require_init("local_size_op")
    return _value_op(_basics.local_size, name or "GjLocalSize")


def process_set_included_op(process_set_id=0, name=None):
    """1 when this rank is in the process set, else 0, as an int32 tensor."""
    _set_of(process_set_id, "process_set_included_op")
    return _value_op(lambda: int(_set_of(process_set_id, "process_set_included_op").included()),
                     name or "GjProcessSetIncluded")
