"""op=Adasum under mpiexec (np 2 and 4; np 3 checks the refusal): allreduce, its async, grouped
and differentiable forms and DistributedOptimizer(op=Adasum), each rank's result against a
NumPy reference of the formula over every rank's tensor (rebuilt here from the ranks' seeds)."""

import numpy as np
import pytest
import torch

import gj.torch as hvd

hvd.init()  # the skip conditions below read the size
TINY = np.sqrt(np.finfo(np.float64).tiny)


def combine(a, b):
    """Adasum(a, b) = (1 - a.b / 2|a|^2) a + (1 - a.b / 2|b|^2) b, in float64."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    dot, aa, bb = float(a @ b), float(a @ a), float(b @ b)
    ca = 1 - dot / (2 * aa) if aa >= TINY else 1.0
    cb = 1 - dot / (2 * bb) if bb >= TINY else 1.0
    return ca * a + cb * b


def reference(vectors):
    """The binary tree of ranks: (0,1), (2,3), ..., then pairs of those."""
    level = [np.asarray(v, np.float64).reshape(-1) for v in vectors]
    while len(level) > 1:
        level = [combine(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def _power_of_two(n):
    return n & (n - 1) == 0


def _tensor(r, shape, dtype=torch.float64, salt=0):
    g = torch.Generator().manual_seed(31 * r + salt)
    # A shared direction plus a rank-specific part: neither orthogonal nor parallel.
    common = torch.randn(shape, generator=torch.Generator().manual_seed(7 + salt), dtype=torch.float64)
    return (common + 0.7 * torch.randn(shape, generator=g, dtype=torch.float64) * (r + 1)).to(dtype)


needs_pow2 = pytest.mark.skipif(not _power_of_two(hvd.size()), reason="Adasum needs a power-of-two size")


def test_reference_is_the_formula():
    a, b = np.array([1.0, 0.0]), np.array([0.0, 2.0])
    assert np.allclose(combine(a, b), a + b)  # orthogonal: the sum
    assert np.allclose(combine(a, a), a)  # equal: the average
    assert np.allclose(combine(a, np.zeros(2)), a)


@needs_pow2
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5), (1000,)], ids=str)
def test_allreduce_adasum_matches_reference_f64(world, shape):
    r, n = world
    out = hvd.allreduce(_tensor(r, shape), op=hvd.Adasum)
    want = reference([_tensor(q, shape).numpy() for q in range(n)])
    assert out.shape == shape and out.dtype == torch.float64
    np.testing.assert_allclose(out.numpy().reshape(-1), want, rtol=1e-12, atol=1e-12)
    # The same bits on every rank.
    assert torch.equal(hvd.broadcast(out, 0), out)


@needs_pow2
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 2e-2)],
                         ids=str)
def test_allreduce_adasum_low_precision(world, dtype, tol):
    r, n = world
    t = _tensor(r, (257,), dtype)
    out = hvd.allreduce(t, op=hvd.Adasum)
    want = reference([_tensor(q, (257,), dtype).double().numpy() for q in range(n)])
    assert out.dtype == dtype
    np.testing.assert_allclose(out.double().numpy(), want, rtol=tol, atol=tol)


@needs_pow2
def test_in_place_async_scaled_and_grouped(world):
    r, n = world
    t = _tensor(r, (33,))
    want = reference([_tensor(q, (33,)).numpy() for q in range(n)])
    handle = hvd.allreduce_async_(t, op=hvd.Adasum)
    assert hvd.synchronize(handle) is t
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-12)
    scaled = hvd.allreduce(_tensor(r, (33,)), op=hvd.Adasum, prescale_factor=2.0, postscale_factor=0.25)
    # Adasum is homogeneous of degree 1: scaling every input scales the result.
    np.testing.assert_allclose(scaled.numpy(), 0.5 * want, rtol=1e-12)
    # Grouped: each tensor its own coefficients.
    outs = hvd.grouped_allreduce([_tensor(r, (5,), salt=1), _tensor(r, (9,), salt=2)], op=hvd.Adasum)
    for out, salt, size in zip(outs, (1, 2), (5, 9)):
        np.testing.assert_allclose(out.numpy(), reference([_tensor(q, (size,), salt=salt).numpy() for q in range(n)]),
                                   rtol=1e-12)


@needs_pow2
def test_gradient_is_adasum_of_gradients(world):
    r, n = world
    x = _tensor(r, (6,)).requires_grad_()
    y = hvd.allreduce(x, op=hvd.Adasum)
    y.backward(_tensor(r, (6,), salt=5))
    np.testing.assert_allclose(x.grad.numpy(), reference([_tensor(q, (6,), salt=5).numpy() for q in range(n)]),
                               rtol=1e-12)


@needs_pow2
def test_process_set(world):
    r, n = world
    if n < 4:
        pytest.skip("needs 4 ranks for a 2-rank set")
    evens = hvd.add_process_set([0, 2])
    try:
        if evens.included():
            out = hvd.allreduce(_tensor(r, (11,)), op=hvd.Adasum, process_set=evens)
            np.testing.assert_allclose(out.numpy(), reference([_tensor(q, (11,)).numpy() for q in (0, 2)]),
                                       rtol=1e-12)
    finally:
        hvd.remove_process_set(evens)


def _model():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2)).double()


def _data(r):
    g = torch.Generator().manual_seed(100 + r)
    return torch.randn(5, 4, generator=g, dtype=torch.float64), torch.randn(5, 2, generator=g, dtype=torch.float64)


@needs_pow2
@pytest.mark.parametrize("momentum", [0.0, 0.9], ids=["sgd", "momentum"])
def test_distributed_optimizer_combines_parameter_changes(world, momentum):
    r, n = world
    model = _model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum),
                                   named_parameters=model.named_parameters(), op=hvd.Adasum)
    assert isinstance(opt, torch.optim.SGD)
    # Reference: every rank's local SGD step on its own batch, the changes combined per tensor.
    local = []
    for q in range(n):
        m = _model()
        sgd = torch.optim.SGD(m.parameters(), lr=0.1, momentum=momentum)
        x, t = _data(q)
        torch.nn.functional.mse_loss(m(x), t).backward()
        before = [p.detach().clone() for p in m.parameters()]
        sgd.step()
        local.append([(p.detach() - b).numpy() for p, b in zip(m.parameters(), before)])
    start = [p.detach().clone() for p in model.parameters()]
    x, t = _data(r)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), t).backward()
    opt.step()
    for i, (p, s) in enumerate(zip(model.parameters(), start)):
        want = s.numpy().reshape(-1) + reference([local[q][i] for q in range(n)])
        np.testing.assert_allclose(p.detach().numpy().reshape(-1), want, rtol=1e-11, atol=1e-12)
    # A second step runs too (hooks re-armed), and all ranks still agree.
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), t).backward()
    opt.step()
    for p in model.parameters():
        assert torch.equal(hvd.broadcast(p.detach(), 0), p.detach())


def test_errors(world):
    r, n = world
    if not _power_of_two(n):
        with pytest.raises(NotImplementedError, match=f"power-of-two number of ranks.*has {n}"):
            hvd.allreduce(torch.ones(3), op=hvd.Adasum)
        with pytest.raises(NotImplementedError, match="power-of-two"):
            hvd.DistributedOptimizer(torch.optim.SGD(_model().parameters(), lr=0.1), op=hvd.Adasum)
        return
    with pytest.raises(TypeError, match="floating"):
        hvd.allreduce(torch.ones(3, dtype=torch.int32), op=hvd.Adasum)
    with pytest.raises(hvd.HorovodInternalError, match="reducescatter.*op=Adasum .* allreduce and grouped_allreduce only"):
        hvd.reducescatter(torch.ones(4 * n), op=hvd.Adasum)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(_model().parameters(), lr=0.1), op=hvd.Adasum)
    with pytest.raises(AssertionError, match="skip_synchronize"):
        with opt.skip_synchronize():
            pass
