"""op=Adasum: Horovod's adaptive summation, through the library's gjAllReduceAdasum.

allreduce(tensor, op=Adasum) combines the ranks' tensors pairwise, Adasum(a, b) = (1 - a.b /
2|a|^2) a + (1 - a.b / 2|b|^2) b over the whole tensor, in the binary tree of ranks (Horovod's
recursive vector halving, distance doubling). The process set's size must be a power of two
(NotImplementedError otherwise, as Horovod). f32, f64, f16, bf16; prescale_factor multiplies
each rank's tensor before, postscale_factor the result after. CUDA tensors are staged through
host memory (copied to the CPU, combined there, copied back): Horovod without NCCL does the
same, and the library has no device Adasum.

DistributedOptimizer(op=Adasum) is Horovod's Adasum optimizer: when a parameter's gradient is
ready, the wrapped optimizer steps that parameter alone, and the step's change (new - old
value) is combined with Adasum across the set; step() waits and sets every parameter to its
old value plus the combined change.
"""

from contextlib import contextmanager

import torch

from .. import _lib
from ..common.agreement import start
from ..common.handles import _handles, _new_handle, synchronize
from ._basics import comm_of, global_process_set
from ._tensor import check_tensor, ptr, require_contiguous, signature
from .compression import Compression

_FLOATS = (_lib.FLOAT32, _lib.FLOAT64, _lib.FLOAT16, _lib.BFLOAT16)


def _power_of_two(n):
    return n > 0 and n & (n - 1) == 0


def adasum_async(tensor, output, pre, post, process_set, what, asynchronous=True):
    """Starts the Adasum of tensor into output (may be tensor); a gj.torch handle."""
    comm = comm_of(process_set, what)
    code = check_tensor(tensor, what, reduce=True)
    if code not in _FLOATS:
        raise TypeError(f"{what}: op=Adasum combines floating tensors (float32, float64, float16, bfloat16); "
                        f"got tensor.dtype={tensor.dtype}")
    if not _power_of_two(comm.size):
        raise NotImplementedError(f"{what}: op=Adasum runs on a power-of-two number of ranks (as Horovod's); the "
                                  f"process set has {comm.size}")
    require_contiguous(output, what)
    work = tensor.detach().to("cpu", copy=True).contiguous()
    if pre != 1.0:
        work.mul_(pre)
    fields = (("call", "allreduce"),) + signature(tensor) + (("op", "Adasum"), ("prescale", pre),
                                                             ("postscale", post))

    def run(nb):
        return comm.adasum(ptr(work), ptr(work), work.numel(), code, nonblocking=nb)

    def finish():
        if post != 1.0:
            work.mul_(post)
        with torch.no_grad():
            output.copy_(work)
        return output

    reqs = start(comm, what, fields, run, asynchronous)
    return _new_handle(reqs, finish, (tensor, output, work))


def grouped_adasum_async(tensors, outputs, pre, post, process_set, what, asynchronous=True):
    """One Adasum per tensor (each tensor its own coefficients, as Horovod's per-layer ones)."""
    handles = [adasum_async(t, o, pre, post, process_set, what, asynchronous) for t, o in zip(tensors, outputs)]
    reqs = [r for h in handles for r in _handles[h].requests]
    finishers = [_handles.pop(h) for h in handles]
    return _new_handle(reqs, lambda: [f.finish() for f in finishers], finishers)


