"""Which CUDA streams a collective on CUDA tensors is ordered against, and for how long its
tensors stay allocated. The library enqueues a CUDA collective on torch's current stream of the
tensor's device; two rules keep that correct when tensors come from other streams:
- keep_alive: every tensor the enqueued work reads or writes is record_stream'ed on that stream,
  so torch's caching allocator does not hand its memory to another stream's work before the
  collective has run (a temporary contiguous copy freed as the call returns, a gradient
  allocated on a side stream);
- order_after: a fused bucket of gradients produced on several streams (the backward pass runs
  each op on the stream its forward ran on) is issued on one stream after waiting for every
  gradient's stream, not only the last hook's.
The torch binding is the seam: tests replace `ops` with a fake that records the calls, since
this machine has no GPU.
"""

import torch


class TorchStreams:
    """The real binding: torch.cuda streams."""

    def applies(self, tensor):
        return tensor.is_cuda

    def current(self, tensor):
        return torch.cuda.current_stream(tensor.device)

    def wait(self, stream, other):
        stream.wait_stream(other)

    def record(self, tensor, stream):
        tensor.record_stream(stream)

    def capturing(self, tensor):
        return tensor.is_cuda and torch.cuda.is_current_stream_capturing()


ops = TorchStreams()


def current(tensor):
    """The stream the library would use for tensor (None for a CPU tensor)."""
    return ops.current(tensor) if ops.applies(tensor) else None


def order_after(stream, others):
    """stream waits for the work queued so far on each of others (distinct from stream)."""
    if stream is None:
        return
    seen = []
    for other in others:
        if other is not None and other != stream and other not in seen:
            seen.append(other)
            ops.wait(stream, other)


def keep_alive(tensors, stream):
    """Each CUDA tensor of tensors stays allocated until stream's work queued so far has run."""
    if stream is None:
        return
    for t in tensors:
        if t is not None and ops.applies(t) and t.numel():
            ops.record(t, stream)


def require_not_capturing(tensor, what):
    """Raises RuntimeError naming what when torch's current stream is being captured into a CUDA
    graph: a nonblocking reduction is completed by a host wait (synchronize), which a graph
    replay cannot repeat, and the library refuses it during capture."""
    if ops.capturing(tensor):
        raise RuntimeError(
            f"{what}: a DistributedOptimizer step cannot be captured in a CUDA graph: its gradient buckets "
            "are nonblocking reductions that synchronize() completes on the host, which a replay cannot "
            "repeat. Capture the forward and backward passes only and step outside the graph, or reduce "
            "the gradients inside the graph with the blocking gj.torch.allreduce_ (stream-ordered, "
            "capturable once the fusion buffer exists: run the same step once before capturing)")
