"""DistributedOptimizer: gradient averaging overlapped with the backward pass.

Gradient hooks (on each parameter's gradient accumulator, as Horovod registers them) count the
gradients of the step. The parameters are planned into fixed buckets (_buckets.py); a bucket is
issued as one nonblocking grouped allreduce as soon as all its gradients are ready and every
earlier bucket was issued. synchronize() issues the buckets left - a parameter without a
gradient on this rank contributes zeros - then one small request exchanging which parameters
got a gradient on any rank, and waits. So every rank issues the same requests in the same
order, whatever order its hooks fire in and whichever gradients it has:
- a parameter with a gradient on some rank gets the reduced gradient on every rank;
- a parameter with a gradient on no rank keeps its .grad untouched (None stays None, so the
  optimizer skips it as without distribution: frozen layers stay frozen);
- requires_grad may change between steps: the plan covers every parameter of the optimizer;
  a parameter with a gradient on no rank in the previous step leaves the step's buckets (the
  flag exchange made that set identical everywhere) and is reduced after the flag exchange
  should it get a gradient after all.

Sparse gradients (nn.Embedding(sparse=True)) are reduced as Horovod reduces them, by
sparse_allreduce_async (an allgather of every rank's indices and values; Average divides the
values by the set's size; no compression, no predivide): a parameter whose gradient is sparse on
some rank leaves the buckets and is reduced after the flag exchange, which also tells every rank
which parameters' gradients are sparse (and their sparse_dim). Until the first exchange nobody
knows that, so the first step issues nothing from the hooks: synchronize() exchanges the flags
first, then issues the buckets of the dense parameters and the sparse reductions. A parameter
whose gradient turns sparse later is reduced densely in its bucket that step (the bucket was
planned with it) and sparsely from the next. With sparse_as_dense=True a sparse gradient is
made dense in the hook, reduced in its bucket and made sparse again (same sparse_dim) after, as
Horovod does, so torch.optim.SparseAdam still gets the sparse gradient it needs.
"""

import contextlib
import os
import threading
import warnings

import torch

from .. import _lib
from .._lib import GjError
from ..common import agreement as _agreement
from . import _basics, _join, _streams, mpi_ops
from ._basics import global_process_set
from ..common.buckets import DEFAULT_BUCKET_BYTES, plan_buckets
from ._tensor import check_tensor, ptr, stream
from .compression import Compression
from ..common.exceptions import HorovodInternalError
from ..common.reduce_ops import library_op

BUCKET_BYTES_ENV = "GJ_TORCH_BUCKET_BYTES"
# CUDA parameters: NCCL's allreduce bandwidth keeps rising well past 4 MiB (nccl-tests' published
# curves reach most of the bus bandwidth only from tens of MiB; a 4 MiB message gets a fraction
# of it), and with communication on the library's own stream a bucket no longer delays the
# backward kernels queued after it. 25 MiB is DDP's bucket_cap_mb, within GJ_COLL_FUSION_BYTES'
# 64 MiB (one NCCL call per bucket). Not measured by gj on a GPU yet: the device check's
# `allreduce nccl` rows give the curve (docs/gpu.md, "Bucket size").
DEFAULT_DEVICE_BUCKET_BYTES = 25 << 20


def _bucket_bytes(environ=os.environ, cuda=False):
    """GJ_TORCH_BUCKET_BYTES (HOROVOD_FUSION_THRESHOLD maps to it), else the default for the
    parameters' device: DEFAULT_DEVICE_BUCKET_BYTES on CUDA, DEFAULT_BUCKET_BYTES on the host."""
    raw = environ.get(BUCKET_BYTES_ENV)
    if raw is None:
        return DEFAULT_DEVICE_BUCKET_BYTES if cuda else DEFAULT_BUCKET_BYTES
    try:
        value = int(raw)
        if value <= 0:
            raise ValueError
        return value
    except ValueError:
        raise ValueError(f"{BUCKET_BYTES_ENV}={raw!r} is not a positive number of bytes") from None


