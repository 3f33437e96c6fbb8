"""Nonblocking gj.torch operations over the library's requests (gjIallReduce ... gjTest/gjWait),
under mpiexec. Its own pytest run: the last test breaks the communicator on purpose."""

import pytest
import torch

import gj.torch as hvd


def test_many_requests_in_flight_synchronized_in_any_order(world):
    r, n = world
    handles = [hvd.allreduce_async(torch.full((k + 1,), float(r + k)), op=hvd.Sum) for k in range(64)]
    handles += [hvd.broadcast_async(torch.full((3,), float(r)), root_rank=n - 1)]
    handles += [hvd.grouped_allreduce_async([torch.ones(2), torch.ones(3, dtype=torch.int64)], op=hvd.Sum)]
    outs = {h: None for h in handles}
    for h in reversed(handles):
        outs[h] = hvd.synchronize(h)
    for k, h in enumerate(handles[:64]):
        assert torch.equal(outs[h], torch.full((k + 1,), float(sum(q + k for q in range(n)))))
    assert torch.equal(outs[handles[64]], torch.full((3,), float(n - 1)))
    g = outs[handles[65]]
    assert torch.equal(g[0], torch.full((2,), float(n))) and torch.equal(g[1], torch.full((3,), n))


def test_poll_reports_completion(world):
    r, n = world
    h = hvd.allreduce_async_(torch.ones(1 << 16), op=hvd.Sum)
    while not hvd.poll(h):
        pass
    assert torch.equal(hvd.synchronize(h), torch.full((1 << 16,), float(n)))


@pytest.mark.parametrize("start", [
    lambda t: hvd.allreduce_async(t, op=hvd.Sum),
    lambda t: hvd.grouped_allreduce_async([t], op=hvd.Sum),
    lambda t: hvd.broadcast_async(t, root_rank=0),
])
def test_async_same_size_other_shape_fails_on_every_rank_and_the_set_stays_usable(world, start):
    r, n = world
    h = start(torch.ones((2, 3) if r == 0 else (3, 2)))
    with pytest.raises(hvd.HorovodInternalError, match="disagree.*shape.*\\(%d, %d\\)" % ((2, 3) if r == 0 else (3, 2))):
        hvd.synchronize(h)
    h = hvd.allreduce_async(torch.ones(4), op=hvd.Sum)
    assert torch.equal(hvd.synchronize(h), torch.full((4,), float(n)))


def test_async_count_mismatch_fails_on_every_rank(world):
    r, n = world
    h = hvd.allreduce_async(torch.ones(3 if r == 0 else 5), op=hvd.Sum)
    with pytest.raises(hvd.HorovodInternalError):
        hvd.synchronize(h)
