"""The stream rules of gj.torch's CUDA paths (gj/torch/_streams.py), through its seam: a fake
binding that treats every tensor as a device tensor and records the waits and record_stream
calls, while the collectives themselves run on the CPU. Run under mpiexec (2 ranks)."""

import pytest
import torch

import gj.torch as hvd
from gj.torch import _streams


class FakeStreams:
    def __init__(self):
        self.now = "s0"  # the current stream, as the test sets it
        self.waits, self.records = [], []
        self.capture = False  # torch.cuda.is_current_stream_capturing(), as the test sets it

    def applies(self, tensor):
        return True

    def current(self, tensor):
        return self.now

    def wait(self, stream, other):
        self.waits.append((stream, other))

    def record(self, tensor, stream):
        self.records.append((tensor.data_ptr(), stream))

    def capturing(self, tensor):
        return self.capture


@pytest.fixture
def fake(monkeypatch, world):
    f = FakeStreams()
    monkeypatch.setattr(_streams, "ops", f)
    return f


def test_order_after_waits_for_each_other_stream_once():
    f = FakeStreams()
    real, _streams.ops = _streams.ops, f
    try:
        _streams.order_after("s1", ["s1", "s2", None, "s3", "s2"])
        _streams.order_after(None, ["s2"])  # a CPU call orders nothing
    finally:
        _streams.ops = real
    assert f.waits == [("s1", "s2"), ("s1", "s3")]


def test_a_bucket_waits_for_every_gradients_stream(fake, world):
    r, n = world
    a = torch.nn.Parameter(torch.ones(2))
    b = torch.nn.Parameter(torch.ones(3))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([a, b], lr=0.1), named_parameters=[("a", a), ("b", b)])
    # The first step issues from synchronize() (it learns which gradients are sparse); the
    # hooks issue from the second on.
    (a.sum() + b.sum()).backward()
    opt.synchronize()
    opt.zero_grad()
    fake.waits.clear()
    fake.records.clear()
    fake.now = "side"
    (a * (r + 1)).sum().backward()  # a's gradient is produced on the side stream
    fake.now = "main"
    (b * (r + 1)).sum().backward()  # b's hook completes the bucket, issued on main
    assert ("main", "side") in fake.waits
    opt.synchronize()
    assert torch.equal(a.grad, torch.full((2,), (n + 1) / 2)) and torch.equal(b.grad, torch.full((3,), (n + 1) / 2))
    recorded = {ptr for ptr, stream in fake.records if stream == "main"}
    assert a.grad.data_ptr() in recorded and b.grad.data_ptr() in recorded


def test_blocking_calls_keep_their_tensors_alive_on_the_stream_used(fake, world):
    r, n = world
    fake.now = "main"
    t = torch.arange(6.0).reshape(2, 3).t()  # not contiguous: allreduce reduces a temporary copy
    out = hvd.allreduce(t, op=hvd.Sum)
    assert torch.equal(out, t * n)
    assert out.data_ptr() in {ptr for ptr, s in fake.records if s == "main"}
    assert len([1 for _, s in fake.records if s == "main"]) >= 2  # the temporary input too
    fake.records.clear()
    g = hvd.allgather(torch.ones(1))
    b = hvd.broadcast(torch.ones(2), root_rank=0)
    rs = hvd.reducescatter(torch.ones(n), op=hvd.Sum)
    for out in (g, b, rs):
        assert out.data_ptr() in {ptr for ptr, s in fake.records if s == "main"}


def test_a_step_under_cuda_graph_capture_is_refused_by_name(fake, world):
    a = torch.nn.Parameter(torch.ones(2))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([a], lr=0.1), named_parameters=[("a", a)])
    fake.capture = True
    a.sum().backward()
    with pytest.raises(RuntimeError, match="cannot be captured in a CUDA graph"):
        opt.synchronize()
    fake.capture = False