class _DistributedOptimizer(torch.optim.Optimizer):
    _gj_distributed = True  # broadcast_optimizer_state takes the base class's step

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, process_set):
        super(self.__class__, self).__init__(params)
        what = "DistributedOptimizer"
        self._compression = compression
        self._sparse_as_dense = self.sparse_as_dense = sparse_as_dense
        if not isinstance(backward_passes_per_step, int) or backward_passes_per_step < 1:
            raise ValueError(f"{what}: backward_passes_per_step={backward_passes_per_step!r} must be an int >= 1")
        self.backward_passes_per_step = backward_passes_per_step
        self.op = op = mpi_ops.resolve_op(op, None, what)
        if gradient_predivide_factor != 1.0 and op != mpi_ops.Average:
            raise ValueError(f"{what}: gradient_predivide_factor={gradient_predivide_factor} needs op=Average")
        if gradient_predivide_factor <= 0:
            raise ValueError(f"{what}: gradient_predivide_factor={gradient_predivide_factor} must be > 0")
        self.gradient_predivide_factor = gradient_predivide_factor
        self._op = library_op(op, what)
        self._prescale = 1.0 / gradient_predivide_factor
        self._postscale = float(gradient_predivide_factor)

        self._params = [p for g in self.param_groups for p in g["params"]]
        self._names = _names(named_parameters, self.param_groups, self._params, what)
        if len({id(p) for p in self._params}) != len(self._params):
            raise ValueError(f"{what}: a parameter appears in more than one param group")
        # Horovod's attributes, which scripts and libraries read.
        self._parameter_names = {p: n for p, n in zip(self._params, self._names)}
        self.process_set = process_set
        self._groups = groups
        self._synchronized = False
        self._should_synchronize = True
        _basics.registered(process_set, what)
        if not process_set.included():
            # As in Horovod: a rank outside the set neither reduces nor waits; step() steps.
            self._comm = None
            return
        self._comm = _basics.comm_of(process_set, what)
        wire = [self._wire_dtype(p) for p in self._params]
        for p, name in zip(self._params, self._names):
            check_tensor(torch.empty(0, dtype=p.dtype, device=p.device), what, f"parameter {name!r}", reduce=True)
        nbytes = [p.numel() * torch.empty(0, dtype=d).element_size() for p, d in zip(self._params, wire)]
        self._index = {id(p): i for i, p in enumerate(self._params)}
        cuda = any(p.is_cuda for p in self._params)
        self._buckets = plan_buckets(nbytes, [str(d) for d in wire], _bucket_bytes(cuda=cuda),
                                     self._group_indices(groups, what))
        self._kinds = [str(d) for d in wire]
        # Parameters that got a gradient on no rank in the previous step (the same set on every
        # rank: it comes from the step's flag exchange). They leave the step's buckets, so a
        # frozen or unused parameter never holds back the buckets after it; should one get a
        # gradient after all, it is reduced at synchronize, after the flag exchange says so.
        self._skip = frozenset()
        # Parameters with a sparse gradient on some rank in an earlier step: {index: sparse_dim}
        # (the same everywhere: from the flag exchanges). Reduced by sparse_allreduce_async.
        self._sparse = {}
        # Until the first flag exchange no rank knows which gradients are sparse: the hooks
        # issue nothing (a sparse_as_dense optimizer has nothing to learn).
        self._probing = not sparse_as_dense
        _agreement.agree(self._comm, what, (
            ("parameters", tuple((tuple(p.shape), str(p.dtype)) for p in self._params)),
            ("buckets", tuple(tuple(b) for b in self._buckets)), ("op", op),
            ("backward_passes_per_step", backward_passes_per_step),
            ("gradient_predivide_factor", float(gradient_predivide_factor)),
            ("compression", compression.__name__)))

        self._lock = threading.RLock()
        self._grad_accs = {}
        self._reset_step()
        self._register_hooks()
        _join.register_optimizer(self)  # a rank inside join() mirrors this optimizer's steps

    # ---- planning helpers ----------------------------------------------------------------
    def _wire_dtype(self, p):
        return self._compression.compress(torch.empty(0, dtype=p.dtype))[0].dtype

    def _group_indices(self, groups, what):
        if groups is None or isinstance(groups, int):
            return groups
        out = []
        for g, members in enumerate(groups):
            idx = []
            for p in members:
                if id(p) not in self._index:
                    raise ValueError(f"{what}: groups[{g}] holds a tensor that is not a parameter of the optimizer")
                idx.append(self._index[id(p)])
            out.append(idx)
        return out

    # ---- per-step state ----------------------------------------------------------------
    def _reset_step(self):
        self._counts = [0] * len(self._params)
        self._grad_streams = {}  # index -> the stream its gradient was produced on (CUDA)
        self._sparse_dims = {}   # index -> sparse_dim of this step's sparse gradient here
        self._plan_step()
        self._inflight = []  # (request, [(index, wire tensor, fired here)])

    def _plan_step(self):
        out = set(self._skip) | set(self._sparse)
        self._step_buckets = [m for m in ([i for i in b if i not in out] for b in self._buckets) if m]
        self._bucket_of = {i: b for b, members in enumerate(self._step_buckets) for i in members}
        self._missing = [len(b) for b in self._step_buckets]
        self._next_bucket = 0

    def _register_hooks(self):
        for i, p in enumerate(self._params):
            if p.requires_grad and i not in self._grad_accs:
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                acc.register_hook(self._make_hook(i))
                self._grad_accs[i] = acc

    def _make_hook(self, i):
        def hook(*_):
            with self._lock:
                self._on_grad(i)
        return hook

    def _on_grad(self, i):
        if self._counts[i] >= self.backward_passes_per_step:
            raise AssertionError(
                f"gradient of parameter {self._names[i]!r} computed more than backward_passes_per_step="
                f"{self.backward_passes_per_step} times before step()/synchronize(); increase "
                "backward_passes_per_step to accumulate gradients locally")
        p = self._params[i]
        if p.grad is not None and p.grad.is_sparse:
            self._sparse_dims[i] = p.grad.sparse_dim()
            if self._sparse_as_dense or (not self._probing and i in self._bucket_of):
                # Its bucket carries it (sparse_as_dense, or planned before it turned sparse);
                # synchronize makes the result sparse again.
                p.grad = p.grad.to_dense()
        self._counts[i] += 1
        if p.grad is not None:
            self._grad_streams[i] = _streams.current(p.grad)
        if self._probing:
            return
        if self._counts[i] == self.backward_passes_per_step:
            b = self._bucket_of.get(i)
            if b is None:  # skipped this step: reduced at synchronize if any rank has it
                return
            self._missing[b] -= 1
            while self._next_bucket < len(self._step_buckets) and self._missing[self._next_bucket] == 0:
                self._issue(self._step_buckets[self._next_bucket])
                self._next_bucket += 1

    def _fired_here(self, i):
        p = self._params[i]
        return p.grad is not None and (self._counts[i] > 0 or i not in self._grad_accs)

    def _issue(self, members):
        # Before anything reaches another rank: refused on every rank alike.
        _streams.require_not_capturing(self._params[members[0]], "DistributedOptimizer")
        _join.announce_step(self)  # once per step, before its first request
        # The bucket runs on this thread's current stream, after every member's gradient stream.
        issue_stream = _streams.current(self._params[members[0]])
        _streams.order_after(issue_stream, [self._grad_streams.get(i) for i in members])
        items = []
        for i in members:
            p = self._params[i]
            fired = self._fired_here(i)
            if fired:
                if p.grad.is_sparse:  # set without a hook: its bucket carries it dense
                    self._sparse_dims[i] = p.grad.sparse_dim()
                    p.grad = p.grad.to_dense()
                wire, _ = self._compression.compress(p.grad)
                wire = wire.contiguous()
            else:
                fired = False
                wire = torch.zeros(p.shape, dtype=self._wire_dtype(p), device=p.device)
            items.append((i, wire, fired))
        wires = [w for _, w, _ in items]
        try:
            # Unchecked: the bucket plan and every parameter's shape were agreed at
            # construction, and which buckets a step issues follows from the flag exchange,
            # identical on every rank. The library's per-call check would cost a small
            # allreduce per bucket, about 10 ms per step of the ResNet-50-sized benchmark.
            self._comm.set_check(False)
            req = self._comm.grouped_allreduce([ptr(w) for w in wires], [ptr(w) for w in wires],
                                               [w.numel() for w in wires], _dtype(wires[0]), self._op,
                                               self._prescale, self._postscale, stream(wires[0]),
                                               nonblocking=True)
        except GjError as e:
            raise HorovodInternalError.wrap(e) from None
        _streams.keep_alive(wires, issue_stream)
        self._inflight.append((req, items))

    def _local_sparse_dim(self, i):
        """sparse_dim of this step's gradient of parameter i here, 0 when dense or none."""
        p = self._params[i]
        if not self._fired_here(i):
            return 0
        if i in self._sparse_dims:
            return self._sparse_dims[i]
        return p.grad.sparse_dim() if p.grad.is_sparse else 0

    def _sparse_reduce_async(self, i, sparse_dim):
        """Horovod's reduction of a sparse gradient: sparse_allreduce_async of this rank's
        gradient (an empty one when it has none, a dense one made sparse), uncompressed."""
        p = self._params[i]
        g = p.grad if self._fired_here(i) else None
        if g is None:
            g = torch.sparse_coo_tensor(torch.zeros((sparse_dim, 0), dtype=torch.int64, device=p.device),
                                        torch.zeros((0,) + tuple(p.shape[sparse_dim:]), dtype=p.dtype,
                                                    device=p.device), p.shape)
        elif not g.is_sparse:
            g = g.to_sparse(sparse_dim)
        elif g.sparse_dim() != sparse_dim:  # another rank's gradient has more sparse dimensions
            g = g.to_dense().to_sparse(sparse_dim)
        _streams.order_after(_streams.current(p), [self._grad_streams.get(i)])
        return mpi_ops.sparse_allreduce_async(g, name=self._names[i], op=self.op, process_set=self.process_set)

    # ---- public API ----------------------------------------------------------------------
    def synchronize(self):
        """Issues the buckets not issued yet and waits for every reduction; afterwards each
        parameter's .grad is the reduced gradient (see the module docstring)."""
        if self._comm is None:  # a rank outside the process set
            self._synchronized = True
            return
        with self._lock:
            _join.announce_step(self)
        try:
            self._reduce_all()
        except BaseException:
            _join.finish_step(self, failing=True)
            raise
        _join.finish_step(self)

    def _reduce_all(self):
        with self._lock:
            n = len(self._params)
            if not self._probing:
                while self._next_bucket < len(self._step_buckets):
                    self._issue(self._step_buckets[self._next_bucket])
                    self._next_bucket += 1
            # One small request: whether each parameter got a gradient here, then the
            # sparse_dim of its gradient (0: dense); MAX makes both "on some rank".
            flags = torch.tensor([1 if self._fired_here(i) else 0 for i in range(n)] +
                                 [self._local_sparse_dim(i) for i in range(n)] or [0], dtype=torch.uint8)
            try:
                flag_req = self._comm.allreduce(ptr(flags), ptr(flags), flags.numel(), _lib.UINT8, _lib.MAX,
                                                nonblocking=True)
                with _basics.waiting("DistributedOptimizer.synchronize"):
                    flag_req.wait()
                fired, sparse_dim = flags[:n].tolist(), flags[n:].tolist()
                if self._probing:
                    self._skip = frozenset(i for i in range(n) if not fired[i])
                    self._sparse = {i: d for i, d in enumerate(sparse_dim) if d}
                    self._plan_step()
                    for members in self._step_buckets:
                        self._issue(members)
                # Outside the step's buckets: a gradient on some rank is reduced now, sparsely
                # when it is sparse on some rank.
                rest = [i for i in range(n) if fired[i] and i not in self._bucket_of]
                by_kind = {}
                for i in sorted(rest, reverse=True):
                    if not sparse_dim[i]:
                        by_kind.setdefault(self._kinds[i], []).append(i)
                for members in by_kind.values():
                    self._issue(members)
                sparse_waits = [(i, self._sparse_reduce_async(i, sparse_dim[i])) for i in rest if sparse_dim[i]]
                for req, _ in self._inflight:
                    req.wait()
                sparse_results = [(i, wait()) for i, wait in sparse_waits]
            except GjError as e:
                self._reset_step()
                raise HorovodInternalError.wrap(e) from None
            for _, items in self._inflight:
                for i, wire, here in items:
                    p = self._params[i]
                    if here:
                        if wire is not p.grad:
                            p.grad.copy_(wire)
                    elif fired[i]:
                        g = wire.to(p.dtype)
                        if p.grad is None or p.grad.is_sparse:
                            p.grad = g
                        else:
                            p.grad.copy_(g)
                    if fired[i] and sparse_dim[i]:  # reduced dense: sparse again, as it came
                        p.grad = p.grad.to_sparse(sparse_dim[i])
            for i, reduced in sparse_results:
                self._params[i].grad = reduced
            self._skip = frozenset(i for i in range(n) if not fired[i])
            if not self._sparse_as_dense:
                self._sparse = {**{i: d for i, d in self._sparse.items() if not fired[i]},
                                **{i: d for i, d in enumerate(sparse_dim) if d}}
            self._probing = False
            self._reset_step()
            self._register_hooks()
            self._synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self):
        """step() inside this block does not synchronize (call synchronize() yourself first)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() after "
                              "optimizer.synchronize(): the gradients are reduced a second time (the "
                              "step's flag exchange and any late gradient); use `with "
                              "optimizer.skip_synchronize(): optimizer.step()` after synchronize()")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._comm is None:
            return super(self.__class__, self).zero_grad(*args, **kwargs)
        if self._inflight or any(self._counts):
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before "
                                 "optimizer.step() or optimizer.synchronize(); the gradients are being "
                                 "reduced (in place) and every rank must finish the step")
        self._register_hooks()
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def _dtype(t):
    from ._tensor import DTYPES
    return DTYPES[t.dtype]


def _names(named_parameters, param_groups, params, what):
    if named_parameters is None:  # Horovod's names
        return [f"allreduce.noname.{i}.{j}" for i, g in enumerate(param_groups) for j in range(len(g["params"]))]
    named = list(named_parameters)
    for k, item in enumerate(named):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError(f"{what}: named_parameters[{k}] is not a (name, parameter) pair; pass "
                             "model.named_parameters()")
    names = [n for n, _ in named]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{what}: named_parameters has duplicate names {dup}")
    by_id = {id(p): n for n, p in named}
    unnamed = [i for i, p in enumerate(params) if id(p) not in by_id]
    if unnamed:
        raise ValueError(f"{what}: named_parameters was given but {len(unnamed)} of the optimizer's "
                         f"parameters are not in it (indices {unnamed[:5]}); pass every parameter's name")
    return [by_id[id(p)] for p in params]


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=mpi_ops.Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False, process_set=global_process_set):
    """Wraps optimizer (any torch.optim optimizer) so that step() first averages the gradients
    across the process set (op Average; Sum, Min, Max, Product also work). The result is an
    instance of a subclass of optimizer's class, holding its param groups and state. On a rank
    outside process_set it reduces nothing (step() is the optimizer's own), as in Horovod.
    num_groups: Horovod's deprecated name of groups=N."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"DistributedOptimizer: optimizer={optimizer!r:.80} is not a torch.optim.Optimizer")
    if num_groups:
        warnings.warn("DistributedOptimizer: num_groups= is deprecated; use groups=", DeprecationWarning,
                      stacklevel=2)
        if groups is None:
            groups = num_groups
    if op == mpi_ops.Adasum:
        from . import adasum
        return adasum.distributed_adasum_optimizer(optimizer, named_parameters, compression, backward_passes_per_step,
                                                   process_set)
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,), dict(_DistributedOptimizer.__dict__))
    wrapped = cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, op,
                  gradient_predivide_factor, groups, sparse_as_dense, process_set)
    wrapped.state.update(optimizer.state)
    return wrapped

