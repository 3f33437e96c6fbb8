"""gj.tensorflow's collectives under mpiexec (np 2, 3, 4): every op x every dtype it takes x eager
and tf.function, every rank asserting the exact result against what every rank contributed."""

import numpy as np
import pytest
import tensorflow as tf

import gj.tensorflow as hvd

REDUCIBLE = [tf.float32, tf.float64, tf.float16, tf.bfloat16, tf.int32, tf.int64, tf.uint8, tf.int8, tf.int16, tf.uint16]
MOVABLE = REDUCIBLE + [tf.bool, tf.uint32, tf.uint64]
OPS = {hvd.Sum: np.sum, hvd.Min: np.min, hvd.Max: np.max, hvd.Product: np.prod}


def value(r, shape, dtype):
    """Rank r's contribution: small values, exact in every dtype."""
    base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 3 + r + 1
    if dtype == tf.bool:
        return tf.constant((base % 2).astype(bool))
    return tf.cast(tf.constant(base), dtype)


def everyone(n, shape, dtype):
    return [value(r, shape, dtype).numpy().astype(np.float64) for r in range(n)]


@pytest.mark.parametrize("dtype", REDUCIBLE, ids=lambda d: d.name)
@pytest.mark.parametrize("op", list(OPS) + [hvd.Average], ids=lambda o: {0: "avg", 1: "sum", 3: "min", 4: "max",
                                                                         5: "prod"}[o])
def test_allreduce(world, mode, dtype, op):
    r, n = world
    shape = (3, 2)
    got = mode(lambda x: hvd.allreduce(x, op=op), value(r, shape, dtype))
    assert got.dtype == dtype and tuple(got.shape) == shape
    parts = np.stack(everyone(n, shape, dtype))
    if op == hvd.Average:
        want = parts.sum(0) / n
        if dtype.is_integer:
            np.testing.assert_allclose(got.numpy().astype(np.float64), want, atol=1.0)
            return
    else:
        want = OPS[op](parts, axis=0)
    if dtype.is_integer:  # wrap-around in the tensor's dtype, as a reduction in that dtype gives
        want = want.astype(np.int64).astype(dtype.as_numpy_dtype).astype(np.float64)
    # A division by the size rounds (Average at 3 ranks); sums of small integers are exact.
    tol = 1e-2 if dtype in (tf.float16, tf.bfloat16) else (1e-6 if op == hvd.Average else 0)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=tol)


@pytest.mark.parametrize("dtype", [tf.float32, tf.int8], ids=lambda d: d.name)
def test_allreduce_of_a_scalar_keeps_its_shape(world, mode, dtype):
    """A 0-d tensor (a loss, a metric) reduces to a 0-d tensor, also through the widened dtypes."""
    r, n = world
    got = mode(lambda x: hvd.allreduce(x, op=hvd.Sum), tf.cast(tf.constant(r + 1), dtype))
    assert tuple(got.shape) == () and got.dtype == dtype
    assert int(got.numpy()) == n * (n + 1) // 2


def test_allreduce_scaled_and_fp16_compression(world, mode):
    r, n = world
    x = value(r, (4,), tf.float32)
    got = mode(lambda t: hvd.allreduce(t, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5,
                                       compression=hvd.Compression.fp16), x)
    assert got.dtype == tf.float32
    np.testing.assert_allclose(got.numpy(), np.sum(everyone(n, (4,), tf.float32), 0))


@pytest.mark.parametrize("dtypes", [[tf.float32], [tf.float32, tf.float64, tf.int32]], ids=["one", "mixed"])
def test_grouped_allreduce(world, mode, dtypes):
    r, n = world
    xs = [value(r, (i + 1, 2), d) for i, d in enumerate(dtypes)]
    got = mode(lambda *t: hvd.grouped_allreduce(list(t), op=hvd.Sum), *xs)
    for i, (g, d) in enumerate(zip(got, dtypes)):
        assert g.dtype == d
        np.testing.assert_allclose(g.numpy().astype(np.float64), np.sum(everyone(n, (i + 1, 2), d), 0))


@pytest.mark.parametrize("dtype", MOVABLE, ids=lambda d: d.name)
def test_allgather_uneven_rows(world, mode, dtype):
    r, n = world
    got = mode(hvd.allgather, value(r, (r + 1, 2), dtype))
    want = np.concatenate([value(q, (q + 1, 2), dtype).numpy() for q in range(n)])
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_grouped_allgather(world, mode):
    r, n = world
    got = mode(lambda a, b: hvd.grouped_allgather([a, b]), value(r, (r + 1,), tf.int32), value(r, (1, 3), tf.float64))
    np.testing.assert_array_equal(got[0].numpy(), np.concatenate([value(q, (q + 1,), tf.int32).numpy()
                                                                  for q in range(n)]))
    assert tuple(got[1].shape) == (n, 3)


@pytest.mark.parametrize("dtype", MOVABLE, ids=lambda d: d.name)
def test_broadcast_every_root(world, mode, dtype):
    r, n = world
    for root in range(n):
        got = mode(lambda x: hvd.broadcast(x, root), value(r, (2, 3), dtype))
        np.testing.assert_array_equal(got.numpy(), value(root, (2, 3), dtype).numpy())


def test_broadcast_in_place(world):
    r, n = world
    v = tf.Variable(value(r, (3,), tf.float32))
    hvd.broadcast_(  # Horovod's in-place broadcast on variables
        [v], root_rank=n - 1)
    np.testing.assert_array_equal(v.numpy(), value(n - 1, (3,), tf.float32).numpy())
    w = tf.Variable(value(r, (2,), tf.int64))
    hvd.broadcast_variables([w], root_rank=0)
    np.testing.assert_array_equal(w.numpy(), value(0, (2,), tf.int64).numpy())


