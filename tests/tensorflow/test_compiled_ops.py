"""gj.tensorflow's compiled ops (collectives/python/tf_ops) under mpiexec: a tf.function with
every collective, broadcast_ and DistributedGradientTape holds no Python-callback op and gets
the exact results; the same function on the forced fallback (the ops absent) holds one and gets
the same results; which path runs is visible (collectives_path(), the timeline's header)."""

import json

import numpy as np
import pytest
import tensorflow as tf

import gj.tensorflow as hvd

CALLBACKS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}


def op_types(concrete):
    """Every op type of a traced function, the functions it calls (gradients, conds) included."""
    graph_def = concrete.graph.as_graph_def()
    types = {n.op for n in graph_def.node}
    for f in graph_def.library.function:
        types |= {n.op for n in f.node_def}
    return types


def every_collective(world):
    r, n = world
    w = tf.Variable([1.0, 2.0])
    v = tf.Variable([float(r)] * 3)

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x)
        grads = hvd.DistributedGradientTape(tape).gradient(loss, [w])
        rows = tf.fill([n, 2], x[0])
        return {
            "allreduce": hvd.allreduce(x, op=hvd.Sum),
            "grouped": hvd.grouped_allreduce([x, tf.cast(x, tf.int32), tf.cast(x, tf.int8)], op=hvd.Sum),
            "allgather": hvd.allgather(tf.fill([r + 1, 2], x[0])),
            "grouped_allgather": hvd.grouped_allgather([x, tf.cast(x, tf.bool)]),
            "broadcast": hvd.broadcast(x, root_rank=n - 1),
            "broadcast_": hvd.broadcast_([v], root_rank=0),
            "alltoall": hvd.alltoall(rows),
            "alltoall_splits": hvd.alltoall(rows, splits=[2] + [0] * (n - 1)),
            "reducescatter": hvd.reducescatter(rows, op=hvd.Sum),
            "grouped_reducescatter": hvd.grouped_reducescatter([rows, tf.cast(rows, tf.float64)], op=hvd.Max),
            "grads": grads,
        }
    return step


def check_results(out, world):
    r, n = world
    total = sum(range(1, n + 1))  # x = [r + 1, r + 1] on rank r
    np.testing.assert_array_equal(out["allreduce"], [total, total])
    np.testing.assert_array_equal(out["grouped"][0], [total, total])
    np.testing.assert_array_equal(out["grouped"][2], [total, total])
    assert out["grouped"][2].dtype == tf.int8
    np.testing.assert_array_equal(out["allgather"][:, 0], np.repeat(np.arange(1, n + 1), np.arange(1, n + 1)))
    np.testing.assert_array_equal(out["grouped_allgather"][0], np.repeat(np.arange(1, n + 1), 2))
    np.testing.assert_array_equal(out["broadcast"], [n, n])
    np.testing.assert_array_equal(out["broadcast_"][0], [0.0] * 3)
    np.testing.assert_array_equal(out["alltoall"][:, 0], np.arange(1, n + 1))
    y, got = out["alltoall_splits"]
    np.testing.assert_array_equal(got, [2] * n if r == 0 else [0] * n)
    np.testing.assert_array_equal(y[:, 0], np.repeat(np.arange(1, n + 1), 2) if r == 0 else [])
    np.testing.assert_array_equal(out["reducescatter"], [[total, total]])
    np.testing.assert_array_equal(out["grouped_reducescatter"][1], [[n, n]])
    np.testing.assert_array_equal(out["grads"][0], [(n + 1) / 2] * 2)  # Average of x = r + 1


def test_every_collective_is_a_compiled_op_in_a_tf_function(world):
    assert hvd.collectives_path() == "ops", "the build's compiled ops did not load (gj.tensorflow._ops.why())"
    step = every_collective(world)
    x = tf.fill([2], float(world[0] + 1))
    check_results(step(x), world)
    types = op_types(step.get_concrete_function(x))
    assert not types & CALLBACKS, sorted(types & CALLBACKS)
    assert {"GjAllreduce", "GjGroupedAllreduce", "GjAllgather", "GjBroadcast", "GjAlltoall",
            "GjReducescatter"} <= types


def test_the_fallback_forced_holds_callbacks_and_gets_the_same_results(world, monkeypatch):
    from gj.tensorflow import _ops
    monkeypatch.setattr(_ops, "_loaded", {"module": None, "why": "forced by the test", "c": None})
    assert hvd.collectives_path() == "numpy_function"
    step = every_collective(world)
    x = tf.fill([2], float(world[0] + 1))
    check_results(step(x), world)
    assert op_types(step.get_concrete_function(x)) & CALLBACKS


def test_eager_errors_are_gj_classes_on_the_ops(world):
    r, n = world
    with pytest.raises(hvd.HorovodInternalError, match=rf"allreduce failed: .*rank {r} of the set\) passed"):
        hvd.allreduce(tf.ones([r + 1]))
    with pytest.raises(ValueError, match="does not divide among"):
        hvd.alltoall(tf.ones([n + 1]))
    assert hvd.allreduce(tf.constant([1.0]), op=hvd.Sum).numpy()[0] == n


def test_the_timeline_names_the_path(world, tmp_path_factory):
    path = tmp_path_factory.mktemp("timeline") / "t.json"
    hvd.start_timeline(str(path))
    hvd.allreduce(tf.ones([1]))
    hvd.stop_timeline()
    if world[0] == 0:
        header = json.loads(path.read_text())[0]
        assert header["args"]["collectives"] == "ops", header


def test_every_collective_has_a_cpu_and_a_gpu_kernel(world):
    """The GPU kernels are built and registered (tensorflow-cpu has no GPU to run them: docs/tensorflow.md,
    "GPU tensors", says what no run has verified); alltoall's splits stay in host memory."""
    from tensorflow.python.framework import kernels
    for op in ("GjAllreduce", "GjGroupedAllreduce", "GjAllgather", "GjBroadcast", "GjAlltoall", "GjReducescatter"):
        devices = {k.device_type for k in kernels.get_registered_kernels_for_op(op).kernel}
        assert devices == {"CPU", "GPU"}, (op, devices)
    gpu = [k for k in kernels.get_registered_kernels_for_op("GjAlltoall").kernel if k.device_type == "GPU"][0]
    assert set(gpu.host_memory_arg) == {"splits", "received_splits"}