class _DistributedAdasumOptimizer(torch.optim.Optimizer):
    """The methods of DistributedOptimizer(op=Adasum) (mixed into the wrapped optimizer's class)."""

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self._process_set = process_set
        params = [p for g in self.param_groups for p in g["params"]]
        if named_parameters is not None:
            named = list(named_parameters)
            if any(not isinstance(x, tuple) or len(x) != 2 for x in named):
                raise ValueError("DistributedOptimizer: named_parameters must be (name, parameter) pairs, "
                                 "as model.named_parameters() gives")
            names = [n for n, _ in named]
            dups = sorted({n for n in names if names.count(n) > 1})
            if dups:
                raise ValueError(f"DistributedOptimizer: duplicate parameter names {dups}")
            unnamed = {id(p) for p in params} - {id(p) for _, p in named}
            if unnamed:
                raise ValueError(f"DistributedOptimizer: {len(unnamed)} parameters of the optimizer are not in "
                                 "named_parameters")
        if not isinstance(backward_passes_per_step, int) or backward_passes_per_step < 1:
            raise ValueError(f"DistributedOptimizer: backward_passes_per_step={backward_passes_per_step!r} is "
                             "not an integer >= 1")
        self.backward_passes_per_step = backward_passes_per_step
        self._delay = {p: backward_passes_per_step for p in params}
        self._start_values = {p: torch.zeros_like(p, requires_grad=False) for p in params}
        self._handles = {}
        self._requires_update = set()
        self._grad_accs = []
        for p in params:
            if p.requires_grad:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                self._requires_update.add(p)
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                acc.register_hook(self._make_hook(p))
                self._grad_accs.append(acc)

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._delay:
            self._delay[p] = passes

    def _start_delta(self, p):
        """Steps p alone with the wrapped optimizer, then starts the Adasum of its change."""
        start = self._start_values[p]
        stashed = [g["params"] for g in self.param_groups]
        for g in self.param_groups:
            g["params"] = [p] if any(p is v for v in g["params"]) else []
        try:
            start.copy_(p.detach())
            with torch.no_grad():
                super(self.__class__, self).step()
                p.sub_(start)
        finally:
            for g, s in zip(self.param_groups, stashed):
                g["params"] = s
        compressed, ctx = self._compression.compress(p.detach())
        compressed = compressed.contiguous()
        handle = adasum_async(compressed, compressed, 1.0, 1.0, self._process_set, "DistributedOptimizer(op=Adasum)")
        return handle, ctx, compressed

    def _make_hook(self, p):
        def hook(*_):
            if self._handles.get(p, (None,))[0] is not None and self._delay[p] <= 0:
                raise AssertionError("DistributedOptimizer: gradients were computed more than "
                                     "backward_passes_per_step times before step(); raise backward_passes_per_step")
            self._delay[p] -= 1
            self._handles[p] = self._start_delta(p) if self._delay[p] == 0 else (None, None, None)
        return hook

    def synchronize(self):
        """Nothing to do: step() completes the combined changes (Horovod's Adasum optimizer)."""

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError("DistributedOptimizer(op=Adasum): skip_synchronize is not supported (step() applies "
                             "the combined parameter changes itself)")
        yield  # pragma: no cover

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        # Parameters in issue order: every rank starts and waits for them alike.
        for p in sorted(self._requires_update - set(self._handles), key=self._order):
            self._handles[p] = self._start_delta(p)
        for p in sorted(self._handles, key=self._order):
            handle, ctx, compressed = self._handles[p]
            if handle is None:
                handle, ctx, compressed = self._start_delta(p)
            delta = self._compression.decompress(synchronize(handle), ctx)
            with torch.no_grad():
                p.copy_(self._start_values[p] + delta)
            self._delay[p] = self.backward_passes_per_step
        self._handles.clear()
        return loss

    def _order(self, p):
        for i, q in enumerate(q for g in self.param_groups for q in g["params"]):
            if q is p:
                return i
        return -1

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("DistributedOptimizer: zero_grad() after backward() and before step() would "
                                 "race with the combination of the parameter changes")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def distributed_adasum_optimizer(optimizer, named_parameters=None, compression=Compression.none,
                                 backward_passes_per_step=1, process_set=global_process_set):
    size = comm_of(process_set, "DistributedOptimizer(op=Adasum)").size
    if not _power_of_two(size):
        raise NotImplementedError(f"DistributedOptimizer(op=Adasum) runs on a power-of-two number of ranks (as "
                                  f"Horovod's); the process set has {size}")
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,), dict(_DistributedAdasumOptimizer.__dict__))
    wrapped = cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, process_set)
    wrapped.state.update(optimizer.state)
    return wrapped
