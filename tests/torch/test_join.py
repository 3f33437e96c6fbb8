"""join() (Horovod's uneven inputs) under mpiexec at 2 and 3 ranks: a joined rank takes part in
the other ranks' allreduces with zeros (Average divides by the full size), allgather/broadcast
and the other non-allreduce collectives raise on every non-joined rank without a hang, and
join() returns the last rank to join, the same everywhere."""

import pytest
import torch

import gj.torch as hvd

DTYPES = [torch.int32, torch.int64, torch.float32, torch.float64]


def value(r, n, dtype, k=5):
    """Rank r's tensor: multiples of n, so an integer Average over n ranks is exact."""
    return ((torch.arange(k, dtype=torch.float64) + 1) * (r + 1) * n).to(dtype)


def expected(n, joined, dtype, op, k=5):
    total = sum(value(r, n, torch.float64, k) for r in range(n) if r not in joined)
    return (total / n if op == hvd.Average else total).to(dtype)


def others_then_join(joined, work):
    """Ranks in `joined` join at once; the others run work() and then join. Returns join()'s value."""
    if hvd.rank() in joined:
        return hvd.join()
    work()
    return hvd.join()


def test_every_first_joiner_blocking_and_async_every_dtype(world):
    r, n = world
    for first in range(n):
        for dtype in DTYPES:
            results = {}

            def work():
                results["sum"] = hvd.allreduce(value(r, n, dtype), op=hvd.Sum)
                results["avg"] = hvd.allreduce(value(r, n, dtype), name="avg")
                inplace = value(r, n, dtype)
                hvd.allreduce_(inplace, op=hvd.Sum)
                results["inplace"] = inplace
                ha = hvd.allreduce_async(value(r, n, dtype), name="a", average=True)
                hb = hvd.allreduce_async(value(r, n, dtype, k=17), op=hvd.Sum)
                results["b"] = hvd.synchronize(hb)
                results["a"] = hvd.synchronize(ha)
                t = value(r, n, dtype)
                results["a_"] = hvd.synchronize(hvd.allreduce_async_(t, op=hvd.Average))

            with pytest.warns(DeprecationWarning) if r != first else _nothing():
                last = others_then_join({first}, work)
            assert last != first and last == (n - 1 if first != n - 1 else n - 2)
            assert hvd.allgather_object(last) == [last] * n
            if r != first:
                j = {first}
                assert torch.equal(results["sum"], expected(n, j, dtype, hvd.Sum))
                assert torch.equal(results["avg"], expected(n, j, dtype, hvd.Average))
                assert torch.equal(results["inplace"], expected(n, j, dtype, hvd.Sum))
                assert torch.equal(results["a"], expected(n, j, dtype, hvd.Average))
                assert torch.equal(results["b"], expected(n, j, dtype, hvd.Sum, k=17))
                assert torch.equal(results["a_"], expected(n, j, dtype, hvd.Average))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_many_requests_in_flight_and_factors(world):
    r, n = world
    out = {}

    def work():
        handles = [hvd.allreduce_async(value(r, n, torch.float64, k=k + 1), op=hvd.Sum, prescale_factor=0.5,
                                       postscale_factor=4.0) for k in range(20)]
        out["all"] = [hvd.synchronize(h) for h in reversed(handles)][::-1]

    last = others_then_join({0}, work)
    assert last == n - 1
    if r != 0:
        for k, t in enumerate(out["all"]):
            assert torch.equal(t, expected(n, {0}, torch.float64, hvd.Sum, k=k + 1) * 2.0)


@pytest.mark.parametrize("count", [3, 12])  # 12 tensors: a layout longer than the record's inline part
def test_grouped_allreduce_mixed_dtypes_blocking_and_async(world, count):
    r, n = world
    dtypes = [DTYPES[i % len(DTYPES)] for i in range(count)]
    out = {}

    def work():
        ts = [value(r, n, d, k=i + 1) for i, d in enumerate(dtypes)]
        out["sync"] = hvd.grouped_allreduce(ts, op=hvd.Sum)
        out["async"] = hvd.synchronize(hvd.grouped_allreduce_async(ts, op=hvd.Average))
        inplace = [t.clone() for t in ts]
        hvd.grouped_allreduce_(inplace, op=hvd.Sum)
        out["inplace"] = inplace
        out["async_"] = hvd.synchronize(hvd.grouped_allreduce_async_([t.clone() for t in ts], op=hvd.Sum))

    for first in range(n):
        last = others_then_join({first}, work)
        assert last != first
        if r != first:
            for i, d in enumerate(dtypes):
                s = expected(n, {first}, d, hvd.Sum, k=i + 1)
                assert torch.equal(out["sync"][i], s)
                assert torch.equal(out["inplace"][i], s)
                assert torch.equal(out["async_"][i], s)
                assert torch.equal(out["async"][i], expected(n, {first}, d, hvd.Average, k=i + 1))