@pytest.mark.parametrize("dtype", [tf.float32, tf.int64, tf.uint8, tf.bool], ids=lambda d: d.name)
def test_alltoall_with_splits(world, mode, dtype):
    r, n = world
    # Rank r sends q+1 rows to rank q; it receives r+1 rows from every rank.
    splits = [q + 1 for q in range(n)]
    rows = sum(splits)
    x = value(r, (rows, 2), dtype)
    got, received = mode(lambda t: hvd.alltoall(t, splits=splits), x)
    assert received.numpy().tolist() == [r + 1] * n
    start = sum(splits[:r])
    want = np.concatenate([value(q, (rows, 2), dtype).numpy()[start:start + r + 1] for q in range(n)])
    np.testing.assert_array_equal(got.numpy(), want)


def test_alltoall_even_split(world, mode):
    r, n = world
    got = mode(hvd.alltoall, tf.fill([n, 1], r))
    assert got.numpy().reshape(-1).tolist() == list(range(n))


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.int32, tf.int64], ids=lambda d: d.name)
@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average, hvd.Max], ids=["sum", "avg", "max"])
def test_reducescatter_uneven(world, mode, dtype, op):
    r, n = world
    rows = 2 * n + 1  # the first rank takes one more row
    got = mode(lambda x: hvd.reducescatter(x, op=op), value(r, (rows, 2), dtype))
    parts = np.stack(everyone(n, (rows, 2), dtype))
    full = {hvd.Sum: parts.sum(0), hvd.Average: parts.sum(0) / n, hvd.Max: parts.max(0)}[op]
    share = [rows // n + (1 if q < rows % n else 0) for q in range(n)]
    start = sum(share[:r])
    want = full[start:start + share[r]]
    if dtype.is_integer and op == hvd.Average:
        np.testing.assert_allclose(got.numpy(), want, atol=1.0)
    else:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_grouped_reducescatter(world, mode):
    r, n = world
    got = mode(lambda a, b: hvd.grouped_reducescatter([a, b], op=hvd.Sum), value(r, (n, 2), tf.float32),
               value(r, (2 * n,), tf.int32))
    assert tuple(got[0].shape) == (1, 2) and tuple(got[1].shape) == (2,)
    np.testing.assert_allclose(got[0].numpy(), np.sum(everyone(n, (n, 2), tf.float32), 0)[r:r + 1])


def test_adasum_of_equal_tensors_is_the_tensor(world, mode):
    r, n = world
    x = tf.constant([1.0, -2.0, 3.0])
    if n & (n - 1):  # Adasum runs on a power of two ranks (as Horovod's); refused on every rank
        with pytest.raises((hvd.HorovodInternalError, tf.errors.UnknownError), match="power of two"):
            mode(lambda t: hvd.allreduce(t, op=hvd.Adasum), x)
        return
    np.testing.assert_allclose(mode(lambda t: hvd.allreduce(t, op=hvd.Adasum), x).numpy(), x.numpy(), rtol=1e-6)


def test_barrier_join_and_rank_ops(world, mode):
    r, n = world
    def barrier():
        hvd.barrier()
        return tf.constant(0)
    mode(barrier)
    got = mode(lambda: tf.stack([hvd.rank_op(), hvd.size_op(), hvd.local_rank_op(), hvd.local_size_op()]))
    assert got.numpy().tolist() == [r, n, hvd.local_rank(), hvd.local_size()]
    assert hvd.join() == n - 1
    assert int(tf.function(hvd.join)()) == n - 1


def test_join_with_uneven_steps(world):
    """Rank r takes r+1 steps of allreduce; a joined rank contributes zeros."""
    r, n = world
    for step in range(r + 1):
        got = hvd.allreduce(tf.constant([1.0]), op=hvd.Sum)
        assert got.numpy()[0] == n - step  # ranks with fewer steps have joined
    assert hvd.join() == n - 1


def test_process_sets(world, mode):
    r, n = world
    evens = hvd.add_process_set([q for q in range(n) if q % 2 == 0])
    try:
        if evens.included():
            got = mode(lambda x: hvd.allreduce(x, op=hvd.Sum, process_set=evens), tf.constant([float(r)]))
            assert got.numpy()[0] == sum(q for q in range(n) if q % 2 == 0)
            got = mode(lambda x: hvd.allgather(x, process_set=evens), tf.constant([r]))
            assert got.numpy().tolist() == [q for q in range(n) if q % 2 == 0]
            got = mode(lambda x: hvd.broadcast(x, 0, process_set=evens), tf.constant([r]))
            assert got.numpy().tolist() == [0]
            assert hvd.broadcast_object(r, 0, process_set=evens) == 0
        else:
            with pytest.raises(ValueError, match="not in process_set"):
                hvd.allreduce(tf.ones(1), process_set=evens)
    finally:
        assert hvd.remove_process_set(evens)
    assert hvd.remove_process_set(hvd.global_process_set) is False


def test_objects(world):
    r, n = world
    assert hvd.broadcast_object({"rank": r, "t": tf.constant([r])}, root_rank=0)["rank"] == 0
    assert hvd.allgather_object((r, "x" * r)) == [(q, "x" * q) for q in range(n)]
    fn = hvd.broadcast_object_fn(root_rank=n - 1)
    assert fn([r]) == [n - 1]
