"""DistributedOptimizer under mpiexec (np 2 and 3): exact reduced gradients (integer-valued data,
op=Sum) when ranks produce different gradients, in different orders, or none; requires_grad
toggled between steps; backward_passes_per_step, predivide, fp16, groups, sparse_as_dense
(sparse gradients without it: test_sparse.py)."""

import copy

import pytest
import torch

import gj.torch as hvd
from gj.torch import optimizer as gj_optimizer


class Branches(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)  # the same initial model on every rank
        self.a = torch.nn.Linear(3, 2)
        self.b = torch.nn.Linear(3, 2)
        self.unused = torch.nn.Linear(3, 2)

    def loss_a(self, x):
        return self.a(x).sum()

    def loss_b(self, x):
        return self.b(x).sum() * 2


def data(r, rows=4):
    return torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) % 5 + r


def expected_grads(model, backward):
    """Every parameter's gradient summed over the ranks that produced one (None: no rank did)."""
    local = copy.deepcopy(model)
    backward(local)
    mine = {n: (p.grad.clone() if p.grad is not None else None) for n, p in local.named_parameters()}
    everyone = hvd.allgather_object(mine)
    out = {}
    for n in mine:
        got = [g[n] for g in everyone if g[n] is not None]
        out[n] = torch.stack(got).sum(0) if got else None
    return out


def assert_grads(model, want, scale=1.0):
    for n, p in model.named_parameters():
        if want[n] is None:
            assert p.grad is None, f"{n}: no rank had a gradient, yet .grad is {p.grad}"
        else:
            assert p.grad is not None, n
            assert torch.equal(p.grad, want[n] * scale), (n, p.grad, want[n] * scale)


@pytest.fixture(params=[1, None], ids=["bucket-per-parameter", "default-buckets"])
def bucket_bytes(request, monkeypatch):
    if request.param:
        monkeypatch.setenv(gj_optimizer.BUCKET_BYTES_ENV, str(request.param))
    return request.param


def make(model, **kw):
    kw.setdefault("op", hvd.Sum)
    return hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                    named_parameters=model.named_parameters(), **kw)


def test_hooks_in_different_orders_and_missing_gradients(world, bucket_bytes):
    r, n = world
    model = Branches()
    opt = make(model)

    def backward(m):
        x = data(r)
        if r % 2 == 0:
            m.loss_a(x).backward()
            m.loss_b(x).backward()
        else:  # the other order, and rank 1 has no gradient for b at all
            if r != 1:
                m.loss_b(x).backward()
            m.loss_a(x).backward()

    want = expected_grads(model, backward)
    opt.zero_grad()
    backward(model)
    opt.synchronize()
    assert_grads(model, want)
    assert model.unused.weight.grad is None
    with opt.skip_synchronize():
        opt.step()
    weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    assert torch.equal(hvd.broadcast(weights, 0), weights)


def test_average_predivide_and_fp16(world):
    r, n = world
    for kw, tol in (({"op": hvd.Average}, 1e-6), ({"op": hvd.Average, "gradient_predivide_factor": 2.0}, 1e-6),
                    ({"op": hvd.Sum, "compression": hvd.Compression.fp16}, 0.0)):
        model = Branches()
        opt = make(model, **kw)
        want = expected_grads(model, lambda m: m.loss_a(data(r)).backward())
        opt.zero_grad()
        model.loss_a(data(r)).backward()
        opt.synchronize()
        scale = 1.0 / n if kw["op"] == hvd.Average else 1.0
        for name, p in model.named_parameters():
            if want[name] is None:
                assert p.grad is None
            else:
                assert torch.allclose(p.grad, want[name] * scale, rtol=tol, atol=0), (kw, name)
                assert p.grad.dtype == torch.float32


def test_requires_grad_toggled_between_steps(world, bucket_bytes):
    r, n = world
    model = Branches()
    model.b.weight.requires_grad_(False)  # frozen at construction, thawed later
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9),
                                   named_parameters=model.named_parameters(), op=hvd.Sum)

    def step(backward):
        want = expected_grads(model, backward)
        opt.zero_grad(set_to_none=True)
        backward(model)
        opt.step()
        assert_grads(model, want)

    frozen_a = model.a.weight.detach().clone()
    model.a.weight.requires_grad_(False)
    step(lambda m: (m.loss_a(data(r)) + m.loss_b(data(r))).backward())
    assert torch.equal(model.a.weight, frozen_a), "a frozen parameter must not move"
    model.a.weight.requires_grad_(True)
    model.b.weight.requires_grad_(True)
    step(lambda m: (m.loss_a(data(r)) + m.loss_b(data(r))).backward())
    assert model.b.weight.grad is not None and model.a.weight.grad is not None
    model.b.requires_grad_(False)
    step(lambda m: (m.loss_a(data(r)) + m.loss_b(data(r))).backward())
    weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    assert torch.equal(hvd.broadcast(weights, 0), weights)


