"""DistributedOptimizer with sparse gradients (nn.Embedding(sparse=True)) under mpiexec (np 2
and 3): a model mixing a sparse embedding and dense layers, different inputs per rank (one rank
without any gradient in one step), trained a few steps; every rank's weights must equal, bit
for bit, a single-process model trained on the concatenated batches. The data, weights and
learning rate are small dyadic numbers, so every sum is exact in any order."""

import copy

import pytest
import torch
import torch.nn.functional as F

import gj.torch as hvd


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 3, sparse=True)
        self.lin = torch.nn.Linear(3, 2)
        with torch.no_grad():  # small integers: exact arithmetic throughout
            for k, p in enumerate(self.parameters()):
                p.copy_((torch.arange(p.numel()).reshape(p.shape) * (k + 2)) % 5 - 2)

    def forward(self, x):
        return self.lin(self.emb(x)).sum()


def batches(r, step, passes):
    """The inputs of rank r in one step (one per backward pass); rank 1 has none in step 1."""
    if step == 1 and r == 1:
        return []
    return [torch.tensor([[r % 10, (r + step) % 10, 5], [(2 * r + k) % 10, 9, (r * step) % 10]])
            for k in range(passes)]


def weights(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def train(members, steps=3, passes=1, scale=1.0, **kw):
    """Trains Model with DistributedOptimizer over the ranks members (global ranks) and a
    single-process reference on the concatenated batches; returns both weight vectors."""
    r = hvd.rank()
    model = Model()
    ref = copy.deepcopy(model)
    ps = kw.pop("process_set", hvd.global_process_set)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.25),
                                   named_parameters=model.named_parameters(), backward_passes_per_step=passes,
                                   process_set=ps, **kw)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.25)
    for step in range(steps):
        opt.zero_grad()
        for x in batches(r, step, passes):
            (model(x) * scale).backward()
        opt.step()
        everyone = [x for q in members for x in batches(q, step, passes)]
        if ps.included() and everyone:  # a gradient on some rank: sparse on every rank
            grad = model.emb.weight.grad
            assert grad is not None and grad.is_sparse, (step, grad)
        ref_opt.zero_grad()
        if everyone:
            ref(torch.cat(everyone)).backward()
        ref_opt.step()
    return model, ref


@pytest.mark.parametrize("kw", [
    {"op": hvd.Sum},
    {"op": hvd.Average},
    {"op": hvd.Average, "gradient_predivide_factor": 2.0},
    {"op": hvd.Sum, "compression": hvd.Compression.fp16},
    {"op": hvd.Sum, "sparse_as_dense": True},
    {"op": hvd.Average, "sparse_as_dense": True},
], ids=["sum", "average", "predivide", "fp16", "sparse_as_dense-sum", "sparse_as_dense-average"])
@pytest.mark.parametrize("passes", [1, 2])
def test_trains_like_one_process_on_the_concatenated_batch(world, kw, passes):
    r, n = world
    # Average divides by n: each rank scales its loss by n so that the average is the sum.
    scale = float(n) if kw["op"] == hvd.Average else 1.0
    model, ref = train(range(n), passes=passes, scale=scale, **kw)
    got, want = weights(model), weights(ref)
    assert torch.equal(got, want), (got, want)
    assert torch.equal(hvd.broadcast(got, 0), got)


def test_process_set(world):
    r, n = world
    members = [0, n - 1] if n > 2 else [1]
    ps = hvd.add_process_set(members)
    model, ref = train(members, op=hvd.Sum, process_set=ps)
    if ps.included():
        assert torch.equal(weights(model), weights(ref))
        assert torch.equal(hvd.broadcast(weights(model), members[0], process_set=ps), weights(model))
    else:  # outside the set the optimizer is the plain one: it trained on its own batches
        local = Model()
        sgd = torch.optim.SGD(local.parameters(), lr=0.25)
        for step in range(3):
            sgd.zero_grad()
            for x in batches(r, step, 1):
                local(x).backward()
            sgd.step()
        assert torch.equal(weights(model), weights(local))
    hvd.remove_process_set(ps)


def test_sparse_adam_and_groups(world):
    """torch.optim.SparseAdam takes sparse gradients only: it gets them with and without
    sparse_as_dense; the sparse parameter may be listed in groups."""
    r, n = world
    for sparse_as_dense in (False, True):
        model = Model()
        opt = hvd.DistributedOptimizer(torch.optim.SparseAdam([model.emb.weight], lr=0.1),
                                       named_parameters=[("emb.weight", model.emb.weight)],
                                       groups=[[model.emb.weight]], sparse_as_dense=sparse_as_dense)
        for step in range(2):
            opt.zero_grad()
            model(torch.tensor([[r % 10, 3], [4, 9]])).backward()
            opt.step()
        w = model.emb.weight.detach().clone()
        assert torch.equal(hvd.broadcast(w, 0), w)


def test_gradient_that_turns_sparse_later(world):
    """A parameter whose gradient is dense in the first step and sparse after: reduced in its
    bucket the step it turns sparse (the result made sparse again), sparsely from then on."""
    r, n = world
    weight = torch.nn.Parameter(torch.arange(12.0).reshape(6, 2) % 3)
    opt = hvd.DistributedOptimizer(torch.optim.SGD([weight], lr=0.5), named_parameters=[("w", weight)],
                                   op=hvd.Sum)
    x = torch.tensor([r % 6, 5])
    for step, sparse in enumerate((False, True, True)):
        opt.zero_grad(set_to_none=True)  # else the dense .grad absorbs the sparse one
        F.embedding(x, weight, sparse=sparse).sum().backward()
        opt.synchronize()
        want = torch.zeros(6, 2)
        for q in range(n):
            want[q % 6] += 1
            want[5] += 1
        assert weight.grad.is_sparse == sparse, step
        assert torch.equal(weight.grad.to_dense(), want), (step, weight.grad)
        with opt.skip_synchronize():
            opt.step()
