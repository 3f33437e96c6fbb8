"""gj.torch behaves as Horovod does (run under mpiexec at 2, 3 and 4 ranks): the gradients of
every differentiable collective by Horovod's definitions, globally and in a process set;
root_rank as a global rank; HorovodInternalError (a RuntimeError) for disagreements; names of
operations in flight; capability values; the wrapped optimizer's details."""

import warnings

import pytest
import torch

import gj.torch as hvd


@pytest.fixture(scope="module")
def sets(world):
    """The global set and the set of ranks 1..n-1 (every rank takes part in creating it)."""
    r, n = world
    tail = hvd.add_process_set(list(range(1, n)))
    yield [("global", hvd.global_process_set, list(range(n))), ("ranks 1..n-1", tail, list(range(1, n)))]
    hvd.remove_process_set(tail)


def _each_set(sets, world):
    """(name, process set, its global ranks) for each set this rank is in."""
    r, _ = world
    return [(name, ps, ranks) for name, ps, ranks in sets if r in ranks]


def test_allreduce_gradient_is_the_allreduce_of_the_gradient(world, sets):
    r, _ = world
    for name, ps, ranks in _each_set(sets, world):
        x = torch.full((3,), 1.0, dtype=torch.float64, requires_grad=True)
        (hvd.allreduce(x, op=hvd.Sum, process_set=ps) * (r + 1)).sum().backward()
        assert torch.equal(x.grad, torch.full((3,), float(sum(q + 1 for q in ranks)), dtype=torch.float64)), name


def _mean_of_ranks_plus_one(ranks):
    return sum(q + 1 for q in ranks) / len(ranks)


def test_allgather_gradient_is_this_ranks_rows_of_the_average(world, sets):
    r, _ = world
    for name, ps, ranks in _each_set(sets, world):
        rows = {q: q % 3 + 1 for q in ranks}  # uneven first dimensions
        x = torch.zeros((rows[r], 2), dtype=torch.float64, requires_grad=True)
        y = hvd.allgather(x, process_set=ps)
        assert y.shape == (sum(rows.values()), 2)
        row_index = torch.arange(1, y.shape[0] + 1, dtype=torch.float64).unsqueeze(1)
        (y * row_index * (r + 1)).sum().backward()
        offset = sum(rows[q] for q in ranks if q < r)
        want = (torch.arange(offset + 1, offset + rows[r] + 1, dtype=torch.float64).unsqueeze(1)
                * _mean_of_ranks_plus_one(ranks)).expand(rows[r], 2)
        assert torch.allclose(x.grad, want, rtol=1e-12, atol=0), (name, x.grad, want)


def test_grouped_allgather_gradient_matches_allgathers(world, sets):
    r, _ = world
    for name, ps, ranks in _each_set(sets, world):
        a = torch.zeros((r % 2 + 1, 3), dtype=torch.float64, requires_grad=True)
        b = torch.zeros((1,), dtype=torch.float64, requires_grad=True)
        ya, yb = hvd.grouped_allgather([a, b], process_set=ps)
        (ya.sum() * (r + 1) + yb.sum() * 2 * (r + 1)).backward()
        mean = _mean_of_ranks_plus_one(ranks)
        assert torch.allclose(a.grad, torch.full_like(a, mean), rtol=1e-12, atol=0), name
        assert torch.allclose(b.grad, torch.full_like(b, 2 * mean), rtol=1e-12, atol=0), name


def test_broadcast_gradient_is_the_average_on_the_global_root_only(world, sets):
    r, _ = world
    for name, ps, ranks in _each_set(sets, world):
        root = ranks[-1]  # a global rank: in the tail set it is not the set rank
        x = torch.full((2,), float(r), dtype=torch.float64, requires_grad=True)
        y = hvd.broadcast(x, root_rank=root, process_set=ps)
        assert torch.equal(y.detach(), torch.full((2,), float(root), dtype=torch.float64)), name
        (y * (r + 1)).sum().backward()
        want = _mean_of_ranks_plus_one(ranks) if r == root else 0.0
        assert torch.allclose(x.grad, torch.full((2,), want, dtype=torch.float64), rtol=1e-12, atol=0), name


