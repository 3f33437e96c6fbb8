"""barrier() and in-flight calls, as in Horovod, at 2 and 3 ranks: a barrier does not wait for a
nonblocking call that only some ranks have issued (the others issue it after the barrier), it
does wait for those every rank issued before it, a name is free again once this rank has seen
its operation complete (synchronize, poll, barrier) and not before, and allgather_async returns
before the other ranks reach the allgather."""

import pytest
import torch

import gj.torch as hvd


def contribution(r, rows=2):
    return torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) + 100 * r


def issue(kind, r, name):
    """A nonblocking call of `kind` on rank r; returns (handle, what it must produce on n ranks)."""
    if kind == "allreduce":
        return hvd.allreduce_async(contribution(r), name=name, op=hvd.Sum), \
            lambda n: sum(contribution(q) for q in range(n))
    if kind == "allgather":
        return hvd.allgather_async(contribution(r, rows=r + 1), name=name), \
            lambda n: torch.cat([contribution(q, rows=q + 1) for q in range(n)])
    if kind == "broadcast":
        return hvd.broadcast_async(contribution(r), root_rank=0, name=name), lambda n: contribution(0)
    if kind == "reducescatter":
        def want(n):
            total = sum(torch.arange(n * 2.0).reshape(n, 2) + q for q in range(n))
            return total[r:r + 1]
        return hvd.reducescatter_async(torch.arange(hvd.size() * 2.0).reshape(hvd.size(), 2) + r, name=name,
                                       op=hvd.Sum), want
    raise AssertionError(kind)


KINDS = ["allreduce", "allgather", "broadcast", "reducescatter"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_barrier_passes_a_call_only_rank_0_has_issued(world, kind):
    r, n = world
    if r == 0:
        handle, want = issue(kind, r, f"early {kind}")
        with pytest.raises(ValueError, match="still in flight"):
            issue(kind, r, f"early {kind}")
    hvd.barrier()  # the other ranks issue theirs only after it
    if r != 0:
        handle, want = issue(kind, r, f"early {kind}")
    assert torch.equal(hvd.synchronize(handle), want(n))


@pytest.mark.parametrize("kind", KINDS)
def test_a_barrier_completes_the_calls_every_rank_issued_before_it(world, kind):
    r, n = world
    handle, want = issue(kind, r, f"before {kind}")
    hvd.barrier()
    assert hvd.poll(handle)  # done on every rank, synchronized or not
    # The name is free again: the operation completed, though nobody synchronized it.
    again, _ = issue(kind, r, f"before {kind}")
    assert torch.equal(hvd.synchronize(again), want(n))
    assert torch.equal(hvd.synchronize(handle), want(n))


@pytest.mark.parametrize("kind", KINDS)
def test_a_name_is_taken_until_this_rank_has_seen_its_operation_complete(world, kind):
    # Horovod's duplicate-name tests: the last rank issues its call after the others wait in
    # theirs, so it can complete at once; a second call of the name right after it is refused
    # all the same (the first is neither synchronized nor polled), every time.
    from gj.common import handles  # the library's view: whether the requests have ended

    r, n = world
    last = r == n - 1
    if not last:
        first, want = issue(kind, r, f"dup {kind}")
    hvd.barrier()
    if last:
        first, want = issue(kind, r, f"dup {kind}")
        while not handles._completed(first):  # completed, not yet seen by the caller
            pass
        with pytest.raises(ValueError, match="neither synchronized nor polled complete"):
            issue(kind, r, f"dup {kind}")
        assert hvd.poll(first)  # seen: the name is free
    # The others have not polled theirs: the barrier, after the operation completed, frees it.
    hvd.barrier()
    again, _ = issue(kind, r, f"dup {kind}")
    assert torch.equal(hvd.synchronize(again), want(n))
    assert torch.equal(hvd.synchronize(first), want(n))


def test_allgather_async_returns_before_the_others_reach_it(world):
    r, n = world
    handles = {}
    if r == 0:  # rank 0 issues two allgathers and an allreduce the others issue after the barrier
        handles["a"], _ = issue("allgather", r, None)
        handles["b"], _ = issue("allreduce", r, None)
        handles["c"], _ = issue("allgather", r, None)
    hvd.barrier()
    if r != 0:
        handles["a"], _ = issue("allgather", r, None)
        handles["b"], _ = issue("allreduce", r, None)
        handles["c"], _ = issue("allgather", r, None)
    want = torch.cat([contribution(q, rows=q + 1) for q in range(n)])
    assert torch.equal(hvd.synchronize(handles["c"]), want)  # out of issue order
    assert torch.equal(hvd.synchronize(handles["b"]), sum(contribution(q) for q in range(n)))
    assert torch.equal(hvd.synchronize(handles["a"]), want)


def test_allgather_async_keeps_its_place_before_a_blocking_call(world):
    r, n = world
    handle, want = issue("allgather", r, None)
    total = hvd.allreduce(torch.tensor([float(r)]), op=hvd.Sum)  # runs after the allgather's data
    assert total.item() == sum(range(n))
    assert torch.equal(hvd.synchronize(handle), want(n))


def test_allgather_async_of_ranks_that_disagree_raises_on_every_rank(world):
    r, n = world
    t = torch.zeros(2, 3 if r == 0 else 4)
    handle = hvd.allgather_async(t)
    with pytest.raises(hvd.HorovodInternalError, match="trailing shape"):
        hvd.synchronize(handle)
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == n  # the set still works


def test_barrier_in_a_process_set(world):
    r, n = world
    ranks = list(range(1, n))
    ps = hvd.add_process_set(ranks)
    try:
        if r in ranks:
            if r == 1:
                h = hvd.allreduce_async(torch.ones(1), op=hvd.Sum, process_set=ps)
            hvd.barrier(process_set=ps)
            if r != 1:
                h = hvd.allreduce_async(torch.ones(1), op=hvd.Sum, process_set=ps)
            assert hvd.synchronize(h).item() == len(ranks)
        hvd.barrier()
    finally:
        hvd.remove_process_set(ps)
