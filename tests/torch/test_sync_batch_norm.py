"""gj.torch.SyncBatchNorm under mpiexec (np 2 and 3), against one torch BatchNorm over the
concatenated batch of every rank (each rank builds the whole batch from seeds, so the reference
runs in this process): forward output, input gradient, weight and bias gradients (summed over
ranks), running statistics over several steps, eval mode, uneven batch sizes, process sets."""

import pytest
import torch

import gj.torch as hvd


def _batch(r, rows, shape, step=0):
    g = torch.Generator().manual_seed(1000 * step + 17 * r + 1)
    return (torch.randn((rows,) + shape, generator=g, dtype=torch.float64) * (r + 1) + r).requires_grad_()


def _upstream(r, rows, shape, step=0):
    g = torch.Generator().manual_seed(5000 + 1000 * step + 17 * r)
    return torch.randn((rows,) + shape, generator=g, dtype=torch.float64)


def _reference(num_features, dims, **kw):
    cls = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d, 5: torch.nn.BatchNorm3d}[dims]
    return cls(num_features, **kw).double()


def _same_parameters(sync, ref):
    with torch.no_grad():
        if sync.weight is not None:
            w = torch.linspace(0.5, 2.0, sync.num_features, dtype=torch.float64)
            sync.weight.copy_(w)
            ref.weight.copy_(w)
            sync.bias.copy_(w - 1)
            ref.bias.copy_(w - 1)


@pytest.mark.parametrize("shape", [(3,), (3, 5), (2, 3, 3), (2, 2, 2, 2)], ids=["NC", "NCL", "NCHW", "NCDHW"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_matches_batchnorm_over_concatenated_batch(world, shape, affine):
    r, n = world
    rows = [q + 2 for q in range(n)]  # uneven batches
    c = shape[0]
    sync = hvd.SyncBatchNorm(c, affine=affine, momentum=0.3).double()
    ref = _reference(c, len(shape) + 1, affine=affine, momentum=0.3)
    _same_parameters(sync, ref)
    for step in range(3):
        mine = _batch(r, rows[r], shape, step)
        everyone = [_batch(q, rows[q], shape, step) for q in range(n)]
        y = sync(mine)
        y_ref = ref(torch.cat(everyone))
        start = sum(rows[:r])
        assert torch.allclose(y, y_ref[start:start + rows[r]], rtol=1e-10, atol=1e-10)
        (y * _upstream(r, rows[r], shape, step)).sum().backward()
        (y_ref * torch.cat([_upstream(q, rows[q], shape, step) for q in range(n)])).sum().backward()
        assert torch.allclose(mine.grad, everyone[r].grad, rtol=1e-9, atol=1e-10)
        if affine:
            # Local parameter gradients: their sum over the ranks is the single BatchNorm's.
            for p, q in ((sync.weight, ref.weight), (sync.bias, ref.bias)):
                total = hvd.allreduce(p.grad, op=hvd.Sum)
                assert torch.allclose(total, q.grad, rtol=1e-9, atol=1e-10)
                p.grad = None
                q.grad = None
        assert torch.allclose(sync.running_mean, ref.running_mean, rtol=1e-10, atol=1e-12)
        assert torch.allclose(sync.running_var, ref.running_var, rtol=1e-10, atol=1e-12)
        assert int(sync.num_batches_tracked) == step + 1
    # Eval mode: the running statistics, no communication (ranks may call it unevenly).
    sync.eval()
    ref.eval()
    probe = _batch(r, 3, shape, 99).detach()
    if r == 0:
        sync(probe)
    assert torch.allclose(sync(probe), ref(probe), rtol=1e-10, atol=1e-10)


def test_cumulative_average_and_no_running_stats(world):
    r, n = world
    sync = hvd.SyncBatchNorm(4, momentum=None).double()
    ref = torch.nn.BatchNorm1d(4, momentum=None).double()
    for step in range(3):
        sync(_batch(r, 2, (4,), step))
        ref(torch.cat([_batch(q, 2, (4,), step) for q in range(n)]))
    assert torch.allclose(sync.running_mean, ref.running_mean, rtol=1e-10)
    assert torch.allclose(sync.running_var, ref.running_var, rtol=1e-10)
    untracked = hvd.SyncBatchNorm(4, track_running_stats=False).double()
    untracked.eval()  # batch statistics over the set even in eval mode
    x = _batch(r, 2, (4,), 7)
    want = torch.nn.BatchNorm1d(4, track_running_stats=False).double()(torch.cat([_batch(q, 2, (4,), 7)
                                                                                 for q in range(n)]))
    assert torch.allclose(untracked(x), want[2 * r:2 * r + 2], rtol=1e-10, atol=1e-10)


def test_float32_and_a_model(world):
    r, n = world
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), hvd.SyncBatchNorm(3), torch.nn.ReLU())
    out = model(torch.randn(2, 2, 6, 6))
    out.sum().backward()
    assert out.dtype == torch.float32 and model[0].weight.grad is not None


def test_process_set_statistics(world):
    r, n = world
    evens = hvd.add_process_set([q for q in range(n) if q % 2 == 0])
    try:
        if evens.included():
            members = evens.ranks
            bn = hvd.SyncBatchNorm(2, affine=False, process_set=evens).double()
            y = bn(_batch(r, 3, (2,)))
            ref = torch.nn.BatchNorm1d(2, affine=False).double()(torch.cat([_batch(q, 3, (2,)) for q in members]))
            i = members.index(r)
            assert torch.allclose(y, ref[3 * i:3 * i + 3], rtol=1e-10, atol=1e-10)
    finally:
        hvd.remove_process_set(evens)


def test_errors(world):
    bn = hvd.SyncBatchNorm(3)
    with pytest.raises(ValueError, match="at least 2D"):
        bn(torch.ones(3))
    with pytest.raises(ValueError, match="3 channels"):
        hvd.SyncBatchNorm(4)(torch.ones(2, 3))


def test_no_host_sync_in_forward_or_backward(world, monkeypatch):
    # Every way a device value reaches the host (a host synchronization on CUDA tensors) is
    # counted while a training step runs forward and backward: none may happen.
    r, n = world
    reads = []

    def counting(name, original):
        def read(self, *args, **kwargs):
            reads.append(name)
            return original(self, *args, **kwargs)
        return read

    sync = hvd.SyncBatchNorm(3, momentum=0.3).double()
    x = _batch(r, 4, (3, 5))
    for name in ("item", "tolist", "__bool__", "__int__", "__float__", "__index__", "numpy", "cpu"):
        monkeypatch.setattr(torch.Tensor, name, counting(name, getattr(torch.Tensor, name)))
    y = sync(x)
    y.backward(_upstream(r, 4, (3, 5)))
    monkeypatch.undo()
    assert reads == [], f"SyncBatchNorm read device values on the host: {reads}"
    assert x.grad is not None and sync.weight.grad is not None
