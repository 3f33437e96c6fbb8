"""gj.torch.alltoall under mpiexec (np 2 and 3): exact results for every dtype and shape, the
received splits, the even split, gradients, async handles, process sets, and the errors every
rank must raise."""

import pytest
import torch

import gj.torch as hvd

MOVABLE = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8,
           torch.int8, torch.int16, torch.bool]


def _splits(sender, n):
    """Rows sender sends to each rank: uneven, zero for one pair when n > 1."""
    return [(sender + 2 * q) % 4 for q in range(n)]


def _block(sender, receiver, rows, trailing, dtype):
    """The rows sender sends receiver: values naming both (exact in every dtype)."""
    base = torch.arange(rows * max(1, int(torch.Size(trailing).numel())), dtype=torch.float64)
    value = (sender * 10 + receiver + base) % 2 if dtype == torch.bool else (sender * 10 + receiver + base) % 100
    return value.reshape((rows,) + trailing).to(dtype)


def _input(r, n, trailing, dtype):
    return torch.cat([_block(r, q, _splits(r, n)[q], trailing, dtype) for q in range(n)])


@pytest.mark.parametrize("dtype", MOVABLE, ids=str)
@pytest.mark.parametrize("trailing", [(), (3,), (2, 2)], ids=["1d", "2d", "3d"])
def test_alltoall_splits_exact(world, dtype, trailing):
    r, n = world
    tensor = _input(r, n, trailing, dtype)
    before = tensor.clone()
    out, received = hvd.alltoall(tensor, splits=torch.tensor(_splits(r, n), dtype=torch.int32))
    want = torch.cat([_block(q, r, _splits(q, n)[r], trailing, dtype) for q in range(n)])
    assert out.dtype == dtype and out.shape == want.shape
    assert torch.equal(out, want)
    assert received.dtype == torch.int32 and received.tolist() == [_splits(q, n)[r] for q in range(n)]
    assert torch.equal(tensor, before), "alltoall must not modify its input"


def test_alltoall_even_split_returns_tensor_only(world):
    r, n = world
    tensor = torch.cat([torch.full((2, 3), float(10 * r + q)) for q in range(n)])
    out = hvd.alltoall(tensor)
    assert isinstance(out, torch.Tensor)
    assert torch.equal(out, torch.cat([torch.full((2, 3), float(10 * q + r)) for q in range(n)]))


def test_alltoall_splits_as_list_and_unsent_tail(world):
    r, n = world
    # One row more than the splits sum: Horovod leaves it unsent.
    tensor = torch.arange(n + 1, dtype=torch.int64) + 100 * r
    out, received = hvd.alltoall(tensor, splits=[1] * n)
    assert out.tolist() == [100 * q + r for q in range(n)]
    assert received.tolist() == [1] * n


def test_alltoall_async_gives_output_and_splits(world):
    r, n = world
    tensor = _input(r, n, (2,), torch.float32)
    handle = hvd.alltoall_async(tensor, splits=_splits(r, n))
    out, received = hvd.synchronize(handle)
    assert torch.equal(out, torch.cat([_block(q, r, _splits(q, n)[r], (2,), torch.float32) for q in range(n)]))
    assert received.tolist() == [_splits(q, n)[r] for q in range(n)]


def test_alltoall_grad_sends_gradients_back(world):
    r, n = world
    tensor = _input(r, n, (3,), torch.float64).requires_grad_()
    out, received = hvd.alltoall(tensor, splits=torch.tensor(_splits(r, n), dtype=torch.int32))
    assert not received.requires_grad
    # Weight each received row by its sender and its position: the gradient at the sender is
    # that weight, on the row it sent.
    weights = torch.cat([torch.full((_splits(q, n)[r], 3), float(q + 1)) for q in range(n)]).double()
    (out * weights).sum().backward()
    want = torch.cat([torch.full((_splits(r, n)[q], 3), float(r + 1)) for q in range(n)]).double()
    assert torch.equal(tensor.grad, want)


def test_alltoall_process_set(world):
    r, n = world
    odds = hvd.add_process_set([q for q in range(n) if q % 2 == 1])
    try:
        if odds.included():
            m, me = odds.size(), odds.rank()
            out, received = hvd.alltoall(torch.full((m,), float(me)), splits=[1] * m, process_set=odds)
            assert out.tolist() == [float(q) for q in range(m)]
            assert received.tolist() == [1] * m
        else:
            with pytest.raises(ValueError, match="not in process_set"):
                hvd.alltoall(torch.ones(1), process_set=odds)
    finally:
        hvd.remove_process_set(odds)


def test_alltoall_argument_errors(world):
    r, n = world
    with pytest.raises(ValueError, match="divides dimension 0 evenly"):
        hvd.alltoall(torch.ones(n + 1))
    with pytest.raises(ValueError, match="more than the tensor's"):
        hvd.alltoall(torch.ones(n - 1), splits=[1] * n)
    with pytest.raises(ValueError, match="must hold integers"):
        hvd.alltoall(torch.ones(n), splits=torch.ones(n))
    with pytest.raises(ValueError, match="entries but the process set has"):
        hvd.alltoall(torch.ones(n), splits=[1] * (n + 1))
    with pytest.raises(ValueError, match="negative"):
        hvd.alltoall(torch.ones(n), splits=[-1] + [1] * (n - 1))
    with pytest.raises(ValueError, match="scalar"):
        hvd.alltoall(torch.tensor(1.0))
    # Still usable afterwards.
    assert torch.equal(hvd.alltoall(torch.full((n,), float(r))), torch.arange(n, dtype=torch.float32))


def test_alltoall_mismatch_raises_on_every_rank(world):
    r, n = world
    if n < 2:
        pytest.skip("needs 2 ranks")
    tensor = torch.ones((n, 2), dtype=torch.int32 if r % 2 else torch.float32)
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.alltoall(tensor)
    with pytest.raises(hvd.HorovodInternalError, match="disagree"):
        hvd.alltoall(torch.ones((n, 2 + r)))
    assert torch.equal(hvd.alltoall(torch.full((n,), float(r))), torch.arange(n, dtype=torch.float32))
