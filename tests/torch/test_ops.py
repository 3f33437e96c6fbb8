"""gj.torch collectives under mpiexec (np 2 and 3): every rank asserts the exact result."""

import pickle

import pytest
import torch

import gj
import gj.torch as hvd
from gj import _lib

REDUCIBLE = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8]
MOVABLE = REDUCIBLE + [torch.int8, torch.int16, torch.bool]


def test_calls_before_init_raise():
    assert not hvd.is_initialized()
    with pytest.raises(ValueError, match="not initialized"):
        hvd.rank()
    with pytest.raises(ValueError, match="not initialized"):
        hvd.allreduce(torch.ones(1))


def test_init_is_idempotent_and_ranks(world):
    r, n = world
    hvd.init()
    assert hvd.is_initialized()
    assert 0 <= r < n and n == hvd.size()
    assert 0 <= hvd.local_rank() < hvd.local_size()
    assert hvd.cross_size() * hvd.local_size() == n and hvd.is_homogeneous()
    assert 0 <= hvd.cross_rank() < hvd.cross_size()
    assert hvd.mpi_built() and not hvd.gloo_built()
    assert bool(hvd.nccl_built()) <= bool(_lib.capabilities() & _lib.CAP_NCCL)


def _fill(r, dtype, count=5):
    return torch.full((count,), r + 1, dtype=dtype)


