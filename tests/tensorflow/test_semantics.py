"""Horovod's semantics on gj.tensorflow under mpiexec: errors (dtype, non-tensor, disagreeing
ranks), issue order inside tf.function, XLA's refusal, gradients as Horovod defines them, the
tapes, the TF1 optimizer, SyncBatchNormalization and elastic state (on the Keras the
environment selects: TF_USE_LEGACY_KERAS=1 is Keras 2)."""

import numpy as np
import pytest
import tensorflow as tf

import gj.tensorflow as hvd
from gj.common.exceptions import HorovodInternalError


def test_unsupported_dtype_names_argument_and_dtype(world):
    with pytest.raises(TypeError, match=r"allreduce: tensor has dtype bool, which gj cannot reduce"):
        hvd.allreduce(tf.constant([True]))
    with pytest.raises(TypeError, match=r"grouped_allreduce: tensors\[1\] has dtype string"):
        hvd.grouped_allreduce([tf.ones(1), tf.constant(["a"])])
    with pytest.raises(TypeError, match=r"broadcast: tensor=.*is not a tensor"):
        hvd.broadcast(object(), 0)


def test_disagreeing_ranks_raise_on_every_rank_and_the_set_goes_on(world):
    r, n = world
    with pytest.raises(HorovodInternalError, match=rf"rank {r} of the set\) passed .*shape=\({r + 1},\)"):
        hvd.allreduce(tf.ones([r + 1]))
    with pytest.raises(tf.errors.FailedPreconditionError):  # Horovod's type for it too
        hvd.broadcast(tf.ones([2]), root_rank=0) if r else hvd.broadcast(tf.ones([2], tf.int32), root_rank=0)
    assert hvd.allreduce(tf.constant([1.0]), op=hvd.Sum).numpy()[0] == n


def test_disagreement_inside_tf_function(world):
    r, n = world

    @tf.function
    def f(x):
        return hvd.allreduce(x)
    # The GjStatus op built with the library raises Horovod's class from the graph, gj's message.
    with pytest.raises(tf.errors.FailedPreconditionError, match="disagree on the call's arguments"):
        f(tf.ones([r + 1]))
    assert hvd.allreduce(tf.constant([1.0]), op=hvd.Sum).numpy()[0] == n


def test_graph_errors_in_a_tf1_session_are_horovods_classes(world):
    r, n = world

    def run(make):  # a graph of its own each: a TF1 graph chains its gj ops in creation order
        with tf.Graph().as_default():
            out = make()
            with tf.compat.v1.Session() as sess:
                return sess.run(out)
    with pytest.raises(tf.errors.FailedPreconditionError, match="disagree"):
        run(lambda: hvd.allreduce(tf.ones([r + 1])))
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not divide among"):
        run(lambda: hvd.alltoall(tf.ones([n + 1])))
    np.testing.assert_array_equal(run(lambda: hvd.allreduce(tf.ones([2]), op=hvd.Sum)), [n, n])


def test_without_the_ops_graph_errors_say_what_is_missing(world, monkeypatch):
    """The fallback (the compiled ops absent): numpy_function ops, whose graph errors TensorFlow
    reports as UnknownError; gj's message says what is missing and how to build it."""
    r, n = world
    from gj.tensorflow import _ops
    monkeypatch.setattr(_ops, "_loaded", {"module": None, "why": "the test removed it", "c": None})
    assert hvd.collectives_path() == "numpy_function"

    @tf.function
    def f(x):
        return hvd.allreduce(x)
    with pytest.raises(tf.errors.UnknownError, match="compiled ops are not available .the test removed it."):
        f(tf.ones([r + 1]))
    assert hvd.allreduce(tf.constant([1.0]), op=hvd.Sum).numpy()[0] == n


def test_issue_order_inside_tf_function_is_program_order(world):
    """Twenty collectives with no data dependence among them, of different shapes and kinds: the
    executor could run them in any order; stateful ops keep program order, or ranks would disagree."""
    r, n = world

    @tf.function
    def many(x):
        out = []
        for i in range(20):
            if i % 3 == 0:
                out.append(hvd.allreduce(tf.fill([i + 1], x), op=hvd.Sum))
            elif i % 3 == 1:
                out.append(hvd.allgather(tf.fill([1, i], x)))
            else:
                out.append(hvd.broadcast(tf.fill([i], x), root_rank=i % n))
        return out
    for _ in range(3):
        got = many(tf.constant(float(r)))
        assert got[0].numpy()[0] == sum(range(n))