def test_non_allreduce_collectives_raise_on_every_non_joined_rank_and_the_joined_rank_stays(world):
    r, n = world
    if n < 2:
        pytest.skip("needs 2 ranks")
    raised = []
    t = torch.ones(6, 3)  # 6 rows: alltoall's even split at 2 and 3 ranks
    attempts = [
        ("allgather", lambda: hvd.allgather(t)),
        ("broadcast", lambda: hvd.broadcast(t, root_rank=n - 1)),
        ("broadcast_", lambda: hvd.broadcast_(t.clone(), root_rank=n - 1)),
        ("broadcast_async", lambda: hvd.synchronize(hvd.broadcast_async(t, root_rank=n - 1))),
        ("alltoall", lambda: hvd.alltoall(t)),
        ("reducescatter", lambda: hvd.reducescatter(t)),
        ("reducescatter_async", lambda: hvd.synchronize(hvd.reducescatter_async(t))),
        ("allgather_object", lambda: hvd.allgather_object(r)),
        ("broadcast_object", lambda: hvd.broadcast_object(r, root_rank=n - 1)),
    ]

    for first in range(n):
        def work():
            for name, attempt in attempts:
                try:
                    attempt()
                except RuntimeError as e:
                    assert isinstance(e, hvd.HorovodInternalError)
                    assert "join()" in str(e) and f"rank(s) {first}" in str(e)
                    raised.append(name)
            # The joined rank is still there: it takes part in an allreduce.
            raised.append(hvd.allreduce(torch.ones(2), op=hvd.Sum))

        raised.clear()
        last = others_then_join({first}, work)
        assert last != first
        if r != first:
            assert raised[:-1] == [name for name, _ in attempts]
            assert torch.equal(raised[-1], torch.full((2,), float(n - 1)))
    # Nobody is joined any more: the refused collectives run again.
    assert hvd.allgather(torch.tensor([r])).tolist() == list(range(n))


def test_barrier_with_a_joined_rank(world):
    r, n = world
    assert others_then_join({0}, hvd.barrier) == n - 1


def test_disagreement_among_the_other_ranks_still_raises(world):
    r, n = world
    if n < 3:
        pytest.skip("needs 2 non-joined ranks")
    seen = []

    def work():
        with pytest.raises(hvd.HorovodInternalError, match="disagree"):
            hvd.allreduce(torch.ones(2 if r == 1 else 3))
        seen.append(hvd.allreduce(torch.ones(2), op=hvd.Sum))

    others_then_join({0}, work)
    if r != 0:
        assert torch.equal(seen[0], torch.full((2,), float(n - 1)))


def test_return_value_is_the_last_rank_to_join(world):
    r, n = world
    # Rank q joins after q allreduces: the last to join is n - 1.
    for _ in range(r):
        hvd.allreduce(torch.ones(1))
    assert hvd.join() == n - 1
    # Every rank at once: the highest rank (as Horovod's coordinator takes the last it reads).
    assert hvd.join() == n - 1
    # Rank 0 last.
    if r == 0:
        for _ in range(3):
            hvd.allreduce(torch.ones(1))
    assert hvd.join() == 0


def test_several_ranks_joined_at_once(world):
    r, n = world
    joined = set(range(n - 1))
    out = []
    last = others_then_join(joined, lambda: out.append(hvd.allreduce(value(r, n, torch.float32))))
    assert last == n - 1
    if out:
        assert torch.equal(out[0], expected(n, joined, torch.float32, hvd.Average))


def test_join_device_argument_is_checked(world):
    with pytest.raises(TypeError, match="device='cpu'"):
        hvd.join(device="cpu")


# ---- DistributedOptimizer with uneven data --------------------------------------------------
def _model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)).double()


def _batch(r, s):
    g = torch.Generator().manual_seed(1000 * r + s)
    return torch.randn(5, 4, generator=g, dtype=torch.float64), torch.randn(5, 1, generator=g, dtype=torch.float64)


def _loss(model, r, s):
    x, y = _batch(r, s)
    return ((model(x) - y) ** 2).mean()


def _reference(n, steps, lr):
    """The zero-contribution rule on one process: at step s the gradient is the sum of the
    gradients of the ranks that still have data, divided by n."""
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.5)
    for s in range(max(steps)):
        grads = None
        for q in range(n):
            if s >= steps[q]:
                continue
            model.zero_grad()
            _loss(model, q, s).backward()
            g = [p.grad.clone() for p in model.parameters()]
            grads = g if grads is None else [a + b for a, b in zip(grads, g)]
        for p, g in zip(model.parameters(), grads):
            p.grad = g / n
        opt.step()
    return model


@pytest.mark.parametrize("bucket_bytes", [None, "64"])  # one bucket / one parameter per bucket
def test_optimizer_loop_with_uneven_data(world, monkeypatch, bucket_bytes):
    r, n = world
    if bucket_bytes is not None:
        monkeypatch.setenv("GJ_TORCH_BUCKET_BYTES", bucket_bytes)
    lr = 0.1
    for order in ("ascending", "descending"):
        steps = [2 + q for q in range(n)] if order == "ascending" else [2 + n - q for q in range(n)]
        model = _model()
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr, momentum=0.5),
                                       named_parameters=model.named_parameters())
        for s in range(steps[r]):
            opt.zero_grad()
            _loss(model, r, s).backward()
            opt.step()
        last = hvd.join()
        most = max(range(n), key=lambda q: (steps[q], q))
        assert last == most
        hvd.broadcast_parameters(model.state_dict(), root_rank=last)
        ref = _reference(n, steps, lr)
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            assert torch.allclose(p, q, rtol=1e-12, atol=1e-12), name
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        assert all(torch.equal(flat, other) for other in hvd.allgather_object(flat))
        # After join() the optimizer steps as before, every rank taking part.
        opt.zero_grad()
        _loss(model, r, 99).backward()
        opt.step()


def test_rank_that_began_a_step_joins_with_its_gradients(world):
    r, n = world
    model = _model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.0),
                                   named_parameters=model.named_parameters())
    opt.zero_grad()
    _loss(model, r, 0).backward()
    if r == 0:
        last = hvd.join()  # backward ran, no step(): the step ends inside join() with its gradients
    else:
        opt.synchronize()
        grads = [p.grad.clone() for p in model.parameters()]
        last = hvd.join()
        ref = _model()
        for q in range(n):
            _loss(ref, q, 0).backward()
        for g, p in zip(grads, ref.parameters()):
            assert torch.allclose(g, p.grad / n, rtol=1e-12, atol=1e-12)
    assert last == n - 1
