"""gj.tensorflow.keras under mpiexec (2 ranks), on the Keras that tf.keras is (the ctest runs this
file once on Keras 3 and once with TF_USE_LEGACY_KERAS=1 on Keras 2): DistributedOptimizer's
averaging inside model.fit (against a one-process run on the concatenated batch), one grouped
allreduce per step, backward_passes_per_step, gradient_predivide_factor, mixed_float16 with one
rank's gradients non-finite, each callback's effect, BestModelCheckpoint on rank 0 only,
load_model. Every rank runs the same tests in the same order (they are collective)."""

import os
import tempfile

import numpy as np
import pytest
import tensorflow as tf

import gj.tensorflow as hvd_tf
import gj.tensorflow.keras as hvd
from gj.tensorflow.keras import _backend

keras = _backend.keras()
KERAS3 = _backend.is_keras3()
ROWS = 8


@pytest.fixture(scope="session", autouse=True)
def world():
    hvd.init()
    return hvd.rank(), hvd.size()


@pytest.fixture
def shared_dir():
    """One temporary folder, rank 0's, that every rank names."""
    path = hvd_tf.broadcast_object(tempfile.mkdtemp(prefix="gj-keras-") if hvd.rank() == 0 else None, 0)
    yield path


def batch(rank, rows=ROWS, seed=0):
    rng = np.random.default_rng(100 * seed + rank)
    x = rng.standard_normal((rows, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3 + rng.standard_normal((rows, 1)) * 0.1)
    return x, y.astype(np.float32)


def linear_model(seed=0):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
    rng = np.random.default_rng(seed)
    model.set_weights([rng.standard_normal(w.shape).astype(np.float32) * 0.5 for w in model.get_weights()])
    return model


def same_on_all_ranks(arrays):
    mine = b"".join(np.asarray(a).tobytes() for a in arrays)
    return len(set(hvd_tf.allgather_object(mine))) == 1


def sgd(lr):
    return keras.optimizers.SGD(learning_rate=lr)


def test_fit_averages_like_one_process_on_the_concatenated_batch():
    steps = 3
    model = linear_model()
    model.compile(optimizer=hvd.DistributedOptimizer(sgd(0.1)), loss="mse")
    x, y = batch(hvd.rank())
    model.fit(x, y, batch_size=ROWS, epochs=steps, shuffle=False, verbose=0)
    assert same_on_all_ranks(model.get_weights())

    # The mean-squared error of equal-sized batches: the average of the ranks' gradients is the
    # gradient over their concatenation.
    reference = linear_model()
    reference.compile(optimizer=sgd(0.1), loss="mse")
    xs, ys = zip(*(batch(r) for r in range(hvd.size())))
    reference.fit(np.concatenate(xs), np.concatenate(ys), batch_size=ROWS * hvd.size(), epochs=steps,
                  shuffle=False, verbose=0)
    for got, want in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(model.get_weights()[0], linear_model().get_weights()[0])


def test_one_grouped_allreduce_per_step_with_every_gradient(monkeypatch):
    calls = []
    real = hvd_tf.mpi_ops.grouped_allreduce  # the one call gj.tensorflow.allreduce_gradients makes

    def counting(tensors, *args, **kwargs):
        calls.append(len(tensors))
        return real(tensors, *args, **kwargs)

    monkeypatch.setattr(hvd_tf.mpi_ops, "grouped_allreduce", counting)
    model = linear_model()
    model.compile(optimizer=hvd.DistributedOptimizer(sgd(0.1)), loss="mse")
    x, y = batch(hvd.rank())
    model.fit(x, y, batch_size=ROWS // 2, epochs=2, shuffle=False, verbose=0)
    # The Python call happens when tf.function traces the step (once; Keras 2 may trace twice),
    # never per step (4 steps ran): each trace has one call carrying all four gradients.
    assert 1 <= len(calls) <= 2 and set(calls) == {len(model.trainable_variables)}
    assert same_on_all_ranks(model.get_weights())


def grads_at(model, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    return [g.numpy() for g in tape.gradient(loss, model.trainable_variables)]


@pytest.mark.parametrize("average_aggregated", [False, True])
def test_backward_passes_per_step(average_aggregated):
    passes, lr = 2, 0.1
    model = linear_model()
    opt = hvd.DistributedOptimizer(sgd(lr), backward_passes_per_step=passes,
                                   average_aggregated_gradients=average_aggregated)
    model.compile(optimizer=opt, loss="mse")
    x, y = batch(hvd.rank(), rows=2 * ROWS)
    w0 = model.get_weights()
    # Pass 1: accumulated only, nothing applied.
    model.fit(x[:ROWS], y[:ROWS], batch_size=ROWS, epochs=1, shuffle=False, verbose=0)
    for got, want in zip(model.get_weights(), w0):
        np.testing.assert_array_equal(got, want)
    # Pass 2: the sum of both passes' gradients (both at w0), averaged over the ranks, applied.
    model.fit(x[ROWS:], y[ROWS:], batch_size=ROWS, epochs=1, shuffle=False, verbose=0)
    assert int(_backend.to_float(opt.iterations)) == passes  # Horovod counts every pass
    plain = linear_model()
    per_rank = []
    for r in range(hvd.size()):
        xr, yr = batch(r, rows=2 * ROWS)
        g1, g2 = grads_at(plain, xr[:ROWS], yr[:ROWS]), grads_at(plain, xr[ROWS:], yr[ROWS:])
        per_rank.append([a + b for a, b in zip(g1, g2)])
    for i, (got, w) in enumerate(zip(model.get_weights(), w0)):
        g = np.mean([p[i] for p in per_rank], axis=0) / (passes if average_aggregated else 1)
        np.testing.assert_allclose(got, w - lr * g, rtol=1e-5, atol=1e-6)
    assert same_on_all_ranks(model.get_weights())


@pytest.mark.skipif(KERAS3, reason="Horovod's _compute_gradients hook is Keras 2's (Keras 3 optimizers have none)")
@pytest.mark.parametrize("in_function", [False, True])
def test_compute_gradients_hook_reduces_once(in_function):
    """Horovod's Keras 2 hook: _compute_gradients returns the reduced gradients and the
    apply_gradients that gets them does not reduce them again (op=Sum makes a second reduction
    visible: it would multiply by the size), eagerly and inside tf.function."""
    lr = 0.1
    model = linear_model()
    opt = hvd.DistributedOptimizer(sgd(lr), op=hvd.Sum)
    x, y = batch(hvd.rank())
    w0 = model.get_weights()

    def loss():
        return tf.reduce_mean(tf.square(model(x) - y))

    def step():
        pairs = opt._compute_gradients(loss, model.trainable_variables)
        opt.apply_gradients(pairs)
        return [g for g, _ in pairs]

    reduced = tf.function(step)() if in_function else step()
    per_rank = [grads_at(linear_model(), *batch(r)) for r in range(hvd.size())]
    for i, (got, w) in enumerate(zip(model.get_weights(), w0)):
        want = np.sum([p[i] for p in per_rank], axis=0)
        np.testing.assert_allclose(np.asarray(reduced[i]), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, w - lr * want, rtol=1e-5, atol=1e-6)
    assert opt._agg_helper is None  # Horovod's: no aggregation state at one pass per step


@pytest.mark.skipif(KERAS3, reason="Horovod's _compute_gradients hook is Keras 2's (Keras 3 optimizers have none)")
def test_compute_gradients_hook_with_backward_passes_counts_passes():
    """With backward_passes_per_step > 1 the hook returns this pass's local gradients and
    apply_gradients accumulates them; _agg_helper.counter is the passes since the last reduction."""
    passes = 2
    model = linear_model()
    opt = hvd.DistributedOptimizer(sgd(0.1), backward_passes_per_step=passes)
    x, y = batch(hvd.rank())
    w0 = model.get_weights()
    local = grads_at(model, x, y)

    def loss():
        return tf.reduce_mean(tf.square(model(x) - y))

    pairs = opt._compute_gradients(loss, model.trainable_variables)
    for (g, _), want in zip(pairs, local):
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-6)
    opt.apply_gradients(pairs)
    assert int(opt._agg_helper.counter.numpy()) == 1
    for got, want in zip(model.get_weights(), w0):
        np.testing.assert_array_equal(got, want)  # pass 1 of 2: nothing applied
    opt.apply_gradients(opt._compute_gradients(loss, model.trainable_variables))
    assert int(opt._agg_helper.counter.numpy()) == 0
    assert int(opt.iterations.numpy()) == passes
    assert same_on_all_ranks(model.get_weights())
    assert not all(np.array_equal(a, b) for a, b in zip(model.get_weights(), w0))


def test_gradient_predivide_factor_gives_the_average():
    model, reference = linear_model(), linear_model()
    model.compile(optimizer=hvd.DistributedOptimizer(sgd(0.1), gradient_predivide_factor=2.0), loss="mse")
    reference.compile(optimizer=hvd.DistributedOptimizer(sgd(0.1)), loss="mse")
    x, y = batch(hvd.rank())
    for m in (model, reference):
        m.fit(x, y, batch_size=ROWS, epochs=2, shuffle=False, verbose=0)
    for got, want in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        hvd.DistributedOptimizer(sgd(0.1), gradient_predivide_factor=2.0, op=hvd.Sum)


def loss_scale(optimizer):
    return _backend.to_float(optimizer.dynamic_scale if KERAS3 else optimizer.loss_scale)


def test_mixed_float16_one_rank_non_finite_every_rank_skips():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = linear_model()
        opt = hvd.DistributedOptimizer(sgd(0.1))
        # Outside the loss-scale optimizer: Keras keeps it as it is, and the allreduce comes first.
        assert _backend.is_loss_scale_optimizer(opt)
        model.compile(optimizer=opt, loss="mse")
        assert model.optimizer is opt
        x, y = batch(hvd.rank())
        model.train_on_batch(x, y)  # builds; finite everywhere
        w0, scale0 = model.get_weights(), loss_scale(opt)
        if hvd.rank() == 1:
            x = x.copy()
            x[0, 0] = np.inf
        model.train_on_batch(x, y)  # would hang if rank 1 skipped its allreduce
        for got, want in zip(model.get_weights(), w0):
            np.testing.assert_array_equal(got, want)
        assert loss_scale(opt) == scale0 / 2
        model.train_on_batch(*batch(hvd.rank()))
        assert not np.array_equal(model.get_weights()[0], w0[0])
        assert same_on_all_ranks(model.get_weights())
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_broadcast_callback_makes_the_weights_rank_0s():
    model = linear_model(seed=hvd.rank())  # different on every rank
    model.compile(optimizer=hvd.DistributedOptimizer(sgd(0.0)), loss="mse")
    x, y = batch(hvd.rank())
    model.fit(x, y, batch_size=ROWS, epochs=1, verbose=0, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    for got, want in zip(model.get_weights(), linear_model(seed=0).get_weights()):
        np.testing.assert_array_equal(got, want)
    assert same_on_all_ranks(model.get_weights())


class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs, self.lrs = [], []

    def on_batch_begin(self, batch, logs=None):
        self.lrs.append(_backend.to_float(self.model.optimizer.learning_rate))

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(dict(logs))


def test_metric_average_callback_gives_the_mean():
    model = linear_model()
    model.compile(optimizer=hvd.DistributedOptimizer(sgd(0.05)), loss="mse", metrics=["mae"])
    before, after = Recorder(), Recorder()
    x, y = batch(hvd.rank(), seed=hvd.rank() + 1)
    y = y * (1 + hvd.rank())  # different losses on the ranks
    model.fit(x, y, batch_size=ROWS, epochs=2, verbose=0,
              callbacks=[before, hvd.callbacks.MetricAverageCallback(), after])
    for local, averaged in zip(before.epochs, after.epochs):
        everyone = hvd_tf.allgather_object(local)
        assert everyone[0]["loss"] != everyone[1]["loss"]
        for name in ("loss", "mae"):
            assert averaged[name] == pytest.approx(np.mean([e[name] for e in everyone]), rel=1e-6)


def test_learning_rate_warmup_follows_horovods_formula():
    lr, warmup, steps = 0.4, 2, 4
    model = linear_model()
    model.compile(optimizer=hvd.DistributedOptimizer(sgd(lr)), loss="mse")
    rec = Recorder()
    x, y = batch(hvd.rank(), rows=ROWS * steps)
    model.fit(x, y, batch_size=ROWS, epochs=warmup + 1, shuffle=False, verbose=0,
              callbacks=[hvd.callbacks.LearningRateWarmupCallback(lr, warmup_epochs=warmup, verbose=0), rec])
    size = hvd.size()
    want = []
    for e in range(warmup):
        for b in range(steps):
            epoch = e + b / steps + 1.0 / steps
            want.append(lr / size * (epoch * (size - 1) / warmup + 1))
    want += [want[-1]] * steps  # after the warmup the last value stays
    np.testing.assert_allclose(rec.lrs, want, rtol=1e-6)
    assert want[steps * warmup - 1] == pytest.approx(lr)
    assert rec.epochs[-1]["lr"] == pytest.approx(lr, rel=1e-6)


def test_learning_rate_schedule_staircase_and_window():
    lr, steps = 0.2, 2
    model = linear_model()
    model.compile(optimizer=hvd.DistributedOptimizer(sgd(lr)), loss="mse")
    rec = Recorder()
    x, y = batch(hvd.rank(), rows=ROWS * steps)
    schedule = hvd.callbacks.LearningRateScheduleCallback(lr, lambda e: 0.5 ** e, start_epoch=1, end_epoch=3)
    model.fit(x, y, batch_size=ROWS, epochs=4, shuffle=False, verbose=0, callbacks=[schedule, rec])
    # Epoch 0 outside the window keeps lr; 1 and 2 staircase; 3 keeps epoch 2's.
    want = [lr] * steps + [lr * 0.5] * steps + [lr * 0.25] * steps + [lr * 0.25] * steps
    np.testing.assert_allclose(rec.lrs, want, rtol=1e-6)
    with pytest.raises(ValueError, match="initial_lr"):
        hvd.callbacks.LearningRateScheduleCallback(None, 0.5)


def test_best_model_checkpoint_saves_on_rank_0_only(shared_dir):
    ext = ".keras" if KERAS3 else ".h5"
    path = os.path.join(shared_dir, "best-rank{}{}".format(hvd.rank(), ext))
    model = linear_model()
    model.compile(optimizer=hvd.DistributedOptimizer(sgd(0.05)), loss="mse")
    x, y = batch(hvd.rank())
    model.fit(x, y, batch_size=ROWS, epochs=2, verbose=0,
              callbacks=[hvd.callbacks.BestModelCheckpoint(monitor="loss", filepath=path)])
    hvd_tf.allgather_object(0)  # both ranks past fit
    assert sorted(os.listdir(shared_dir)) == ["best-rank0" + ext]
    with pytest.raises(ValueError, match="filepath"):
        model.fit(x, y, verbose=0, callbacks=[hvd.callbacks.BestModelCheckpoint(monitor="loss")])


def test_load_model_wraps_the_optimizer_with_its_state(shared_dir):
    path = os.path.join(shared_dir, "model" + (".keras" if KERAS3 else ".h5"))
    model = linear_model()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse")
    x, y = batch(hvd.rank())
    model.fit(x, y, batch_size=ROWS // 2, epochs=1, shuffle=False, verbose=0)
    if hvd.rank() == 0:
        model.save(path)
    hvd_tf.allgather_object(0)
    # A plain Keras reads the file: the optimizer is saved as the Adam it wraps.
    plain = keras.models.load_model(path)
    assert type(plain.optimizer).__name__ == "Adam"
    loaded = hvd.load_model(path)
    opt = loaded.optimizer
    assert getattr(opt, "_gj_distributed", False) and isinstance(opt, keras.optimizers.Adam)
    assert int(_backend.to_float(opt.iterations)) == 2
    saved = [v.numpy() for v in _backend.optimizer_variables(plain.optimizer)]
    kept = [v.numpy() for v in _backend.optimizer_variables(opt)]
    assert len(saved) == len(kept) and all(np.array_equal(a, b) for a, b in zip(saved, kept))
    loaded.fit(x, y, batch_size=ROWS, epochs=1, verbose=0)
    assert same_on_all_ranks(loaded.get_weights())
    assert int(_backend.to_float(opt.iterations)) == 3


def test_functions_on_values():
    r, n = hvd.rank(), hvd.size()
    np.testing.assert_allclose(hvd.allreduce(np.float32([r + 1])).numpy(), [(n + 1) / 2])
    np.testing.assert_allclose(hvd.allreduce([r + 1.0], op=hvd.Sum).numpy(), [n * (n + 1) / 2])
    np.testing.assert_array_equal(hvd.allgather([[r]]).numpy(), [[q] for q in range(n)])
    np.testing.assert_array_equal(hvd.broadcast([r, r], root_rank=1).numpy(), [1, 1])
    with pytest.raises(RuntimeError, match="eager"):
        hvd.broadcast_global_variables(0)


def test_refuses_a_foreign_optimizer_and_a_double_wrap():
    with pytest.raises(TypeError, match="optimizer"):
        hvd.DistributedOptimizer(object())
    with pytest.raises(ValueError, match="already"):
        hvd.DistributedOptimizer(hvd.DistributedOptimizer(sgd(0.1)))
    with pytest.raises(ValueError, match="op"):
        hvd.DistributedOptimizer(sgd(0.1), op=hvd.Max)


def test_callbacks_module_is_the_same():
    import gj.tensorflow.callbacks as cb
    assert cb is hvd.callbacks and hvd_tf.callbacks is hvd.callbacks


def test_partial_distributed_optimizer_keeps_local_layers_local():
    model = linear_model()
    opt = hvd.PartialDistributedOptimizer(sgd(0.1), local_layers=[model.layers[0]])
    model.compile(optimizer=opt, loss="mse")
    x, y = batch(hvd.rank())
    model.fit(x, y, batch_size=ROWS, epochs=2, shuffle=False, verbose=0)
    local, shared = model.layers[0].get_weights(), model.layers[1].get_weights()
    assert not same_on_all_ranks(local)  # each rank's own gradient (divided by the size)
    assert same_on_all_ranks(shared)
    assert isinstance(opt.variables(), list) and opt.variables() == opt.variables  # Horovod's callable list


def test_stop_on_request_callback_arguments():
    keras = _backend.keras()
    cb = hvd.callbacks.StopOnRequestCallback(
        checkpoint=keras.callbacks.ModelCheckpoint("m.weights.h5", save_weights_only=True))
    assert cb.filepath == "m.weights.h5" and cb.save_weights_only
    assert not hvd.callbacks.StopOnRequestCallback(filepath="m.keras").save_weights_only
    with pytest.raises(ValueError, match="filepath='m.ckpt' must end in"):
        hvd.callbacks.StopOnRequestCallback(filepath="m.ckpt")
    with pytest.raises(ValueError, match="not both"):
        hvd.callbacks.StopOnRequestCallback(filepath="m.keras", checkpoint=keras.callbacks.ModelCheckpoint("m.keras"))
    with pytest.raises(ValueError, match="check_every=0"):
        hvd.callbacks.StopOnRequestCallback(check_every=0)


def test_stop_on_request_callback_runs_through_fit_without_a_request():
    keras = _backend.keras()
    model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    cb = hvd.callbacks.StopOnRequestCallback()
    model.fit(np.ones((8, 2), "float32"), np.ones((8, 1), "float32"), batch_size=4, epochs=2, callbacks=[cb],
              verbose=0)
    assert cb.stopped_epoch is None and cb.stopped_batch is None