def test_jit_compile_is_refused_saying_how_to_turn_it_off(world):
    @tf.function(jit_compile=True)
    def f(x):
        return hvd.allreduce(x)
    with pytest.raises(ValueError, match="jit_compile=False"):
        f(tf.ones(2))


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=["sum", "avg"])
def test_allreduce_gradient(world, mode, op):
    r, n = world
    x = tf.Variable([1.0, 2.0])

    def f():
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(hvd.allreduce(x * (r + 1), op=op))
        return tape.gradient(y, x)
    # d/dx of sum(allreduce(x*(r+1))): the allreduce (same op) of the ones, times (r+1).
    np.testing.assert_allclose(mode(f).numpy(), [float(r + 1) * (n if op == hvd.Sum else 1)] * 2)


def test_allgather_broadcast_alltoall_reducescatter_gradients(world, mode):
    r, n = world
    x = tf.Variable(tf.fill([r + 1, 2], 1.0))
    z = tf.Variable(tf.fill([n, 2], float(r)))

    def f():
        with tf.GradientTape(persistent=True) as tape:
            g = tf.reduce_sum(hvd.allgather(x) * 2.0)
            b = tf.reduce_sum(hvd.broadcast(x[:1] * 3.0, root_rank=0))
            a = tf.reduce_sum(hvd.alltoall(z) * 5.0)
            s = tf.reduce_sum(hvd.reducescatter(z, op=hvd.Sum) * 7.0)
        return (tape.gradient(g, x), tape.gradient(b, x), tape.gradient(a, z), tape.gradient(s, z))
    dg, db, da, ds = mode(f)
    np.testing.assert_allclose(dg.numpy(), np.full((r + 1, 2), 2.0))  # Average allreduce of 2s, own rows
    want_b = np.zeros((r + 1, 2))
    want_b[0] = 3.0 if r == 0 else 0.0
    np.testing.assert_allclose(db.numpy(), want_b)
    np.testing.assert_allclose(da.numpy(), np.full((n, 2), 5.0))
    np.testing.assert_allclose(ds.numpy(), np.full((n, 2), 7.0 * n))  # Horovod's: allgather(dy) x size for Sum


def test_distributed_gradient_tape_averages_and_keeps_local_sources(world, mode):
    r, n = world
    w = tf.Variable([1.0, 1.0])
    local = tf.Variable([1.0])

    def f():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * float(r + 1)) + tf.reduce_sum(local * float(r + 1))
        tape = hvd.DistributedGradientTape(tape)
        tape.register_local_source(local)
        return tape.gradient(loss, [w, local])
    gw, gl = mode(f)
    np.testing.assert_allclose(gw.numpy(), [(n + 1) / 2] * 2)
    np.testing.assert_allclose(gl.numpy(), [(r + 1) / n])  # scale_local_gradients


def test_tf1_distributed_optimizer(world):
    r, n = world
    w = tf.Variable([0.0])
    opt = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(1.0))
    pairs = opt.compute_gradients(lambda: tf.reduce_sum(w * float(r + 1)), var_list=[w])
    opt.apply_gradients(pairs)
    np.testing.assert_allclose(w.numpy(), [-(n + 1) / 2])


def test_sync_batch_normalization_uses_the_global_batch(world, mode):
    r, n = world
    layer = hvd.SyncBatchNormalization(axis=-1, momentum=0.0, epsilon=0.0, center=False, scale=False)
    x = tf.constant([[float(r)], [float(r) + 1.0]])
    y = mode(lambda t: layer(t, training=True), x)
    values = np.array([[q, q + 1.0] for q in range(n)]).reshape(-1)
    want = (np.array([r, r + 1.0]) - values.mean()) / values.std()
    np.testing.assert_allclose(y.numpy().reshape(-1), want, rtol=1e-4)


def test_elastic_keras_state_syncs_from_rank_0_and_restores(world):
    r, n = world
    keras = tf.keras  # Keras 3, or tf_keras under TF_USE_LEGACY_KERAS=1
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.layers[0].kernel.assign(tf.fill([2, 1], float(r)))
    state = hvd.elastic.TensorFlowKerasState(model, batch=r)

    @hvd.elastic.run
    def train(state):
        assert state.batch == 0
        np.testing.assert_array_equal(state.model.layers[0].kernel.numpy(), np.zeros((2, 1)))
        state.commit()
        state.model.layers[0].kernel.assign(tf.ones([2, 1]))
        state.restore()
        return state.model.layers[0].kernel.numpy()
    np.testing.assert_array_equal(train(state), np.zeros((2, 1)))