def test_backward_passes_per_step(world):
    r, n = world
    model = Branches()
    opt = make(model, backward_passes_per_step=2)

    def twice(m):
        m.loss_a(data(r)).backward()
        m.loss_a(data(r, rows=2)).backward()

    want = expected_grads(model, twice)
    opt.zero_grad()
    twice(model)
    opt.synchronize()
    assert_grads(model, want)
    # a third pass before step() is an error, as in Horovod
    opt.zero_grad()
    twice(model)
    with pytest.raises(AssertionError, match="backward_passes_per_step"):
        model.loss_a(data(r)).backward()
    opt.synchronize()


def test_zero_grad_during_reduction_raises(world):
    r, n = world
    model = Branches()
    opt = make(model)
    model.loss_a(data(r)).backward()
    model.loss_b(data(r)).backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        opt.zero_grad()
    opt.synchronize()
    opt.zero_grad()


def test_groups(world):
    r, n = world
    for groups in (2, "lists"):
        model = Branches()
        if groups == "lists":
            groups = [[model.a.weight, model.b.weight], [model.unused.bias]]
        opt = make(model, groups=groups)
        backward = lambda m: (m.loss_a(data(r)) + m.loss_b(data(r))).backward()  # noqa: E731
        want = expected_grads(model, backward)
        opt.zero_grad()
        backward(model)
        opt.synchronize()
        assert_grads(model, want)


def test_sparse_as_dense(world):
    r, n = world
    torch.manual_seed(0)
    emb = torch.nn.Embedding(6, 2, sparse=True)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=0.1),
                                   named_parameters=emb.named_parameters(), op=hvd.Sum, sparse_as_dense=True)
    emb(torch.tensor([r, r, 5])).sum().backward()
    opt.synchronize()
    want = torch.zeros(6, 2)
    for q in range(n):
        want[q] += 2
        want[5] += 1
    # dense on the wire, sparse again after (Horovod's: SparseAdam needs a sparse gradient)
    assert emb.weight.grad.is_sparse
    assert torch.equal(emb.weight.grad.to_dense(), want)


def test_mismatched_models_raise_on_every_rank(world):
    r, n = world
    model = torch.nn.Linear(3, 2 if r == 0 else 3)
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=model.named_parameters())


def test_bad_arguments(world):
    model = Branches()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="backward_passes_per_step=0"):
        hvd.DistributedOptimizer(sgd, backward_passes_per_step=0)
    with pytest.raises(ValueError, match="not in it"):
        hvd.DistributedOptimizer(sgd, named_parameters=list(model.a.named_parameters()))
    with pytest.raises(TypeError, match="torch.optim.Optimizer"):
        hvd.DistributedOptimizer(object())


def test_wrapped_optimizer_is_its_class_and_trains_identically(world):
    r, n = world
    torch.manual_seed(r)  # different initial weights: broadcast_parameters fixes them
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    opt = hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01),
                                   named_parameters=model.named_parameters())
    assert isinstance(opt, torch.optim.Adam)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    before = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    for step in range(5):
        opt.zero_grad()
        model(torch.randn(16, 5)).pow(2).mean().backward()
        opt.step()
    after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    assert not torch.equal(before, after)
    assert torch.equal(hvd.broadcast(after, 0), after)


def test_process_set_optimizer(world):
    r, n = world
    members = [0, n - 1] if n > 2 else [1]  # never all ranks (the global set exists already)
    ps = hvd.add_process_set(members)
    if ps.included():
        model = Branches()
        opt = make(model, process_set=ps)
        opt.zero_grad()
        model.loss_a(data(r)).backward()
        opt.synchronize()
        want = sum(data(q).sum(0) for q in members)
        assert torch.equal(model.a.weight.grad, torch.stack([want, want]))
    hvd.remove_process_set(ps)


def test_parameter_unused_everywhere_then_used_on_one_rank(world, bucket_bytes):
    r, n = world
    model = Branches()
    opt = make(model)
    steps = [lambda m: m.loss_a(data(r)).backward(),                      # b unused everywhere
             lambda m: (m.loss_a(data(r)) + (m.loss_b(data(r)) if r == 0 else 0)).backward(),
             lambda m: (m.loss_a(data(r)) + m.loss_b(data(r))).backward()]
    for backward in steps:
        want = expected_grads(model, backward)
        opt.zero_grad(set_to_none=True)
        backward(model)
        opt.synchronize()
        assert_grads(model, want)
        with opt.skip_synchronize():
            opt.step()
    weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    assert torch.equal(hvd.broadcast(weights, 0), weights)