@pytest.mark.parametrize("op, pre, post", [(hvd.Sum, 1.0, 1.0), (hvd.Average, 1.0, 1.0), (hvd.Sum, 2.0, 0.5)])
def test_reducescatter_gradient_is_the_allgather_scaled_as_horovod_scales_it(world, sets, op, pre, post):
    r, _ = world
    for name, ps, ranks in _each_set(sets, world):
        m = len(ranks)
        total = 2 * m + 1  # does not divide: the first set ranks take one more row
        x = torch.ones((total, 2), dtype=torch.float64, requires_grad=True)
        y = hvd.reducescatter(x, op=op, process_set=ps, prescale_factor=pre, postscale_factor=post)
        (y * (r + 1)).sum().backward()
        scale = (m if op == hvd.Sum else 1) * pre * post
        owners = [q for s, q in enumerate(ranks) for _ in range(total // m + (1 if s < total % m else 0))]
        want = torch.tensor([(q + 1) * scale for q in owners], dtype=torch.float64).unsqueeze(1).expand(total, 2)
        assert torch.equal(x.grad, want), (name, x.grad, want)


def test_grouped_reducescatter_gradient_matches_reducescatters(world, sets):
    r, _ = world
    for name, ps, ranks in _each_set(sets, world):
        m = len(ranks)
        a = torch.ones((m, 2), dtype=torch.float64, requires_grad=True)
        b = torch.ones((2 * m,), dtype=torch.float64, requires_grad=True)
        ya, yb = hvd.grouped_reducescatter([a, b], op=hvd.Sum, process_set=ps)
        assert torch.equal(ya.detach(), torch.full((1, 2), float(m), dtype=torch.float64))
        (ya.sum() * (r + 1) + yb.sum()).backward()
        want_a = torch.tensor([(q + 1) * m for q in ranks], dtype=torch.float64).unsqueeze(1).expand(m, 2)
        assert torch.equal(a.grad, want_a), name
        assert torch.equal(b.grad, torch.full((2 * m,), float(m), dtype=torch.float64)), name


def test_root_rank_is_a_global_rank_in_a_process_set(world, sets):
    r, n = world
    _, tail, ranks = sets[1]
    if r in ranks:
        assert hvd.broadcast_object(("from", r), root_rank=n - 1, process_set=tail) == ("from", n - 1)
        with pytest.raises(ValueError, match=r"root_rank=0 is not a rank of the process set \(global ranks"):
            hvd.broadcast(torch.ones(1), root_rank=0, process_set=tail)
    assert hvd.broadcast_object(r * 10, root_rank=n - 1) == (n - 1) * 10


def test_disagreements_raise_horovod_internal_error_on_every_rank(world):
    r, n = world
    with pytest.raises(hvd.HorovodInternalError, match="disagree") as e:
        hvd.allreduce(torch.ones(2 if r == 0 else 3))
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.broadcast(torch.ones(2), root_rank=0 if r == 0 else 1)
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.synchronize(hvd.allreduce_async(torch.ones((2, 3) if r == 0 else (3, 2))))
    assert torch.equal(hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.full((1,), float(n)))


def test_a_name_in_flight_is_refused_until_synchronized(world):
    # A name is free again once its operation completes, so the refusals are checked while the
    # operation cannot complete: the last rank issues its call only after the barrier.
    r, n = world
    last = r == n - 1
    if not last:
        h = hvd.allreduce_async(torch.ones(2), name="grad.w")
        with pytest.raises(ValueError, match="name='grad.w' is the name of an operation still in flight"):
            hvd.allreduce_async(torch.ones(2), name="grad.w")
        with pytest.raises(ValueError, match="still in flight"):
            hvd.broadcast_async_(torch.ones(2), 0, name="grad.w")
    hvd.barrier()
    if last:
        h = hvd.allreduce_async(torch.ones(2), name="grad.w")
    hvd.synchronize(h)
    assert torch.equal(hvd.synchronize(hvd.allreduce_async(torch.ones(2), name="grad.w", op=hvd.Sum)),
                       torch.full((2,), float(n)))
    if not last:
        h = hvd.grouped_allgather_async([torch.ones(1)], name="g")
        with pytest.raises(ValueError, match="still in flight"):
            hvd.allgather_async(torch.ones(1), name="g")
    hvd.barrier()
    if last:
        h = hvd.grouped_allgather_async([torch.ones(1)], name="g")
    assert hvd.synchronize(h)[0].shape == (n,)


def test_capabilities_have_horovods_types(world):
    from gj import _lib
    built = hvd.nccl_built()
    assert isinstance(built, int) and not isinstance(built, bool)
    if not _lib.capabilities() & _lib.CAP_NCCL:
        assert built == 0
    else:
        assert built == 0 or built >= 2000, built  # NCCL_VERSION_CODE: 2.x.y -> 2xxyy
    for fn in (hvd.mpi_built, hvd.mpi_enabled, hvd.gloo_built, hvd.gloo_enabled, hvd.cuda_built,
               hvd.rocm_built, hvd.ddl_built, hvd.ccl_built, hvd.mpi_threads_supported):
        assert isinstance(fn(), bool), fn.__name__
    assert hvd.mpi_built() and hvd.mpi_enabled() and not hvd.gloo_built()


def _model():
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2)


def test_optimizer_on_a_rank_outside_its_process_set_does_nothing(world, sets):
    r, n = world
    _, tail, ranks = sets[1]
    model = _model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters(), op=hvd.Sum, process_set=tail)
    model(torch.full((1, 3), float(r + 1))).sum().backward()  # d/dweight = r + 1 everywhere
    opt.step()  # (the reduction runs in place on .grad, in flight since the hook)
    want = sum(q + 1 for q in ranks) if r in ranks else r + 1
    assert torch.equal(model.weight.grad, torch.full((2, 3), float(want)))
    hvd.barrier()


