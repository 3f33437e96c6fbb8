"""Broadcasting variables and Python objects across ranks (Horovod's horovod.tensorflow.functions).

Objects travel as pickle bytes in a uint8 tensor (a tf.Tensor or tf.Variable inside them as its
numpy value, which pickles without TensorFlow's help); broadcast_object / allgather_object run
on the host when called, in eager and graph mode alike."""

import io
import pickle

import numpy as np
import tensorflow as tf

from . import _basics, _host, mpi_ops
from ._basics import global_process_set


def broadcast_variables(variables, root_rank, process_set=global_process_set, inplace=False):
    """Assigns root_rank's value to every variable of the list (in list order, so the order must
    match across ranks). Returns the assign ops' results (a graph needs them run)."""
    variables = list(variables)
    return mpi_ops.broadcast_(variables, root_rank, process_set=process_set)


def broadcast_global_variables(root_rank):
    """Graph mode (tf.compat.v1): the op broadcasting every global variable from root_rank.
    Eagerly there are no global variables: broadcast the model's and optimizer's variables with
    broadcast_variables or BroadcastGlobalVariablesCallback, as Horovod says."""
    if tf.executing_eagerly():
        raise RuntimeError("broadcast_global_variables() does not support eager execution. Please use "
                           "`hvd.broadcast_variables(<model/optimizer variables>)` instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, (tf.Tensor, tf.Variable)) and tf.executing_eagerly():
            return np.asarray, (obj.numpy(),)
        return NotImplemented


def _encode(obj):
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


def broadcast_object(obj, root_rank=0, session=None, name=None, process_set=global_process_set):
    """root_rank's obj (any picklable object) on every rank of the set. Runs when called, eagerly
    and while a TF1 graph is being built alike (Horovod runs its graph in `session` there; the
    bytes need no graph: session is accepted and unused)."""
    what = "broadcast_object"
    _basics.comm_of(process_set, what)
    root = _basics.rank() == root_rank
    payload = _encode(obj) if root else np.zeros(0, dtype=np.uint8)
    length = mpi_ops.on_host("broadcast", name, _host.broadcast, np.array([payload.size], dtype=np.int64),
                             root_rank, process_set, what)
    if not root:
        payload = np.zeros(int(length[0]), dtype=np.uint8)
    data = mpi_ops.on_host("broadcast", name, _host.broadcast, payload, root_rank, process_set, what)
    return obj if root else pickle.loads(data.tobytes())


def broadcast_object_fn(root_rank=0, session=None, name=None, process_set=global_process_set):
    """A function obj -> broadcast_object(obj, root_rank, ...) (Horovod's)."""
    def fn(obj):
        return broadcast_object(obj, root_rank, session, name, process_set)
    return fn


def allgather_object(obj, session=None, name=None, process_set=global_process_set):
    """[obj of the set's rank 0, rank 1, ...] on every rank of the set (when called, eagerly or
    while a TF1 graph is being built, as broadcast_object)."""
    what = "allgather_object"
    _basics.comm_of(process_set, what)
    payload = _encode(obj)
    sizes = mpi_ops.on_host("allgather", name, _host.allgather, np.array([payload.size], dtype=np.int64),
                            process_set, what)
    data = mpi_ops.on_host("allgather", name, _host.allgather, payload, process_set, what)
    out, offset = [], 0
    for n in sizes.tolist():
        out.append(pickle.loads(data[offset:offset + n].tobytes()))
        offset += n
    return out