def test_invalid_alltoall_splits_raise_on_every_rank_and_the_set_goes_on(world):
    r, n = world
    # Every rank's splits invalid: each raises Horovod's class for it, InvalidArgumentError (and ValueError).
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not divide among"):
        hvd.alltoall(tf.ones([n + 1]))
    with pytest.raises(ValueError, match="must have"):
        hvd.alltoall(tf.ones([n]), splits=tf.constant([n] * n))
    # Only rank 0's invalid: it raises its own error, the others the disagreement instead of waiting.
    if r == 0:
        with pytest.raises(tf.errors.InvalidArgumentError, match="summing to the first dimension"):
            hvd.alltoall(tf.ones([n]), splits=tf.constant([n] * n))
    else:
        with pytest.raises(HorovodInternalError, match="disagree"):
            hvd.alltoall(tf.ones([n]), splits=tf.constant([1] * n))
    assert hvd.allreduce(tf.constant([1.0]), op=hvd.Sum).numpy()[0] == n


def test_partial_tape_keeps_local_layers_of_either_keras(world, mode):
    """local_layers' weights are Keras 3 Variables (no ref()) or tf.Variables (Keras 2)."""
    r, n = world
    keras = tf.keras
    shared, local = keras.layers.Dense(1, use_bias=False), keras.layers.Dense(1, use_bias=False)
    x = tf.ones([1, 1])
    shared(x), local(x)

    def f():
        with tf.GradientTape() as tape:
            loss = float(r + 1) * (tf.reduce_sum(shared(x)) + tf.reduce_sum(local(x)))
        tape = hvd.PartialDistributedGradientTape(tape, local_layers=local)
        return tape.gradient(loss, shared.trainable_weights + local.trainable_weights)
    gs, gl = mode(f)
    np.testing.assert_allclose(gs.numpy(), [[(n + 1) / 2]])
    np.testing.assert_allclose(gl.numpy(), [[(r + 1) / n]])
    with tf.GradientTape() as tape:
        loss = float(r + 1) * (tf.reduce_sum(shared(x)) + tf.reduce_sum(local(x)))
    tape = hvd.PartialDistributedGradientTape(tape, local_layers=[local])
    (lv, lg), = tape.get_local_and_global_gradients(loss, shared.trainable_weights + local.trainable_weights)[0]
    assert lv is local.trainable_weights[0]
    np.testing.assert_allclose(lg.numpy(), [[(r + 1) / n]])


def test_broadcast_global_variables_in_a_tf1_graph_and_refused_eagerly(world):
    r, n = world
    with pytest.raises(RuntimeError, match="does not support eager execution"):
        hvd.broadcast_global_variables(0)
    with tf.Graph().as_default():
        v = tf.compat.v1.get_variable("v", initializer=tf.constant([float(r + 1)]), use_resource=True)
        op = hvd.broadcast_global_variables(root_rank=n - 1)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(op)
            np.testing.assert_array_equal(sess.run(v), [float(n)])


def test_gradients_outside_the_process_set_stay_local_and_a_forged_set_is_refused(world, mode):
    r, n = world
    ps = hvd.add_process_set([0, n - 1]) if n > 2 else hvd.add_process_set([0])
    try:
        x = tf.constant([float(r + 1)])

        def f():
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(x * x)
            return hvd.DistributedGradientTape(tape, process_set=ps).gradient(y, [x])[0]
        got = mode(f).numpy()
        want = np.mean([2.0 * (q + 1) for q in ps.ranks]) if r in ps.ranks else 2.0 * (r + 1)
        np.testing.assert_allclose(got, [want])
        forged = hvd.ProcessSet([0])
        forged.process_set_id = 10  # Horovod's test of an id nobody registered
        with pytest.raises(ValueError, match="is not registered"):
            hvd.allreduce(tf.ones(1), process_set=forged)
    finally:
        hvd.remove_process_set(ps)


def test_object_functions_while_a_tf1_graph_is_built(world):
    """Horovod's TF1 scripts call them inside `with graph.as_default()`: they run when called."""
    r, n = world
    with tf.Graph().as_default():
        assert hvd.broadcast_object({"a": r} if r == 0 else None, root_rank=0) == {"a": 0}
        assert hvd.broadcast_object_fn(root_rank=n - 1)([r]) == [n - 1]
        assert hvd.allgather_object({"r": r}) == [{"r": q} for q in range(n)]