def test_optimizer_exposes_horovods_attributes_and_warns_on_a_second_synchronize(world):
    model = _model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    assert opt._parameter_names == {model.weight: "weight", model.bias: "bias"}
    assert opt.process_set is hvd.global_process_set and opt.op == hvd.Average
    assert opt.backward_passes_per_step == 1 and opt.gradient_predivide_factor == 1.0
    unnamed = hvd.DistributedOptimizer(torch.optim.SGD(_model().parameters(), lr=0.1))
    assert sorted(unnamed._parameter_names.values()) == ["allreduce.noname.0.0", "allreduce.noname.0.1"]
    model(torch.ones(1, 3)).sum().backward()
    opt.synchronize()
    with pytest.warns(UserWarning, match="skip_synchronize"):
        opt.step()
    model(torch.ones(1, 3)).sum().backward()
    opt.synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with opt.skip_synchronize():
            opt.step()
        model(torch.ones(1, 3)).sum().backward()
        opt.step()


def test_broadcast_optimizer_state_before_any_step_initializes_it(world):
    r, n = world
    model = _model()
    opt = hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01 * (r + 1)),
                                   named_parameters=model.named_parameters())
    assert not opt.state_dict()["state"]
    hvd.broadcast_optimizer_state(opt, root_rank=n - 1)
    state = opt.state_dict()
    assert len(state["state"]) == 2 and state["param_groups"][0]["lr"] == 0.01 * n
    for s in state["state"].values():
        assert set(s) >= {"exp_avg", "exp_avg_sq", "step"}
        assert not s["exp_avg"].any()
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    assert hvd.allgather_object(model.weight.detach().tolist()) == [model.weight.detach().tolist()] * n


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average])
def test_sparse_allreduce_equals_the_dense_reduction(world, sets, op):
    r, _ = world
    for name, ps, ranks in _each_set(sets, world):
        dense = torch.zeros(5, 3)
        dense[r % 5, 0] = r + 1.0
        dense[(r + 2) % 5] = 2.0
        wait = hvd.sparse_allreduce_async(dense.to_sparse(), name=f"sparse.{name}", op=op, process_set=ps)
        got = wait()
        assert got.is_sparse
        want = hvd.allreduce(dense, op=op, process_set=ps)  # Average: rounding may differ by an ulp
        assert torch.allclose(got.to_dense(), want, rtol=1e-6, atol=0), name
    with pytest.raises(TypeError, match="sparse COO"):
        hvd.sparse_allreduce_async(torch.ones(2), name=None, op=hvd.Sum)