@pytest.mark.parametrize("dtype", REDUCIBLE, ids=str)
def test_allreduce_ops_exact(world, dtype):
    r, n = world
    want = {hvd.Sum: n * (n + 1) // 2, hvd.Min: 1, hvd.Max: n, hvd.Product: 1}
    for k in range(1, n + 1):
        want[hvd.Product] *= k
    for op, value in want.items():
        if dtype == torch.uint8 and value > 255:
            continue
        t = _fill(r, dtype)
        out = hvd.allreduce(t, op=op)
        assert out.dtype == dtype and out.shape == t.shape
        assert torch.equal(out, torch.full((5,), value, dtype=dtype)), (op, out)
        assert torch.equal(t, _fill(r, dtype)), "allreduce must not modify its input"


def test_allreduce_average_default_and_deprecated_keyword(world):
    r, n = world
    t = torch.full((3, 2), float(2 * (r + 1)), dtype=torch.float64)
    assert torch.equal(hvd.allreduce(t), torch.full((3, 2), float(n + 1), dtype=torch.float64))
    with pytest.warns(DeprecationWarning):
        s = hvd.allreduce(t, average=False)
    assert torch.equal(s, torch.full((3, 2), float(n * (n + 1)), dtype=torch.float64))
    with pytest.raises(ValueError, match="not both"):
        hvd.allreduce(t, average=True, op=hvd.Sum)


def test_allreduce_in_place_async_poll_and_factors(world):
    r, n = world
    t = torch.full((1000,), float(r + 1))
    assert hvd.allreduce_(t, op=hvd.Sum) is t
    assert torch.equal(t, torch.full((1000,), float(n * (n + 1) // 2)))
    handles = [hvd.allreduce_async(torch.full((7,), float(r + k)), op=hvd.Sum) for k in range(4)]
    for k, h in enumerate(handles):
        while not hvd.poll(h):
            pass
        assert torch.equal(hvd.synchronize(h), torch.full((7,), float(sum(q + k for q in range(n)))))
    with pytest.raises(ValueError, match="handle"):
        hvd.synchronize(handles[0])
    x = torch.full((4,), float(r + 1))
    h = hvd.allreduce_async_(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5)
    assert hvd.synchronize(h) is x
    assert torch.equal(x, torch.full((4,), float(n * (n + 1) // 2)))
    y = hvd.allreduce(torch.full((4,), r + 1, dtype=torch.int32), op=hvd.Sum, postscale_factor=3.0)
    assert torch.equal(y, torch.full((4,), 3 * n * (n + 1) // 2, dtype=torch.int32))


def test_grouped_allreduce_mixed_dtypes(world):
    r, n = world
    ts = [torch.full((3,), float(r + 1)), torch.full((2, 2), r + 1, dtype=torch.int64),
          torch.full((5,), float(r + 1), dtype=torch.float64)]
    outs = hvd.grouped_allreduce(ts, op=hvd.Sum)
    for t, o in zip(ts, outs):
        assert o.dtype == t.dtype and torch.equal(o, torch.full_like(t, n * (n + 1) // 2))
    got = hvd.grouped_allreduce_(ts, op=hvd.Max)
    assert all(g is t and torch.equal(t, torch.full_like(t, n)) for g, t in zip(got, ts))
    h = hvd.grouped_allreduce_async([torch.full((2,), float(r))], op=hvd.Min)
    assert torch.equal(hvd.synchronize(h)[0], torch.zeros(2))


def test_allgather_varying_first_dimension(world):
    r, n = world
    for dtype in MOVABLE:
        t = torch.full((r + 1, 3), r + 1).to(dtype)
        out = hvd.allgather(t)
        want = torch.cat([torch.full((q + 1, 3), q + 1).to(dtype) for q in range(n)])
        assert out.dtype == dtype and torch.equal(out, want), dtype
    h = hvd.allgather_async(torch.tensor([r]))
    assert torch.equal(hvd.synchronize(h), torch.arange(n))
    outs = hvd.grouped_allgather([torch.tensor([r]), torch.tensor([[r, r]])])
    assert torch.equal(outs[0], torch.arange(n)) and outs[1].shape == (n, 2)
    empty = hvd.allgather(torch.zeros((0 if r == 0 else 1, 2)))
    assert empty.shape == (n - 1, 2)


def test_broadcast_every_dtype_and_forms(world):
    r, n = world
    for dtype in MOVABLE:
        for root in range(n):
            t = torch.full((4, 3), r + 1).to(dtype)
            out = hvd.broadcast(t, root_rank=root)
            assert torch.equal(out, torch.full((4, 3), root + 1).to(dtype)), (dtype, root)
            assert torch.equal(t, torch.full((4, 3), r + 1).to(dtype))
    t = torch.full((5,), float(r))
    assert hvd.broadcast_(t, n - 1) is t and torch.equal(t, torch.full((5,), float(n - 1)))
    t = torch.full((5,), float(r))
    assert torch.equal(hvd.synchronize(hvd.broadcast_async_(t, 0)), torch.zeros(5))
    assert torch.equal(hvd.synchronize(hvd.broadcast_async(torch.full((2,), r), 1)), torch.full((2,), 1))


def test_reducescatter_uneven_rows(world):
    r, n = world
    rows = 2 * n + 1  # the first rank takes the extra row
    t = torch.arange(rows * 2, dtype=torch.float32).reshape(rows, 2) * (r + 1)
    out = hvd.reducescatter(t, op=hvd.Sum)
    mine = [2 + (1 if q < 1 else 0) for q in range(n)]
    start = sum(mine[:r])
    want = torch.arange(rows * 2, dtype=torch.float32).reshape(rows, 2)[start:start + mine[r]] * (n * (n + 1) // 2)
    assert torch.equal(out, want)
    avg = hvd.reducescatter(torch.full((n, 3), float(2 * (r + 1))))
    assert torch.equal(avg, torch.full((1, 3), float(n + 1)))
    outs = hvd.grouped_reducescatter([torch.ones(n, 1), torch.ones(n * 2)], op=hvd.Sum)
    assert torch.equal(outs[0], torch.full((1, 1), float(n))) and torch.equal(outs[1], torch.full((2,), float(n)))
    h = hvd.reducescatter_async(torch.ones(n), op=hvd.Sum)
    assert torch.equal(hvd.synchronize(h), torch.full((1,), float(n)))


def test_barrier_and_objects(world):
    r, n = world
    hvd.barrier()
    obj = {"rank": r, "payload": list(range(r + 3)), "t": torch.arange(r + 1)}
    got = hvd.broadcast_object(obj, root_rank=n - 1)
    assert got["rank"] == n - 1 and got["payload"] == list(range(n + 2))
    assert torch.equal(got["t"], torch.arange(n))
    everyone = hvd.allgather_object((r, "x" * r))
    assert everyone == [(q, "x" * q) for q in range(n)]


def test_mismatched_shapes_and_dtypes_raise_on_every_rank(world):
    r, n = world
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.allreduce(torch.ones(3 if r == 0 else 4))
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.allreduce(torch.ones((2, 3) if r == 0 else (3, 2)))
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.allreduce(torch.ones(3, dtype=torch.float32 if r == 0 else torch.float64))
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.broadcast(torch.ones(3), root_rank=0 if r == 0 else 1)
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.allgather(torch.ones((1, 2 if r == 0 else 3)))
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.allreduce(torch.ones(2), op=hvd.Sum if r == 0 else hvd.Max)
    # the communicator still works afterwards
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), float(n)))


def test_bad_input_names_the_argument(world):
    r, n = world
    with pytest.raises(ValueError, match="root_rank=99"):
        hvd.broadcast(torch.ones(2), root_rank=99)
    with pytest.raises(ValueError, match="op=17"):
        hvd.allreduce(torch.ones(2), op=17)
    with pytest.raises(TypeError, match="torch.int8 cannot be reduced"):
        hvd.allreduce(torch.ones(2, dtype=torch.int8))
    with pytest.raises(TypeError, match="complex64"):
        hvd.broadcast(torch.ones(2, dtype=torch.complex64), 0)
    with pytest.raises(TypeError, match="torch.Tensor"):
        hvd.allreduce([1.0, 2.0])
    with pytest.raises(ValueError, match="not contiguous"):
        hvd.allreduce_(torch.ones(4, 4).t())
    with pytest.raises(ValueError, match="not an outstanding"):
        hvd.poll(12345)
    with pytest.raises(TypeError, match="device='cpu'"):
        hvd.join(device="cpu")


def test_noncontiguous_out_of_place_works(world):
    r, n = world
    t = torch.arange(12.0).reshape(3, 4).t()
    assert torch.equal(hvd.allreduce(t, op=hvd.Sum), t * n)


def test_fp16_compression(world):
    r, n = world
    t = torch.full((6,), float(r + 1), dtype=torch.float32)
    out = hvd.allreduce(t, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert out.dtype == torch.float32 and torch.equal(out, torch.full((6,), float(n * (n + 1) // 2)))


def test_optimizer_state_broadcast_preserves_types(world):
    r, n = world
    for make in (lambda p: torch.optim.SGD(p, lr=0.1 * (r + 1), momentum=0.9, nesterov=True),
                 lambda p: torch.optim.Adam(p, lr=0.01 * (r + 1), betas=(0.8, 0.9), amsgrad=bool(r)),
                 lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.01 * (r + 1)),
                 lambda p: torch.optim.RMSprop(p, lr=0.01, centered=bool(r)),
                 lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.01 * r),
                 lambda p: torch.optim.Adadelta(p, rho=0.9 - 0.1 * r),
                 lambda p: torch.optim.Adamax(p), lambda p: torch.optim.ASGD(p, t0=10 + r),
                 lambda p: torch.optim.NAdam(p), lambda p: torch.optim.RAdam(p),
                 lambda p: torch.optim.Rprop(p, etas=(0.5, 1.2 + 0.1 * r))):
        torch.manual_seed(r)
        model = torch.nn.Linear(3, 2)
        opt = make(model.parameters())
        for _ in range(r + 1):  # different state on every rank
            opt.zero_grad()
            model(torch.randn(4, 3)).sum().backward()
            opt.step()
        hvd.broadcast_optimizer_state(opt, root_rank=0)
        state = pickle.dumps(opt.state_dict()["param_groups"])
        groups = hvd.allgather_object(state)
        assert all(g == groups[0] for g in groups), type(opt).__name__
        tensors = [v for s in opt.state_dict()["state"].values() for v in s.values() if torch.is_tensor(v)]
        for t in tensors:
            assert torch.equal(hvd.broadcast(t, 0), t), type(opt).__name__
        scalars = [(k, type(v)) for s in opt.state_dict()["state"].values() for k, v in s.items()
                   if not torch.is_tensor(v)]
        assert hvd.allgather_object(scalars) == [scalars] * n


def test_broadcast_parameters_state_dict_and_named(world):
    r, n = world
    torch.manual_seed(100 + r)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    model.train()(torch.randn(5, 4))  # running stats differ per rank
    hvd.broadcast_parameters(model.state_dict(), root_rank=1 % n)
    for name, t in model.state_dict().items():
        assert torch.equal(hvd.broadcast(t, 0), t), name
    torch.manual_seed(200 + r)
    other = torch.nn.Linear(2, 2)
    hvd.broadcast_parameters(other.named_parameters(), root_rank=0)
    assert torch.equal(hvd.broadcast(other.weight.detach(), 0), other.weight.detach())


def test_process_sets(world):
    r, n = world
    evens = hvd.add_process_set([q for q in range(n) if q % 2 == 0])
    assert evens.included() == (r % 2 == 0)
    if evens.included():
        out = hvd.allreduce(torch.tensor([float(r)]), op=hvd.Sum, process_set=evens)
        assert out.item() == float(sum(q for q in range(n) if q % 2 == 0))
        assert evens.rank() == r // 2 and evens.size() == (n + 1) // 2
    else:
        with pytest.raises(ValueError, match="not in process_set"):
            hvd.allreduce(torch.ones(1), process_set=evens)
    with pytest.raises(ValueError, match="exists already"):
        hvd.add_process_set(list(range(0, n, 2)))
    assert hvd.remove_process_set(evens)


def test_numpy_layer(world):
    import numpy as np
    r, n = world
    with gj.Communicator() as comm:
        a = np.full(4, r + 1, dtype=np.int64)
        comm.allreduce(a, op="sum")
        assert (a == n * (n + 1) // 2).all()
        rows = comm.allgather(np.full((r + 1, 2), r, dtype=np.int16))
        assert rows.shape == (n * (n + 1) // 2, 2)


def test_optimizer_state_mismatch_raises_on_every_rank(world):
    r, n = world
    model = torch.nn.Sequential(*[torch.nn.Linear(2, 2) for _ in range(1 if r == 0 else 2)])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="could not load"):
        hvd.broadcast_optimizer_state(opt, root_rank=0)
    with pytest.raises(ValueError, match="LBFGS"):
        hvd.broadcast_optimizer_state(torch.optim.LBFGS(model.parameters()), root_rank=0)


def test_check_switch_reaches_the_library_grouped_check_included(world):
    """Comm.set_check(False) from the initial state turns the library's grouped-allreduce check
    off (what DistributedOptimizer relies on for its buckets), set_check(True) on again. The
    probe: the same 32 elements split into tensors differently on rank 0."""
    from gj import _core
    r, n = world
    comm = _core.Comm.world()
    data = torch.empty(32)

    def split_call():
        data.copy_(torch.arange(1.0, 33.0))
        parts = [data] if r == 0 else [data[:16], data[16:]]
        comm.grouped_allreduce([p.data_ptr() for p in parts], [p.data_ptr() for p in parts],
                               [p.numel() for p in parts], _lib.FLOAT32, _lib.SUM)
    try:
        with pytest.raises(_lib.GjError, match="ranks passed different"):
            split_call()
        comm.set_check(False)
        split_call()
        assert torch.equal(data, torch.arange(1.0, 33.0) * n)
        comm.set_check(True)
        with pytest.raises(_lib.GjError, match="ranks passed different"):
            split_call()
    finally:
        comm.destroy()


def test_global_process_set_is_not_removed(world):
    assert hvd.remove_process_set(hvd.global_process_set) is False
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == world[1]


def test_forked_child_runs_no_exit_hook(world):
    """A child of os.fork() inherits init()'s exit hooks but not the job: neither shutdown nor
    abort runs in it (the communicators are the parent's), and the parent goes on."""
    import os
    import sys
    import gj.common.exit_hooks as hooks
    import gj.common.state as state
    assert sys.excepthook is hooks._excepthook  # installed by init()
    pid = os.fork()
    if pid == 0:
        try:
            hooks._at_exit()
            os._exit(0 if state.world is not None else 3)
        finally:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == world[1]
